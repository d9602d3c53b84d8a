"""This project's ledger.html weighs at most 4 MB (issue 52: 8.4 MB, of which 3.8 MB the gate grids' per-cell
hovers and repeated rows, 0.7 MB the hover of every mention).

Read from reports/: `fidelity report --check` (run by CI, and red whenever the committed page is not what the
evidence renders now) makes the committed page the rendered one, so rendering it again here (about 40 s of
CPU) would measure the same bytes."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIMIT = 4_000_000


def test_this_projects_ledger_page_is_at_most_4_mb():
    size = (REPO / "reports" / "ledger.html").stat().st_size
    assert size <= LIMIT, f"reports/ledger.html is {size:,} bytes: more than {LIMIT:,}"
