"""The gate run behind the subject matrix: run the suite once, or read a recorded run.

Running the gate suite takes a while, so `fidelity report` does it once, says so
on stderr, and keeps what it saw in `reports/gate-run.json` (schema
"fidelity.report.gate-run/1"). `--gates-from FILE` reads such a record instead
of running again, which makes the ledger the same bytes on any machine: a
machine without CUDA would otherwise report the CUDA instances 'not run'.

A record:
  schema, recorded_at (UTC; the run's own time, never copied into the ledger)
  environment   python, torch, fidelity, platform, cuda (bool)
  returncode    the pytest exit status; collect_errors
  subjects      [{name, description, available, reason}] from the registry
  gates         gates_stage.summarise rows, each with
                  fixtures_read  fixtures its instances opened
                  rtol           the largest reading named 'rtol' or 'tolerance' (or null)
                  separations    {reading name: smallest value} for readings whose name contains 'separation'
"""
from __future__ import annotations

import json
import platform
from pathlib import Path

SCHEMA = "fidelity.report.gate-run/1"
FILE_NAME = "gate-run.json"


class GateRunError(Exception):
    """A recorded gate run that cannot be used (missing, not JSON, wrong schema)."""


def _float(value) -> float | None:
    from fidelity.perturb import jsonio

    try:
        return jsonio.decode_float(value)
    except (KeyError, TypeError, ValueError):
        return None


def readings_summary(instances: list[dict]) -> dict:
    """rtol (largest) and separations (smallest per name) over a gate's instances' readings."""
    rtol, seps = None, {}
    for it in instances:
        for name, raw in sorted((it.get("readings") or {}).items()):
            value = _float(raw)
            if value is None:
                continue
            if name in ("rtol", "tolerance"):
                rtol = value if rtol is None else max(rtol, value)
            elif "separation" in name:
                seps[name] = value if name not in seps else min(seps[name], value)
    return {"rtol": rtol, "separations": dict(sorted(seps.items()))}


def _subjects() -> list[dict]:
    from fidelity.subjects.registry import all_subjects

    out = []
    for s in all_subjects():
        reason = s.unavailable_reason()
        out.append({"name": s.name, "description": s.description, "available": reason is None, "reason": reason})
    return sorted(out, key=lambda s: s["name"])


def _environment() -> dict:
    from fidelity.perturb import evidence

    v = evidence.versions()
    try:
        import torch
        cuda = bool(torch.cuda.is_available())
    except ImportError:  # pragma: no cover - torch is a dependency
        cuda = False
    return {"python": v["python"], "torch": v["torch"], "fidelity": v["fidelity"],
            "platform": platform.system().lower(), "cuda": cuda}


def run(repo_root: Path, fixtures_dir: Path, say=lambda msg: None) -> dict:
    """Run tests/gates once (a child pytest) and return the record."""
    from fidelity.check import gates_stage
    from fidelity.perturb import evidence

    say("report: running the gate suite for the subject matrix (skip with --no-gates) ...")
    data = gates_stage.run_gate_suite(repo_root, extra_args=("--fidelity-fixtures", str(fixtures_dir)))
    rows = gates_stage.summarise(data["items"])
    by_gate: dict[str, list[dict]] = {}
    for it in data["items"]:
        by_gate.setdefault(it["gate"], []).append(it)
    for row in rows:
        instances = by_gate.get(row["gate"], [])
        row["fixtures_read"] = sorted({evidence.rel_to_root(f, repo_root)
                                       for it in instances for f in it.get("fixtures_read", [])})
        row.update(readings_summary(instances))
        row["failed"] = [{"nodeid": f["nodeid"], "message": (f.get("message") or "").splitlines()[0][:300]
                          if f.get("message") else ""} for f in row["failed"]]
    n = sum(r["instances"] for r in rows)
    say(f"report: gate suite done: {len(rows)} gates, {n} instances, pytest exit {data['returncode']}")
    return {"schema": SCHEMA, "recorded_at": evidence.utc_now(), "environment": _environment(),
            "returncode": data["returncode"], "collect_errors": data.get("collect_errors", []),
            "subjects": _subjects(), "gates": rows}


def load(path: Path) -> dict:
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GateRunError(f"{path}: no recorded gate run here (run `fidelity report` once to record one)") from None
    except (OSError, ValueError) as exc:
        raise GateRunError(f"{path}: unreadable gate run: {exc}") from None
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        raise GateRunError(f"{path}: not a gate run record (schema {SCHEMA!r} expected)")
    return record


def dumps(record: dict) -> str:
    from fidelity.perturb import jsonio

    return jsonio.dumps(record)
