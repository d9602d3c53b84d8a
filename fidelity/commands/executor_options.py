"""`--executor local|ray` and `--ray-address ADDR`: where `perturb` and `discover` run their children."""
from __future__ import annotations

import contextlib
from typing import Iterator

EXECUTORS = ("local", "ray")


def add_executor_options(parser) -> None:
    parser.add_argument("--executor", choices=EXECUTORS, default="local",
                        help="where each unit of work (a clean run, a perturbation or a batch of mutants with "
                             "its gate instances, a green-after part) runs: 'local' (default), child processes "
                             "on this machine; 'ray', a Ray task each, one CPU and a GPU for CUDA instances "
                             "(pip install 'fidelity[ray]')")
    parser.add_argument("--ray-address", default=None, metavar="ADDR",
                        help="with --executor ray: the cluster to join ('auto', or HOST:6379), from one of its "
                             "nodes or a Ray job; the project is shipped to its workers. Without it a local "
                             "cluster on this machine's cores is started for the run")


def executor_problem(args) -> str | None:
    """Executor options that do not go together, as the one line to print; None when they do."""
    if args.ray_address is not None and args.executor != "ray":
        return "--ray-address ADDR is for --executor ray: add --executor ray, or drop --ray-address"
    if (args.ray_address or "").startswith("ray://"):
        return (f"{args.ray_address}: Ray Client addresses cannot stream a unit's start back; run fidelity on a "
                f"node of the cluster (--ray-address auto), or as a Ray job: ray job submit --working-dir . -- "
                f"fidelity {args.verb} ... --executor ray --ray-address auto")
    return None


@contextlib.contextmanager
def chosen_executor(args, *, warm_start: bool = True) -> Iterator[object | None]:
    """The executor the options ask for, closed at the end; None for the local one (each run
    makes its own). ExecutorUnavailable (a PerturbError) when Ray is missing or unreachable."""
    if args.executor != "ray":
        yield None
        return
    from fidelity.perturb.ray_executor import RayExecutor

    executor = RayExecutor(args.ray_address, root=str(args.project.root), warm_start=warm_start)
    try:
        yield executor
    finally:
        executor.close()
