"""A comment-only edit costs nothing (issue 54 point 1), as a user runs it: in the `fidelity init` project after
`perturb --all` and `check`, comments and rewritten docstrings in the mechanism's source, its gate files and its
spec leave `perturb --stale` nothing to run and no file to rewrite, and `check --changed` reads every gate
instance back, and the fixtures and code stages (the parent imports neither torch nor sympy). A one-line code edit in the same place re-runs what it must (test_check_changed.py and
tests/perturb/test_evidence_keys_by_meaning.py hold that side)."""
from __future__ import annotations

import json
import shutil

from comment_edit import commented_and_redocumented
from fidelity.evidence import read_memo
from toy_project import fidelity


def _tree(folder) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _comment_everything(root) -> list[str]:
    edited = [root / "mypaper" / "softmax.py", *sorted((root / "tests" / "gates").glob("test_*.py"))]
    for path in edited:
        path.write_text(commented_and_redocumented(path.read_text(encoding="utf-8")), encoding="utf-8")
    spec = next((root / "specs").glob("*.yaml"))
    spec.write_text("# a comment on the spec\n" + spec.read_text(encoding="utf-8"), encoding="utf-8")
    return [p.relative_to(root).as_posix() for p in [*edited, spec]]


def test_after_a_comment_only_edit_perturb_stale_runs_nothing_and_rewrites_no_file(perturbed_init_project, tmp_path):
    root = perturbed_init_project.copy(tmp_path / "mypaper")
    before = _tree(root / "reports")
    assert len(_comment_everything(root)) >= 4
    memo = read_memo.folder(root / ".fidelity-cache")
    shutil.rmtree(memo, ignore_errors=True)  # what check's read left: this run's own reads fill it
    done = fidelity("perturb", "--stale", "--json", cwd=root)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert len(report["perturbations"]) == 7 and report["evidence"] == []
    assert {p["status"] for p in report["perturbations"]} == {"current"}, done.stdout[-2000:]
    assert _tree(root / "reports") == before
    assert {p.name.split(".", 1)[0] for p in memo.glob("*.marshal")} == {  # whole and light: these bytes' only
        read_memo.key(f.read_bytes()) for f in (root / "reports" / "evidence").glob("P*.json")}


def test_after_a_comment_only_edit_check_changed_reads_every_instance_back(perturbed_init_project, tmp_path):
    root = perturbed_init_project.copy(tmp_path / "mypaper")
    first = json.loads(fidelity("check", "--json", cwd=root).stdout)
    _comment_everything(root)
    kept_run = root / ".fidelity-cache" / "check-gate-run.json"
    kept_before = kept_run.stat().st_mtime_ns
    done = fidelity("check", "--changed", "--json", cwd=root, python_options=("-X", "importtime"))
    assert kept_run.stat().st_mtime_ns == kept_before  # nothing ran: the kept gate run is not written again
    report = json.loads(done.stdout)
    gates = next(s for s in report["stages"] if s["stage"] == "gates")
    stages = {s["stage"]: s for s in report["stages"]}
    assert stages["fixtures"]["kept"] and stages["claims"]["kept"] and stages["code"]["kept"]  # read back: no oracle, no subject
    assert not [line for line in done.stderr.splitlines() if line.endswith(("| torch", "| sympy"))]  # the parent
    first_gates = next(s for s in first["stages"] if s["stage"] == "gates")
    assert (gates["instances_run"], gates["instances_kept"]) == (0, first_gates["instances_run"])
    assert done.returncode == 0 and report["ok"] is first["ok"] is True, done.stdout[-3000:]
    assert report["gates"] == first["gates"]
