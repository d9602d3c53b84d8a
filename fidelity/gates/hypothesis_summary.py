"""Skip hypothesis's end-of-run summary in a pytest run that never used hypothesis.

hypothesis's pytest plugin imports the whole library in its `pytest_terminal_summary` (to ask
whether any observations were written), whether or not a test imported it: about a second of
CPU at the end of every pytest run, and the harness starts a child pytest for every check,
perturbation and discovery batch. When no test imported hypothesis, its summary has nothing to
say (no failing example, no observation, no statistics), so the plugin is unregistered before
the summary is written. A run that used hypothesis keeps it, untouched.
"""
from __future__ import annotations

import sys

import pytest

HYPOTHESIS_PLUGIN = "hypothesispytest"  # the name of hypothesis's pytest11 entry point


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    # runs inside the terminal reporter's sessionfinish wrapper, before it writes the summary
    plugins = session.config.pluginmanager
    if "hypothesis" not in sys.modules and plugins.has_plugin(HYPOTHESIS_PLUGIN):
        plugins.unregister(name=HYPOTHESIS_PLUGIN)
