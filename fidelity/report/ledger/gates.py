"""The ledger's gates: one row per gate, from the gate run and the evidence entries (its equations,
run, fixtures read, tolerance, separations, and whether current evidence accepts it).
"""
from __future__ import annotations

from pathlib import Path

from fidelity.report.ledger.terms import paper_of_equation, perturbation_key
from fidelity.report.shown_paths import display_path


def gate_rows(cat, entries: list[dict], by_gate: dict[str, list[dict]], gate_run: dict | None,
           repo_root: Path) -> dict[str, dict]:
    gates: dict[str, dict] = {}

    def gate(gid: str) -> dict:
        return gates.setdefault(gid, {"gate": gid, "file": gid.split("::", 1)[0], "equations": set(),
                                      "run": None, "fixtures_read": set(), "rtol": None, "separations": {},
                                      "accepted": False, "accepted_by": set(), "stale_only": False,
                                      "mechanism": None, "gate_class": None})

    for row in (gate_run or {}).get("gates", []):
        g = gate(row["gate"])
        g["equations"].update(row.get("equations", []))
        g["run"] = {"status": row["status"], "instances": row.get("instances"), "subjects": row.get("subjects", {}),
                    "failed": row.get("failed", [])}
        g["fixtures_read"].update(display_path(Path(repo_root) / f, repo_root) for f in row.get("fixtures_read", []))
        g["rtol"] = row.get("rtol")
        g["separations"] = dict(row.get("separations") or {})
        g["mechanism"], g["gate_class"] = row.get("mechanism"), row.get("gate_class")
    for e in entries:
        g = gate(e["gate"])
        g["equations"].update(e["equations"])
        if e.get("gate_file"):
            g["file"] = e["gate_file"]
        if e["current"]:
            g["fixtures_read"].update(e["fixtures"])
            if g["rtol"] is None and e.get("rtol") is not None:
                g["rtol"] = e["rtol"]
            if gate_run is None:
                for name, value in e["separations"].items():
                    g["separations"][name] = min(value, g["separations"].get(name, value))
            if e["accepts"]:
                g["accepted"] = True
                g["accepted_by"].add(e["perturbation"])
    for g in gates.values():
        has = by_gate.get(g["gate"], [])
        g["stale_only"] = bool(has) and not any(e["current"] for e in has)
        g["equations"] = sorted(g["equations"])
        g["fixtures_read"] = sorted(g["fixtures_read"])
        g["accepted_by"] = sorted(g["accepted_by"], key=perturbation_key)
        g["papers"] = sorted({paper_of_equation(cat, eq) for eq in g["equations"]})
    return dict(sorted(gates.items()))
