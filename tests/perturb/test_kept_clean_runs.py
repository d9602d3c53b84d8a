"""Clean runs are kept under the key of what they read, counted by later runs, never trusted otherwise.

Issue 30: a perturbation run re-ran its ten clean runs, and its green-after run, every time. Now an
instance's clean runs are kept (reports/evidence/clean-runs.json) under a sha256 of its gate file,
targets, fixtures, helpers, harness and versions; a run counts those whose key matches and runs
only the rest. Acceptance is unchanged: ten green runs with identical readings, judged together.
"""
from __future__ import annotations

import json

import pytest

from fidelity.perturb import clean_runs, gate_index, run
from fidelity.perturb.clean_run_inputs import InputsNow
from fidelity.perturb.clean_run_store import SCHEMA, CleanRunStore, store_path

from comment_edit import commented_and_redocumented

from .conftest import ARITH, GATE_ADD, GATE_NEG, GATE_SCALE, make_toy_repo

ADD_1 = f"{GATE_ADD}[1.0]"
P_ADD = {"id": "P_add", "target": "toysubj.arith", "edits": [{"find": "return a + b", "replace": "return a - b"}],
         "gates": [GATE_ADD]}


def _index(*items: dict) -> gate_index.GateIndex:
    return gate_index.GateIndex(key="k", items=list(items))


def _item(nodeid: str, targets: list[str]) -> dict:
    return {"nodeid": nodeid, "gate": nodeid.split("[", 1)[0], "file": nodeid.split("::", 1)[0], "targets": targets}


@pytest.fixture
def repo(tmp_path):
    return make_toy_repo(tmp_path / "repo")


def _keys(repo, *items) -> list[str | None]:
    inputs = InputsNow(repo, ["tests"], repo / "fixtures", _index(*items), env={})
    return [inputs.key(it) for it in items]


# ---------------------------------------------------------------- the key

def test_the_key_is_the_same_for_the_same_inputs_and_names_no_path_of_this_machine(repo, tmp_path):
    add = _item(ADD_1, ["toysubj.arith"])
    other = make_toy_repo(tmp_path / "elsewhere")
    assert _keys(repo, add) == _keys(repo, add) == _keys(other, add)
    assert _keys(repo, add)[0] is not None


@pytest.mark.parametrize("edited", ["toysubj/arith.py", ARITH, "fixtures/unused.json", "tests/conftest.py"])
def test_editing_anything_the_instance_reads_changes_its_key(repo, edited):
    """The target, the gate file, any fixture (even one it did not open) and the suite's conftest."""
    add = _item(ADD_1, ["toysubj.arith"])
    before = _keys(repo, add)
    with open(repo / edited, "a") as f:
        f.write("\nEDITED = 1\n" if edited.endswith(".py") else "\n# edited\n")
    assert _keys(repo, add) != before


@pytest.mark.parametrize("edited", ["toysubj/arith.py", ARITH, "tests/conftest.py", "specs/toy.yaml"])
def test_a_comment_or_docstring_edit_to_what_the_instance_reads_keeps_its_key(repo, edited):
    """Keys by meaning (source_meaning.py): its kept runs still count."""
    (repo / "specs").mkdir(exist_ok=True)
    (repo / "specs" / "toy.yaml").write_text("equations: []\n", encoding="utf-8")
    add = _item(ADD_1, ["toysubj.arith"])
    before = _keys(repo, add)
    path = repo / edited
    if edited.endswith(".py"):
        path.write_text(commented_and_redocumented(path.read_text()))
    else:
        path.write_text("# a comment\n" + path.read_text(), encoding="utf-8")
    assert _keys(repo, add) == before


def test_editing_a_spec_changes_the_key(repo):
    """A gate may read a default from the specs (spec_value), so a spec edit may change any instance's outcome:
    kept runs, and check --changed's kept results, of a gate whose default moved are not counted."""
    (repo / "specs").mkdir()
    (repo / "specs" / "toy.yaml").write_text("equations: []\n", encoding="utf-8")
    add = _item(ADD_1, ["toysubj.arith"])
    before = _keys(repo, add)
    (repo / "specs" / "toy.yaml").write_text("equations: [1]\n", encoding="utf-8")
    assert _keys(repo, add) != before


