"""The pytest command line a child's job becomes (child.py's job keys), for an ordinary child and for a
batch child's collection alike (batch.py): one home, so neither imports the other for it."""
from __future__ import annotations


def pytest_args(job: dict, keep_file: str | None = None) -> list[str]:
    args = list(job["args"])
    args += [
        "-p", "fidelity.perturb.pytest_plugin",
        "-q",
        "-p", "no:cacheprovider",
        "--continue-on-collection-errors",
        # the recorder reads each failure from its exception; pytest's traceback text, which parses the source
        # of every frame of every red instance (1.1 s of P1..P5's children; up to 4 s a mutant), is never read
        "--tb=no",
        "--fidelity-results", job["results"],
        "--fidelity-mode", job.get("mode", "run"),
    ]
    if job.get("rootdir"):
        args += ["--rootdir", job["rootdir"]]
    if job.get("fixtures_dir"):
        args += ["--fidelity-fixtures", job["fixtures_dir"]]
    if job.get("patch"):
        args += ["--fidelity-subject-file", job["patch"]["path"], "--fidelity-seed"]
    if keep_file:
        args += ["--fidelity-keep", keep_file]
    if job.get("stop_gate_when_red"):
        args.append("--fidelity-stop-gate-when-red")
    if job.get("stop_when_any_red"):
        args.append("--fidelity-stop-when-any-red")
    if job.get("hear_calls"):
        args.append("--fidelity-trace-calls")
    for path in job.get("trace_lines") or ():
        args += ["--fidelity-trace-lines", path]
    if job.get("mode") == "collect":
        args.append("--collect-only")
    args += list(job.get("extra_args") or [])
    return args
