"""This project's ledger.html, rendered as `fidelity report` renders it, weighs at most 4 MB (issue 52: 8.4 MB,
of which 3.8 MB the gate grids' per-cell hovers and repeated rows, 0.7 MB the hover of every mention).

Rendered from the recorded gate run into a temporary directory (reports/ is left alone), about 30 s."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LIMIT = 4_000_000


@pytest.fixture(scope="module")
def our_page(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ledger")
    proc = subprocess.run([sys.executable, "-m", "fidelity", "report", "--gates-from", "reports/gate-run.json",
                           "--out", str(out)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out / "ledger.html"


def test_this_projects_ledger_page_is_at_most_4_mb(our_page):
    size = our_page.stat().st_size
    assert size <= LIMIT, f"ledger.html is {size:,} bytes"