def test_editing_another_instances_target_leaves_the_key_alone(repo):
    add, clock = _item(ADD_1, ["toysubj.arith"]), _item("tests/toygate_clock.py::test_clock_reads", ["toysubj.clock"])
    before = _keys(repo, add, clock)
    with open(repo / "toysubj" / "clock.py", "a") as f:
        f.write("\nEDITED = 1\n")
    after = _keys(repo, add, clock)
    assert after[0] == before[0] and after[1] != before[1]


def test_the_harness_in_the_key_is_the_fidelity_package_a_child_imports(repo):
    """A project holding its own `fidelity` (this repository, checked by a fidelity installed elsewhere, as CI's
    second check is) runs its gates on that copy: the key hashes it, not the package running the parent."""
    add = _item(ADD_1, ["toysubj.arith"])
    installed = _keys(repo, add)
    (repo / "fidelity").mkdir()
    (repo / "fidelity" / "__init__.py").write_text('"""the checkout\'s own copy"""\n')
    own = _keys(repo, add)
    (repo / "fidelity" / "__init__.py").write_text('"""the checkout\'s own copy, edited"""\nEDITED = 1\n')
    assert len({installed[0], own[0], _keys(repo, add)[0]}) == 3


def test_an_instance_without_a_target_or_with_one_not_found_has_no_key(repo):
    assert _keys(repo, _item(ADD_1, []), _item(ADD_1, ["toysubj.no_such_module"])) == [None, None]


# ---------------------------------------------------------------- the store

WHOLE = {"toysubj.arith": {"whole": "m1"}}


def test_the_store_adds_a_run_to_a_counted_entry_and_starts_afresh_otherwise(tmp_path):
    store = CleanRunStore(tmp_path)
    store.add_run(ADD_1, "k1", WHOLE, "passed", {"reading": 0.0}, 0.5, ["fixtures/add_case.json"])
    store.add_run(ADD_1, "k1", WHOLE, "passed", {"reading": 0.0}, 0.7, counted=True)
    store.save()
    again = CleanRunStore(tmp_path)
    assert again.entries[ADD_1]["runs"] == 2 and again.entries[ADD_1]["targets"] == WHOLE
    assert again.entries[ADD_1]["fixtures_read"] == ["fixtures/add_case.json"]
    with pytest.raises(ValueError, match="differs from the kept ones"):
        again.add_run(ADD_1, "k1", WHOLE, "passed", {"reading": 1.0}, 0.5, counted=True)
    again.add_run(ADD_1, "k2", WHOLE, "passed", {"reading": 1.0}, 0.5)  # not counted: it starts afresh
    assert again.entries[ADD_1]["runs"] == 1 and again.entries[ADD_1]["key"] == "k2"


@pytest.mark.parametrize("text", ["not json", json.dumps({"schema": "other/1", "instances": {}}),
                                  json.dumps({"schema": SCHEMA, "instances": {ADD_1: {"key": "k1", "runs": True,
                                                                                      "targets": WHOLE,
                                                                                      "outcome": "passed",
                                                                                      "readings": {}}}}),
                                  json.dumps({"schema": SCHEMA, "instances": {ADD_1: {"key": "k1", "runs": 1,
                                                                                      "outcome": "passed",
                                                                                      "readings": {}}}})])
def test_a_store_file_that_cannot_be_read_keeps_nothing(tmp_path, text):
    store_path(tmp_path).write_text(text)
    assert CleanRunStore(tmp_path).entries == {}


# ---------------------------------------------------------------- runs that keep them

