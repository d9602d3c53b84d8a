"""Two `fidelity check --json` reports give the same verdict with the same counts.

Usage: python .ci/same_verdict.py A.json B.json  (exit 1, naming what differs, if they do not)."""
import json
import sys


def summary(path: str) -> dict:
    report = json.load(open(path, encoding="utf-8"))
    gates = report.get("gates", [])
    return {
        "ok": report["ok"],
        "stages": {s["stage"]: s["ok"] for s in report["stages"]},
        "gates": {g["gate"]: (g["status"], g.get("accepted"), sorted(g.get("accepted_by", []))) for g in gates},
        "instances": {g["gate"]: {n: (s["passed"], s["failed"], s["not_run"]) for n, s in g["subjects"].items()}
                      for g in gates},
        "claims": {c["id"]: c["verdict"] for c in report.get("claims", [])},
        "perturbations": {p["id"]: p["caught_by"] for p in report.get("perturbations", [])},
    }


a, b = summary(sys.argv[1]), summary(sys.argv[2])
differ = [key for key in a if a[key] != b[key]]
for key in differ:
    print(f"{key} differ:\n  {sys.argv[1]}: {a[key]}\n  {sys.argv[2]}: {b[key]}", file=sys.stderr)
print(f"same verdict ({'GREEN' if a['ok'] else 'RED'}): {len(a['gates'])} gates, {len(a['claims'])} claims, "
      f"{len(a['perturbations'])} perturbations" if not differ else "verdicts differ")
sys.exit(1 if differ or not a["ok"] else 0)
