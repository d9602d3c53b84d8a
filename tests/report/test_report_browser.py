"""ledger.html in a real browser (headless Chromium): its tables and images are there, the images
decode under the page's own Content-Security-Policy, and the page requests nothing from the network.

Skipped, with the reason, when Chromium is not installed. CI installs it with:
    apt-get install -y chromium

The network check reads Chromium's net log (--log-net-log). Chromium's own background
traffic (updates, time, accounts) is there too, so only requests whose network isolation
key is the page's own (file://) count. A probe page with one http:// image proves the
check can see a request at all (host resolution is mapped to NOTFOUND: nothing leaves).
"""
from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from fidelity.report import html as html_page
from fidelity.report import outputs, plots
from fidelity.report.anchors import ref_id

from ledger_toy import G_DOUBLE, P1_SAID, make_toy

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (CI: apt-get install -y chromium)")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-extensions",
         '--host-resolver-rules=MAP * ~NOTFOUND']


class _Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: dict[str, int] = {}
        self.imgs: list[dict] = []
        self.ids: set[str] = set()
        self.text: list[str] = []
        self.body: dict = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag == "img":
            self.imgs.append(a)
        if tag == "body":
            self.body = a
        if "id" in a:
            self.ids.add(a["id"])

    def handle_data(self, data):
        self.text.append(data)


def chromium(args: list[str], url: str, tmp: Path) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp / 'profile'}", *args, url],
                          capture_output=True, text=True, timeout=180)


