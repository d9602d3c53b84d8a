"""Step 5 with `batched` (observations): perturbations dealt into batch children (batch.py) that collect
once and fork per perturbation, serving it by code swap; one a swap cannot serve runs alone."""
from __future__ import annotations

import os

from fidelity.evidence import paths
from fidelity.perturb import batch as batch_mod
from fidelity.perturb import launch
from fidelity.perturb.stages.children import Children
from fidelity.perturb.stages.state import Run

BATCH_SIZE = 24  # mutants per batch child: its collection is paid once per batch; progress comes per batch


def deal(perts: list[dict], jobs: int) -> list[list[dict]]:
    """Perturbations (costliest first) dealt round-robin into at least `jobs` batches of at most
    BATCH_SIZE, so every worker has one and each batch has a share of costly and cheap ones."""
    if not perts:
        return []
    count = max(jobs, -(-len(perts) // BATCH_SIZE))
    parts: list[list[dict]] = [[] for _ in range(min(count, len(perts)))]
    for i, p in enumerate(perts):
        parts[i % len(parts)].append(p)
    return parts


def run_batch(r: Run, children: Children, part: list[dict]) -> list[tuple[dict, launch.ChildRun | None]]:
    """One batch child for `part` (batch.py), in a worker thread: [(perturbation, ChildRun or None)];
    None for one its forks could not serve by code swap, or left no results (it runs alone then)."""
    mutants = [_mutant(r, children, p) for p in part]
    os.makedirs(os.path.join(children.workdir, "batch-results"), exist_ok=True)
    j_keep = set().union(*(r.selection.instances_of[p["id"]] for p in part))
    j = dict(children.job(sorted({g for p in part for g in r.results[p["id"]].gates}), keep=j_keep),
             mode="mutants", mutants=mutants, stop_gate_when_red=True, stop_when_any_red=r.s.first_red_only,
             instance_seconds={n: r.clean.cost.get(n, 0.0) for n in j_keep})
    batch_child = children.start(f"batch-{part[0]['id']}", j, sum(m["timeout_s"] for m in mutants) + r.s.timeout_s,
                                 queued=True)
    out = [(p, _batch_fork(p, m, batch_child)) for p, m in zip(part, mutants)]
    alone = [p["id"] for p, c in out if c is None]
    if alone:
        why = (f"the batch child ended {batch_child.status_text}: {batch_child.output_tail[-1500:]}"
               if batch_child.status != "ok" or len(alone) == len(out) else "code swap cannot serve them")
        r.s.emit("batch", f"{len(alone)} of {len(out)} run alone ({why}): {', '.join(alone[:5])}"
                          + (" ..." if len(alone) > 5 else ""))
    return out


def _mutant(r: Run, children: Children, p: dict) -> dict:
    """A perturbation as a batch child serves it (batch.py)."""
    patch = r.patches[p["id"]]
    return {"id": p["id"], "module": p["target"], "path": patch.path, "source": patch.patched,
            "keep": sorted(r.selection.instances_of[p["id"]]), "timeout_s": p["timeout_s"] or r.s.timeout_s,
            "results": os.path.join(children.workdir, "batch-results", paths.sanitise(p["id"]) + ".json")}


def _batch_fork(p: dict, mutant: dict, batch_child: launch.ChildRun) -> launch.ChildRun | None:
    """What the fork serving `p` left, as a child of its own would have; None: it must run alone."""
    status = batch_mod.read_status(mutant["results"])
    child = None if status is None else launch.read_child(
        f"perturbation-{p['id']}", mutant["results"], returncode=status["returncode"],
        timed_out=status["timed_out"], wall_s=status["wall_s"], output_tail=batch_child.output_tail,
        start="batch")
    if child is not None and (child.results or {}).get(batch_mod.SWAP_IMPOSSIBLE):
        return None
    return child
