"""The ledger page's one inline script: search and filter, and links into closed sections.

The page's Content-Security-Policy allows this script by the sha256 of its exact bytes
(SCRIPT_HASH), and nothing else: no other script, no network. What it does:
- the search box filters every row of a table marked `searchable` (equations, gates,
  perturbations, findings) by a fragment of its text, opens the sections holding a
  hit, and says how many rows match (#search-count, and data-search-hits on <body>);
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
    if (el) { reveal(el); el.style.scrollMarginTop = headerOver(el) + "px"; el.scrollIntoView(); }
  }
  function filter(query) {
    var q = query.trim().toLowerCase();
    var rows = document.querySelectorAll("table.searchable tbody tr");
    var hits = 0;
    for (var i = 0; i < rows.length; i++) {
      var hit = q === "" || rows[i].textContent.toLowerCase().indexOf(q) >= 0;
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
