"""The reference for gate authors kept in the package (fidelity/reference) is what its generator writes now.

Regenerated into a temporary folder and compared page by page: a docstring, a signature or the module list
changed without `python -m fidelity.docs_reference` leaves the committed pages behind, and this says so.
"""
import subprocess
import sys
from pathlib import Path

from fidelity import docs_reference


def _pages(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_committed_reference_is_what_the_docstrings_generate_now(tmp_path):
    # in a process of its own, as the command runs: pdoc shows module-level values (a registry such as
    # fidelity.fixtures.store.FIXTURES) as a fresh import has them, not as earlier tests in this process left them
    run = subprocess.run([sys.executable, "-m", "fidelity.docs_reference", "--output", str(tmp_path)],
                         capture_output=True, text=True)
    assert run.returncode == 0, f"{docs_reference.REGENERATE} failed: {run.stderr[-2000:]}"
    now, kept = _pages(tmp_path), _pages(docs_reference.reference_dir())
    stale = sorted(name for name in now.keys() & kept.keys() if now[name] != kept[name])
    missing, extra = sorted(now.keys() - kept.keys()), sorted(kept.keys() - now.keys())
    assert not (stale or missing or extra), (
        f"the reference in fidelity/reference is not what the docstrings generate now (pages that differ: {stale}; "
        f"not kept: {missing}; kept but no longer generated: {extra}): run `{docs_reference.REGENERATE}` "
        "and commit fidelity/reference")


def test_the_reference_opens_on_the_guide_and_every_listed_module_has_a_page():
    kept = _pages(docs_reference.reference_dir())
    assert b"fidelity/docs_reference.html" in kept["index.html"]
    assert {f"{m.replace('.', '/')}.html" for m in docs_reference.MODULES} <= kept.keys()
