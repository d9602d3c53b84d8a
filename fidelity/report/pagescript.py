"""The ledger page's one inline script: search and filter, links into closed sections, hovers.

The page's Content-Security-Policy allows this script by the sha256 of its exact bytes
(SCRIPT_HASH), and nothing else: no other script, no network. What it does:
- the search box filters the rows of every table (not the gate matrices): a query that
  is exactly an id the page holds (P3, an equation, a gate) shows the row that id names,
  only; any other query shows the rows holding every one of its words (fragments: `st_dou`
  finds test_double). It says how many rows match (#search-count, data-search-hits on
  <body>) and where: under the box, each section holding a match with its count (a link),
  and beside every heading its count or "no match". The rest is out of the way: a table
  with no match is hidden, a collapsed section with no match closes, one with a match
  opens. Then it takes the reader to the first match (below its table's sticky header):
  on load from `?q=`, on Enter, and while typing once the typing pauses, where the search
  box stays in view (the wide layout; on a phone the box would scroll away: Enter goes).
  Emptying the box shows every row again and opens the sections that were open before;
- `?q=fragment` in the page's address fills the box on load (so a link, or a headless
  browser, can open the page already filtered);
- following a link to an id inside a closed <details> opens it first, so the target
  is shown, not hidden; a table row is scrolled to just below its table's sticky header
  row (its scroll margin set to the header's height), not under it;
- hovers written once (html.py): the pointer on a mention gets the data-hover of what it
  links to as its title; on a grid cell, its column, the legend's words for its kind,
  its reading (data-r) and whether it is off target (class q).
Without the script (or with JavaScript off) the page reads the same, unfiltered, without
those hovers.
"""
from __future__ import annotations

import base64
import hashlib

