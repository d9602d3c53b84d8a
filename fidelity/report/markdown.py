"""The ledger as GitHub-flavoured Markdown (reports/LEDGER.md).

Deterministic: the same ledger gives the same text. Plots are not embedded (a
data URI does not render on GitHub); each plot is named, with a pointer to
ledger.html, which holds them.
"""
from __future__ import annotations

import re

from fidelity.report.blocks import (Bullets, Code, CodeBlock, Document, Heading, Link, Long, Matrix, Num, Para, Plot,
                                    Ref, Strong, Table, Tag, Target, plain)

_ESCAPE = re.compile(r"([\\`*_\[\]<>|])")


def escape(text: str) -> str:
    return _ESCAPE.sub(r"\\\1", re.sub(r"\s+", " ", str(text)))


def code_span(text: str) -> str:
    text = re.sub(r"\s+", " ", text)
    run = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (run + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    out = f"{fence}{pad}{text}{pad}{fence}"
    return out.replace("|", "\\|")  # inside a table a bare | ends the cell, even in a code span


def inline(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return escape(content) if content.strip() else content
    if isinstance(content, (Code, Ref)):   # a mention stays a code span: the Markdown reads as before
        return code_span(content.text)
    if isinstance(content, Num):
        return escape(content.full)
    if isinstance(content, Long):
        return escape(content.text)
    if isinstance(content, Target):
        return inline(content.content)
    if isinstance(content, Strong):
        return f"**{escape(content.text)}**"
    if isinstance(content, Tag):
        return f"**{escape(content.text)}**"
    if isinstance(content, Link):
        return f"[{escape(content.text)}]({content.href})"
    return "".join(inline(c) for c in content)


def _table(t: Table) -> list[str]:
    head = "| " + " | ".join(escape(h) for h in t.headers) + " |"
    rule = "|" + "|".join(" --- " for _ in t.headers) + "|"
    rows = ["| " + " | ".join(inline(c).strip() or " " for c in row) + " |" for row in t.rows]
    return [head, rule, *rows]


def _code_block(b: CodeBlock) -> list[str]:
    run = max((len(m) for m in re.findall(r"`{3,}", b.text)), default=2)
    fence = "`" * (run + 1)
    body = b.text if b.text.endswith("\n") else b.text + "\n"
    block = [f"{fence}{b.lang}", body.rstrip("\n"), fence]
    if b.summary:
        return ["<details>", f"<summary>{escape(b.summary)}</summary>", "", *block, "", "</details>"]
    return block


def render(doc: Document) -> str:
    out: list[str] = []
    for i, b in enumerate(doc.blocks):
        if isinstance(b, Heading):
            out += ["#" * b.level + " " + escape(b.text), ""]
        elif isinstance(b, Para):
            out += [inline(b.content), ""]
        elif isinstance(b, Bullets):
            out += ["- " + inline(item).strip() for item in b.items] + [""]
        elif isinstance(b, Table):
            out += _table(b) + [""]
        elif isinstance(b, CodeBlock):
            out += _code_block(b) + [""]
        elif isinstance(b, Matrix):
            out += [f"- Matrix `{b.name}` (in ledger.html): {escape(plain(b.caption))}", ""]
        elif isinstance(b, Plot):
            out.append(f"- Plot `{b.name}` (in ledger.html): {escape(plain(b.caption))}")
            if not (i + 1 < len(doc.blocks) and isinstance(doc.blocks[i + 1], Plot)):
                out.append("")
        else:  # pragma: no cover - a new block type must be rendered here
            raise TypeError(f"no Markdown for {type(b).__name__}")
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"
