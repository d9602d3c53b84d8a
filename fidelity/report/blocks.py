"""The few shapes a ledger page is made of, shared by the Markdown and HTML renderers.

Inline content is a str (plain text), Code, Strong, Link, Tag, Ref, Target, Num, Long,
or a tuple of those (concatenated). Blocks are Heading, Para, Bullets, Table,
CodeBlock, Plot and Matrix. Both renderers take the same list of blocks, so the Markdown file and the
HTML page say the same things.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Code:
    text: str


@dataclass(frozen=True)
class Strong:
    text: str


@dataclass(frozen=True)
class Link:
    text: str
    href: str


@dataclass(frozen=True)
class Long:
    """A message that may run to many lines (what a gate said): HTML shows its first two lines and the rest
    on a tap or a click (it takes the focus), so a long table stays short without needing a hover; Markdown
    writes it whole."""

    text: str


@dataclass(frozen=True)
class Tag:
    """A marked word: OBSERVED, PREDICTED ONLY, passed, failed, ... `kind` picks the HTML colour."""

    text: str
    kind: str


@dataclass(frozen=True)
class Ref:
    """A mention of something with an id on the page (an equation, a gate, ...): a code span in Markdown, a
    link in HTML (plain code when nothing on the page carries the id). `hover`: a title for the link."""

    text: str
    target: str
    hover: str = ""


@dataclass(frozen=True)
class Target:
    """Content that is where its id points (an equation's row, a gate's row): in Markdown the content alone."""

    id: str
    content: object


@dataclass(frozen=True)
class Num:
    """A number shown to the digits that matter (`short`), with every digit kept (`full`): Markdown writes
    `full`, HTML shows `short` and `full` on hover."""

    short: str
    full: str


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    anchor: str
    collapsed: bool = False   # in HTML, the section under it is a <details> closed by default


@dataclass(frozen=True)
class Para:
    content: object


@dataclass(frozen=True)
class Bullets:
    items: tuple


@dataclass(frozen=True)
class Table:
    headers: tuple
    rows: tuple
    css: str = ""


@dataclass(frozen=True)
class CodeBlock:
    text: str
    lang: str = ""
    summary: str | None = None   # collapsible under this summary line


@dataclass(frozen=True)
class Plot:
    name: str
    caption: str


@dataclass(frozen=True)
class Matrix:
    """A grid drawn in HTML only (Markdown names it, as it names a plot). `columns`: (id, text, hover);
    `groups`: (heading inline, rows); a row is (header inline, cells); a cell is (kind, text, reading: the
    value its hover adds or "", quiet, target id: linked when the page holds it) or None. The page's script
    puts a cell's hover together (its column, the legend's words for its kind, the reading, off target)."""

    name: str
    caption: str
    columns: tuple
    groups: tuple
    legend: tuple = ()   # (kind, text)


@dataclass
class Document:
    title: str
    blocks: list = field(default_factory=list)

    def add(self, *blocks) -> None:
        self.blocks.extend(b for b in blocks if b is not None)


def anchor(*parts: str) -> str:
    """A stable HTML id from text: lower case, [a-z0-9-] only."""
    text = "-".join(parts).lower()
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-") or "section"


def plain(content) -> str:
    """The inline content as plain text (for alt texts and tests)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, (Code, Strong, Tag, Long)):
        return content.text
    if isinstance(content, (Link, Ref)):
        return content.text
    if isinstance(content, Num):
        return content.full
    if isinstance(content, Target):
        return plain(content.content)
    return "".join(plain(c) for c in content)