SCRIPT = """
(function () {
  "use strict";
  var PAUSE_MS = 600;
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
  function matcher(q, rows) {
    var words = q.split(/\\s+/), exact = false;
    for (var j = 0; j < rows.length && q !== ""; j++) { if (ownIds(rows[j]).indexOf(q) >= 0) { exact = true; break; } }
    return function (row) {
      if (q === "") { return true; }
      if (exact) { return ownIds(row).indexOf(q) >= 0; }
      var text = row.textContent.toLowerCase();
      return words.every(function (w) { return text.indexOf(w) >= 0; });
    };
  }
  function shortName(h) {
    var text = h.firstChild ? h.firstChild.textContent : "", m = /\\(([^)]+)\\)$/.exec(text);
    return m ? m[1] : text;
  }
  // every heading in main with the matching rows under it (hits) and in its own tables (direct)
  function sections(hitsOf) {
    var out = [], open = [];
    var all = document.querySelectorAll("main h1, main h2, main h3, main h4, main table:not(.grid)");
    for (var i = 0; i < all.length; i++) {
      var el = all[i];
      if (el.tagName === "TABLE") {
        var n = hitsOf(el);
        for (var k = 0; k < open.length; k++) { open[k].hits += n; }
        if (open.length) { open[open.length - 1].direct += n; }
        continue;
      }
      var level = +el.tagName[1];
      while (open.length && open[open.length - 1].level >= level) { open.pop(); }
      var s = {heading: el, level: level, hits: 0, direct: 0, parent: open.length > 1 ? open[1].heading : null};
      out.push(s);
      open.push(s);
    }
    return out;
  }
  function mark(s, searching) {
    var badge = s.heading.querySelector("span.hits");
    if (badge) { badge.remove(); }
    if (!searching || s.level === 1) { return; }
    badge = document.createElement("span");
    badge.className = s.hits ? "hits" : "hits none";
    badge.textContent = s.hits ? s.hits + (s.hits === 1 ? " match" : " matches") : "no match";
    s.heading.appendChild(badge);
  }
  function where(list, searching) {
    var box = document.getElementById("search-where");
    box.textContent = "";
    if (!searching) { return; }
    list.forEach(function (s) {
      if (!s.direct) { return; }
      var a = document.createElement("a");
      a.href = "#" + s.heading.id;
      a.textContent = (s.parent ? shortName(s.parent) + " \u203a " : "") + shortName(s.heading) + ": " + s.direct;
      box.appendChild(a);
    });
  }
  function openSections(searching) {
    var all = document.querySelectorAll("main details.section");
    for (var i = 0; i < all.length; i++) {
      var d = all[i];
      if (searching && !d.hasAttribute("data-was-open")) { d.setAttribute("data-was-open", d.open ? "1" : "0"); }
      if (searching) {
        d.open = !!d.querySelector("table:not(.grid):not(.no-hits)");
      } else if (d.hasAttribute("data-was-open")) {
        d.open = d.getAttribute("data-was-open") === "1";
        d.removeAttribute("data-was-open");
      }
    }
  }
  function jump() {
    var row = document.querySelector("body.searching main table:not(.grid):not(.no-hits) tbody tr:not([hidden])");
    if (!row) { return; }
    reveal(row);
    row.style.scrollMarginTop = headerOver(row) + "px";
    row.scrollIntoView({block: "start"});
  }
  function filter(query) {
    var q = query.trim().toLowerCase(), searching = q !== "";
    var rows = document.querySelectorAll("main table:not(.grid) tbody tr");
    var hit = matcher(q, rows), hits = 0;
    for (var i = 0; i < rows.length; i++) {
      rows[i].hidden = !hit(rows[i]);
      if (!rows[i].hidden && searching) { hits++; }
    }
    var tables = document.querySelectorAll("main table:not(.grid)");
    for (var t = 0; t < tables.length; t++) {
      tables[t].classList.toggle("no-hits", searching && !tables[t].querySelector("tbody tr:not([hidden])"));
    }
    document.body.classList.toggle("searching", searching);
    openSections(searching);
    var list = sections(function (table) { return table.querySelectorAll("tbody tr:not([hidden])").length; });
    list.forEach(function (s) { mark(s, searching); });
    where(list, searching);
    var places = list.filter(function (s) { return s.direct; }).length;
    document.getElementById("search-count").textContent = !searching ? "" :
      hits + (hits === 1 ? " row matches" : " rows match") +
      (hits ? " in " + places + (places === 1 ? " section:" : " sections:") : "");
    document.body.setAttribute("data-search-hits", searching ? String(hits) : "");
  }
  function hoverOf(el) {
    if (el.tagName === "A") {
      var target = document.getElementById(decodeURIComponent(el.getAttribute("href").slice(1)));
      return target ? target.getAttribute("data-hover") || "" : "";
    }
    var th = el.closest("table").tHead.rows[0].cells[el.cellIndex];
    var b = el.closest("figure").querySelector(".legend b." + el.classList[0]);
    var r = el.getAttribute("data-r");
    return th.textContent.trim() + ": " + (b ? b.parentNode.textContent.slice(b.textContent.length).trim() : "") +
      (r ? "; reading " + r : "") + (el.classList.contains("q") ? " (off target: not expected to go red)" : "");
  }
  document.addEventListener("mouseover", function (ev) {
    var el = ev.target.closest && ev.target.closest("a.ref, table.grid tbody td");
    if (el && !el.title && (el.tagName === "A" || el.className)) {
      var h = hoverOf(el);
      if (h) { el.title = h; }
    }
  });
  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("search"), timer = null;
    var wide = function () { return getComputedStyle(document.querySelector("nav")).position === "fixed"; };
    box.addEventListener("input", function () {
      filter(box.value);
      clearTimeout(timer);   // wide() reads the layout: asked once the typing pauses, not on every keystroke
      timer = setTimeout(function () { if (wide()) { jump(); } }, PAUSE_MS);
    });
    box.addEventListener("keydown", function (ev) { if (ev.key === "Enter") { clearTimeout(timer); jump(); } });
    var q = new URLSearchParams(location.search).get("q");
    if (q) { box.value = q; filter(q); jump(); }
    window.addEventListener("hashchange", toHash);
    if (location.hash) { toHash(); }
    document.body.setAttribute("data-script", "ran");
  });
})();
"""

SCRIPT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
