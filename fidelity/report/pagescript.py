"""The ledger page's one inline script: search and filter, and links into closed sections.

The page's Content-Security-Policy allows this script by the sha256 of its exact bytes
(SCRIPT_HASH), and nothing else: no other script, no network. What it does:
- the search box filters the rows of every table (not the gate matrices): a query that
  is exactly an id the page holds (P3, an equation, a gate) shows the row that id names,
  only; any other query shows the rows holding every one of its words (fragments: `st_dou`
  finds test_double). It opens the sections holding a hit and says how many rows match
  (#search-count, and data-search-hits on <body>);
- `?q=fragment` in the page's address fills the box on load (so a link, or a headless
  browser, can open the page already filtered);
- following a link to an id inside a closed <details> opens it first, so the target
  is shown, not hidden; a table row is scrolled to just below its table's sticky header
  row (its scroll margin set to the header's height), not under it.
Without the script (or with JavaScript off) the page reads the same, unfiltered.
"""
from __future__ import annotations

import base64
import hashlib

SCRIPT = """
(function () {
  "use strict";
  function reveal(el) {
    for (var d = el; d; d = d.parentElement) { if (d.tagName === "DETAILS") { d.open = true; } }
  }
  function headerOver(el) {
    var body = el.closest("tbody"), table = body && body.closest("table");
    return table && table.tHead ? table.tHead.getBoundingClientRect().height : 0;
  }
  function toHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    if (!el) { return; }
    reveal(el);
    // a row's id sits in one of its cells, below the row's top: the margin covers the header and that gap,
    // so the row lands below the header, whether this or the browser's own scroll to the id comes last
    var row = el.closest("tbody tr") || el;
    var gap = el.getBoundingClientRect().top - row.getBoundingClientRect().top;
    el.style.scrollMarginTop = (headerOver(el) + Math.max(0, gap)) + "px";
    el.scrollIntoView();
  }
  function ownIds(row) {
    var spans = row.querySelectorAll("span[id]"), ids = [];
    for (var i = 0; i < spans.length; i++) { ids.push(spans[i].textContent.trim().toLowerCase()); }
    return ids;
  }
  function filter(query) {
    var q = query.trim().toLowerCase();
    var words = q.split(/\\s+/);
    var rows = document.querySelectorAll("main table:not(.grid) tbody tr");
    var exact = false;
    for (var j = 0; j < rows.length && q !== ""; j++) { if (ownIds(rows[j]).indexOf(q) >= 0) { exact = true; break; } }
    var hits = 0;
    for (var i = 0; i < rows.length; i++) {
      var text = rows[i].textContent.toLowerCase();
      var hit = q === "" || (exact ? ownIds(rows[i]).indexOf(q) >= 0
                                   : words.every(function (w) { return text.indexOf(w) >= 0; }));
      rows[i].hidden = !hit;
      if (hit && q !== "") { hits++; reveal(rows[i]); }
    }
    var count = document.getElementById("search-count");
    count.textContent = q === "" ? "" : hits + (hits === 1 ? " row matches" : " rows match");
    document.body.setAttribute("data-search-hits", q === "" ? "" : String(hits));
  }
  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("search");
    box.addEventListener("input", function () { filter(box.value); });
    var q = new URLSearchParams(location.search).get("q");
    if (q) { box.value = q; filter(q); }
    window.addEventListener("hashchange", toHash);
    if (location.hash) { toHash(); }
    document.body.setAttribute("data-script", "ran");
  });
})();
"""

SCRIPT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