def _run(repo, perturbations, test_paths, **kw):
    events: list[dict] = []

    def seen(event: dict) -> None:  # a perturbation's report says whether its records were on disk by then
        if event["event"] == "perturbation":
            event = dict(event, message=event["message"] + (" (records on disk)" if (
                repo / "reports" / "evidence" / f"{event['id']}.json").is_file() else ""))
        events.append(event)

    r = run(perturbations, test_paths=test_paths, repo_root=repo, reports_dir="reports", jobs=2, timeout_s=60,
            progress=seen, **kw)
    return r, [e.get("message", "") for e in events]


def _records(repo) -> dict[str, dict]:
    """P_add's records by gate, less when they were written."""
    held = json.loads((repo / "reports" / "evidence" / "P_add.json").read_text())["records"]
    return {gate: {k: v for k, v in rec.items() if k not in ("recorded_at", "record_sha256")}
            for gate, rec in held.items()}


def test_a_second_run_counts_the_kept_clean_runs_and_an_edited_target_runs_them_again(repo):
    first, messages = _run(repo, [P_ADD], [ARITH])
    assert first.ok, first.error
    assert "[1/1] P_add ... red by assertion (1 gate)" in messages  # green after unknown: written at the end
    assert len(first.baseline["runs"]) == clean_runs.CLEAN_RUNS
    kept = json.loads((repo / "reports" / "evidence" / "clean-runs.json").read_text())["instances"]
    assert ADD_1 in kept and len(kept) == 4  # every instance of the gates covering toysubj.arith
    assert {e["runs"] for e in kept.values()} == {clean_runs.CLEAN_RUNS + 1}  # green after is one more
    records = _records(repo)
    assert GATE_ADD in records  # its records are there to compare (the gates covering toysubj.arith)

    (repo / "reports" / "evidence" / "P_add.json").unlink()
    second, messages = _run(repo, [P_ADD], [ARITH])
    assert second.ok, second.error
    # everything known once its child ended: written then, so a run stopped later keeps them
    assert "[1/1] P_add ... red by assertion (1 gate) (records on disk)" in messages
    assert second.baseline["runs"] == [] and second.baseline["clean_runs"] == 11
    assert GATE_ADD in second.green_after["kept"] and second.green_after["gates"] == []
    assert any("10 kept for 4 of 4 instances" in m for m in messages)
    assert second.perturbations[0].outcomes[0].outcome == "red_by_assertion"
    assert _records(repo) == records  # the same evidence, clean_runs counted up to CLEAN_RUNS

    with open(repo / "toysubj" / "arith.py", "a") as f:
        f.write("\nEDITED = 1  # no gate reads it, but the program changed: another key\n")
    third, _ = _run(repo, [P_ADD], [ARITH])
    assert third.ok, third.error
    assert len(third.baseline["runs"]) == clean_runs.CLEAN_RUNS and "kept" not in third.green_after


def _edit(repo, find: str, replace: str) -> None:
    path = repo / "toysubj" / "arith.py"
    text = path.read_text()
    assert find in text
    path.write_text(text.replace(find, replace, 1))


def test_an_edit_to_a_function_no_clean_run_of_an_instance_reached_keeps_its_runs(repo):
    """Keys by function (issue 54 point 2): each clean run hears which functions of toysubj.arith its child
    had called by the instance's end; a child runs its instances in node id order (add's two, neg, scale), so
    add's record holds add alone, and every record holds add (the clean runs run all four in one child). An
    edit to scale's body, called last, keeps the runs of the other three; an edit to add's body then runs
    those three again, and keeps scale's new runs, which ran alone."""
    first, _ = _run(repo, [P_ADD], [ARITH])
    assert first.ok, first.error
    kept = json.loads((repo / "reports" / "evidence" / "clean-runs.json").read_text())["instances"]
    read = {n: set(e["targets"]["toysubj.arith"]["units"]) for n, e in kept.items()}
    assert read[ADD_1] == read[f"{GATE_ADD}[2.0]"] == {"add"}
    assert {"add", "neg"} <= read[GATE_NEG] and {"add", "scale"} <= read[GATE_SCALE] and "scale" not in read[GATE_NEG]

    _edit(repo, "return 2.0 * x", "return x * 2.0")  # scale: the same result, other code
    (repo / "reports" / "evidence" / "P_add.json").unlink()
    second, messages = _run(repo, [P_ADD], [ARITH])
    assert second.ok, second.error
    assert any("10 kept for 3 of 4 instances" in m for m in messages), messages
    assert len(second.baseline["runs"]) == clean_runs.CLEAN_RUNS  # scale's, the one instance that called it

    # scale's new runs ran alone in their children (the other three were kept): they never called add
    kept = json.loads((repo / "reports" / "evidence" / "clean-runs.json").read_text())["instances"]
    assert set(kept[GATE_SCALE]["targets"]["toysubj.arith"]["units"]) == {"scale"}
    _edit(repo, "def add(a, b):\n", "def add(a, b):\n    b = b + 0.0\n")  # add: the same result; P_add still applies
    (repo / "reports" / "evidence" / "P_add.json").unlink()
    third, messages = _run(repo, [P_ADD], [ARITH])
    assert third.ok, third.error
    assert any("10 kept for 1 of 4 instances" in m for m in messages), messages  # scale's
    assert len(third.baseline["runs"]) == clean_runs.CLEAN_RUNS


