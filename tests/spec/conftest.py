from pathlib import Path

import pytest

from fidelity.spec.loader import SCHEMA_FILE
from spec_toy import MINIMAL



@pytest.fixture
def spec_dir(tmp_path: Path):
    """A directory holding the project's schema and one valid toy spec."""
    (tmp_path / "spec.schema.json").write_text(SCHEMA_FILE.read_text())
    (tmp_path / "toy.yaml").write_text(MINIMAL)
    return tmp_path
