"""Step 5, the perturbation children: one per perturbation (with `batched`, a batch child per share of
them, batches.py), the costliest first, each judged as it ends and reported "[k/total] id ... summary"."""
from __future__ import annotations

import concurrent.futures as cf
from pathlib import Path

from fidelity.evidence import paths
from fidelity.perturb import launch, outcomes
from fidelity.perturb.result import GateResult
from fidelity.perturb.stages.batches import deal, run_batch
from fidelity.perturb.stages.children import Children
from fidelity.perturb.stages.items import instances_per_gate
from fidelity.perturb.stages.records import write_when_known
from fidelity.perturb.stages.state import Run


class PerturbationChildren:
    """Step 5: a child per perturbation (with `batched`, a batch child per share of them); each
    judged as it ends and reported "[k/total] id ... summary"."""

    def __init__(self, r: Run, children: Children):
        self.r, self.children = r, children
        self.futures: dict[cf.Future, dict | list[dict]] = {}  # a perturbation's child, or a batch's
        self.done = 0
        self.total = len(r.selection.todo)

    def submit_all(self) -> None:
        r = self.r
        with_gates = sorted((p for p in r.selection.todo if r.results[p["id"]].gates),
                            key=lambda p: -sum(r.clean.cost.get(n, 0.0) for n in r.selection.instances_of[p["id"]]))
        if r.s.batched:
            for part in deal(with_gates, r.s.jobs):
                self.children.tally.queue()
                self.futures[self.children.pool.submit(run_batch, r, self.children, part)] = part
        else:
            for p in with_gates:
                self.submit_one(p)

    def submit_one(self, p: dict) -> None:
        r = self.r
        job = self.children.job(r.results[p["id"]].gates, r.patches[p["id"]], keep=r.selection.instances_of[p["id"]])
        fut = self.children.submit(f"perturbation-{p['id']}", job, p["timeout_s"] or r.s.timeout_s, p["target"])
        self.futures[fut] = p

    def report_those_without_gates(self) -> None:
        for p in self.r.selection.todo:  # nothing can go red
            if not self.r.results[p["id"]].gates:
                self.r.results[p["id"]].status = "ran"
                self._report(p)

    def wait(self) -> None:
        while self.futures:
            fut = next(cf.as_completed(self.futures))
            what = self.futures.pop(fut)
            if isinstance(what, dict):
                self._finish(what, fut.result())
                continue
            for p, child in fut.result():  # a batch: what each fork left, or None to run it alone
                if child is None:
                    self.submit_one(p)
                else:
                    self._finish(p, child)

    def _finish(self, p: dict, child: launch.ChildRun) -> None:
        r = self.r
        pr = r.results[p["id"]]
        pr.status = "ran"
        pr.child = child.to_json()
        counts = instances_per_gate(r.selection.instances_of[p["id"]])
        ran = [_gate_result(g, r.selection.index, child, p, r.s.root, counts[g]) for g in pr.gates]
        pr.outcomes = sorted(ran + r.selection.kept_covering.get(p["id"], []), key=lambda o: o.gate)
        write_when_known(r, p)
        self._report(p)

    def _report(self, p: dict) -> None:
        self.done += 1
        summary = self.r.results[p["id"]].summary()
        self.r.s.emit("perturbation", f"[{self.done}/{self.total}] {p['id']} ... {summary}",
                      index=self.done, total=self.total, id=p["id"], status=summary)


def _gate_result(g: str, index, child: launch.ChildRun, p: dict, root: Path, expected: int) -> GateResult:
    c = outcomes.classify_gate(g, index.file_of(g), child, expected)
    info = index.gates[g]
    return GateResult(
        gate=g,
        outcome=c["outcome"],
        reading=c["reading"],
        predicted=p["predicted"].get(g),
        listed=g in p["gates"],
        detail=c["detail"],
        gate_file=info["file"],
        equations=info["equations"],
        instances=c["instances"],
        fixtures_read=sorted(paths.rel_to_root(f, root) for f in c["fixtures_read"]),
    )
