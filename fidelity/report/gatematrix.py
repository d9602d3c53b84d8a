"""A paper's gates x perturbations as an HTML grid (a blocks.Matrix): rows the gates, grouped
under the equations they hold, columns the paper's perturbations (each a link to its row in
the catalogue), a cell coloured by the evidence's outcome and lettered (the legend says what each letter
means, so a cell reads without hover, on a touch screen too); a cell with a row in Red to green links to
it (the reading and what the gate said), and its hover says the outcome and reading. A gate is one row,
under the group of the paper's equations it holds (all of them named in the group's heading).

A cell is "off target" (drawn faint) when the gate is not listed for the perturbation and
holds none of the equations it covers: nothing expects that gate to go red there.
The outcome codes are the PNG overview's (plots.MATRIX_CODES), so both read alike.
"""
from __future__ import annotations

from fidelity.report.anchors import eq_ref, evidence_id, gate_ref, ref_id
from fidelity.report.blocks import Matrix
from fidelity.report.inline import num


def _cells(ledger: dict) -> dict:
    from fidelity.report.plots import matrix_series   # no matplotlib: the series are plain data

    return matrix_series(ledger)["cells"]


def _by_equations_held(p: dict) -> list[tuple[list[dict], list[str]]]:
    """[(the paper's equations a gate holds, the gates that hold exactly those)], in the paper's order. A gate
    holding three equations is one row under the three, not three rows (issue 52: 285 rows for 80 gates)."""
    held: dict[str, list[int]] = {}
    for i, e in enumerate(p["equations"]):
        for gate in e["gates"]:
            held.setdefault(gate, []).append(i)
    groups: dict[tuple[int, ...], list[str]] = {}
    for gate, idx in held.items():
        groups.setdefault(tuple(idx), []).append(gate)
    return [([p["equations"][i] for i in idx], gates) for idx, gates in sorted(groups.items())]


def build(p: dict, ledger: dict) -> Matrix | None:
    from fidelity.report.plots import MATRIX_CODES

    cells = _cells(ledger)
    perts = [pid for pid in p["perturbations"] if any(pid in row for row in cells.values())]
    if not perts:
        return None
    records = {(e["gate"], e["perturbation"]): e for e in ledger["evidence"] if e["current"]}
    info = ledger["perturbations"]
    groups = []
    for eqs, gates in _by_equations_held(p):
        rows = []
        for gate in gates:
            row = cells.get(gate, {})
            gate_eqs = set((ledger["gates"].get(gate) or {}).get("equations") or [])
            out = []
            for pid in perts:
                code = row.get(pid)
                if code is None:
                    out.append(None)
                    continue
                pert = info.get(pid) or {}
                quiet = gate not in (pert.get("listed_gates") or []) and not gate_eqs & set(pert.get("covers") or [])
                rec = records.get((gate, pid))
                # the cell's hover (html: column, legend, reading, off target) is put together by the page's script
                value = num(rec["reading"], 9) if rec and rec["reading"] is not None else ""
                out.append((code, MATRIX_CODES[code][0], value, quiet, evidence_id(pid, gate)))
            if any(out):
                rows.append((gate_ref(gate), tuple(out)))
        if rows:
            heading = []
            for i, e in enumerate(eqs):
                heading += ([", "] if i else []) + [eq_ref(e["id"], e["title"]), " ", e["title"]]
            groups.append((tuple(heading), tuple(rows)))
    columns = tuple((ref_id("pert", pid), pid, (info.get(pid) or {}).get("title", "")) for pid in perts)
    legend = tuple((k, code, words) for k, (code, words) in MATRIX_CODES.items())
    return Matrix(f"{p['id']}-gates", ("Gates (rows, each once, under the equations it holds) x perturbations of "
                                       f"{p['id']} (columns); each letter is an outcome (legend below); a cell that "
                                       "links opens its record in Red to green: the reading and what the gate said. "
                                       "Faint cells are off target: nothing expects that gate to go red there."),
                  columns, tuple(groups), legend)
