"""A stale discovery record is not a pass (issue 50, point 4). In the project `fidelity init` writes, with a
discovery record of its module, an edit to the module that changes no behaviour (a helper nothing calls) leaves
every gate green and every perturbation caught: `fidelity perturb --stale` re-records the evidence, and
`fidelity check` used to say GREEN with a note that the record was stale. Now the discovery stage is RED for
the module, naming `fidelity discover --stale`; that command re-runs the stale module, and the record is
current again. (The edit was a memo of the first output per shape until the generic stateless gate, which the
init project now holds its mechanism to, caught it: B's other values got A's result.)"""
import json

from toy_project import fidelity

ORIGINAL = "def tempered_softmax(logits: torch.Tensor, *, temperature: float = 1.0) -> torch.Tensor:\n"
UNCALLED_HELPER = '''def _rows(logits: torch.Tensor) -> int:
    """How many rows the logits hold (nothing calls it: an edit that changes no behaviour)."""
    return logits.reshape(-1, logits.shape[-1]).shape[0]


''' + ORIGINAL
STALE = "the discovery record of mypaper.softmax is stale (the source of mypaper.softmax changed)"


def _discovery_stage(root):
    """check's discovery stage at `root`, in-process (the rest of check says nothing about discovery)."""
    from fidelity import project
    from fidelity.check import discovery_stage
    from fidelity.spec import load_catalogue

    here = project.load(root).activate()
    return discovery_stage.run(load_catalogue(here.specs), None, lambda *said: None)


def test_with_nothing_stale_discover_stale_says_so_and_runs_nothing(discovered_init_project, tmp_path):
    root = tmp_path / "mypaper"
    import shutil

    shutil.copytree(discovered_init_project.root, root)
    before = (root / "reports" / "discovery" / "mypaper.softmax.json").read_bytes()
    run = fidelity("discover", "--stale", cwd=root)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "discover --stale: every discovery record is current (1 record): nothing to run" in run.stdout
    assert (root / "reports" / "discovery" / "mypaper.softmax.json").read_bytes() == before
    as_json = json.loads(fidelity("discover", "--stale", "--json", cwd=root).stdout)
    assert as_json["ok"] and as_json["stale"] == [] and as_json["records"] == [] and as_json["mutants"] == []


def test_an_edit_of_the_module_is_red_at_check_after_perturb_stale_until_discover_stale(discovered_init_project, tmp_path):
    root = tmp_path / "mypaper"
    import shutil

    shutil.copytree(discovered_init_project.root, root)
    module = root / "mypaper" / "softmax.py"
    text = module.read_text()
    assert text.count(ORIGINAL) == 1
    module.write_text(text.replace(ORIGINAL, UNCALLED_HELPER))
    perturb = fidelity("perturb", "--stale", cwd=root)
    assert perturb.returncode == 0, perturb.stdout[-3000:] + perturb.stderr[-2000:]  # every gate still sees P1..P7

    check = fidelity("check", "--json-file", str(tmp_path / "check.json"), cwd=root)
    report = json.loads((tmp_path / "check.json").read_text())
    assert check.returncode == 1 and not report["ok"], check.stdout[-3000:]
    assert [s["stage"] for s in report["stages"] if not s["ok"]] == ["discovery"]
    discovery = next(s for s in report["stages"] if s["stage"] == "discovery")
    assert any(p.startswith(STALE) and "run `fidelity discover --stale`" in p for p in discovery["problems"])
    assert f"discovery RED  {STALE}" in check.stdout and "check: RED" in check.stdout

    refresh = fidelity("discover", "--stale", cwd=root)
    assert "== mypaper.softmax (stale: the source of mypaper.softmax changed)" in refresh.stderr, refresh.stderr[-2000:]
    assert "recorded: " in refresh.stdout, refresh.stdout[-2000:] + refresh.stderr[-2000:]
    mutants = json.loads((root / "reports" / "discovery" / "mypaper.softmax.json").read_text())["mutants"]
    assert refresh.returncode == (1 if any(m["outcome"] == "blind_spot" for m in mutants) else 0)
    after = _discovery_stage(root)
    assert [r["current"] for r in after["records"]] == [True]
    assert not any("is stale" in p for p in after["problems"]), after["problems"]
    # what the fresh record holds is judged as any current record is: each survivor unexplained is named
    survivors = [m for m in mutants if m["outcome"] in ("blind_spot", "undecided")]
    assert after["ok"] == (not survivors)
    assert all(any(f"mypaper.softmax:{m['key']} " in p for p in after["problems"]) for m in survivors)