def page_requests(netlog: Path) -> list[str]:
    """URLs the page itself asked for (requests isolated under its file:// top frame), except file: and data:."""
    log = json.loads(netlog.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = []
    for e in log["events"]:
        p = e.get("params") or {}
        if e["type"] == start and "file://" in str(p.get("network_isolation_key", "")):
            if not str(p.get("url", "")).startswith(("file:", "data:")):
                urls.append(p["url"])
    return urls


def probe_copy(page: Path, copy: Path, script: str) -> Path:
    """A copy of the page that also runs `script` (a probe writing what it measures into the DOM), allowed by
    its own sha256 beside the page's: the rest of the page's policy (img-src data:, no network) stays in force."""
    text = page.read_text()
    assert html_page.CSP in text
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    policy = html_page.CSP.replace("script-src ", f"script-src 'sha256-{digest}' ")
    copy.write_text(text.replace(html_page.CSP, policy).replace("</body>", f"<script>{script}</script></body>"))
    return copy


@pytest.fixture(scope="module")
def rendered_page(tmp_path_factory) -> Path:
    """The toy's ledger page, rendered once for this file's tests (about a second each)."""
    toy = make_toy(tmp_path_factory.mktemp("ledger-page"))
    toy.standard_evidence()
    out = toy.root.parent / "out"
    opts = outputs.Options(repo_root=toy.root, reports_dir=toy.reports, out_dir=out,
                           fixtures_dir=REPO / "fixtures", gates="none", html=True)
    files, _ = outputs.generate(toy.catalogue(), opts)
    outputs.write(files, out)
    return out / "ledger.html"


@pytest.fixture
def page(rendered_page):
    """The shared page; each test opens it, or a copy of its own, and leaves it as the next one reads it."""
    before = rendered_page.read_bytes()
    yield rendered_page
    assert rendered_page.read_bytes() == before, "a test changed the shared ledger page"


def test_the_probe_shows_that_a_network_request_would_be_seen(tmp_path):
    probe = tmp_path / "probe.html"
    probe.write_text('<!DOCTYPE html><html><body><img src="http://fidelity-probe.invalid/x.png"></body></html>')
    netlog = tmp_path / "probe.netlog.json"
    proc = chromium([f"--log-net-log={netlog}", "--dump-dom"], probe.as_uri(), tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert page_requests(netlog) == ["http://fidelity-probe.invalid/x.png"]


def test_ledger_page_requests_nothing_from_the_network(page, tmp_path):
    netlog = tmp_path / "page.netlog.json"
    proc = chromium([f"--log-net-log={netlog}", "--dump-dom"], page.as_uri(), tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert page_requests(netlog) == []
    dom = _Dom()
    dom.feed(proc.stdout)
    # summary, equations, deltas, claims, unchecked claims, red to green: all parsed and in the DOM
    assert dom.tags.get("table", 0) == page.read_text().count("<table") >= 6
    assert {"paper-toy", "toy-red-to-green", "toy-weak-gates", "toy-claim-ledger", "plots"} <= dom.ids
    text = " ".join(dom.text)
    assert "PREDICTED ONLY" in text and "OBSERVED" in text
    if importlib.util.find_spec("matplotlib") is None:
        assert "plots unavailable" in text
    else:
        assert len(dom.imgs) == 1 and dom.imgs[0]["src"].startswith("data:image/png;base64,")  # separation


@pytest.mark.parametrize("which", ["toy", "this project's ledger"])
def test_images_decode_under_the_pages_own_policy(which, page, tmp_path):
    """The toy draws one plot (separation); this project's committed ledger (kept current by `report --check`)
    draws every plot of plots.NAMES."""
    pytest.importorskip("matplotlib")
    if which != "toy":
        page = REPO / "reports" / "ledger.html"
    # A copy that may run one inline script (and nothing more: the page's img-src data: stays in force)
    # to write each image's decoded size into the DOM.
    copy = probe_copy(page, tmp_path / "decode.html",
                      "window.addEventListener('load', () => { for (const i of document.images) "
                      "i.setAttribute('data-natural', i.naturalWidth + 'x' + i.naturalHeight); "
                      "document.body.setAttribute('data-loaded', 'yes'); });")
    proc = chromium(["--virtual-time-budget=10000", "--dump-dom"], copy.as_uri(), tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = _Dom()
    dom.feed(proc.stdout)
    assert dom.body.get("data-loaded") == "yes"
    sizes = [i.get("data-natural") for i in dom.imgs]
    expected = 1 if which == "toy" else len(plots.NAMES)
    assert len(sizes) == expected and all(s and s != "0x0" for s in sizes), sizes


def test_screenshot(page, tmp_path):
    shot = tmp_path / "ledger.png"
    proc = chromium([f"--screenshot={shot}", "--window-size=1400,3000"], page.as_uri(), tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 20_000


class _Links(HTMLParser):
    """In-page links, ids, and the rows of the tables the search filters, every one but the gate matrices
    (hidden or not, with their text)."""

    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()
        self.rows: list[dict] = []
        self._searchable = 0
        self._row = None
        self._in_body = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and (a.get("href") or "").startswith("#"):
            self.hrefs.append(a["href"][1:])
        if tag == "table" and "grid" not in (a.get("class") or "").split():
            self._searchable += 1
        if tag == "tbody":
            self._in_body = True
        if tag == "tr" and self._searchable and self._in_body:
            self._row = {"hidden": "hidden" in a, "text": ""}
            self.rows.append(self._row)

    def handle_endtag(self, tag):
        if tag == "td" and self._row is not None:
            self._row["text"] += "\t"  # cells apart: a row's first cell is text.split("\t")[0]
        if tag == "table" and self._searchable:  # a grid's end closes a grid: nothing to count down
            self._searchable -= 1
        if tag == "tbody":
            self._in_body, self._row = False, None

    def handle_data(self, data):
        if self._row is not None:
            self._row["text"] += data


def test_every_in_page_link_resolves_to_an_element_id(page, tmp_path):
    """Read from the DOM Chromium built (--dump-dom), not from the file's text."""
    proc = chromium(["--dump-dom"], page.as_uri(), tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = _Links()
    dom.feed(proc.stdout)
    assert len(dom.hrefs) > 30                                      # equations, gates, perturbations are linked
    assert {"eq-toy-eq1", ref_id("gate", G_DOUBLE), "pert-p1"} <= dom.ids
    assert sorted({h for h in dom.hrefs if h not in dom.ids}) == []


def test_search_from_the_address_finds_a_gate_by_a_fragment_of_its_name(page, tmp_path):
    """The page's own script (allowed by its hash, nothing added) reads `?q=` on load, fills the search box and
    filters; --dump-dom then shows which rows it hid. `--virtual-time-budget` lets the script run first."""
    proc = chromium(["--virtual-time-budget=5000", "--dump-dom"], page.as_uri() + "?q=st_dou", tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = _Dom()
    dom.feed(proc.stdout)
    assert dom.body.get("data-script") == "ran"
    rows = _Links()
    rows.feed(proc.stdout)
    shown = [r["text"] for r in rows.rows if not r["hidden"]]
    assert shown and all("st_dou" in t for t in shown), shown
    assert any(t.startswith("test_toy.py::test_double") for t in shown)         # the gate's own row
    assert any(r["hidden"] and "test_inc" in r["text"] for r in rows.rows)        # others are filtered out
    assert int(dom.body["data-search-hits"]) == len(shown)


def test_searching_an_id_exactly_shows_the_one_row_it_names_and_words_match_anywhere(page, tmp_path):
    """Issue 33: `P3` matched every row mentioning P30..P39 or P3 in passing (104 rows), `P12` 81."""
    def shown(query):
        proc = chromium(["--virtual-time-budget=5000", "--dump-dom"], page.as_uri() + "?q=" + query, tmp_path)
        assert proc.returncode == 0, proc.stderr[-2000:]
        rows = _Links()
        rows.feed(proc.stdout)
        return [r["text"] for r in rows.rows if not r["hidden"]], rows
    exact, rows = shown("P3")
    assert [t.split("\t")[0] for t in exact] == ["P3"], exact
    assert sum("P3" in r["text"] for r in rows.rows) > 1            # other rows mention it: exact is not substring
    words, _ = shown("st_dou%20toy")                                 # two words, both in the row
    assert words and all("st_dou" in t and "toy" in t.lower() for t in words), words


def _framed(page: Path, tmp: Path, width: int, height: int, script: str, fragment: str = "") -> dict:
    """Open the page, unchanged, in an iframe `width` x `height` px of a probe page, run `script` (the body of an
    async function of the frame's window `w` and document `d`, returning a JSON-able value) once it has loaded, and
    return that value: the probe writes it into its own DOM, read with --dump-dom. The frame is exactly as wide
    as asked, which a headless window is not (it has a minimum width). --allow-file-access-from-files lets the
    probe, a file: page, read the frame, another file: page."""
    probe = tmp / "frame.html"
    probe.write_text(f'<!DOCTYPE html><html><body><iframe id="f" src="{page.as_uri()}{fragment}" width="{width}" '
                     f'height="{height}" style="border:0"></iframe><script>'
                     'document.getElementById("f").addEventListener("load", () => {'
                     ' const w = document.getElementById("f").contentWindow, d = w.document;'
                     f' (async () => {{ {script} }})().then(out =>'
                     ' document.body.setAttribute("data-out", JSON.stringify(out))); });'
                     "</script></body></html>")
    proc = chromium(["--allow-file-access-from-files", "--virtual-time-budget=8000", "--dump-dom"],
                    probe.as_uri(), tmp)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = _Dom()
    dom.feed(proc.stdout)
    assert "data-out" in dom.body, proc.stdout[-2000:]
    return json.loads(dom.body["data-out"])


def test_nothing_scrolls_sideways_at_420_px(page, tmp_path):
    out = _framed(page, tmp_path, 420, 900,
                  "for (const x of d.querySelectorAll('details')) x.open = true;"   # every section, open
                  "const e = d.documentElement, nav = d.querySelector('nav').getBoundingClientRect();"
                  "return {client: e.clientWidth, scroll: e.scrollWidth, navTop: nav.top, navWidth: nav.width,"
                  " mainLeft: d.querySelector('main').getBoundingClientRect().left};")
    assert out["client"] <= 420
    assert out["scroll"] <= out["client"], out                                 # no sideways scroll
    assert out["mainLeft"] < 20 and out["navWidth"] > 300, out                 # the sidebar sits above, full width


def test_table_headers_stay_in_view_while_the_table_scrolls(page, tmp_path):
    out = _framed(page, tmp_path, 1200, 120,
                  "for (const x of d.querySelectorAll('details')) x.open = true;"
                  "const t = [...d.querySelectorAll('main table')].sort((a, b) => b.offsetHeight - a.offsetHeight)[0];"
                  "const top = t.getBoundingClientRect().top + w.scrollY;"
                  "w.scrollTo(0, top + t.offsetHeight / 2);"
                  "return {th: t.querySelector('thead th').getBoundingClientRect().top, height: t.offsetHeight,"
                  " tableTop: t.getBoundingClientRect().top};")
    assert out["height"] > 200 and out["tableTop"] < -100, out                 # scrolled well into the table
    assert abs(out["th"]) < 1, out                                             # its header row still at the top


def test_a_link_to_a_table_row_lands_with_the_row_below_the_sticky_header(page, tmp_path):
    """Issue 33: `#pert-p3` showed P4 first, P3 under the header row. The frame opens the page at a row of
    the longest table whose rows carry ids, far enough down that the window must scroll to it."""
    probe = ("const r = d.getElementById(w.location.hash.slice(1)), t = r.closest('table');"
             "const head = t.tHead.rows[0].cells[0].getBoundingClientRect(), row = r.getBoundingClientRect();"
             "return {rowTop: row.top, rowBottom: row.bottom, headBottom: head.bottom, scrolled: w.scrollY,"
             " height: w.innerHeight};")
    dom = _Links()
    dom.feed(page.read_text())
    target = "pert-p3"
    assert target in dom.ids
    out = _framed(page, tmp_path, 1200, 400, probe, fragment=f"#{target}")
    assert out["scrolled"] > 0, out                                            # the page moved to the row
    assert out["rowTop"] >= out["headBottom"] - 0.5, out                       # not under the (sticky) header row
    assert out["rowBottom"] <= out["height"], out                              # and in view


def test_a_long_message_shows_two_lines_and_the_rest_on_a_tap_at_420_px(page, tmp_path):
    """What a gate said can run to a paragraph; a table of a thousand such rows was 190,000 px tall. Two lines
    show; a tap (the element takes the focus) shows the rest, with no hover."""
    probe = ("for (const x of d.querySelectorAll('details')) x.open = true;"
             "const m = d.querySelector('span.long'), line = parseFloat(w.getComputedStyle(m).lineHeight);"
             "const before = m.getBoundingClientRect().height; m.focus();"
             "return {text: m.textContent, line: line, before: before, after: m.getBoundingClientRect().height,"
             " full: m.scrollHeight};")
    out = _framed(page, tmp_path, 420, 900, probe)
    assert out["text"] == P1_SAID, out
    assert out["before"] <= 2 * out["line"] + 1, out                  # two lines of a longer message
    assert out["after"] > out["before"] and out["after"] >= out["full"] - 1, out  # tapped: all of it


def test_a_grid_cell_reads_without_hover_and_a_tap_on_it_lands_on_its_record_in_view_at_420_px(page, tmp_path):
    """Issue 33: the grid's cells explained themselves only on hover (no touch). Each cell is a letter the legend
    names; a cell with a record in Red to green links to it, and the row it lands on says the reading and what
    the gate said, below the sticky header."""
    probe = ("for (const x of d.querySelectorAll('details')) x.open = true;"
             "const cells = [...d.querySelectorAll('table.grid td:not(:empty)')];"
             "const legend = [...d.querySelectorAll('.legend b')].map(b => b.textContent);"
             "const link = d.querySelector('table.grid td.ca a');"
             "link.click();"
             "await new Promise(done => w.addEventListener('hashchange', () => setTimeout(done, 50), {once: true}));"
             "const r = d.getElementById(link.getAttribute('href').slice(1)).closest('tr'), t = r.closest('table');"
             "const head = t.tHead.rows[0].cells[0].getBoundingClientRect(), row = r.getBoundingClientRect();"
             "return {letters: cells.map(c => c.textContent.trim()), legend: legend, hash: w.location.hash,"
             " row: [...r.cells].map(c => c.textContent), head: [...t.tHead.rows[0].cells].map(c => c.textContent),"
             " rowTop: row.top, rowBottom: row.bottom, headBottom: head.bottom,"
             " height: w.innerHeight};")
    out = _framed(page, tmp_path, 420, 900, probe)
    assert out["letters"] and set(out["letters"]) <= set(out["legend"]), out   # every cell: a letter the legend names
    assert out["hash"].startswith("#evidence-p1-"), out                         # P1 x test_double, caught
    record = dict(zip(out["head"], out["row"]))
    assert record["what the gate said"] == P1_SAID, record
    assert record["observed red reading"] == "0.5", record                     # 0.5000001 to the digits that matter
    assert out["rowTop"] >= out["headBottom"] - 0.5 and out["rowBottom"] <= out["height"], out


# ---------------------------------------------------------------- issue 52: a ledger a reader can act on

_SEARCHED = ("const rows = [...d.querySelectorAll('main table:not(.grid) tbody tr')], shown = rows.filter(r => !r.hidden);"
             "const first = shown[0], t = first.closest('table');"
             "const head = t.tHead.rows[0].cells[0].getBoundingClientRect(), row = first.getBoundingClientRect();"
             "const tables = [...d.querySelectorAll('main table:not(.grid)')].filter(x => x.getClientRects().length);"
             "return {scrolled: w.scrollY, rowTop: row.top, rowBottom: row.bottom, headBottom: head.bottom,"
             " height: w.innerHeight, shown: shown.map(r => r.cells[0].textContent), hidden: rows.length - shown.length,"
             " emptyTablesShown: tables.filter(x => !x.querySelector('tbody tr:not([hidden])')).length,"
             " openWithoutMatch: [...d.querySelectorAll('main details.section')].filter(x => x.open"
             "   && !x.querySelector('table:not(.grid) tbody tr:not([hidden])')).length,"
             " badges: Object.fromEntries([...d.querySelectorAll('main span.hits')].map(b => [b.parentElement.id,"
             "   b.textContent])),"
             " where: [...d.querySelectorAll('#search-where a')].map(a => [a.getAttribute('href'), a.textContent]),"
             " count: d.getElementById('search-count').textContent, hits: d.body.dataset.searchHits};")


@pytest.mark.parametrize("width", [420, 1366])
def test_search_takes_the_reader_to_the_first_match_with_the_rest_out_of_the_way(width, page, tmp_path):
    """Issue 52: searching "mhc.eq3" said "1 row matches" and left the reader at the top of the page, above
    tables emptied to their headers. Now the page scrolls to the first matching row (below its sticky header),
    hides each table with no match, closes each collapsed section with none, and says where the matches are:
    beside each heading, and under the box, a link per section with its count."""
    out = _framed(page, tmp_path, width, 400, _SEARCHED, fragment="?q=P3")
    assert out["shown"] == ["P3"] and out["hidden"] > 10, out                  # the one row P3 names
    assert out["scrolled"] > 0, out                                            # taken to it ...
    assert out["rowTop"] >= out["headBottom"] - 0.5 and out["rowBottom"] <= out["height"], out   # ... in view
    assert out["emptyTablesShown"] == 0 and out["openWithoutMatch"] == 0, out  # the rest out of the way
    assert out["badges"]["toy-perturbations"] == "1 match" and out["badges"]["paper-toy"] == "1 match", out
    assert out["badges"]["toy-red-to-green"] == "no match" and out["badges"]["summary"] == "no match", out
    assert out["where"] == [["#toy-perturbations", "toy \u203a Perturbations: 1"]], out
    assert out["count"] == "1 row matches in 1 section:" and out["hits"] == "1", out


def test_search_counts_each_section_and_the_counts_add_up(page, tmp_path):
    out = _framed(page, tmp_path, 1366, 600, _SEARCHED, fragment="?q=st_dou")
    counts = [int(text.rsplit(": ", 1)[1]) for _, text in out["where"]]
    assert len(counts) > 1 and sum(counts) == len(out["shown"]) == int(out["hits"]), out
    for href, text in out["where"]:
        section = href[1:]
        assert out["badges"][section].split()[0] == text.rsplit(": ", 1)[1], (section, out["badges"])
    assert out["emptyTablesShown"] == 0 and out["openWithoutMatch"] == 0, out


def test_emptying_the_search_shows_every_row_and_the_sections_as_they_were(page, tmp_path):
    out = _framed(page, tmp_path, 1366, 600,
                  "const open = () => [...d.querySelectorAll('main details.section')].map(x => x.open);"
                  "const before = open(), box = d.getElementById('search');"
                  "box.value = 'P3'; box.dispatchEvent(new w.Event('input'));"
                  "const during = open(); box.value = ''; box.dispatchEvent(new w.Event('input'));"
                  "return {before: before, during: during, after: open(),"
                  " hidden: d.querySelectorAll('main tr[hidden]').length,"
                  " badges: d.querySelectorAll('main span.hits').length, where: d.getElementById('search-where')"
                  " .children.length, searching: d.body.classList.contains('searching')};")
    assert out["during"] != out["before"] and out["after"] == out["before"], out
    assert out["hidden"] == out["badges"] == out["where"] == 0 and not out["searching"], out


_HEADER_WORDS = ("const h = d.getElementById('summary'), t = h.parentElement.querySelector("
                 "'h2#summary ~ table, h2#summary ~ .table-scroll > table');"
                 "const broken = [];"
                 "for (const th of t.tHead.rows[0].cells) {"
                 "  const node = th.firstChild, text = node.textContent; let at = 0;"
                 "  for (const word of text.split(/\\s+/)) {"
                 "    const start = text.indexOf(word, at), r = d.createRange(); at = start + word.length;"
                 "    r.setStart(node, start); r.setEnd(node, at);"
                 "    const lines = new Set([...r.getClientRects()].map(x => Math.round(x.top)));"
                 "    if (lines.size > 1) broken.push(word);"
                 "  }"
                 "}"
                 "const box = t.parentElement, e = d.documentElement;"
                 "return {broken: broken, headers: t.tHead.rows[0].cells.length, pageScroll: e.scrollWidth - e.clientWidth,"
                 " boxScroll: box.scrollWidth - box.clientWidth, firstColumnLeft: t.rows[1].cells[0]"
                 " .getBoundingClientRect().left, boxLeft: box.getBoundingClientRect().left,"
                 " scrolled: (box.scrollLeft = 10000, box.scrollLeft),"
                 " firstColumnLeftScrolled: t.rows[1].cells[0].getBoundingClientRect().left};")


@pytest.mark.parametrize("width", [420, 1366])
def test_the_summary_headers_keep_their_words_whole(width, page, tmp_path):
    """Issue 52: at 420 px the Summary's ten headers broke letter by letter. Each word of a header now stays on
    one line; at 420 px the table scrolls sideways in its own box (the page does not), the paper column kept in
    view; at 1366 px it fits."""
    out = _framed(page, tmp_path, width, 900, _HEADER_WORDS)
    assert out["headers"] == 10 and out["broken"] == [], out
    assert out["pageScroll"] <= 0, out
    if width == 420:
        assert out["boxScroll"] > 0 and out["scrolled"] > 0, out                 # the table scrolls in its box
        assert abs(out["firstColumnLeftScrolled"] - out["boxLeft"]) < 1, out      # the paper column stays
    else:
        assert out["boxScroll"] <= 0, out


def test_hovers_written_once_are_shown_where_the_pointer_is(page, tmp_path):
    """The page writes a mention's hover once (on what it names) and a grid cell's from its column, kind and
    reading (issue 52: 2.3 MB of title attributes); the script sets each as the title under the pointer."""
    out = _framed(page, tmp_path, 1366, 600,
                  "for (const x of d.querySelectorAll('details')) x.open = true;"
                  "const over = el => { el.dispatchEvent(new w.MouseEvent('mouseover', {bubbles: true}));"
                  " return el.title; };"
                  "const cell = d.querySelector('table.grid td.ca a'),"
                  " gate = d.querySelector('main table:not(.grid) a.ref[href=\"#GATE\"]');"
                  "return {cell: (over(cell), cell.closest('td').title), gate: over(gate),"
                  " column: over(d.querySelector('table.grid thead a.ref[href=\"#pert-p1\"]'))};"
                  .replace("GATE", ref_id("gate", G_DOUBLE)))
    assert out["cell"] == "P1: red by assertion, green after; reading 0.5000001", out
    assert out["gate"] == G_DOUBLE, out
    assert out["column"] == "double triples", out                             # P1's title, from the spec


@pytest.mark.parametrize("width, how", [(1366, "pause"), (420, "enter")])
def test_typing_a_query_takes_the_reader_to_the_first_match(width, how, page, tmp_path):
    """Typed into the box: where the box stays in view (the wide layout) a pause in the typing is enough; on a phone
    the box would scroll away under the reader's fingers, so Enter takes them there."""
    out = _framed(page, tmp_path, width, 400,
                  "const box = d.getElementById('search'); box.focus();"
                  "for (const q of ['P', 'P3']) { box.value = q; box.dispatchEvent(new w.Event('input')); }"
                  "const before = w.scrollY;"
                  f"if ('{how}' === 'enter') box.dispatchEvent(new w.KeyboardEvent('keydown', {{key: 'Enter'}}));"
                  "await new Promise(done => setTimeout(done, 1500));" + _SEARCHED.replace("return {", "return {before,"))
    assert out["shown"] == ["P3"] and out["before"] == 0 and out["scrolled"] > 0, out
    assert out["rowTop"] >= out["headBottom"] - 0.5 and out["rowBottom"] <= out["height"], out
