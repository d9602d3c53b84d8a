"""The ledger page's style sheet (inline in ledger.html; no external font or file).

Why some rules are as they are:
- ordinary tables are not wrapped in an overflow container: one would become the
  scroll box of `position: sticky` and the header row would never stick to the window.
  Their cells wrap instead (under 900 px even inside a word), so nothing scrolls sideways;
- the gate matrices are the one wide thing: each sits in a box that scrolls both ways
  with a bounded height, so its sticky header row and gate column stick inside it;
- under 900 px the sidebar is a block above the content, not a fixed 250 px column;
- a table marked scroll-x (the Summary: ten columns of counts) is the exception to the first
  rule: under 900 px its words stay whole (a header broken letter by letter reads as noise)
  and it scrolls sideways in its own box, its first column (the paper) kept in view.
  It is short, so its header row has no need to stick to the window;
- a mention (a.ref) is drawn as code: the link holds the text itself, with no <code> inside
  (fifteen thousand mentions on this project's page);
- while a search is on (body.searching), a table with no matching row is hidden, and each
  heading says how many rows under it match (span.hits).
"""

STYLE = """
:root { --fg: #1d2330; --muted: #5b6475; --line: #d8dde6; --bg: #ffffff; --alt: #f5f7fa; }
* { box-sizing: border-box; }
html { overflow-wrap: break-word; }
body { margin: 0; font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: var(--fg);
       background: var(--bg); }
nav { position: fixed; top: 0; left: 0; bottom: 0; width: 250px; overflow-y: auto; padding: 12px 12px 16px;
      border-right: 1px solid var(--line); background: var(--alt); font-size: 12.5px; }
nav a { color: var(--fg); text-decoration: none; display: block; padding: 1px 0; }
nav a.l3 { padding-left: 12px; color: var(--muted); }
nav a:hover { text-decoration: underline; }
nav label { display: block; font-weight: 600; margin-bottom: 2px; }
#search { width: 100%; font: inherit; padding: 3px 5px; border: 1px solid var(--line); border-radius: 3px; }
#search-count { display: block; min-height: 1.3em; color: var(--muted); margin-bottom: 6px; }
main { margin-left: 250px; padding: 20px 32px 80px; max-width: 1500px; }
h1 { font-size: 26px; margin: 0 0 8px; }
h2 { font-size: 21px; margin: 36px 0 8px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { font-size: 16.5px; margin: 24px 0 6px; }
h4 { font-size: 14.5px; margin: 16px 0 4px; color: var(--muted); }
details.section { margin: 0; }
details.section > summary { cursor: pointer; list-style-position: outside; margin-left: 16px; }
details.section > summary > h2, details.section > summary > h3, details.section > summary > h4 { display: inline; }
details.section > summary > h2 { display: inline-block; width: calc(100% - 4px); }
table { border-collapse: collapse; font-size: 12.5px; margin: 6px 0 12px; max-width: 100%; }
th, td { border: 1px solid var(--line); padding: 3px 7px; vertical-align: top; text-align: left; }
th { background: var(--alt); position: sticky; top: 0; z-index: 1; }
tr:nth-child(even) td { background: #fbfcfd; }
code { font: 12px/1.3 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; background: #eef1f5;
       padding: 0 3px; border-radius: 3px; }
a.ref { text-decoration: none; font: 12px/1.3 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
        background: #eef1f5; padding: 0 3px; border-radius: 3px; color: #1b4f9c; }
a.ref:hover { text-decoration: underline; }
.table-scroll { overflow-x: auto; max-width: 100%; margin: 6px 0 12px; }
.table-scroll table { margin: 0; border-collapse: separate; border-spacing: 0; border: solid var(--line);
                      border-width: 1px 0 0 1px; }  /* separate: a sticky cell then covers its own borders */
.table-scroll th, .table-scroll td { border-width: 0 1px 1px 0; }
.table-scroll td:first-child, .table-scroll th:first-child { position: sticky; left: 0; z-index: 2; }
.table-scroll td:first-child { background: var(--bg); }
body.searching table.no-hits { display: none; }
.hits { font-size: 12px; font-weight: 600; color: #12512b; background: #d9f2e1; border-radius: 3px;
        padding: 0 5px; margin-left: 8px; vertical-align: middle; }
.hits.none { color: var(--muted); background: var(--alt); font-weight: normal; }
#search-where a { display: block; padding-left: 8px; } #search-where { margin-bottom: 8px; }
:target, tr:target td { background: #fff6c8 !important; }
tbody [id] { scroll-margin-top: 2.6em; }  /* no script: about one header row; the script sets the exact height */
.num { border-bottom: 1px dotted #9aa3b2; }
pre { background: #f6f8fa; border: 1px solid var(--line); padding: 8px; overflow-x: auto; font-size: 12px;
      white-space: pre-wrap; }
details { margin: 4px 0 10px; } summary { cursor: pointer; color: var(--muted); }
.tag { display: inline-block; padding: 0 5px; border-radius: 3px; font-weight: 600; font-size: 11.5px; }
.tag.observed { background: #d9f2e1; color: #12512b; } .tag.stale { background: #fde9c8; color: #6b4200; }
.tag.predicted { background: #e6e0f8; color: #3c2a7a; border: 1px dashed #6b56c4; }
.tag.passed { background: #d9f2e1; color: #12512b; } .tag.failed { background: #f9d6d5; color: #7d1512; }
.tag.red { background: #f9d6d5; color: #7d1512; } .tag.other { background: #fde9c8; color: #6b4200; }
.tag.survived { background: #dde3ea; color: #2b3645; } .tag.skipped { background: #eceff3; color: #5b6475; }
.verdict { font-size: 15px; padding: 8px 12px; border-left: 5px solid #c0392b; background: #fbeeed; }
.verdict.good { border-left-color: #27864a; background: #eaf6ee; }
figure { margin: 10px 0 22px; } figure img { max-width: 100%; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: 12.5px; max-width: 900px; }
.unavailable { color: #7d1512; font-style: italic; }
ul { margin: 4px 0 10px; padding-left: 22px; }
.grid-scroll { overflow: auto; max-height: 80vh; max-width: 100%; border: 1px solid var(--line); }
table.grid { margin: 0; font-size: 11px; max-width: none; }
table.grid th, table.grid td { padding: 1px 3px; text-align: center; min-width: 22px; }
table.grid thead th { top: 0; z-index: 2; }
table.grid thead th a { writing-mode: vertical-rl; transform: rotate(180deg); white-space: nowrap; }
table.grid tbody th { position: sticky; left: 0; z-index: 1; text-align: left; max-width: 340px;
                      font-weight: normal; }
table.grid thead th:first-child { left: 0; z-index: 3; }
table.grid tr.group th { background: #e9edf3; font-weight: 600; text-align: left; }
.grid .ca, .legend .ca { background: #c0392b; color: #fff; } .grid .rn, .legend .rn { background: #e8897f; }
.grid .ro, .legend .ro { background: #e59866; } .grid .su, .legend .su { background: #5d6d7e; color: #fff; }
.grid .sk, .legend .sk { background: #d5dbe1; } .grid .st, .legend .st { background: #f7dc6f; }
.grid .pr, .legend .pr { background: #d7cdf5; }
table.grid td.q { opacity: 0.35; }
table.grid td:empty { background: #fff; }
.long { display: -webkit-box; -webkit-box-orient: vertical; -webkit-line-clamp: 2; line-clamp: 2; overflow: hidden;
  cursor: pointer; max-width: 12em; }  /* two lines of a long message, a tap or a click (focus) shows the rest;
  narrow, so the columns beside it (a gate's long name) get the width: rows half as tall */
.long:focus { display: block; outline: 1px dotted var(--line); }
table.grid td a { color: inherit; display: block; text-decoration: none; min-height: 1.4em; }
.legend span { display: inline-block; margin-right: 10px; } .legend b { display: inline-block; min-width: 18px;
  text-align: center; border: 1px solid var(--line); }
@media (max-width: 900px) {
  nav { position: static; width: auto; max-height: 40vh; border-right: 0; border-bottom: 1px solid var(--line); }
  main { margin-left: 0; padding: 12px 12px 60px; }
  td, th { overflow-wrap: anywhere; }   /* a narrow screen: a cell may break inside a word rather than scroll */
  .table-scroll td, .table-scroll th { overflow-wrap: normal; }  /* ... except in a table that scrolls */
  .table-scroll th { min-width: 6em; }
  nav { max-height: 30vh; }
}
"""
