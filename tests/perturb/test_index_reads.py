"""The gate index is kept while what its collection read of the harness holds (fidelity/perturb/index_reads.py):
an edit of a function the collection never called keeps it, an edit of what it ran collects again."""
from __future__ import annotations

import json

import pytest

from fidelity.perturb import gate_index, index_reads, launch

from .conftest import TEST_PATHS, make_toy_repo

ADAPTER = '''"""An adapter the run adds."""
MECHANISMS = ("depth_attention",)


def declared():
    return MECHANISMS


def forward(x):
    return x
'''


def _files(tmp_path):
    (tmp_path / "adapter.py").write_text(ADAPTER)
    (tmp_path / "plugin.py").write_text("def hook():\n    return 1\n")
    (tmp_path / "unread.py").write_text("def report():\n    return 2\n")
    return [tmp_path / name for name in ("adapter.py", "plugin.py", "unread.py")]


def _recorded(tmp_path):
    """As a collection that imported adapter.py with its markers and called declared(), imported plugin.py
    before it listened, and never imported unread.py."""
    files = _files(tmp_path)
    adapter, plugin, _ = (str(f) for f in files)
    calls = {"imported": [adapter, plugin], "heard": {adapter: [5]}}  # line 5: declared's def
    return files, index_reads.recorded(index_reads.read_before(files), calls, tmp_path, None)


def test_what_the_collection_ran_is_recorded_by_function_and_what_it_never_imported_not_at_all(tmp_path):
    files, record = _recorded(tmp_path)
    assert set(record) == {"adapter.py", "plugin.py"}
    assert set(record["adapter.py"]["units"]) == {"declared"} and "skeleton" in record["adapter.py"]
    assert set(record["plugin.py"]) == {"meaning"}  # imported before the child listened: whole
    assert index_reads.holds(record, files, tmp_path, None)


def test_an_edit_of_a_function_the_collection_never_called_keeps_the_index(tmp_path):
    files, record = _recorded(tmp_path)
    (tmp_path / "adapter.py").write_text(ADAPTER.replace("return x", "return x * 1"))
    (tmp_path / "unread.py").write_text("def report():\n    return 3\n")
    assert index_reads.holds(record, files, tmp_path, None)


def test_an_edit_of_what_the_collection_ran_collects_again(tmp_path):
    """An adapter that gains a mechanism (module-level code), a called function's body, a file read whole,
    a file gone: each is another collection."""
    for edit in (lambda: (tmp_path / "adapter.py").write_text(ADAPTER.replace('("depth_attention",)',
                                                                              '("depth_attention", "hc_stack")')),
                 lambda: (tmp_path / "adapter.py").write_text(ADAPTER.replace("return MECHANISMS", "return ()")),
                 lambda: (tmp_path / "plugin.py").write_text("def hook():\n    return 2\n"),
                 lambda: (tmp_path / "plugin.py").unlink()):
        files, record = _recorded(tmp_path)
        edit()
        assert not index_reads.holds(record, [f for f in files if f.exists()], tmp_path, None)


def test_the_record_is_of_the_files_as_the_collection_started(tmp_path):
    """A file edited while the child collects is changed for the next lookup: the index collected again."""
    files = _files(tmp_path)
    adapter, plugin, _ = (str(f) for f in files)
    before = index_reads.read_before(files)
    (tmp_path / "adapter.py").write_text(ADAPTER.replace('("depth_attention",)', '("hc_stack",)'))  # meanwhile
    record = index_reads.recorded(before, {"imported": [adapter, plugin], "heard": {adapter: [5]}}, tmp_path, None)
    assert not index_reads.holds(record, files, tmp_path, None)


@pytest.mark.parametrize("heard", ["nothing", "untrusted"])
def test_a_collection_whose_calls_were_not_heard_counts_every_harness_file_whole(tmp_path, heard):
    """Untrusted: it started a process, which may have imported any of them (calls_so_far.py)."""
    files = _files(tmp_path)
    calls = None if heard == "nothing" else {"imported": [str(files[0])], "heard": None}
    record = index_reads.recorded(index_reads.read_before(files), calls, tmp_path, None)
    assert set(record) == {"adapter.py", "plugin.py", "unread.py"} and all(set(r) == {"meaning"} for r in record.values())
    (tmp_path / "unread.py").write_text("def report():\n    return 3\n")
    assert not index_reads.holds(record, files, tmp_path, None)


def test_the_collecting_child_says_what_it_ran_of_the_harness_and_the_index_keeps_it(tmp_path, monkeypatch):
    repo = make_toy_repo(tmp_path / "repo")
    cache = tmp_path / "cache"
    index = gate_index.collect(TEST_PATHS, repo_root=repo, cache_dir=cache)
    record = json.loads((cache / "gate_index.json").read_text())["harness"]
    plugin = next(name for name in record if name.endswith("fidelity/perturb/pytest_plugin.py"))
    assert set(record[plugin]) == {"meaning"}  # imported before it listened
    assert any("skeleton" in r for r in record.values())  # imported after: by function
    assert not any(name.endswith("fidelity/commands/report_cmd.py") for name in record)  # never imported

    def no_child(*a, **k):
        raise AssertionError("the kept index should have been served")

    monkeypatch.setattr(launch, "run_child", no_child)
    assert gate_index.collect(TEST_PATHS, repo_root=repo, cache_dir=cache).gates == index.gates
