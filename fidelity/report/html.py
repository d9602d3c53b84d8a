"""The ledger as one self-contained HTML page (reports/ledger.html).

No network: styles are inline (pagestyle), plots are PNGs in base64 data URIs, the one
script is inline and allowed by its sha256 (pagescript), and the only links that leave
the page are plain links to arXiv. When matplotlib is missing (or a plot has no data),
the page says so where the plot would be.

Every mention (blocks.Ref) links to the element that carries its id (blocks.Target, a
heading); the first element with an id keeps it, so ids stay unique, and a mention
of something the page does not hold is plain code, never a dead link. A heading marked
`collapsed` opens a <details> closed by default that holds its section.

What the page would otherwise repeat thousands of times is written once (issue 52: 8.4 MB):
a mention's hover (a gate's whole node id, a perturbation's title) is the data-hover of the
element it links to, and a grid cell's hover is put together from its column, its kind
(the legend's words) and its reading; the page's script sets either as the title when
the pointer reaches it.
"""
from __future__ import annotations

import base64
import html
import re
from urllib.parse import urlparse

from fidelity.report.blocks import (Bullets, Code, CodeBlock, Document, Heading, Link, Long, Matrix, Num, Para, Plot,
                                    Ref, Strong, Table, Tag, Target, plain)
from fidelity.report.pagescript import SCRIPT, SCRIPT_HASH
from fidelity.report.pagestyle import STYLE

ALLOWED_HOSTS = ("arxiv.org",)
# Belt and braces: even a stray reference could not load anything from anywhere; the one script runs by its hash.
CSP = f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src '{SCRIPT_HASH}'"


def _href_ok(href: str) -> bool:
    if href.startswith("#"):
        return True
    u = urlparse(href)
    return u.scheme == "https" and (u.hostname or "") in ALLOWED_HOSTS


MIN_PART = 8   # characters between two break opportunities after an underscore


def _breakable(text: str) -> str:
    """A break opportunity after . / :: and after an underscore that ends a part of MIN_PART characters or more:
    a long id breaks where it reads well in a narrow cell, with half the <wbr> of one after every _ (issue 52)."""
    out, run = [], 0
    for part in re.split(r"(?<=[./_])|(?<=:)(?!:)", text):
        out.append(html.escape(part))
        run += len(part)
        if not part.endswith("_") or run >= MIN_PART:
            out.append("<wbr>")
            run = 0
    return "".join(out).removesuffix("<wbr>")


def _code(text: str) -> str:
    return "<code>" + _breakable(text) + "</code>"


# a grid cell's class, by its kind (plots.MATRIX_CODES): two letters, as the grids hold tens of thousands
GRID_CLASS = {"caught": "ca", "red_not_green": "rn", "red_other": "ro", "survived": "su", "skipped": "sk",
              "stale": "st", "predicted": "pr"}


class _Page:
    """One rendering: which ids the page holds, which of them are already placed, and the hover of each."""

    def __init__(self, doc: Document):
        self.ids = {b.anchor for b in doc.blocks if isinstance(b, Heading)}
        self.ids |= {f"plot-{b.name}" for b in doc.blocks if isinstance(b, Plot)}
        self.ids |= {f"matrix-{b.name}" for b in doc.blocks if isinstance(b, Matrix)}
        self.hovers: dict[str, str] = {}
        for b in doc.blocks:
            for content in _inlines(b):
                self.ids |= set(_targets(content))
                for ref in _refs(content):
                    if ref.hover:
                        self.hovers.setdefault(ref.target, ref.hover)
        self.placed: set[str] = set()

    def hover_attr(self, ident: str) -> str:
        hover = self.hovers.get(ident)
        return f' data-hover="{html.escape(hover)}"' if hover else ""

    def inline(self, content) -> str:
        if content is None:
            return ""
        if isinstance(content, str):
            return html.escape(content)
        if isinstance(content, Code):
            return _code(content.text)
        if isinstance(content, Strong):
            return f"<strong>{html.escape(content.text)}</strong>"
        if isinstance(content, Tag):
            return f'<span class="tag {html.escape(content.kind)}">{html.escape(content.text)}</span>'
        if isinstance(content, Long):
            return f'<span class="long" tabindex="0">{html.escape(content.text)}</span>'
        if isinstance(content, Num):
            if content.short == content.full:
                return html.escape(content.short)
            return f'<span class="num" title="{html.escape(content.full)}">{html.escape(content.short)}</span>'
        if isinstance(content, Ref):
            if content.target not in self.ids:
                return _code(content.text)
            return f'<a class="ref" href="#{html.escape(content.target)}">{_breakable(content.text)}</a>'
        if isinstance(content, Target):
            inner = self.inline(content.content)
            if content.id in self.placed:
                return inner
            self.placed.add(content.id)
            return f'<span id="{html.escape(content.id)}"{self.hover_attr(content.id)}>{inner}</span>'
        if isinstance(content, Link):
            if not _href_ok(content.href):
                return html.escape(f"{content.text} ({content.href})")
            return f'<a href="{html.escape(content.href)}">{html.escape(content.text)}</a>'
        return "".join(self.inline(c) for c in content)

    def table(self, t: Table) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in t.headers)
        rows = "".join("<tr>" + "".join(f"<td>{self.inline(c)}</td>" for c in row) + "</tr>\n" for row in t.rows)
        css = f' class="{html.escape(t.css)}"' if t.css else ""
        table = f"<table{css}>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{rows}</tbody></table>"
        # a table too wide for a phone scrolls sideways in its own box, its words whole (pagestyle)
        return f'<div class="table-scroll">{table}</div>' if "scroll-x" in t.css.split() else table

    def matrix(self, m: Matrix) -> str:
        head = "<th>gate</th>" + "".join(
            f'<th>{self.inline(Ref(text, target, hover))}</th>' for target, text, hover in m.columns)
        body = []
        for group, rows in m.groups:
            body.append(f'<tr class="group"><th colspan="{len(m.columns) + 1}">{self.inline(group)}</th></tr>')
            for header, cells in rows:
                body.append(f"<tr><th>{self.inline(header)}</th>{''.join(self.grid_cell(c) for c in cells)}</tr>")
        legend = "".join(f'<span><b class="{GRID_CLASS[k]}">{html.escape(code)}</b> {html.escape(text)}</span>'
                         for k, code, text in m.legend)
        return (f'<figure class="matrix" id="matrix-{m.name}"><div class="grid-scroll"><table class="grid">'
                f"<thead><tr>{head}</tr></thead><tbody>\n" + "\n".join(body) + "\n</tbody></table></div>"
                f'<figcaption>{self.inline(m.caption)}<div class="legend">{legend}</div></figcaption></figure>')


    def grid_cell(self, cell) -> str:
        """A cell in as few bytes as say it: a grid has tens of thousands (its hover: pagescript)."""
        if cell is None:
            return "<td></td>"
        kind, text, value, quiet, target = cell
        css = GRID_CLASS[kind] + (" q" if quiet else "")
        inner = (f'<a href="#{html.escape(target)}">{html.escape(text)}</a>' if target in self.ids
                 else html.escape(text))
        r = f' data-r="{html.escape(value)}"' if value else ""
        return f'<td class="{css}"{r}>{inner}</td>'


