"""The pytest plugin and the child, driven directly (collect mode, run mode, fixtures read)."""
from __future__ import annotations

import shutil

from fidelity.perturb import gate_index, launch

from comment_edit import commented_and_redocumented

from .conftest import ARITH, GATE_ADD, GATE_NEG, GATE_SCALE, TEST_PATHS, make_toy_repo


def test_gate_index_markers_conftest_targets_and_cache(tmp_path, monkeypatch):
    repo = make_toy_repo(tmp_path / "repo")
    cache = tmp_path / "cache"
    index = gate_index.collect(TEST_PATHS, repo_root=repo, cache_dir=cache)
    assert index.gates[GATE_ADD]["nodeids"] == [f"{GATE_ADD}[1.0]", f"{GATE_ADD}[2.0]"]
    assert index.gates[GATE_ADD]["equations"] == ["toy.add"]
    assert index.gates[GATE_NEG]["targets"] == ["toysubj.arith"]  # added by the conftest at collection
    assert index.gates_for_target("toysubj.arith") == [GATE_ADD, GATE_NEG, GATE_SCALE]
    assert index.gates_for_target("toysubj.clock") == ["tests/toygate_clock.py::test_clock_reads"]
    assert gate_index.covers("toysubj", "toysubj.arith") and not gate_index.covers("toysubj.ar", "toysubj.arith")

    def no_child(*a, **k):
        raise AssertionError("the cached index should have been used")

    monkeypatch.setattr(launch, "run_child", no_child)
    assert gate_index.collect(TEST_PATHS, repo_root=repo, cache_dir=cache).gates == index.gates
    moved = shutil.copytree(repo, tmp_path / "elsewhere" / "repo")  # a clone: the same files at another path
    assert gate_index.collect(TEST_PATHS, repo_root=moved, cache_dir=cache).gates == index.gates
    monkeypatch.undo()
    (repo / ARITH).write_text((repo / ARITH).read_text() + "\n\ndef test_new():\n    pass\n")
    assert f"{ARITH}::test_new" in gate_index.collect(TEST_PATHS, repo_root=repo, cache_dir=cache).gates


def test_a_comment_or_docstring_edit_of_a_gate_file_or_conftest_is_served_the_kept_index(tmp_path, monkeypatch):
    """The index is keyed by meaning: no item holds a line number or a docstring. An edit of code is
    collected again (a new test is in the index)."""
    repo = make_toy_repo(tmp_path / "repo")
    cache = tmp_path / "cache"
    index = gate_index.collect(TEST_PATHS, repo_root=repo, cache_dir=cache)
    for edited in (ARITH, "tests/conftest.py"):
        (repo / edited).write_text(commented_and_redocumented((repo / edited).read_text()))

    def no_child(*a, **k):
        raise AssertionError("a comment or docstring edit should have been served the kept index")

    monkeypatch.setattr(launch, "run_child", no_child)
    assert gate_index.collect(TEST_PATHS, repo_root=repo, cache_dir=cache).gates == index.gates
    monkeypatch.undo()
    (repo / ARITH).write_text((repo / ARITH).read_text() + "\n\ndef test_new():\n    pass\n")
    assert f"{ARITH}::test_new" in gate_index.collect(TEST_PATHS, repo_root=repo, cache_dir=cache).gates


def _run_unpatched(repo, args: list[str], tmp_path) -> launch.ChildRun:
    """A run-mode child of the toy repo on `args`, no patch, that ended normally."""
    job = {"mode": "run", "args": args, "rootdir": str(repo), "fixtures_dir": str(repo / "fixtures"), "patch": None}
    child = launch.run_child(job, workdir=tmp_path / "work", label="plain", cwd=str(repo),
                             env=launch.child_env(str(repo)), timeout_s=60)
    assert child.status == "ok", child.output_tail
    return child


