"""The gate run behind the subject matrix: run the suite once, or read a recorded run.

Running the gate suite takes a while, so `fidelity report` does it once, says so
on stderr, and keeps what it saw in `reports/gate-run.json` (schema
"fidelity.report.gate-run/1"). `--gates-from FILE` reads such a record instead
of running again, which makes the ledger the same bytes on any machine: a
machine without CUDA would otherwise report the CUDA instances 'not run'.

A record:
  schema, recorded_at (UTC; when a run first saw what this one saw: a run that sees the same keeps
                the time already written (`keep_time`), so `fidelity report` on a clean clone
                reproduces the committed file; never copied into the ledger)
  environment   python, torch, fidelity, platform, cuda (bool)
  returncode    the pytest exit status; collect_errors
  subjects      [{name, description, available, reason}] as the gate child saw them
                (registry.availability in its environment: the run's truth, not the renderer's)
  gates         gates_stage.summarise rows, each with
                  fixtures_read  fixtures its instances opened
                  rtol           the largest reading named 'rtol' or 'tolerance' (or null)
                  separations    {reading name: smallest value} for readings whose name contains 'separation'
  third_party   (only when `fidelity report --subject NAME` asked for some) one entry per
                someone else's implementation, sorted by name, each from a gate run of
                its own on that subject alone (FIDELITY_SUBJECTS / FIDELITY_ONLY_SUBJECTS,
                as `fidelity check --subject` does it):
                  name, reference (module:object), description, available, reason,
                  versions       {distribution: version} of the packages its modules live in
                  returncode, collect_errors
                  gates          gates_stage.summarise rows of that subject's instances only,
                                 their `failed` entries as {nodeid, message (first line),
                                 readings, kind ("assertion" or "other"), exc_type}
                A failure there is a finding about that package, never a failure of ours.
                A record without the key is read as "no third-party run" (the same schema:
                the key is an addition, and older readers ignore it).
"""
from __future__ import annotations

import json
import platform
from pathlib import Path

from fidelity.message_line import first_line

SCHEMA = "fidelity.report.gate-run/1"
FILE_NAME = "gate-run.json"


class GateRunError(Exception):
    """A recorded gate run that cannot be used (missing, not JSON, wrong schema)."""


class ThirdPartyRunError(Exception):
    """A gate run on a third-party subject that did not complete (pytest exit other than 0 or 1)."""


def _float(value) -> float | None:
    from fidelity.evidence import jsonio

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


def _environment() -> dict:
    from fidelity.evidence.record import versions

    v = versions()
    try:
        import torch
        cuda = bool(torch.cuda.is_available())
    except ImportError:  # pragma: no cover - torch is a dependency
        cuda = False
    return {"python": v["python"], "torch": v["torch"], "fidelity": v["fidelity"],
            "platform": platform.system().lower(), "cuda": cuda}


def run(repo_root: Path, fixtures_dir: Path, say=lambda msg: None) -> dict:
    """Run the gate suite of the project at `repo_root` once (a child pytest) and return the record."""
    from fidelity import project
    from fidelity.gaterun import gates_stage
    from fidelity.evidence.paths import rel_to_root
    from fidelity.evidence.record import utc_now

    say("report: running the gate suite for the subject matrix (skip with --no-gates) ...")
    data = gates_stage.run_gate_suite(project.load(repo_root), extra_args=("--fidelity-fixtures", str(fixtures_dir)),
                                      progress=gates_stage.progress_line("report: "),
                                      keep_collection_errors=True)  # recorded below, as collect_errors
    rows = gates_stage.summarise(data["items"])
    by_gate: dict[str, list[dict]] = {}
    for it in data["items"]:
        by_gate.setdefault(it["gate"], []).append(it)
    for row in rows:
        instances = by_gate.get(row["gate"], [])
        row["fixtures_read"] = sorted({rel_to_root(f, repo_root)
                                       for it in instances for f in it.get("fixtures_read", [])})
        row.update(readings_summary(instances))
        row["failed"] = [{"nodeid": f["nodeid"], "message": first_line(f.get("message"))} for f in row["failed"]]
    n = sum(r["instances"] for r in rows)
    say(f"report: gate suite done: {len(rows)} gates, {n} instances, pytest exit {data['returncode']}")
    return {"schema": SCHEMA, "recorded_at": utc_now(), "environment": _environment(),
            "returncode": data["returncode"], "collect_errors": data.get("collect_errors", []),
            # availability as the gate child saw it (its TRITON_INTERPRET, its devices), never recomputed here
            "subjects": data.get("subjects") or [], "gates": rows}


