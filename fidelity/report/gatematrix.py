"""A paper's gates x perturbations as an HTML grid (a blocks.Matrix): rows the gates, grouped
under the equations they hold, columns the paper's perturbations (each a link to its row in
the catalogue), a cell coloured by the evidence's outcome with the reading on hover.

A cell is "off target" (drawn faint) when the gate is not listed for the perturbation and
holds none of the equations it covers: nothing expects that gate to go red there.
The outcome codes are the PNG overview's (plots.MATRIX_CODES), so both read alike.
"""
from __future__ import annotations

from fidelity.report.anchors import eq_ref, gate_ref, ref_id
from fidelity.report.blocks import Matrix


def _cells(ledger: dict) -> dict:
    from fidelity.report.plots import matrix_series   # no matplotlib: the series are plain data

    return matrix_series(ledger)["cells"]


def build(p: dict, ledger: dict) -> Matrix | None:
    from fidelity.report.document import num
    from fidelity.report.plots import MATRIX_CODES

    cells = _cells(ledger)
    perts = [pid for pid in p["perturbations"] if any(pid in row for row in cells.values())]
    if not perts:
        return None
    records = {(e["gate"], e["perturbation"]): e for e in ledger["evidence"] if e["current"]}
    info = ledger["perturbations"]
    groups = []
    for e in p["equations"]:
        rows = []
        for gate in e["gates"]:
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
                letter, words = MATRIX_CODES[code]
                rec = records.get((gate, pid))
                hover = f"{pid} x {gate}: {words}"
                if rec and rec["reading"] is not None:
                    hover += f"; reading {num(rec['reading'], 9)}"
                if quiet:
                    hover += " (off target: not expected to go red)"
                out.append((code, letter, hover, quiet))
            if any(out):
                rows.append((gate_ref(gate), tuple(out)))
        if rows:
            groups.append(((eq_ref(e["id"], e["title"]), " ", e["title"]), tuple(rows)))
    columns = tuple((ref_id("pert", pid), pid, (info.get(pid) or {}).get("title", "")) for pid in perts)
    legend = tuple((k, code, words) for k, (code, words) in MATRIX_CODES.items())
    return Matrix(f"{p['id']}-gates", ("Gates (rows, under each equation they hold) x perturbations of "
                                       f"{p['id']} (columns); hover a cell for the outcome and the reading. "
                                       "Faint cells are off target: nothing expects that gate to go red there."),
                  columns, tuple(groups), legend)
