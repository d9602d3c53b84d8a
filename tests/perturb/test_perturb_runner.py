"""The runner end to end on the toy repo (one shared run, see conftest.main_run)."""
from __future__ import annotations

import json

import pytest

from fidelity.perturb import clean_runs, run
from fidelity.perturb.forced_red_gate import FORCED_READING

from .conftest import GATE_ADD, GATE_NEG, GATE_SCALE, TEST_PATHS, make_toy_repo


def test_run_finishes_and_reports_blind_spots(main_run):
    r = main_run.result
    assert r.error is None, r.error
    assert r.baseline["ok"] and r.baseline["red"] == [] and r.baseline["flaky"] == {}
    assert r.ok is False  # survivors and misses make the run fail
    assert sorted(r.survivors) == ["P_crash", "P_exc", "P_hang", "P_import", "P_neg", "P_subject_assert"]


def test_forced_failure_is_seen_red_by_assertion(main_run):
    ff = main_run.result.forced_failure
    assert ff["seen_red"] is True
    assert (ff["outcome"], ff["kind"], ff["reading"]) == ("failed", "assertion", FORCED_READING)


def test_caught_by_assertion_with_reading_and_prediction_kept_apart(main_run):
    p = main_run.perturbation("P_add")
    assert not p.survivor and p.misses == [] and p.restored is True
    o = main_run.outcome("P_add", GATE_ADD)
    assert o.outcome == "red_by_assertion"
    assert o.reading == pytest.approx(1 / 1.5, rel=1e-15)  # observed: instance [1.0], 2b/(a+b)
    assert o.predicted == {"reading": 0.625, "note": "a deliberately different prediction"}
    assert o.green_after is True
    assert main_run.outcome("P_add", GATE_SCALE).outcome == "survived"
    assert "-    return a + b\n+    return a - b\n" in p.diff


def test_exceptions_are_red_for_another_reason_never_counted(main_run):
    o = main_run.outcome("P_exc", GATE_SCALE)
    assert o.outcome == "red_other" and o.reading is None and "RuntimeError" in o.detail and "shape mismatch" in o.detail
    p = main_run.perturbation("P_exc")
    assert p.survivor and p.misses == [{"gate": GATE_SCALE, "outcome": "red_other", "detail": o.detail}]
    for gate in (GATE_ADD, GATE_NEG, GATE_SCALE):
        o = main_run.outcome("P_import", gate)
        assert o.outcome == "red_other" and "collection error: ModuleNotFoundError" in o.detail
    o = main_run.outcome("P_subject_assert", GATE_NEG)
    assert o.outcome == "red_other" and "AssertionError" in o.detail and "toysubj/arith.py" in o.detail


def test_survivor_and_miss(main_run):
    p = main_run.perturbation("P_neg")
    assert p.survivor
    assert [o.outcome for o in p.outcomes] == ["survived", "survived", "survived"]
    assert p.misses == [{"gate": GATE_NEG, "outcome": "survived", "detail": ""}]
    assert "SURVIVOR P_neg" in main_run.result.table()
    assert "MISS P_neg: listed gate tests/toygate_arith.py::test_neg_is_float survived" in main_run.result.table()


def test_timeout_is_recorded_and_the_run_goes_on(main_run):
    o = main_run.outcome("P_hang", GATE_SCALE)
    assert o.outcome == "red_other" and o.detail == "timeout"
    assert main_run.outcome("P_hang", GATE_ADD).outcome == "survived"  # finished before the hang
    assert main_run.perturbation("P_hang").child["status"] == "timeout"
    assert main_run.perturbation("P_hang").restored is True


def test_crash_is_recorded(main_run):
    o = main_run.outcome("P_crash", GATE_SCALE)
    assert o.outcome == "red_other" and o.detail == "crash (exit code 3)"
    assert main_run.perturbation("P_crash").child["returncode"] == 3


def test_files_on_disk_never_change(main_run):
    assert main_run.sources_after == main_run.sources_before
    assert main_run.result.sources["changed"] == []
    assert main_run.result.sources["watched"] >= 3  # target, gate file, fixtures


def test_progress_lines(main_run):
    lines = [e["message"] for e in main_run.events if e["event"] == "perturbation"]
    assert len(lines) == 7
    assert sorted(e["index"] for e in main_run.events if e["event"] == "perturbation") == list(range(1, 8))
    assert any(l.endswith("P_add ... red by assertion (1 gate)") and l.startswith("[") for l in lines)
    assert any("P_hang ... SURVIVED" in l and "timeout" in l for l in lines)


