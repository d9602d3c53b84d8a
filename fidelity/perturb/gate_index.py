"""Which gates exist, and which of them cover a module.

The index comes from one collect-only child (the plugin in collect mode) over
the test paths. It is cached as JSON keyed by a sha256 over what the test files
mean (every .py under the test paths, the conftest.py files above them up to the
repo root, and the repo's pytest configuration files), and kept beside what the
collection read of the harness, by function (index_reads.py): it is collected
again only when one of those changes in meaning (`index_key`), or what the
collection ran of the harness does.

A gate covers a module M when one of its targets is M or a package above M
(a gate targeting `fidelity.impl.torch` covers `fidelity.impl.torch.mhc`).
Targets are known per test instance too (a conftest marks each instance with
the modules of the subject it drives), so a perturbation can run only the
instances that can see its patch: a torch module's patch need not run the
Triton subject's instances of the same gate.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from fidelity import cache
from fidelity.evidence import jsonio, paths
from fidelity.perturb import harness_sources, index_reads, launch
from fidelity.perturb.calls_so_far import COLLECT_FIELD
from fidelity.source_meaning import meaning_sha256, memo_of
from fidelity.targets import locate
from fidelity.perturb.errors import GateCollectionError

INDEX_FORMAT = 5  # 2: items carry skip_marker; 3: and mechanism, gate_class; 4: keyed by meaning; 5: harness read
CONFIG_FILES = ("pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini", "conftest.py")
cache_dir = cache.cache_dir  # where the index is kept (fidelity/cache.py)


@dataclass
class GateIndex:
    key: str
    items: list[dict]                      # one per collected test instance (plugin collect entries)
    gates: dict[str, dict] = field(default_factory=dict)

    def __post_init__(self):
        gates: dict[str, dict] = {}
        self._items_of: dict[str, list[dict]] = {}  # gate -> its collected instances
        for it in self.items:
            self._items_of.setdefault(it["gate"], []).append(it)
            g = gates.setdefault(it["gate"], {"file": it["file"], "equations": set(), "targets": set(),
                                              "nodeids": [], "gate_marker": False})
            g["equations"].update(it.get("equations", []))
            g["targets"].update(it.get("targets", []))
            g["nodeids"].append(it["nodeid"])
            g["gate_marker"] = g["gate_marker"] or bool(it.get("gate_marker"))
        self.gates = {
            k: dict(v, equations=sorted(v["equations"]), targets=sorted(v["targets"]))
            for k, v in sorted(gates.items())
        }

    def gates_for_target(self, module: str) -> list[str]:
        """Gate ids whose targets cover `module`, sorted."""
        return [g for g, info in self.gates.items() if any(covers(t, module) for t in info["targets"])]

    def instances_covering(self, gate: str, module: str, cuda_elsewhere: bool = False) -> list[str]:
        """Node ids of `gate`'s instances whose targets cover `module`; all of them when none does
        (a gate named by a perturbation without covering it runs whole). Instances marked skip at
        collection (e.g. a CUDA instance on a machine without CUDA) are left out: they would only
        be started to be skipped; unless nothing else is left, so the gate still reports why.
        With `cuda_elsewhere` (an executor whose workers have GPUs) a CUDA instance skipped here
        for want of a CUDA device is kept: it runs where there is one."""
        mine = self._items_of.get(gate, [])
        chosen = [it for it in mine if any(covers(t, module) for t in it.get("targets", []))] or mine
        runnable = [it for it in chosen if not it.get("skip_marker")
                    or (cuda_elsewhere and it.get("device") == "cuda")]
        return [it["nodeid"] for it in (runnable or chosen)]

    def on_cuda(self, nodeids) -> bool:
        """Whether one of `nodeids` runs on the CUDA device (its unit needs a GPU)."""
        wanted = set(nodeids)
        return any(it.get("device") == "cuda" for it in self.items if it["nodeid"] in wanted)

    def file_of(self, gate: str) -> str:
        return self.gates[gate]["file"]

    def instances(self, gate: str) -> int:
        return len(self.gates[gate]["nodeids"])

    def to_json(self) -> dict:
        return {"format": INDEX_FORMAT, "key": self.key, "items": self.items}


def covers(target: str, module: str) -> bool:
    return module == target or module.startswith(target + ".")


def hashed_files(test_paths: list[str], repo_root: Path) -> list[Path]:
    """Every file that decides collection: the test files, the conftests above them, the pytest configuration."""
    files: set[Path] = set()
    for tp in test_paths:
        p = (repo_root / tp).resolve()
        if p.is_dir():
            files.update(f for f in p.rglob("*.py") if "__pycache__" not in f.parts)
            top = p
        else:
            files.add(p)
            top = p.parent
        d = top
        while True:
            c = d / "conftest.py"
            if c.exists():
                files.add(c)
            if d == repo_root or d.parent == d or repo_root not in d.parents:
                break
            d = d.parent
    for name in CONFIG_FILES:
        if (repo_root / name).exists():
            files.add((repo_root / name).resolve())
    return sorted(files)


SUBJECT_VARIABLES = ("FIDELITY_SUBJECTS", "FIDELITY_ONLY_SUBJECTS")


def subject_setting(env) -> str:
    """Which subjects the gates are parametrised over: it changes the index too."""
    env = os.environ if env is None else env
    return "".join(f"{var}={env.get(var) or ''}\n" for var in SUBJECT_VARIABLES)


def subject_modules(env) -> tuple[str, ...]:
    """The modules of the subjects `env` adds by reference (FIDELITY_SUBJECTS, `module:object`)."""
    env = os.environ if env is None else env
    return tuple(ref.split(":", 1)[0] for ref in (env.get(SUBJECT_VARIABLES[0]) or "").split(",") if ref.strip())


def harness_modules(repo_root: str | os.PathLike, env) -> tuple[str, ...]:
    """The modules besides the fidelity package whose sources decide a gate run of the project at `repo_root`
    under `env`: those it configures as subjects and mechanisms, and those of the subjects `env` adds."""
    return harness_sources.configured_modules(repo_root) + subject_modules(env)


def index_key(test_paths: list[str], repo_root: str | os.PathLike, env: dict | None = None) -> str:
    """sha256 over the names and meanings of the test files and configuration and the subject variables of
    `env` (default os.environ). By meaning (source_meaning.py): an item holds no line number and no
    docstring, so a comment, docstring or layout edit collects the same items and is served the kept index
    (a gate file's comment made check --changed collect the suite again: 5.8 s against 2.6 s). The sources
    that say what each subject provides and drives (harness_sources.py: an adapter that gains a mechanism
    changes the index) count by what the collection read of them, beside the key (index_reads.py)."""
    root = Path(repo_root).resolve()
    h = hashlib.sha256()
    h.update(f"format {INDEX_FORMAT}\n".encode())
    h.update(json.dumps(sorted(test_paths)).encode())
    h.update(subject_setting(env).encode())
    memo = memo_of(root)
    for f in hashed_files(test_paths, root):
        h.update(paths.rel_to_root(f, root).encode() + b"\0")  # a moved or copied checkout keeps its index
        h.update((meaning_sha256(f, memo) or "missing").encode() + b"\n")
    return h.hexdigest()


def harness_files(repo_root: str | os.PathLike, env) -> list[Path]:
    """The harness of a collection of the project at `repo_root` under `env` (harness_sources.py), as a child
    imports it."""
    root = Path(repo_root).resolve()
    return harness_sources.files(harness_modules(root, env), locate.child_search_path(str(root)))


def collect(
    test_paths: list[str],
    *,
    repo_root: str | os.PathLike,
    cache_dir: str | os.PathLike | None = None,
    pythonpath: list[str] | tuple[str, ...] = (),
    timeout_s: float = 300,
    workdir: str | os.PathLike | None = None,
    environment: dict[str, str | None] | None = None,
    zygote=None,  # a warm_start.LazyZygote: started only when the index must be collected
) -> GateIndex:
    """The gate index for `test_paths` (paths relative to repo_root: dirs or files), collected
    with `environment` over os.environ (a None value unsets). One cache file per subject
    setting, so our run and a third-party package's do not evict each other."""
    place = CachedIndex(test_paths, repo_root, cache_dir, pythonpath, environment)
    index = place.kept()
    if index is not None:
        return index
    before = index_reads.read_before(place.harness)  # what the record is made of: the files as the collection starts
    with tempfile.TemporaryDirectory(prefix="fidelity-collect-", dir=workdir) as tmp:
        job = {"mode": "collect", "args": list(test_paths), "rootdir": str(place.root), "patch": None,
               "env": dict(environment or {}), "hear_calls": True}
        child = launch.run_child(job, workdir=tmp, label="collect", cwd=str(place.root),
                                 env=place.env, timeout_s=timeout_s,
                                 zygote=zygote.get() if zygote is not None else None)
    if child.status != "ok":
        raise GateCollectionError(f"collecting the gates failed: {child.status_text}\n{child.output_tail}")
    if child.collect_errors:
        msgs = "\n".join(f"- {e['nodeid']}: {e['exc_type']}\n{e['message'][-1500:]}" for e in child.collect_errors)
        raise GateCollectionError(f"the gate suite has collection errors:\n{msgs}")
    return place.keep(before, child.results)


@dataclass
class CollectedElsewhere:
    """A run's collection of the suite (the plugin's --fidelity-index-too, with --fidelity-trace-calls), to be kept
    as `collect` keeps its own."""

    _cached: "CachedIndex"
    _before: dict

    def keep(self, results: dict) -> GateIndex:
        """The index the run's `results` hold, kept. Raises GateCollectionError when it did not collect every file."""
        if results.get("collect_errors"):
            raise GateCollectionError("the gate run did not collect every gate file")
        return self._cached.keep(self._before, results)


class CachedIndex:
    """The gate index of `test_paths` under an environment as the cache holds it: where, the key it must hold
    now, `kept` (read back while current) and `keep` (a collection's results, kept)."""

    def __init__(self, test_paths: list[str], repo_root: str | os.PathLike, cache_dir: str | os.PathLike | None,
                 pythonpath: list[str] | tuple[str, ...] = (), environment: dict[str, str | None] | None = None):
        self.root = Path(repo_root).resolve()
        missing = [t for t in test_paths if not (self.root / t.split("::", 1)[0]).exists()]
        if missing:
            raise GateCollectionError(f"test paths not found under {self.root}: {missing}")
        self.env = launch.with_overrides(launch.child_env(str(self.root), pythonpath), environment)
        self.key = index_key(test_paths, self.root, self.env)
        name = ("gate_index.json" if not any(self.env.get(v) for v in SUBJECT_VARIABLES)
                else f"gate_index-{hashlib.sha256(subject_setting(self.env).encode()).hexdigest()[:12]}.json")
        self.cache = Path(cache_dir) / name if cache_dir is not None else None
        self.harness, self.memo = harness_files(self.root, self.env), memo_of(self.root)

    def keep(self, before: dict, results: dict) -> GateIndex:
        """The index a collection's `results` hold, kept beside what it read of the harness as it was `before`."""
        index = GateIndex(self.key, results.get("collected", []))
        if self.cache is not None:
            read = index_reads.recorded(before, results.get(COLLECT_FIELD), self.root, self.memo)
            jsonio.write_machine_json(self.cache, {**index.to_json(), "harness": read})
        return index

    def collected_elsewhere(self) -> CollectedElsewhere:
        """For a run that collects the suite anyway (check's gate run), called before it starts: the record
        is made of the harness files as they are now."""
        return CollectedElsewhere(self, index_reads.read_before(self.harness))

    def kept(self) -> GateIndex | None:
        if self.cache is None or not self.cache.exists():
            return None
        try:
            data = json.loads(self.cache.read_text(encoding="utf-8"))
            if (data.get("format") == INDEX_FORMAT and data.get("key") == self.key
                    and index_reads.holds(data["harness"], self.harness, self.root, self.memo)):
                return GateIndex(self.key, data["items"])
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
        return None
