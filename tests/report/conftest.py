"""Fixtures of the ledger's tests (the toy project is in ledger_toy.py)."""
from pathlib import Path

import pytest
from ledger_toy import Toy, make_toy


@pytest.fixture
def toy(tmp_path: Path) -> Toy:
    return make_toy(tmp_path)
