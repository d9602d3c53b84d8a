"""One runner child: `python -m fidelity.perturb.child JOB.json`.

The job (written by the runner) is a JSON object:
  mode          "run" or "collect"
  args          pytest arguments selecting what to run (node ids or paths)
  results       where the plugin writes its results JSON
  fixtures_dir  files opened under it are recorded per test (run mode)
  rootdir       pytest's rootdir (node ids are relative to it)
  patch         null, or {"perturbation": id, "module": name, "path": file, "source": patched text};
                a patched child's global random generators are seeded (seeding.py)
  keep          optional: the node ids to run; every other test collected from `args` is
                deselected (written to RESULTS.keep.json for the plugin)
  env           optional: {variable: value or null}, applied to os.environ before anything
                else (a warm child inherits the zygote's environment, shared by every run)
  stop_gate_when_red  optional: instances run in node-id order and a gate's remaining
                instances are skipped once one has failed by assertion (perturbation children)
  stop_when_any_red   optional: every remaining instance is skipped once any gate has
                failed by assertion (blind-spot discovery: one killing gate is enough)
  trace_lines   optional: source files whose executed lines each test records (line_trace.py)
  mutants       mode "mutants" only: collect once, then run each mutant in a forked process
                (batch.py)

With a patch, the import hook is installed before pytest (or anything else)
can import the target, so every import of the target inside this process gets
the patched source; the file on disk is not touched. A patched module that
fails to import shows up as a collection error or an error in the tests that
import it: red for another reason, recorded by the plugin.
"""
from __future__ import annotations

import json
import os
import sys

from fidelity.perturb.child_args import pytest_args

PATCH_NOT_INSTALLED = 86


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m fidelity.perturb.child JOB.json", file=sys.stderr)
        return 4
    with open(argv[0], encoding="utf-8") as f:
        job = json.load(f)
    from fidelity.perturb.launch import apply_overrides

    apply_overrides(os.environ, job.get("env"))
    if job.get("mode") == "mutants":
        from fidelity.perturb import batch

        return batch.main(job)
    patch = job.get("patch")
    finder = None
    if patch:
        from fidelity.perturb import import_hook

        try:
            finder = import_hook.install(patch["module"], patch["path"], patch["source"])
        except RuntimeError as e:  # the target was imported before the hook: the patch cannot apply
            _write_results(job["results"], {"format": 1, "mode": job.get("mode", "run"), "exitstatus": PATCH_NOT_INSTALLED,
                                            "items": [], "collected": [], "patch_served": 0,
                                            "collect_errors": [{"nodeid": "", "exc_type": "PatchNotInstalled", "message": str(e)}]})
            print(f"fidelity perturb child: {e}", file=sys.stderr)
            return PATCH_NOT_INSTALLED
    keep_file = None
    if job.get("keep") is not None:
        keep_file = job["results"] + ".keep.json"
        _write_results(keep_file, sorted(job["keep"]))
    import pytest

    code = int(pytest.main(pytest_args(job, keep_file)))
    if finder is not None:
        # how many times the patched module was served: 0 means no gate imported the target
        try:
            with open(job["results"], encoding="utf-8") as f:
                results = json.load(f)
        except (OSError, ValueError):
            return code
        results["patch_served"] = finder.served
        _write_results(job["results"], results)
    return code


def _write_results(path: str, results: dict) -> None:
    from fidelity.evidence import jsonio

    jsonio.write_json(path, results)


if __name__ == "__main__":
    sys.exit(main())
