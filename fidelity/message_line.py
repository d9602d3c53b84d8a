"""The one line of a long message that a table or a record keeps: its first line, cut at a word.

A failure message can run to pages (a tensor printed whole); records and the ledger keep its first
line, and a line longer than the limit is cut at the last space before it and ends in an ellipsis,
so a reader never sees a word (or a number) cut in two and taken for whole.
"""
from __future__ import annotations

LIMIT = 300
ELLIPSIS = " …"


def first_line(text: str | None, limit: int = LIMIT) -> str:
    text = (text or "").strip()
    if not text:
        return ""
    line = text.splitlines()[0]
    if len(line) <= limit:
        return line
    cut = line[:limit - len(ELLIPSIS)]
    at = cut.rfind(" ")
    return (cut[:at] if at > 0 else cut).rstrip() + ELLIPSIS
