"""check stage: run the gate suite once and report every gate per subject.

The suite runs in a child pytest with the perturbation runner's plugin, which
records per test instance its outcome, subject, device, equations and reading.
A gate is green when every instance that ran passed; instances skipped because a
subject or device is missing are 'not run', never 'passed', and the text says why, each
reason with its count. A gate file that does not collect (a gate marker naming a mechanism,
gate class or equation nothing declares, fidelity/gates/marker_names.py) makes the stage RED,
naming the file and the error.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fidelity import cache, project
from fidelity.gaterun import forked_workers, kept_gate_run, warm_pytest
from fidelity.gaterun.subject_gate_files import gate_files
from fidelity.perturb import gate_index
from fidelity.child_env import child_environment
from fidelity.perturb.errors import GateCollectionError


FILE_SECONDS = "gate-file-seconds.json"  # each gate file's wall in the last whole run: the longest start first


class GateSuiteDidNotCollect(RuntimeError):
    """Gate files that did not collect, in a run whose caller would otherwise give a verdict without them."""


def run_gate_suite(here: project.Project | None = None, extra_args: tuple[str, ...] = (),
                   env: dict | None = None, progress=None, jobs: int | None = None,
                   files: list[Path] | None = None, keep_collection_errors: bool = False,
                   warm: "warm_pytest.WarmPytest | None" = None) -> dict:
    """The gate suite of `here` (default: the current project) in a child pytest, run from its root,
    on `gate_workers(here, jobs)` processes at a time; `progress(done, total)` is called about once a second
    while it runs (total None until collected). The items come back in the order of a serial run.
    `files`: only these gate files (default: all of them).

    A gate file that does not collect (e.g. its marker names a mechanism, gate class or equation nothing
    declares) raises GateSuiteDidNotCollect naming each, since a verdict without its gates would pass them
    in silence; `keep_collection_errors`: return them in `collect_errors` instead (a caller that records
    them). `warm`: the child to run it in, forked before the caller loaded anything the run must import
    itself (warm_pytest.py; default: a fork now where that is safe). With `files`, the gate files naming
    a mechanism nobody declares run too: a subject's run (`check --subject`) would otherwise leave out
    the gate whose mechanism is misspelled, and say nothing."""
    here = here or project.current()
    if files is not None and not keep_collection_errors:
        files = [*files, *misnamed_mechanism_files(here, files)]
    with GateSuiteRun(here, extra_args, env, jobs, files=files, warm=warm) as run:
        data = run.wait(progress)
    if data.get("collect_errors") and not keep_collection_errors:
        raise GateSuiteDidNotCollect("; ".join(collection_problem(e) for e in data["collect_errors"]))
    return data


def misnamed_mechanism_files(here: project.Project, chosen: list[Path]) -> list[Path]:
    """The gate files besides `chosen` whose gate markers name (as a constant) a mechanism nobody declares."""
    from fidelity.gaterun.subject_gate_files import named_mechanisms
    from fidelity.gates.marker_names import declared_mechanisms

    declared = declared_mechanisms(here.mechanisms)
    return [f for f in gate_files(here.gates) if f not in set(chosen)
            and any(isinstance(m, str) and m not in declared for m in named_mechanisms(f))]


class GateSuiteRun:
    """The gate suite running in the background from the moment this is made: `check` does its
    other stages while it runs, then `wait`s for its results. Leaving the `with` block stops it."""

    def __init__(self, here: project.Project | None = None, extra_args: tuple[str, ...] = (),
                 env: dict | None = None, jobs: int | None = None, keep: set[str] | None = None,
                 files: list[Path] | None = None, warm: "warm_pytest.WarmPytest | None" = None,
                 read_back: set[str] | None = None):
        """`keep`: run only these instances (None: all; empty: none, and no process starts);
        `files`: only these gate files (None: the whole suite); `warm`: as run_gate_suite's; `read_back`:
        run every instance collected but these."""
        here = here or project.current()
        self.workers = gate_workers(here, jobs, files)
        self._tmp = tempfile.TemporaryDirectory(prefix="fidelity-check-")
        self.results = Path(self._tmp.name) / "results.json"
        self._out = open(Path(self._tmp.name) / "out.log", "w+")
        self._err = open(Path(self._tmp.name) / "err.log", "w+")
        self._proc = None
        if keep is not None:
            if not keep:
                return
            keep_file = Path(self._tmp.name) / "keep.json"
            keep_file.write_text(json.dumps(sorted(keep)), encoding="utf-8")
            extra_args = (*extra_args, "--fidelity-keep", str(keep_file))
        if read_back is not None:
            read_back_file = Path(self._tmp.name) / "read-back.json"
            read_back_file.write_text(json.dumps(sorted(read_back)), encoding="utf-8")
            extra_args = (*extra_args, "--fidelity-read-back", str(read_back_file))
        paths = [here.relative(here.gates)] if files is None else [here.relative(f) for f in files]
        # a file that does not collect is reported (collect_errors) and the files that do still run, whatever
        # the number of processes: pytest alone would stop the whole run on it
        cmd = [sys.executable, "-m", "pytest", *paths, "-q", "-p", "no:cacheprovider", "--continue-on-collection-errors",
               "-p", "fidelity.perturb.pytest_plugin", "--fidelity-results", str(self.results), *extra_args]
        if self.workers > 1:  # collected once, then a fork per test file, `workers` at a time (forked_workers.py)
            cmd += ["-p", "fidelity.gaterun.forked_workers", "--fidelity-forks", str(self.workers),
                    "--fidelity-file-seconds", str(cache.cache_dir(here.root) / FILE_SECONDS)]
        # a session of its own: leaving the `with` block kills the run and every fork of it
        self._proc = warm_pytest.start(cmd, cwd=str(here.root), stdout=self._out, stderr=self._err, warm=warm,
                                       env=child_environment({**os.environ, project.ROOT_ENV: str(here.root),
                                                              **(env or {})}, processes=self.workers))

    def wait(self, progress=None) -> dict:
        if self._proc is None:  # nothing to run
            return {"items": [], "collect_errors": [], "subjects": None, "returncode": 0, "output_tail": ""}
        while True:
            try:
                self._proc.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                if progress is not None:
                    progress(*_counted(self.results))
        self._out.seek(0), self._err.seek(0)
        stdout, stderr = self._out.read(), self._err.read()
        data = _read_results(self.results)
        if data is None:
            raise RuntimeError(f"the gate suite did not report (exit {self._proc.returncode}):\n"
                               f"{stdout[-2000:]}{stderr[-2000:]}")
        data["returncode"] = self._proc.returncode
        data["output_tail"] = stdout[-3000:]
        return data

    def __enter__(self) -> "GateSuiteRun":
        return self

    def __exit__(self, *exc) -> None:
        if self._proc is not None and self._proc.poll() is None:  # left early (an error elsewhere, ^C): no orphaned suite
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except ProcessLookupError:  # it ended between the poll and the kill
                pass
            self._proc.wait()
        self._out.close(), self._err.close()
        self._tmp.cleanup()


def gate_workers(here: project.Project, jobs: int | None = None, files: list[Path] | None = None) -> int:
    """How many processes run the gate suite's files at a time: `jobs` when given, else one per core
    but never more than the run has test files (`files`, default the whole suite's); 1 is a plain
    serial run. The forks need nothing installed beyond pytest (forked_workers.py)."""
    if jobs is not None:
        return max(1, jobs)
    files = gate_files(here.gates) if files is None else files
    return max(1, min(os.cpu_count() or 1, len(files)))


def _read_results(results: Path) -> dict | None:
    """The run's results (None: none reported). Raises when a fork died: what it was running has no
    outcome, and a guess would be a verdict."""
    lost_file = Path(forked_workers.lost_path(str(results)))
    if lost_file.exists():
        lost = json.loads(lost_file.read_text(encoding="utf-8"))
        nodeids = [n for share in lost for n in share["nodeids"]]
        why = "; ".join(f"{share['file']} exited {share.get('returncode')}"
                        + (f" while running {share['running']}" if share.get("running") else "") for share in lost)
        raise RuntimeError(f"the gate suite did not report {len(nodeids)} instance(s) (a fork died: {why}): "
                           f"{', '.join(nodeids[:5])}")
    return json.loads(results.read_text()) if results.exists() else None


def _counted(results: Path) -> tuple[int, int | None]:
    """(instances finished, instances collected or None) from the .partial lines so far: the run's
    (the count it collected; a serial run's instances too) and its forks' (their instances)."""
    done, total = 0, None
    for partial in [Path(str(results) + ".partial"), *results.parent.glob(results.name + ".fork*.partial")]:
        d, t = _counted_one(partial)
        done += d
        total = t if total is None else max(total, t or 0)
    return done, total


def _counted_one(partial: Path) -> tuple[int, int | None]:
    """(instances finished, instances collected or None) from one .partial file's lines so far."""
    done, total = 0, None
    try:
        lines = partial.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return done, total
    for line in lines:
        if '"event": "item"' in line:
            done += 1
        elif '"event": "collected"' in line:
            try:
                total = int(json.loads(line)["count"])
            except (ValueError, KeyError, TypeError):
                pass
    return done, total


def progress_line(prefix: str, stream=None, every_s: float = 10.0):
    """A progress(done, total) callback: on a terminal, one line rewritten in place; elsewhere (a CI
    log, a pipe) a plain line every `every_s` seconds, so a log is not flooded."""
    stream = stream or sys.stderr
    tty = stream.isatty()
    last = [float("-inf")]

    def show(done: int, total: int | None) -> None:
        text = f"{prefix}{done}/{total} instances" if total else f"{prefix}collecting ..."
        if tty:
            stream.write("\r" + text + "\x1b[K")
            stream.flush()
        elif time.monotonic() - last[0] >= every_s:
            last[0] = time.monotonic()
            print(text, file=stream, flush=True)
    return show


NOT_A_REFUSAL = ("a bare NotImplementedError is not a refusal: to report a case as not run, raise "
                 "fidelity.subjects.subject.NotRun(reason)")


def failure(it: dict) -> dict:
    """One failed instance: a FINDING when the gate's own assertion failed (kind "assertion": the
    subject computed something the gate refutes, a silent cast included), else an ERROR (the
    subject, or anything else, raised: its type and message are what the user needs)."""
    finding = it["outcome"] == "failed" and it.get("kind") == "assertion"
    entry = {"nodeid": it["nodeid"], "message": it.get("message") or "", "readings": it.get("readings"),
             "outcome": "finding" if finding else "error", "kind": it.get("kind"),
             "exc_type": it.get("exc_type"), "phase": it.get("phase"), "raised_in": it.get("raised_in"),
             "checks": it.get("checks") or []}
    if not finding and it.get("exc_type") == "NotImplementedError":
        entry["hint"] = NOT_A_REFUSAL
    return entry


def _exercised_alone(item: dict) -> str | None:
    """The one equation an instance exercises alone (its parameter's gate_checks, or its gate's only
    equation), or None where it exercises several."""
    own = item.get("checks") or item.get("equations") or []
    return own[0] if len(own) == 1 else None


def summarise(items: list[dict]) -> list[dict]:
    """One row per gate: status, equations, and status per subject.

    A gate or subject is "failed" when any instance failed, whether by a finding or an error;
    `findings` and `errors` count the two apart, and each `failed` entry says which it is."""
    gates: dict[str, dict] = {}
    for it in items:
        g = gates.setdefault(it["gate"], {"gate": it["gate"], "equations": set(), "subjects": {},
                                          "instances": 0, "failed": [], "not_run": [],
                                          "mechanism": None, "gate_class": None})
        g["equations"].update(it.get("equations", []))
        g["mechanism"] = g["mechanism"] or it.get("mechanism")
        g["gate_class"] = g["gate_class"] or it.get("gate_class")
        g["instances"] += 1
        subject = it.get("subject") or "(no subject)"
        sub = g["subjects"].setdefault(subject, {"passed": 0, "failed": 0, "findings": 0, "errors": 0,
                                                 "not_run": 0, "reasons": set(), "ran_alone": {}})
        alone = _exercised_alone(it)
        if alone:  # whether the subject ran any instance that exercises this equation alone
            sub["ran_alone"][alone] = sub["ran_alone"].get(alone, False) or it["outcome"] != "skipped"
        if it["outcome"] == "passed":
            sub["passed"] += 1
        elif it["outcome"] == "skipped":
            sub["not_run"] += 1
            sub["reasons"].add(it.get("skip_reason") or "skipped")
            g["not_run"].append(it["nodeid"])
        else:
            entry = failure(it)
            sub["failed"] += 1
            sub["findings" if entry["outcome"] == "finding" else "errors"] += 1
            g["failed"].append(entry)
    rows = []
    for g in gates.values():
        subjects = {}
        for name, s in sorted(g["subjects"].items()):
            status = "failed" if s["failed"] else "passed" if s["passed"] else "not run"
            subjects[name] = {"status": status, "passed": s["passed"], "failed": s["failed"],
                              "findings": s["findings"], "errors": s["errors"],
                              "not_run": s["not_run"], "not_run_reasons": sorted(s["reasons"]),
                              "ran_alone": dict(sorted(s["ran_alone"].items()))}
        status = "failed" if g["failed"] else "passed" if any(s["passed"] for s in g["subjects"].values()) else "not run"
        rows.append({"gate": g["gate"], "status": status, "equations": sorted(g["equations"]),
                     "mechanism": g["mechanism"], "gate_class": g["gate_class"],
                     "subjects": subjects, "instances": g["instances"], "failed": g["failed"]})
    return sorted(rows, key=lambda r: r["gate"])


class CheckGates:
    """The check's gate suite under way; with `--changed`, only the instances whose inputs changed
    since the kept gate run (kept_gate_run.py) run, and the others' results are read from it.

    Which instances exist comes from the gate index when it is current; when it is not (a gate file or the
    harness edited where the collection runs it), the kept instances are keyed from the kept run's own items
    and the run collects the suite itself, running every instance but those read back: collecting the index
    first, in a process of its own, cost 3.5-4.5 s before the run, which collects it again anyway."""

    def __init__(self, args):
        self.here = project.current()
        self.changed = bool(getattr(args, "changed", False))
        self.keys: kept_gate_run.InstanceKeys | None = None
        self.kept: dict[str, dict] = {}
        self.kept_run = kept_gate_run.KeptGateRun(self.here.root)
        try:
            cached = gate_index.CachedIndex([self.here.relative(self.here.gates)], self.here.root,
                                            cache.cache_dir(self.here.root))
        except GateCollectionError:  # no gate folder: the run reports it
            cached = None
        # the gate index, when the cached one is current: else the run's collection is kept as the index, where it
        # is a collection's (pytest options from the environment reach the run, never a collecting child)
        self.index = None if cached is None else cached.kept()
        self._collecting = (None if cached is None or self.index is not None or _pytest_options_from(os.environ)
                            else cached.collected_elsewhere())
        self._index_of_run: gate_index.GateIndex | None = None
        self._not_kept = "the gate run has not ended"  # why there is no _index_of_run
        keep = read_back = None
        if self.changed:
            self.keys = (self.kept_run.keys_now(self.here) if self.index is None
                         else kept_gate_run.keys_of(self.here, self.index.items))
            self.kept = self.kept_run.unchanged(self.keys)
            if self.collected_by_the_run:
                read_back = set(self.kept)
            else:
                keep = set(self.keys) - set(self.kept)
            self.keys.targets.split_now()  # the files the run's calls are placed in
        # every check hears each instance's calls into its targets, so the next edit to a function no call reached
        # keeps its result (kept_gate_run.py); the markers that hear them cost a whole run nothing measurable
        extra = ("--fidelity-trace-calls",) + (("--fidelity-index-too",) if self.index is None else ())
        self.suite = GateSuiteRun(self.here, extra_args=extra, jobs=getattr(args, "jobs", None),
                                  keep=keep, read_back=read_back)

    @property
    def collected_by_the_run(self) -> bool:
        """--changed without a current index: the run says which instances exist (it runs all but those read back)."""
        return self.changed and self.index is None

    def __enter__(self) -> "CheckGates":
        return self

    def __exit__(self, *exc) -> None:
        self.suite.__exit__(*exc)

    def index_of_run(self) -> gate_index.GateIndex:
        """The gate index as the run collected and kept it (after `wait`, when the cached one was out of date):
        what a stage that would otherwise collect the suite itself reads. Raises GateCollectionError when the run
        did not collect every gate file."""
        if self._index_of_run is not None:
            return self._index_of_run
        if self._collecting is None:  # the run's collection could not stand for the index: collected here
            return gate_index.collect([self.here.relative(self.here.gates)], repo_root=self.here.root,
                                      cache_dir=cache.cache_dir(self.here.root))
        raise GateCollectionError(self._not_kept)

    def wait(self, say, progress=None) -> dict:
        """The run's results, the kept ones merged in (suite order); a complete run is kept."""
        if self.collected_by_the_run:
            say(f"gates     --changed: {len(self.kept)} instances read from the last gate run of the same inputs; "
                f"the gate index is out of date, so the run collects the suite and runs every other instance")
        elif self.changed:
            say(f"gates     --changed: {len(self.keys) - len(self.kept)} of {len(self.keys)} instances run (inputs "
                f"changed, or not in the kept gate run); {len(self.kept)} read from the last gate run of the same inputs")
        data = self.suite.wait(progress)
        if self.collected_by_the_run and data["returncode"] == 5 and data.get("collected") and not data["items"]:
            data["returncode"] = 0  # pytest's "no tests ran": it collected them all, and every one was read back
        traced, data["items"] = data["items"], [kept_gate_run.without_trace(it) for it in data["items"]]
        read = []  # the kept results that stand for instances of this run, in suite order
        if self.kept:
            ran = {it["nodeid"]: it for it in data["items"]}
            order = [c["nodeid"] for c in data.get("collected", [])] if self.collected_by_the_run else self.keys
            read = [n for n in order if n in self.kept and n not in ran]
            data["items"] = [ran.get(n) or self.kept[n] for n in order if n in ran or n in self.kept]
            data["kept_instances"] = len(read)
        if data.get("returncode") in (0, 1) and not data.get("collect_errors"):
            keys = (kept_gate_run.keys_of(self.here, data["items"]) if self.keys is None
                    else self.keys.over(self.here, data["items"]) if self.collected_by_the_run else self.keys)
            self.kept_run.save(keys, traced, read_back=read, by_file=self.suite.workers > 1)
        if self._collecting is not None:
            if data.get("returncode") not in (0, 1):
                self._not_kept = f"the gate run did not end (exit {data.get('returncode')})"
            else:
                try:
                    self._index_of_run = self._collecting.keep(data)
                except GateCollectionError as exc:
                    self._not_kept = str(exc)
        return data


def _pytest_options_from(env) -> bool:
    """Whether `env` gives pytest options or plugins of its own (which a collecting child leaves out)."""
    return bool(env.get("PYTEST_ADDOPTS") or env.get("PYTEST_PLUGINS"))


def start(args) -> CheckGates:
    """The check's gate suite, started: it runs while the stages before it do (the caller leaves
    it in a `with` block, which stops it should check end early)."""
    return CheckGates(args)


def run(cat, args, say, suite: CheckGates) -> dict:
    """The stage's verdict over the `suite` that `start` began."""
    say("gates     running the gate suite ...")
    data = suite.wait(say, progress=None if getattr(args, "json", False) else progress_line("gates     "))
    rows = summarise(data["items"])
    problems = [collection_problem(e) for e in data.get("collect_errors", [])]
    stopped_by_them = data["returncode"] == 2 and problems  # pytest's exit 2 after collection errors: said above
    if data["returncode"] not in (0, 1) and not stopped_by_them:
        problems.append(f"pytest exited {data['returncode']} (interrupted or internal error):\n{data['output_tail'][-1500:]}")
    unknown = sorted({eq for r in rows for eq in r["equations"] if eq not in cat.equations})
    problems += [f"a gate names equation {eq!r}, which no spec defines" for eq in unknown]
    unmarked = sorted({it["gate"] for it in data["items"] if not it.get("gate_marker")})
    problems += [f"{g} has no @pytest.mark.gate(equations=...) marker" for g in unmarked]
    failed = [r for r in rows if r["status"] == "failed"]
    for r in failed:
        for f in r["failed"][:3]:
            say(f"gates     RED  {f['nodeid']}: {f['message'].splitlines()[0] if f['message'] else ''}")
    for p in problems:
        say(f"gates     RED  {p}")
    n_inst = sum(r["instances"] for r in rows)
    not_run = sum(s["not_run"] for r in rows for s in r["subjects"].values())
    ok = bool(rows) and not failed and not problems
    say(f"gates     {'ok ' if ok else 'RED'}  {len(rows)} gates, {n_inst} instances: "
        f"{len(failed)} gates red, {not_run} instances not run" + (", for these reasons:" if not_run else ""))
    reasons = not_run_reasons(data["items"])
    for line in not_run_lines(reasons):
        say(f"gates     {line}")
    return {"stage": "gates", "ok": ok, "problems": problems, "gates": rows, "not_run_reasons": reasons,
            "collect_errors": data.get("collect_errors", []),
            "instances_run": n_inst - data.get("kept_instances", 0), "instances_kept": data.get("kept_instances", 0)}


def collection_problem(error: dict) -> str:
    """One line for a file that did not collect: where, and the exception pytest reported (its last `E` line,
    e.g. an unknown name in a gate marker with the closest declared ones); the whole report is in the JSON."""
    lines = [ln.strip() for ln in (error.get("message") or "").splitlines() if ln.strip()]
    raised = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
    what = raised[-1] if raised else (lines[-1] if lines else error.get("exc_type") or "no message")
    return f"collection error in {error.get('nodeid') or '(the run)'}: {what}"


def not_run_reasons(items: list[dict]) -> dict[str, int]:
    """Why instances did not run, each reason with its count, most frequent first (pytest's "Skipped:" and
    our "not run:" prefixes dropped: every reason here is one)."""
    counts: dict[str, int] = {}
    for it in items:
        if it["outcome"] == "skipped":
            reason = re.sub(r"^(Skipped:\s*)?(not run:\s*)?", "", it.get("skip_reason") or "") or "no reason given"
            counts[reason] = counts.get(reason, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


REASONS_SHOWN = 6
REASON_CHARS = 160


def not_run_lines(reasons: dict[str, int]) -> list[str]:
    """A few lines of text: the most frequent reasons with their counts; the rest counted in one line."""
    shown = list(reasons.items())[:REASONS_SHOWN]
    lines = [f"not run: {n} {r if len(r) <= REASON_CHARS else r[:REASON_CHARS - 3] + '...'}" for r, n in shown]
    rest = list(reasons.values())[REASONS_SHOWN:]
    if rest:
        lines.append(f"not run: and {len(rest)} more reason{'s' if len(rest) != 1 else ''} for {sum(rest)} "
                     f"instance{'s' if sum(rest) != 1 else ''} (`fidelity check --json`: not_run_reasons lists each)")
    return lines
