"""A run's options, resolved against the repo root once, read by every stage and changed by none."""
from __future__ import annotations

from dataclasses import dataclass
import os
from pathlib import Path
from typing import Callable, Iterable

from fidelity.evidence import paths
from fidelity.perturb import gate_index, launch
from fidelity.perturb import warm_start as warm_start_mod
from fidelity.perturb.errors import InvalidPerturbation

FIXTURES_DIR = "fixtures"

Progress = Callable[[dict], None]


@dataclass(frozen=True)
class Settings:
    """A run's options, resolved against the repo root: read by every step, changed by none."""
    root: Path
    test_paths: list[str]
    records_root: Path
    fixtures: Path
    cache: Path
    pythonpath: list[str]
    jobs: int
    timeout_s: float
    environment: dict[str, str | None] | None
    base_env: dict                 # the children's environment before `environment` (a zygote's)
    env: dict                      # with `environment` applied: a cold child's
    progress: Progress | None
    stale_only: bool
    observe: bool
    first_red_only: bool
    set_aside_red_baseline: bool
    trace_lines: bool
    batched: bool
    cuda_elsewhere: bool           # the executor's workers have GPUs: CUDA instances skipped here run there
    reuse_covering: bool           # a covering gate with a current record is not run again (step 3)

    def emit(self, event: str, message: str, **extra) -> None:
        if self.progress is not None:
            self.progress(dict(extra, event=event, message=message))


def check_options(*, observe, stale_only, first_red_only, set_aside_red_baseline, trace_lines, batched) -> None:
    if observe and stale_only:
        raise InvalidPerturbation("an observation runs every perturbation afresh: stale_only does not apply")
    if (first_red_only or set_aside_red_baseline or trace_lines or batched) and not observe:
        raise InvalidPerturbation("first_red_only, set_aside_red_baseline, trace_lines and batched are for "
                                  "observations: acceptance needs every listed gate red, a green baseline, "
                                  "and each perturbation in a child of its own")


def resolve_settings(repo_root, *, test_paths, reports_dir, evidence_dir, fixtures_dir, cache_dir, pythonpath, jobs,
              environment, **flags) -> Settings:
    root = Path(repo_root).resolve()
    pythonpath = [str(_abs(p, root)) for p in pythonpath]
    jobs = _jobs(jobs)
    base_env = _base_env(root, pythonpath, jobs)
    return Settings(
        root=root,
        test_paths=[str(t) for t in test_paths],
        records_root=(_abs(evidence_dir, root) if evidence_dir is not None
                      else paths.evidence_root(_abs(reports_dir, root))),
        fixtures=_abs(fixtures_dir, root),
        cache=_abs(cache_dir, root) if cache_dir is not None else gate_index.cache_dir(root),
        pythonpath=pythonpath,
        jobs=jobs,
        environment=environment,
        base_env=base_env,
        env=launch.with_overrides(base_env, environment),
        **flags,
    )


def _jobs(jobs: int | None) -> int:
    return max(1, int(jobs or os.cpu_count() or 1))


def _base_env(root: Path, pythonpath: list[str], jobs: int) -> dict:
    """The children's environment before a run's `environment`: `jobs` children at once."""
    return launch.child_env(str(root), pythonpath, processes=jobs)


def _abs(path: str | os.PathLike, root: Path) -> Path:
    p = Path(path)
    return p if p.is_absolute() else root / p


def shared_zygote(repo_root: str | os.PathLike = ".", jobs: int | None = None,
                  pythonpath: Iterable[str] = ()) -> warm_start_mod.LazyZygote:
    """A zygote several runs with these settings may share (pass it as `zygote`; close it after)."""
    root = Path(repo_root).resolve()
    return warm_start_mod.LazyZygote(str(root), _base_env(root, [str(_abs(p, root)) for p in pythonpath], _jobs(jobs)))