def _keep(repo, nodeid: str, target: str, runs: int, readings: dict) -> None:
    """`runs` kept clean runs of `nodeid` under its key now, as a run would have written them."""
    index = gate_index.collect([nodeid.split("::", 1)[0]], repo_root=repo, cache_dir=repo / ".idx")
    item = next(it for it in index.items if it["nodeid"] == nodeid)
    assert item["targets"] == [target]
    inputs = InputsNow(repo, [nodeid.split("::", 1)[0]], repo / "fixtures", index, env={})
    store = CleanRunStore(repo / "reports" / "evidence")
    for n in range(runs):
        store.add_run(nodeid, inputs.key_apart_from_targets(item), {target: {"whole": inputs.target_meaning(target)}},
                      "passed", readings, 0.1, counted=n > 0)
    store.save()


def test_a_gate_whose_reading_moves_is_refused_though_nine_clean_runs_are_kept(repo):
    """The clock gate's nine kept runs read 1.0; the one run still needed reads the clock."""
    gate = "tests/toygate_clock.py::test_clock_reads"
    _keep(repo, gate, "toysubj.clock", clean_runs.CLEAN_RUNS - 1, {"reading": 1.0})
    p = {"id": "P_clock", "target": "toysubj.clock", "edits": [{"find": "return time.perf_counter_ns()",
                                                                "replace": "return -1"}], "gates": [gate]}
    r, _ = _run(repo, [p], ["tests/toygate_clock.py"])
    assert not r.ok and r.error_kind == "flaky"
    assert len(r.baseline["runs"]) == 1
    assert f"{gate}: {gate} read {{'reading': 1.0}} in the kept clean runs and " in r.error and "in run 1" in r.error
    assert CleanRunStore(repo / "reports" / "evidence").entries == {}  # forgotten: ten new runs next time
    assert not (repo / "reports" / "evidence" / "P_clock.json").exists()


def test_a_gate_red_in_its_one_missing_clean_run_is_refused_with_the_kept_runs_counted(repo, tmp_path, monkeypatch):
    """Nine kept runs and one new: red in that one is red in 1 of 10, as in a run from nothing."""
    gate = "tests/toygate_sometimes.py::test_add_but_not_in_the_third_process"
    _keep(repo, gate, "toysubj.arith", clean_runs.CLEAN_RUNS - 1, {})
    counter = tmp_path / "counter"
    counter.mkdir()
    (counter / "runs").write_text("xx")  # the next process is the third
    monkeypatch.setenv("TOY_COUNTER", str(counter))
    r, _ = _run(repo, [dict(P_ADD, gates=[gate])], ["tests/toygate_sometimes.py"])
    assert not r.ok and r.error_kind == "flaky"
    assert r.baseline["flaky"] == {gate: [{"red_in": 1, "of": clean_runs.CLEAN_RUNS}]}
    assert CleanRunStore(repo / "reports" / "evidence").entries == {}
