"""The run object the stages pass along: the settings, the inputs, the result, and what each stage found.

Each group is a stage's output, filled in as the run goes (the field comments say which stage sets
what; a later stage may narrow a perturbation's gates and instances, and says so where it does).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from fidelity.evidence.gate_helpers import GateHelpers
from fidelity.perturb import gate_index, launch
from fidelity.perturb.kept_clean_runs import KeptCleanRuns
from fidelity.perturb.result import GateResult, PerturbationResult, RunResult
from fidelity.perturb.stages.settings import Settings
from fidelity.targets import patching


@dataclass
class Selection:
    """Which gates and instances each perturbation runs (selection.py; current.py narrows them to what
    current records do not already say; baseline.py drops gates set aside or not reached)."""
    index: gate_index.GateIndex | None = None
    gates_of: dict[str, list[str]] = field(default_factory=dict)      # by id: the gates it runs
    instances_of: dict[str, set[str]] = field(default_factory=dict)   # by id: its gates' instances that see the patch
    todo: list[dict] = field(default_factory=list)        # to run: all, or with stale_only those not current
    kept_covering: dict[str, list[GateResult]] = field(default_factory=dict)  # by id: covering gates known from records
    records: dict[str, dict] | None = None                # by id, by gate: the evidence records, once read (current.py)


@dataclass
class CleanRuns:
    """The clean runs (baseline.py): what they ran, what was kept from earlier runs, what they read."""
    selected: list[str] = field(default_factory=list)     # the gates of `todo`, run clean in the baseline
    selected_instances: set[str] = field(default_factory=set)
    kept: KeptCleanRuns = field(default_factory=KeptCleanRuns.disabled)  # clean runs kept from earlier runs
    kept_runs: dict[str, int] = field(default_factory=dict)   # per selected instance: kept clean runs before this run
    known_green: set[str] = field(default_factory=set)    # instances with CLEAN_RUNS kept: green after is known
    runs: list[launch.ChildRun] = field(default_factory=list)   # this run's new clean runs
    keeps: list[set[str]] = field(default_factory=list)         # the instances each of them ran
    fixtures: dict[str, set[str]] = field(default_factory=dict)  # per gate: the fixtures its clean runs read
    cost: dict[str, float] = field(default_factory=dict)  # seconds per instance in baseline run 1 (set before step 5)


@dataclass
class Watched:
    """The files hashed before the baseline and after green after (sources.py)."""
    files: list[str] = field(default_factory=list)
    helpers: GateHelpers | None = None                    # each gate file's helpers (evidence.gate_helpers)
    hashes_before: dict[str, str | None] = field(default_factory=dict)  # sha256 of the bytes: did anything move
    keys_before: dict[str, str | None] = field(default_factory=dict)    # what those bytes mean: evidence's keys


@dataclass
class Run:
    """What the stages share: the settings and inputs (read only), the result they fill in, and each
    stage's output."""
    s: Settings
    perts: list[dict]                                     # validated, in the caller's order (inputs.py)
    patches: dict[str, patching.Patch]                    # by perturbation id (inputs.py)
    result: RunResult = field(init=False)
    results: dict[str, PerturbationResult] = field(default_factory=dict)  # by id: those in result.perturbations
    selection: Selection = field(default_factory=Selection)
    clean: CleanRuns = field(default_factory=CleanRuns)
    watch: Watched = field(default_factory=Watched)
    written: set[str] = field(default_factory=set)        # perturbations whose records are written already (records.py)
    records_written: int = 0                               # records written this run, in result.evidence's files

    def __post_init__(self) -> None:
        self.result = RunResult(observe=self.s.observe)

    def stop(self, kind: str, message: str) -> None:
        """The run stops here: no further step runs, and no evidence is written."""
        self.result.error_kind, self.result.error = kind, message
        self.s.emit("error", message)