def test_run_result_json_and_table(main_run):
    d = main_run.result.to_json()
    json.loads(json.dumps(d, allow_nan=False))
    assert {"perturbations", "baseline", "forced_failure", "green_after", "ok", "error"} <= set(d)
    p = next(x for x in d["perturbations"] if x["id"] == "P_add")
    assert {"id", "outcomes", "restored", "survivor", "diff"} <= set(p)
    o = next(x for x in p["outcomes"] if x["gate"] == GATE_ADD)
    assert o["outcome"] == "red_by_assertion" and o["predicted"]["reading"] == 0.625 and o["reading"] != 0.625
    table = main_run.result.table()
    assert [c.strip() for c in table.splitlines()[0].split(" | ")] == [
        "perturbation", "gate", "outcome", "observed reading", "predicted reading", "green after"]
    assert "observed reading" in table and "predicted reading" in table and "green after" in table
    assert "predicted 0.625" in table


def test_stale_only_skips_current_evidence(main_run, monkeypatch):
    from fidelity.perturb import launch
    from .conftest import toy_perturbations

    ev = sorted((main_run.repo / "reports" / "evidence").rglob("*.json"))
    before = {p: p.read_bytes() for p in ev}

    def no_child(*a, **k):
        raise AssertionError("no child should run when all evidence is current")

    monkeypatch.setattr(launch, "run_child", no_child)
    events = []
    r = run(toy_perturbations(), test_paths=TEST_PATHS, repo_root=main_run.repo, stale_only=True, progress=events.append)
    assert [p.status for p in r.perturbations] == ["current"] * 7
    assert [e["event"] for e in events].count("skip") == 7
    assert next(o for o in r.perturbations[0].outcomes if o.gate == GATE_ADD).outcome == "red_by_assertion"
    assert {p: p.read_bytes() for p in ev} == before


def test_flaky_baseline_is_refused(main_run):
    p = {"id": "P_clock", "target": "toysubj.clock", "edits": [{"find": "return time.perf_counter_ns()", "replace": "return -1"}]}
    r = run([p], test_paths=TEST_PATHS, repo_root=main_run.repo, reports_dir="reports-flaky", jobs=2, timeout_s=60)
    assert not r.ok and r.error_kind == "flaky"
    assert "tests/toygate_clock.py::test_clock_reads" in r.baseline["flaky"]
    assert "flaky" in r.error and "test_clock_reads" in r.error
    assert r.perturbations[0].status == "not_run"
    assert not (main_run.repo / "reports-flaky").exists()  # no evidence


def test_red_baseline_stops_the_run(main_run):
    p = {"id": "P_one", "target": "toysubj.broken", "edits": [{"find": "return 2", "replace": "return 3"}]}
    r = run([p], test_paths=TEST_PATHS, repo_root=main_run.repo, reports_dir="reports-red", jobs=2, timeout_s=60)
    assert not r.ok and r.error_kind == "baseline_red"
    assert "tests/toygate_broken.py::test_one" in r.error
    assert not (main_run.repo / "reports-red").exists()


def test_unknown_listed_gate_is_an_error(tmp_path):
    from fidelity.perturb.errors import UnknownGate

    repo = make_toy_repo(tmp_path / "repo")
    p = {"id": "P_typo", "target": "toysubj.arith", "edits": [{"find": "return a + b", "replace": "return a - b"}],
         "gates": ["tests/toygate_arith.py::test_no_such_gate"]}
    with pytest.raises(UnknownGate, match="P_typo.*test_no_such_gate"):
        run([p], test_paths=TEST_PATHS, repo_root=repo)


def test_patch_is_served_in_each_child(main_run):
    assert main_run.perturbation("P_add").child["patch_served"] == 1
    assert main_run.perturbation("P_import").child["patch_served"] == 1  # served, then failed to import


def test_a_file_changed_on_disk_fails_the_run_loudly(tmp_path):
    repo = make_toy_repo(tmp_path / "repo")
    p = {"id": "P_writes", "target": "toysubj.arith",
         "edits": [{"find": "    return 2.0 * x", "replace": "    open(__file__, 'a').write('# touched\\n')\n    return 2.0 * x"}]}
    r = run([p], test_paths=TEST_PATHS, repo_root=repo, jobs=2, timeout_s=60)
    assert not r.ok and r.error_kind == "source_changed"
    assert r.sources["changed"] == ["toysubj/arith.py"] and "toysubj/arith.py" in r.error
    # no evidence written (the clean runs proved before are kept, under the key of the files as they were)
    assert not (repo / "reports" / "evidence" / "P_writes.json").exists()


def test_only_the_instances_covering_the_target_run(tmp_path):
    """A gate with one instance per subject: a patch of one subject's module runs (in the baseline,
    the perturbation and green after) only that subject's instance, and is caught by it. An
    instance marked skip at collection (a device the machine lacks) is not started at all."""
    from .conftest import SPLIT, GATE_FOUR

    repo = make_toy_repo(tmp_path / "repo")
    perturbation = {"id": "P_twice", "title": "double triples", "target": "toysubj.twice",
                    "edits": [{"find": "return 2.0 * x", "replace": "return 3.0 * x"}], "gates": [GATE_FOUR]}
    r = run([perturbation], test_paths=[SPLIT], repo_root=repo, reports_dir="reports", jobs=2, timeout_s=60)
    assert r.error is None, r.error
    only = [f"{GATE_FOUR}[twice]"]
    assert sorted(r.baseline["readings"]) == only
    o = r.perturbations[0].outcomes[0]
    assert (o.outcome, o.reading, o.green_after) == ("red_by_assertion", 2.0, True)
    assert [i["nodeid"] for i in o.instances] == only
    held = json.loads((repo / r.evidence[0]).read_text())["records"]
    assert [i["nodeid"] for i in held[GATE_FOUR]["instances"]] == only


