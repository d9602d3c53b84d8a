"""`fidelity perturb --file` catalogues kept apart from the project's, and `--observe`.

The CLI runs in a subprocess against a toy *project* (the toy repo plus a pyproject.toml
with [tool.fidelity] and a spec defining P24), so activating that project never leaks into
this test process. The project's own P24 is run once first, so its evidence folder holds
real records; every test proves those stay byte-identical.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fidelity.perturb.clean_run_store import FILE_NAME as CLEAN_RUNS_FILE
from fidelity.perturb import runner
from fidelity.evidence.jsonio import sha256_file
from fidelity.evidence.outcome import Outcome
from fidelity.perturb.result import GateResult, PerturbationResult, RunResult

from .conftest import ARITH, GATE_ADD, GATE_NEG, GATE_SCALE, make_toy_repo

PYPROJECT = textwrap.dedent("""\
    [tool.fidelity]
    specs = "specs"
    fixtures = "fixtures"
    gates = "tests/toygate_arith.py"
    reports = "reports"
    """)

SPEC = textwrap.dedent(f"""\
    schema_version: 1
    paper:
      id: toy
      arxiv: "2501.00001"
      version: v1
      title: A toy paper
      authors: [A. Author]
      read: {{date: 2026-11-29, where: [a PDF]}}
      author_code: {{status: none}}
    equations:
      - id: toy.add
        title: addition
        where: {{section: "2", equation: "1"}}
        statement: y = a + b
        tier: b
        status: implemented
      - id: toy.scale
        title: scaling
        where: {{section: "2", equation: "2"}}
        statement: y = 2 x
        tier: b
        status: implemented
      - id: toy.neg
        title: negation
        where: {{section: "2", equation: "3"}}
        statement: y = -x
        tier: b
        status: implemented
    perturbations:
      - id: P24
        title: add subtracts
        target: toysubj.arith
        edits:
          - {{find: "return a + b", replace: "return a - b"}}
        gates: [{GATE_ADD}]
        covers: [toy.add]
    """)

ADD_SUBTRACTS = '{find: "return a + b", replace: "return a - b"}'    # test_add_fixture red by assertion
NEG_IDENTITY = '{find: "return -x", replace: "return x * 1.0"}'       # every toy gate survives
SCALE_TRIPLES = '{find: "return 2.0 * x", replace: "return 3.0 * x"}'  # test_scale red by assertion


def _catalogue(entries: list[tuple[str, str, str | None]]) -> str:
    """A `perturbations:` file: (id, edit, gate or None for no `gates:`) per entry."""
    out = ["perturbations:"]
    for pid, edit, gate in entries:
        out += [f"  - id: {pid}", f"    title: {pid}", "    target: toysubj.arith", f"    edits: [{edit}]"]
        if gate is not None:
            out.append(f"    gates: [{gate}]")
    return "\n".join(out) + "\n"


def _cli(project: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("FIDELITY_ROOT", "FIDELITY_CACHE_DIR")}
    return subprocess.run([sys.executable, "-m", "fidelity", "--root", str(project), "perturb", "--jobs", "2",
                           "--timeout", "120", *argv],
                          cwd=project, env=env, capture_output=True, text=True, timeout=600)


def _hashes(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): sha256_file(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """The toy project, its P24 run once: reports/evidence holds the project's real records."""
    root = make_toy_repo(tmp_path_factory.mktemp("catalogues") / "proj")
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "specs").mkdir()
    (root / "specs" / "toy.yaml").write_text(SPEC)
    done = _cli(root, "P24")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(_hashes(root / "reports" / "evidence")) == ["P24.json", CLEAN_RUNS_FILE]
    return root


@pytest.fixture
def project_evidence(project):
    """The project's evidence hashed before the test; the test asserts it is unchanged after."""
    return project / "reports" / "evidence", _hashes(project / "reports" / "evidence")