def test_run_mode_records_outcomes_readings_and_fixtures_per_instance(tmp_path):
    repo = make_toy_repo(tmp_path / "repo")
    child = _run_unpatched(repo, [GATE_ADD, GATE_NEG, GATE_SCALE], tmp_path)
    items = {i["nodeid"]: i for i in child.items}
    assert set(items) == {f"{GATE_ADD}[1.0]", f"{GATE_ADD}[2.0]", GATE_NEG, GATE_SCALE}
    assert all(i["outcome"] == "passed" for i in items.values())
    assert items[f"{GATE_ADD}[1.0]"]["readings"] == {"reading": 0.0}
    fixture = str(repo / "fixtures" / "add_case.json")
    # the module-scoped pytest fixture opened the file once, during the first instance; both instances use it
    assert items[f"{GATE_ADD}[1.0]"]["fixtures_read"] == [fixture]
    assert items[f"{GATE_ADD}[2.0]"]["fixtures_read"] == [fixture]
    assert items[GATE_SCALE]["fixtures_read"] == []
    assert items[GATE_ADD + "[1.0]"]["gate"] == GATE_ADD


def test_a_fixture_the_store_hands_out_again_without_opening_it_is_still_read_by_that_instance(tmp_path):
    """The store keeps each parsed fixture for the next reader in the process and says so by an audit event
    instead of opening the file: the second reader's evidence must still name it (a changed fixture must
    stale every record that read it)."""
    from fidelity.fixtures import READ_AUDIT_EVENT

    repo = make_toy_repo(tmp_path / "repo")
    fixture = repo / "fixtures" / "add_case.json"
    (repo / "tests" / "toygate_kept.py").write_text(
        "import sys\n\n"
        f"def test_opens():\n    open({str(fixture)!r}).close()\n\n"
        f"def test_handed_out_again():\n    sys.audit({READ_AUDIT_EVENT!r}, {str(fixture)!r})\n\n"
        "def test_reads_nothing():\n    pass\n")
    child = _run_unpatched(repo, ["tests/toygate_kept.py"], tmp_path)
    read = {i["nodeid"].split("::")[1]: i["fixtures_read"] for i in child.items}
    assert read == {"test_opens": [str(fixture)], "test_handed_out_again": [str(fixture)], "test_reads_nothing": []}


def test_a_failure_inside_a_checking_block_is_attributed_to_the_equations_it_names(tmp_path):
    """A gate holding toy.a and toy.b checks them in two assertions: the failure of one is a finding about that
    equation alone; a block naming an equation the gate does not hold attributes nothing (the gate's own stay)."""
    repo = make_toy_repo(tmp_path / "repo")
    (repo / "tests" / "toygate_parts.py").write_text(
        "import pytest\n"
        "from fidelity.gates.attribution import checking\n\n"
        "@pytest.mark.gate(equations=['toy.a', 'toy.b'])\n"
        "@pytest.mark.parametrize('part', ['a', 'b', 'outer', 'misspelled', 'unwrapped'])\n"
        "def test_two_parts(part):\n"
        "    with checking('toy.a', 'toy.b'):\n"
        "        with checking('toy.a'):\n"
        "            assert part != 'a', 'part a is off'\n"
        "        with checking('toy.b'):\n"
        "            assert part != 'b', 'part b is off'\n"
        "        assert part != 'outer', 'the two together are off'\n"
        "    with checking('toy.c'):\n"
        "        assert part != 'misspelled', 'an equation the gate does not hold'\n"
        "    assert part != 'unwrapped', 'outside every block'\n")
    child = _run_unpatched(repo, ["tests/toygate_parts.py"], tmp_path)
    items = {i["nodeid"].split("[")[1].rstrip("]"): i for i in child.items}
    assert {part: (i["kind"], i["checks"]) for part, i in items.items()} == {
        "a": ("assertion", ["toy.a"]), "b": ("assertion", ["toy.b"]), "outer": ("assertion", ["toy.a", "toy.b"]),
        "misspelled": ("assertion", []), "unwrapped": ("assertion", [])}