def test_a_gate_red_by_assertion_skips_its_remaining_instances(main_run):
    """In a perturbation child a gate needs to go red once: its instances run in node-id order and
    those after the first assertion failure are skipped, saying why; the reading is the first's."""
    from fidelity.perturb.recorder import ALREADY_RED

    o = main_run.outcome("P_add", GATE_ADD)
    assert [(i["nodeid"].split("[")[1], i["outcome"]) for i in o.instances] == [("1.0]", "failed"), ("2.0]", "skipped")]
    assert o.instances[1]["skip_reason"] == f"Skipped: {ALREADY_RED}"
    # unpatched children run every instance
    assert {n: r["reading"] for n, r in main_run.result.baseline["readings"].items() if n.startswith(GATE_ADD)} == {
        f"{GATE_ADD}[1.0]": 0.0, f"{GATE_ADD}[2.0]": 0.0}


def test_runs_with_their_own_environment_share_one_zygote(tmp_path):
    """Two runs side by side, as `fidelity perturb` runs a third-party group beside ours: each
    child sees its run's `environment` (warm ones apply it themselves after the fork), and the
    shared zygote serves both."""
    from fidelity.perturb.runner import shared_zygote

    repo = make_toy_repo(tmp_path / "repo")
    gate = "tests/toygate_env.py::test_add_under_the_run_environment"
    p_add = {"id": "P_env", "title": "add subtracts", "target": "toysubj.arith",
             "edits": [{"find": "return a + b", "replace": "return a - b"}], "gates": [gate]}
    zygote = shared_zygote(repo, jobs=2)
    try:
        runs = {value: run([p_add], test_paths=["tests/toygate_env.py"], repo_root=repo, reports_dir=f"reports-{value}",
                           jobs=2, timeout_s=60, environment={"TOY_RUN": value}, zygote=zygote)
                for value in ("3", "7")}
    finally:
        zygote.close()
    for value, r in runs.items():
        assert r.error is None, r.error
        assert r.baseline["readings"][gate]["reading"] == float(value)
        assert [c["start"] for c in r.baseline["runs"]] == ["warm"] * clean_runs.CLEAN_RUNS
        o = r.perturbations[0].outcomes[0]
        assert (o.outcome, o.reading) == ("red_by_assertion", float(value))


def test_green_after_is_split_into_balanced_children_of_whole_gates(main_run):
    from fidelity.perturb.stages.green_after import balanced_parts

    ga = main_run.result.green_after
    assert len(ga["children"]) == 2 and all(c["status"] == "ok" for c in ga["children"])
    cost = {"a.py::x[1]": 5.0, "a.py::x[2]": 4.0, "b.py::y": 6.0, "c.py::z": 2.0, "d.py::w": 1.0}
    parts = balanced_parts(set(cost), cost, 2)
    assert sorted(sorted(p) for p in parts) == [["a.py::x[1]", "a.py::x[2]"], ["b.py::y", "c.py::z", "d.py::w"]]
    assert balanced_parts({"a.py::x[1]", "a.py::x[2]"}, cost, 4) == [{"a.py::x[1]", "a.py::x[2]"}]


def test_a_gate_red_in_one_clean_run_of_ten_is_refused_as_flaky_with_the_counts(tmp_path, monkeypatch):
    """Issue 15: three clean runs accept a gate failing in half of all processes one time in eight; with
    clean_runs.CLEAN_RUNS (10) separate children, one red run among them refuses it, and says so."""
    repo = make_toy_repo(tmp_path / "repo")
    counter = tmp_path / "counter"
    counter.mkdir()
    monkeypatch.setenv("TOY_COUNTER", str(counter))
    gate = "tests/toygate_sometimes.py::test_add_but_not_in_the_third_process"
    p = {"id": "P_add", "target": "toysubj.arith", "edits": [{"find": "return a + b", "replace": "return a - b"}],
         "gates": [gate]}
    r = run([p], test_paths=["tests/toygate_sometimes.py"], repo_root=repo, reports_dir="reports", jobs=2,
            timeout_s=60)
    assert not r.ok and r.error_kind == "flaky"
    assert r.baseline["flaky"] == {gate: [{"red_in": 1, "of": clean_runs.CLEAN_RUNS}]}
    assert f"{gate}: red in 1 of {clean_runs.CLEAN_RUNS} unpatched runs" in r.error
    assert r.baseline["red"] == [] and r.perturbations[0].status == "not_run"
    assert not (repo / "reports").exists()  # no evidence
