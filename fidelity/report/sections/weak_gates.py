"""A paper's Weak gates: each separation between a right value and a predicted wrong one, in
units of the gate's tolerance, and why one is not computed.
"""
from __future__ import annotations

from fidelity.report.blocks import Code, Document, Heading, Para, Table, Tag, anchor
from fidelity.report.inline import DASH, gate_codes, num, reading


def section(doc: Document, p: dict) -> None:
    doc.add(Heading(3, "Weak gates", anchor(p["id"], "weak-gates"), collapsed=True))
    rows = p["separations"]
    if not rows:
        doc.add(Para("No separation computed: no fixture of this paper has predictions and no gate records one."))
        return
    weak = [r for r in rows if r["weak"]]
    computed = [r for r in rows if r["separation"] is not None]
    doc.add(Para((f"{len(weak)} weak of {len(computed)} computed separations; {len(rows) - len(computed)} not "
                  "computed. Separation = relative distance of the predicted value from the expected one / the "
                  "gate's relative tolerance. It is taken from a gate that records it (a reading whose name "
                  "contains 'separation'), or computed where a gate that reads the fixture states its tolerance "
                  "(a reading named 'rtol'); a distance of 0 is weak under any tolerance. Nothing else is "
                  "guessed.")))

    def judged(r):
        if r["separation"] is None:
            return (Tag("not computed", "skipped"), ": " + r["why_not"])
        tag = Tag("WEAK", "failed") if r["weak"] else Tag("ok", "passed")
        if r["source"].startswith("distance 0"):
            return (tag, ": the prediction equals the expected value; this fixture cannot tell them apart")
        return (tag, " (" + r["source"] + ")")

    rows = sorted(rows, key=lambda r: (r["separation"] is None, r["fixture"] or "", r["prediction"], r["field"] or ""))
    doc.add(Table(("fixture", "prediction", "field", "relative distance", "gate (reading it)", "gate rtol",
                   "separation", "verdict"),
                  tuple((Code(r["fixture"]) if r["fixture"] else DASH,
                         (Code(r["prediction"]), (" " + r["description"]) if r.get("description") else ""),
                         r["field"] or DASH,
                         reading(r["relative_distance"], 6), gate_codes([r["gate"]] if r["gate"] else r["readers"]),
                         num(r["rtol"]), num(r["separation"], 4), judged(r)) for r in rows)))