def _versions(subject) -> dict:
    """{distribution: version} of the installed distributions that hold the subject's modules."""
    from importlib.metadata import PackageNotFoundError, packages_distributions, version

    tops = sorted({m.split(".")[0] for mods in subject.modules.values() for m in mods})
    dists = packages_distributions()
    out = {}
    for top in tops:
        for dist in dists.get(top, []):
            try:
                out[dist] = version(dist)
            except PackageNotFoundError:  # pragma: no cover - listed but gone
                continue
    return dict(sorted(out.items()))


def _finding(item: dict) -> dict:
    message = item.get("message") or ""
    return {"nodeid": item["nodeid"], "message": first_line(message),
            "readings": item.get("readings") or {}, "kind": item.get("kind"), "exc_type": item.get("exc_type"),
            **({"checks": item["checks"]} if item.get("checks") else {})}  # the equations it is attributed to


def run_third_party(repo_root: Path, fixtures_dir: Path, references: list[str], say=lambda msg: None) -> list[dict]:
    """Run the gate suite once per subject (`module:object` references), each on that subject alone.

    Only the instances of that subject are kept: gates whose mechanism it does not provide
    are skipped as 'no subject in this run provides ...' and say nothing about it.
    ThirdPartyRunError when a run does not complete (pytest exit other than 0 or 1).
    """
    from fidelity import project
    from fidelity.gaterun import gates_stage, subject_gate_files
    from fidelity.subjects import registry

    here = project.load(repo_root)
    out = []
    for ref in references:
        subject = registry.load_reference(ref)
        say(f"report: running the gate suite on {subject.name} alone ({ref}) ...")
        try:
            data = gates_stage.run_gate_suite(here, extra_args=("--fidelity-fixtures", str(fixtures_dir)),
                                              env={registry.EXTRA_ENV: ref, registry.ONLY_ENV: subject.name},
                                              progress=gates_stage.progress_line(f"report: {subject.name}: "),
                                              files=subject_gate_files.files_for(here.gates, subject.mechanisms),
                                              keep_collection_errors=True)  # recorded below, as collect_errors
        except RuntimeError as exc:  # the child pytest wrote no results at all
            raise ThirdPartyRunError(f"the gate run on {subject.name} did not complete: {exc}") from None
        if data["returncode"] not in (0, 1):
            raise ThirdPartyRunError(f"the gate run on {subject.name} did not complete (pytest exit "
                               f"{data['returncode']}):\n{data['output_tail'][-1500:]}")
        seen = next((s for s in data.get("subjects") or [] if s["name"] == subject.name), None)
        reason = seen["reason"] if seen else "the gate run did not report this subject"
        if reason:
            say(f"report: {subject.name} is not available where its gates ran: {reason}")
        items = [it for it in data["items"] if it.get("subject") == subject.name]
        by_node = {it["nodeid"]: it for it in items}
        rows = gates_stage.summarise(items)
        for row in rows:
            row["failed"] = [_finding(by_node[f["nodeid"]]) for f in row["failed"]]
        failed = sum(1 for r in rows if r["status"] == "failed")
        passed = sum(1 for r in rows if r["status"] == "passed")
        say(f"report: {subject.name}: {len(rows)} gates ran it: {passed} passed, {failed} with findings "
            f"(findings are about {subject.name}, not failures of ours), {len(rows) - passed - failed} not run")
        out.append({"name": subject.name, "reference": ref, "description": subject.description,
                    "available": reason is None, "reason": reason, "versions": _versions(subject),
                    "returncode": data["returncode"], "collect_errors": data.get("collect_errors", []),
                    "gates": rows})
    return sorted(out, key=lambda r: r["name"])


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
    from fidelity.evidence import jsonio

    return jsonio.dumps(record)


def keep_time(record: dict, path: Path) -> dict:
    """`record`, with the `recorded_at` of the run recorded at `path` when that run saw the same
    (everything but the time equal): the file then changes only when the run's result does."""
    try:
        before = load(path)
    except GateRunError:
        return record
    same = {k: v for k, v in before.items() if k != "recorded_at"} == {k: v for k, v in json.loads(
        dumps(record)).items() if k != "recorded_at"}
    return {**record, "recorded_at": before.get("recorded_at", record.get("recorded_at"))} if same else record
