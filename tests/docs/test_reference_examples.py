"""Every example in the reference for gate authors runs, and says what the helper does.

The modules are the reference's own list (fidelity.docs_reference.MODULES); their `>>>` examples run here
(not through pytest's --doctest-modules, which would import every module of the package). The examples
that read fixtures and spec values read this repository's, as a gate of this project would.
"""
import doctest
import importlib
from pathlib import Path

import pytest

from fidelity import docs_reference, project

REPOSITORY = Path(__file__).resolve().parents[2]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.fixture
def this_repository_is_the_project(monkeypatch):
    """The project the examples read (fixtures, specs) is this repository, whatever ran before in this process."""
    monkeypatch.setattr(project, "_CURRENT", [])
    monkeypatch.setenv(project.ROOT_ENV, str(REPOSITORY))
    monkeypatch.syspath_prepend(str(REPOSITORY))


def _examples(module_name: str) -> list[doctest.DocTest]:
    module = importlib.import_module(module_name)
    tests = [t for t in doctest.DocTestFinder(exclude_empty=True).find(module, module_name) if t.examples]
    for test in tests:
        # each example runs as a reader's own code: it imports what it uses (nothing of the documented module's
        # namespace is given), it does not inherit the module's `from __future__ import annotations`, and a
        # class it defines belongs to the reader's module, not to fidelity's
        test.globs = {"__name__": "reader_module"}
    return tests


@pytest.mark.parametrize("module_name", docs_reference.MODULES)
def test_the_examples_of_each_module_in_the_reference_run_as_written(module_name, this_repository_is_the_project):
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    for test in _examples(module_name):
        runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{module_name}: {result.failed} of {result.attempted} examples failed:\n" + "".join(report)


@pytest.mark.parametrize("module_name", [m for m in docs_reference.MODULES if m not in docs_reference.WITHOUT_EXAMPLES])
def test_every_module_in_the_reference_shows_an_example(module_name):
    assert _examples(module_name), (f"{module_name} is in the reference (fidelity.docs_reference.MODULES) but none of "
                                    "its docstrings holds a `>>>` example: add one where a gate author would use it")


@pytest.mark.parametrize("module_name,helper", [(m, h) for m, helpers in docs_reference.EXAMPLES.items() for h in helpers])
def test_each_main_helper_shows_an_example_in_its_own_docstring(module_name, helper):
    assert module_name in docs_reference.MODULES, f"{module_name} needs examples but is not in the reference"
    own = [t for t in _examples(module_name) if t.name == f"{module_name}.{helper}"]
    assert own, f"{module_name}.{helper} is a main helper (docs_reference.EXAMPLES) with no `>>>` example of its own"


def test_a_module_excused_from_examples_is_in_the_reference_and_has_none():
    for module_name, reason in docs_reference.WITHOUT_EXAMPLES.items():
        assert module_name in docs_reference.MODULES and reason.strip()
        assert not _examples(module_name), f"{module_name} has examples now: take it out of WITHOUT_EXAMPLES"
