"""Step 2, which gates and instances: the gate index (one cached collect-only child); the gates of a
perturbation are those covering its target and those it lists or predicts; of each, the instances
covering the target (all of a listed gate's when none covers it)."""
from __future__ import annotations

from fidelity.perturb import gate_index
from fidelity.perturb.errors import UnknownGate
from fidelity.perturb.result import PerturbationResult
from fidelity.perturb.stages.children import Children
from fidelity.perturb.stages.inputs import display_name
from fidelity.perturb.stages.state import Run


def collect_gate_index(r: Run, children: Children) -> None:
    """Sets r.selection.index: one cached collect-only child (gate_index.py)."""
    s = r.s
    s.emit("collect", "collecting the gate index")
    r.selection.index = gate_index.collect(s.test_paths, repo_root=s.root, cache_dir=s.cache, pythonpath=s.pythonpath,
                                 timeout_s=max(s.timeout_s, 300), environment=s.environment,
                                 zygote=children.executor.index_zygote())
    children.index = r.selection.index


def select_gates(r: Run) -> None:
    """Sets r.selection.gates_of and r.selection.instances_of: the gates covering a perturbation's target and those it
    lists or predicts (UnknownGate for one the index does not know); of each, the instances
    covering the target (all of a listed gate's when none covers it)."""
    for p in r.perts:
        named = shown_by(p)
        unknown = sorted(g for g in named if g not in r.selection.index.gates)
        if unknown:
            raise UnknownGate(f"{display_name(p)}: unknown gate(s) {unknown}; "
                              f"known gates: {sorted(r.selection.index.gates)}")
        # A perturbation of someone else's implementation (it names a subject) runs only the
        # gates it lists: the package's other red gates are findings about it, not a red baseline.
        covering = set() if p.get("subject") else set(r.selection.index.gates_for_target(p["target"]))
        r.selection.gates_of[p["id"]] = sorted(covering | named)
        r.selection.instances_of[p["id"]] = {n for g in r.selection.gates_of[p["id"]]
                                   for n in r.selection.index.instances_covering(g, p["target"], r.s.cuda_elsewhere)}


def start_results(r: Run) -> None:
    """Sets r.results and r.result.perturbations: every perturbation "not_run" until it is."""
    for p in r.perts:
        patch = r.patches[p["id"]]
        r.results[p["id"]] = PerturbationResult(
            id=p["id"], title=p["title"], target=p["target"], target_file=patch.display_path,
            spec_file=p["file"], diff=patch.diff, gates=r.selection.gates_of[p["id"]], listed=p["gates"],
            status="not_run", observe=r.s.observe,
        )
    r.result.perturbations = [r.results[p["id"]] for p in r.perts]


def shown_by(p: dict) -> set[str]:
    """The gates a perturbation lists or predicts: what it shows, so they always run."""
    return set(p["gates"]) | set(p["predicted"])
