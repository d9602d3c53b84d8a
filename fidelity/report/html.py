"""The ledger as one self-contained HTML page (reports/ledger.html).

No network: styles are inline, plots are PNGs in base64 data URIs, there is no
script, and the only links that leave the page are plain links to arXiv. When
matplotlib is missing (or a plot has no data), the page says so where the plot
would be.
"""
from __future__ import annotations

import base64
import html
import re
from urllib.parse import urlparse

from fidelity.report.blocks import (Bullets, Code, CodeBlock, Document, Heading, Link, Para, Plot, Strong, Table,
                                    Tag, plain)

ALLOWED_HOSTS = ("arxiv.org",)
# Belt and braces: even a stray reference could not load anything from anywhere.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

STYLE = """
:root { --fg: #1d2330; --muted: #5b6475; --line: #d8dde6; --bg: #ffffff; --alt: #f5f7fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: var(--fg);
       background: var(--bg); }
nav { position: fixed; top: 0; left: 0; bottom: 0; width: 250px; overflow-y: auto; padding: 16px 12px;
      border-right: 1px solid var(--line); background: var(--alt); font-size: 12.5px; }
nav a { color: var(--fg); text-decoration: none; display: block; padding: 1px 0; }
nav a.l3 { padding-left: 12px; color: var(--muted); }
nav a:hover { text-decoration: underline; }
main { margin-left: 250px; padding: 20px 32px 80px; max-width: 1500px; }
h1 { font-size: 26px; margin: 0 0 8px; }
h2 { font-size: 21px; margin: 36px 0 8px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { font-size: 16.5px; margin: 24px 0 6px; }
h4 { font-size: 14.5px; margin: 16px 0 4px; color: var(--muted); }
.scroll { overflow-x: auto; margin: 6px 0 12px; }
table { border-collapse: collapse; font-size: 12.5px; }
th, td { border: 1px solid var(--line); padding: 3px 7px; vertical-align: top; text-align: left; }
th { background: var(--alt); position: sticky; top: 0; }
tr:nth-child(even) td { background: #fbfcfd; }
code { font: 12px/1.3 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; background: #eef1f5;
       padding: 0 3px; border-radius: 3px; }
td:first-child code { white-space: nowrap; }
pre { background: #f6f8fa; border: 1px solid var(--line); padding: 8px; overflow-x: auto; font-size: 12px; }
details { margin: 4px 0 10px; } summary { cursor: pointer; color: var(--muted); }
.tag { display: inline-block; padding: 0 5px; border-radius: 3px; font-weight: 600; font-size: 11.5px;
       white-space: nowrap; }
.tag.observed { background: #d9f2e1; color: #12512b; } .tag.stale { background: #fde9c8; color: #6b4200; }
.tag.predicted { background: #e6e0f8; color: #3c2a7a; border: 1px dashed #6b56c4; }
.tag.passed { background: #d9f2e1; color: #12512b; } .tag.failed { background: #f9d6d5; color: #7d1512; }
.tag.red { background: #f9d6d5; color: #7d1512; } .tag.other { background: #fde9c8; color: #6b4200; }
.tag.survived { background: #dde3ea; color: #2b3645; } .tag.skipped { background: #eceff3; color: #5b6475; }
figure { margin: 10px 0 22px; } figure img { max-width: 100%; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: 12.5px; max-width: 900px; }
.unavailable { color: #7d1512; font-style: italic; }
ul { margin: 4px 0 10px; padding-left: 22px; }
"""


def _href_ok(href: str) -> bool:
    if href.startswith("#"):
        return True
    u = urlparse(href)
    return u.scheme == "https" and (u.hostname or "") in ALLOWED_HOSTS


def inline(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return html.escape(content)
    if isinstance(content, Code):  # a break opportunity after . : / _ keeps long ids readable in narrow cells
        return "<code>" + re.sub(r"([./:_])", r"\1<wbr>", html.escape(content.text)) + "</code>"
    if isinstance(content, Strong):
        return f"<strong>{html.escape(content.text)}</strong>"
    if isinstance(content, Tag):
        return f'<span class="tag {html.escape(content.kind)}">{html.escape(content.text)}</span>'
    if isinstance(content, Link):
        if not _href_ok(content.href):
            return html.escape(f"{content.text} ({content.href})")
        return f'<a href="{html.escape(content.href)}">{html.escape(content.text)}</a>'
    return "".join(inline(c) for c in content)


def _table(t: Table) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in t.headers)
    rows = "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in row) + "</tr>\n" for row in t.rows)
    css = f' class="{html.escape(t.css)}"' if t.css else ""
    return f'<div class="scroll"><table{css}>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{rows}</tbody></table></div>'


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


def render(doc: Document, plots: dict | None = None, plots_unavailable: str | None = None) -> str:
    """`plots`: name -> PNG bytes, or a str saying why there is none. `plots_unavailable`: why there are none at all."""
    plots = plots or {}
    nav, body = [], []
    for b in doc.blocks:
        if isinstance(b, Heading):
            if b.level in (2, 3):
                nav.append(f'<a class="l{b.level}" href="#{b.anchor}">{html.escape(b.text)}</a>')
            body.append(f'<h{b.level} id="{b.anchor}">{html.escape(b.text)}</h{b.level}>')
        elif isinstance(b, Para):
            body.append(f"<p>{inline(b.content)}</p>")
        elif isinstance(b, Bullets):
            body.append("<ul>" + "".join(f"<li>{inline(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            body.append(_table(b))
        elif isinstance(b, CodeBlock):
            pre = f'<pre class="{html.escape(b.lang)}">{html.escape(b.text)}</pre>'
            body.append(f"<details><summary>{html.escape(b.summary)}</summary>{pre}</details>" if b.summary else pre)
        elif isinstance(b, Plot):
            body.append(_plot(b, plots, plots_unavailable))
        else:  # pragma: no cover
            raise TypeError(f"no HTML for {type(b).__name__}")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            f"<title>{html.escape(doc.title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            f"<nav>\n{chr(10).join(nav)}\n</nav>\n<main>\n{chr(10).join(body)}\n</main>\n</body>\n</html>\n")