def test_patched_child_failure_kinds(tmp_path):
    repo = make_toy_repo(tmp_path / "repo")
    target = repo / "toysubj" / "arith.py"
    source = target.read_text()
    patched = source.replace("return a + b", "return a - b").replace("    return -x", "    assert x < 0, 'inside'\n    return -x")
    job = {"mode": "run", "args": [GATE_ADD, GATE_NEG], "rootdir": str(repo), "fixtures_dir": str(repo / "fixtures"),
           "patch": {"perturbation": "T", "module": "toysubj.arith", "path": str(target), "source": patched}}
    child = launch.run_child(job, workdir=tmp_path / "work", label="patched", cwd=str(repo),
                             env=launch.child_env(str(repo)), timeout_s=60)
    items = {i["nodeid"]: i for i in child.items}
    add = items[f"{GATE_ADD}[1.0]"]
    assert (add["outcome"], add["phase"], add["kind"], add["exc_type"]) == ("failed", "call", "assertion", "AssertionError")
    assert add["readings"]["reading"] == 1 / 1.5
    assert "relative error" in add["message"]
    assert add["raised_in"].startswith(f"{ARITH}:")  # relative to the repo
    neg = items[GATE_NEG]  # an AssertionError raised inside the subject is not the gate's assertion
    assert (neg["outcome"], neg["kind"], neg["exc_type"]) == ("failed", "other", "AssertionError")
    assert neg["raised_in"].startswith("toysubj/arith.py:")
    assert target.read_text() == source


def test_child_reports_a_patch_that_cannot_be_installed(tmp_path):
    import fidelity.perturb as target_pkg  # imported by every child before its hook: cannot be patched

    repo = make_toy_repo(tmp_path / "repo")
    job = {"mode": "run", "args": [GATE_SCALE], "rootdir": str(repo), "fixtures_dir": str(repo / "fixtures"),
           "patch": {"perturbation": "T", "module": "fidelity.perturb", "path": target_pkg.__file__, "source": "X = 1\n"}}
    child = launch.run_child(job, workdir=tmp_path / "work", label="late", cwd=str(repo),
                             env=launch.child_env(str(repo)), timeout_s=60)
    assert child.items == [] and child.patch_served == 0
    assert child.collect_errors[0]["exc_type"] == "PatchNotInstalled"
    assert "imported before the patch" in child.collect_errors[0]["message"]


def test_skips_xfails_setup_errors_and_outcome_phases(tmp_path):
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "toygate_misc.py").write_text(
        "import pytest\n"
        "from fidelity.gates.readings import record\n\n"
        "@pytest.fixture\n"
        "def broken():\n"
        "    raise KeyError('no such fixture input')\n\n"
        "def test_skipped():\n"
        "    pytest.skip('needs a GPU')\n\n"
        "@pytest.mark.xfail(reason='known delta')\n"
        "def test_xfail():\n"
        "    assert False\n\n"
        "def test_setup_error(broken):\n"
        "    pass\n\n"
        "def test_fail_helper():\n"
        "    record(3.5)\n"
        "    pytest.fail('not an assertion')\n\n"
        "def test_readings_reset():\n"
        "    pass\n"
    )
    job = {"mode": "run", "args": ["tests/toygate_misc.py"], "rootdir": str(repo), "patch": None}
    child = launch.run_child(job, workdir=tmp_path / "work", label="misc", cwd=str(repo),
                             env=launch.child_env(str(repo)), timeout_s=60)
    items = {i["nodeid"].split("::")[1]: i for i in child.items}
    assert (items["test_skipped"]["outcome"], items["test_skipped"]["skip_reason"]) == ("skipped", "Skipped: needs a GPU")
    assert items["test_xfail"]["outcome"] == "skipped" and items["test_xfail"]["skip_reason"] == "xfail: known delta"
    err = items["test_setup_error"]
    assert (err["outcome"], err["phase"], err["kind"], err["exc_type"]) == ("error", "setup", "other", "KeyError")
    fail = items["test_fail_helper"]
    assert (fail["outcome"], fail["kind"], fail["readings"]) == ("failed", "other", {"reading": 3.5})
    assert items["test_readings_reset"]["readings"] == {}