def _inlines(b):
    """Every inline content a block holds."""
    if isinstance(b, Para):
        yield b.content
    elif isinstance(b, Bullets):
        yield from b.items
    elif isinstance(b, Table):
        for row in b.rows:
            yield from row
    elif isinstance(b, Matrix):
        yield tuple(Ref(text, target, hover) for target, text, hover in b.columns)
        for group, rows in b.groups:
            yield group
            for header, _ in rows:
                yield header


def _refs(content):
    if isinstance(content, Ref):
        yield content
    elif isinstance(content, Target):
        yield from _refs(content.content)
    elif isinstance(content, tuple):
        for c in content:
            yield from _refs(c)


def _targets(content):
    if isinstance(content, Target):
        yield content.id
        yield from _targets(content.content)
    elif isinstance(content, tuple):
        for c in content:
            yield from _targets(c)


def _plot(b: Plot, plots: dict, unavailable: str | None) -> str:
    caption = html.escape(plain(b.caption))
    if unavailable:
        return f'<figure id="plot-{b.name}"><p class="unavailable">{html.escape(unavailable)}</p>' \
               f"<figcaption>{caption}</figcaption></figure>"
    png = plots.get(b.name)
    if isinstance(png, (bytes, bytearray)):
        data = base64.b64encode(png).decode("ascii")
        return (f'<figure id="plot-{b.name}"><img alt="{caption}" src="data:image/png;base64,{data}">'
                f"<figcaption>{caption}</figcaption></figure>")
    why = png if isinstance(png, str) else "no data for this plot"
    return f'<figure id="plot-{b.name}"><p class="unavailable">plot not drawn: {html.escape(why)}</p>' \
           f"<figcaption>{caption}</figcaption></figure>"


SEARCH_BOX = ('<label for="search">Search every table: an id exactly, or words</label>'
              '<input id="search" type="search" placeholder="e.g. P12, mhc.eq8, sinkhorn gradient" autocomplete="off">'
              '<span id="search-count" aria-live="polite"></span><div id="search-where"></div>')


def render(doc: Document, plots: dict | None = None, plots_unavailable: str | None = None) -> str:
    """`plots`: name -> PNG bytes, or a str saying why there is none. `plots_unavailable`: why there are none at all."""
    plots = plots or {}
    page = _Page(doc)
    nav, body = [], []
    open_sections: list[int] = []   # levels of the collapsed sections now open
    for b in doc.blocks:
        if isinstance(b, Heading):
            while open_sections and open_sections[-1] >= b.level:
                open_sections.pop()
                body.append("</details>")
            if b.level in (2, 3):
                nav.append(f'<a class="l{b.level}" href="#{b.anchor}">{html.escape(b.text)}</a>')
            heading = f'<h{b.level} id="{b.anchor}"{page.hover_attr(b.anchor)}>{html.escape(b.text)}</h{b.level}>'
            if b.collapsed:
                open_sections.append(b.level)
                heading = f'<details class="section"><summary>{heading}</summary>'
            body.append(heading)
        elif isinstance(b, Para):
            body.append(f"<p>{page.inline(b.content)}</p>")
        elif isinstance(b, Bullets):
            body.append("<ul>" + "".join(f"<li>{page.inline(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            body.append(page.table(b))
        elif isinstance(b, Matrix):
            body.append(page.matrix(b))
        elif isinstance(b, CodeBlock):
            pre = f'<pre class="{html.escape(b.lang)}">{html.escape(b.text)}</pre>'
            body.append(f"<details><summary>{html.escape(b.summary)}</summary>{pre}</details>" if b.summary else pre)
        elif isinstance(b, Plot):
            body.append(_plot(b, plots, plots_unavailable))
        else:  # pragma: no cover
            raise TypeError(f"no HTML for {type(b).__name__}")
    body += ["</details>"] * len(open_sections)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            f"<title>{html.escape(doc.title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            f"<nav>\n{SEARCH_BOX}\n{chr(10).join(nav)}\n</nav>\n<main>\n{chr(10).join(body)}\n</main>\n"
            f"<script>{SCRIPT}</script>\n</body>\n</html>\n")
