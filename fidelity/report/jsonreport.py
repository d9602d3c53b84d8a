"""The ledger as JSON (reports/ledger.json): the gathered data itself, deterministic.

Sorted keys, indent 1, strict JSON (non-finite numbers are the strings "NaN",
"Infinity", "-Infinity", as in the evidence records), a trailing newline.
"""
from __future__ import annotations

import json


def render(ledger: dict) -> str:
    return json.dumps(ledger, sort_keys=True, indent=1, allow_nan=False, ensure_ascii=False) + "\n"
