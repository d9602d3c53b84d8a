"""The forced failure (forced_red_gate.py) in a child of its own: a gate that must be seen red by its
own assertion with its reading, or no red of the run can be trusted."""
from __future__ import annotations

import concurrent.futures as cf
from pathlib import Path

from fidelity.evidence import jsonio
from fidelity.perturb import launch
from fidelity.perturb.stages.children import Children
from fidelity.perturb.stages.settings import Settings
from fidelity.targets import locate


def submit_forced_failure(children: Children) -> cf.Future:
    """forced_red_gate.py, in a child: a gate that must be seen red by its own assertion with its
    reading, or no red of this run can be trusted."""
    gate = _forced_red_gate(children.s)
    return children.submit("forced-failure", children.job([str(gate)], rootdir=gate.parent.parent.parent),
                           children.s.timeout_s)


def _forced_red_gate(s: Settings) -> Path:
    """The forced_red_gate.py of the `fidelity` a child imports: a project that holds its own copy of the
    package (this repository, checked by a fidelity installed elsewhere) has its children import that
    copy, and pytest cannot collect another file under the same module name."""
    return Path(locate.find_source("fidelity.perturb.forced_red_gate",
                                   locate.child_search_path(str(s.root), s.pythonpath)))


def check_forced(child: launch.ChildRun) -> dict:
    from fidelity.perturb.forced_red_gate import FORCED_READING

    items = child.items
    it = items[0] if len(items) == 1 else None
    reading = jsonio.decode_float((it or {}).get("readings", {}).get("reading")) if it else None
    seen = (
        child.status == "ok"
        and it is not None
        and it["outcome"] == "failed"
        and it.get("kind") == "assertion"
        and reading is not None
        and reading == FORCED_READING
    )
    if seen:
        detail = f"{it['exc_type']}: {(it.get('message') or '').splitlines()[0] if it.get('message') else ''}"
    elif child.status != "ok":
        detail = f"child {child.status_text}: {child.output_tail[-1500:]}"
    elif it is None:
        detail = f"expected one result, got {len(items)}"
    else:
        detail = (f"outcome {it['outcome']}, kind {it.get('kind')}, reading {reading} "
                  f"(expected failed by assertion with reading {FORCED_READING})")
    return {"seen_red": seen, "outcome": it["outcome"] if it else None, "kind": it.get("kind") if it else None,
            "reading": jsonio.encode_float(reading), "expected_reading": FORCED_READING, "detail": detail,
            "child": child.to_json()}