def test_own_ids_write_only_into_the_catalogues_own_folder(project, project_evidence):
    folder, before = project_evidence
    (project / "mine.yaml").write_text(_catalogue([("swap-add", ADD_SUBTRACTS, GATE_ADD),
                                                   ("my.defect_1", SCALE_TRIPLES, GATE_SCALE)]))
    done = _cli(project, "--file", "mine.yaml", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _hashes(folder) == before
    own = project / "reports" / "catalogues" / "mine" / "evidence"
    files = sorted(f"{pid}.json" for pid in ("swap-add", "my.defect_1"))
    assert sorted(_hashes(own)) == sorted([*files, CLEAN_RUNS_FILE])  # its clean runs are kept in its own folder too
    assert sorted(json.loads(done.stdout)["evidence"]) == [f"reports/catalogues/mine/evidence/{f}" for f in files]
    held = json.loads((own / "swap-add.json").read_text())["records"]
    assert sorted(held) == [f"tests/toygate_arith.py::{name}" for name in ("test_add_fixture", "test_neg_is_float",
                                                                          "test_scale")]
    record = held["tests/toygate_arith.py::test_add_fixture"]
    assert (record["perturbation"], record["outcome"], record["green_after"]) == ("swap-add", "red_by_assertion", True)

    # --stale reads the catalogue's own folder: everything there is current, so nothing re-runs
    own_before = _hashes(own)
    again = _cli(project, "--file", "mine.yaml", "--stale")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "swap-add ... evidence current, not re-run" in again.stderr
    assert "my.defect_1 ... evidence current, not re-run" in again.stderr
    assert _hashes(own) == own_before and _hashes(folder) == before


def test_an_id_the_project_defines_is_exit_2_naming_both_places(project, project_evidence):
    folder, before = project_evidence
    clash = project / "clash.yaml"
    clash.write_text(_catalogue([("swap-add", ADD_SUBTRACTS, GATE_ADD), ("P24", ADD_SUBTRACTS, GATE_ADD)]))
    done = _cli(project, "--file", "clash.yaml")
    assert done.returncode == 2
    err = done.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"clash.yaml:{_line_of(clash, 'id: P24')}:" in err
    assert f"specs/toy.yaml:{_line_of(project / 'specs' / 'toy.yaml', 'id: P24')}" in err
    assert "'P24'" in err and "rename" in err
    assert done.stdout == ""                                                  # nothing ran
    assert _hashes(folder) == before
    assert not (project / "reports" / "catalogues" / "clash").exists()


def test_observe_reports_every_gate_of_each_perturbation_and_writes_nothing(project, project_evidence):
    folder, before = project_evidence
    (project / "seen.yaml").write_text(_catalogue([("swap-add", ADD_SUBTRACTS, None), ("neg-identity", NEG_IDENTITY, None)]))
    done = _cli(project, "--file", "seen.yaml", "--observe", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    out = json.loads(done.stdout)
    assert out["ok"] is True and out["mode"] == "observe" and out["error"] is None
    swap, neg = out["observed"]
    assert (swap["id"], swap["target"], swap["restored"]) == ("swap-add", "toysubj.arith", True)
    [red] = swap["red_by_assertion"]
    assert red["gate"] == GATE_ADD and red["reading"] == pytest.approx(1 / 1.5, rel=1e-15)
    assert red["detail"].startswith(f"{GATE_ADD}[1.0]: AssertionError")
    assert [g["gate"] for g in swap["green"]] == [GATE_NEG, GATE_SCALE]
    assert swap["red_other"] == [] and swap["skipped"] == []
    assert neg["id"] == "neg-identity" and neg["red_by_assertion"] == [] and neg["red_other"] == []
    assert [g["gate"] for g in neg["green"]] == [GATE_ADD, GATE_NEG, GATE_SCALE]
    assert [g["reading"] for g in neg["green"]] == [0.0, 1.0, 0.0]          # what each survivor compared
    assert "MISS" not in done.stdout + done.stderr and "SURVIVOR" not in done.stdout + done.stderr
    assert _hashes(folder) == before
    assert not (project / "reports" / "catalogues" / "seen").exists()       # an observation writes no evidence


def test_a_file_without_gates_needs_observe(project, project_evidence):
    folder, before = project_evidence
    bare = project / "bare.yaml"
    bare.write_text(_catalogue([("neg-identity", NEG_IDENTITY, None)]))
    refused = _cli(project, "--file", "bare.yaml")
    assert refused.returncode == 2
    assert len(refused.stderr.strip().splitlines()) == 1
    assert f"bare.yaml:{_line_of(bare, 'id: neg-identity')}:" in refused.stderr
    assert "missing field: gates" in refused.stderr and "--observe" in refused.stderr
    observed = _cli(project, "--file", "bare.yaml", "--observe")
    assert observed.returncode == 0, observed.stdout + observed.stderr
    rows = [[c.strip() for c in line.split("|")] for line in observed.stdout.splitlines() if line.startswith("neg-identity")]
    assert rows == [["neg-identity", "green", g, r, ""] for g, r in ((GATE_ADD, "0"), (GATE_NEG, "1"), (GATE_SCALE, "0"))]
    assert "OBSERVED neg-identity: 0 red by assertion, 0 red for another reason, 3 green" in observed.stdout
    assert _hashes(folder) == before


@pytest.mark.parametrize("argv, says", [
    (["--observe", "--stale", "--all"], "drop --stale"),
    (["--observe", "--rerun-covering", "P24"], "drop --rerun-covering"),
    (["--observe", "P24", "--evidence", "elsewhere"], "writes no evidence"),
    (["P24", "--evidence", "a", "--reports", "b"], "not both"),
])
def test_options_that_do_not_go_together_are_one_line_exit_2(project, argv, says):
    done = _cli(project, *argv)
    assert done.returncode == 2 and says in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_catalogue_ids_must_be_identifiers(project):
    (project / "odd.yaml").write_text(_catalogue([("9 lives", NEG_IDENTITY, GATE_NEG)]))
    done = _cli(project, "--file", "odd.yaml")
    assert done.returncode == 2 and "odd.yaml:2:" in done.stderr and "perturbations[0].id" in done.stderr


def test_the_observe_api_reports_groups_and_writes_no_evidence(tmp_path):
    repo = make_toy_repo(tmp_path / "repo")
    result = runner.observe([{"id": "swap-add", "target": "toysubj.arith",
                              "edits": [{"find": "return a + b", "replace": "return a - b"}]}],
                            test_paths=[ARITH], repo_root=repo, jobs=2, timeout_s=120)
    assert result.ok and result.survivors == []
    [seen] = result.observed()
    assert [g["gate"] for g in seen["red_by_assertion"]] == [GATE_ADD]
    assert [g["gate"] for g in seen["green"]] == [GATE_NEG, GATE_SCALE]
    assert result.evidence == [] and not (repo / "reports").exists()


def test_an_observation_whose_baseline_is_red_is_not_ok(tmp_path):
    repo = make_toy_repo(tmp_path / "repo")
    result = runner.observe([{"id": "two-is-three", "target": "toysubj.broken",
                              "edits": [{"find": "return 2", "replace": "return 3"}]}],
                            test_paths=[ARITH, "tests/toygate_broken.py"], repo_root=repo, jobs=2, timeout_s=120)
    assert not result.ok and result.error_kind == "baseline_red"
    assert result.to_json()["ok"] is False


def _result(outcome: str, restored: bool | None, observe: bool) -> RunResult:
    gate = GateResult(gate=GATE_ADD, outcome=outcome, reading=None, predicted=None, listed=True, green_after=restored)
    p = PerturbationResult(id="x", title="x", target="toysubj.arith", target_file="toysubj/arith.py", spec_file=None,
                           diff="", gates=[GATE_ADD], listed=[GATE_ADD], outcomes=[gate], restored=restored,
                           observe=observe)
    r = RunResult(perturbations=[p], observe=observe)
    r.compute_ok()
    return r


def test_an_observation_is_ok_whatever_went_red_but_only_when_restored():
    assert _result(Outcome.SURVIVED, True, observe=False).ok is False       # a run: a survivor and a miss
    assert _result(Outcome.SURVIVED, True, observe=True).ok is True         # an observation expected nothing
    assert _result(Outcome.RED_OTHER, True, observe=True).ok is True
    assert _result(Outcome.SURVIVED, False, observe=True).ok is False       # not green again: not to be trusted
    seen = _result(Outcome.SURVIVED, True, observe=True)
    assert seen.perturbations[0].misses == [] and "MISS" not in seen.table()
