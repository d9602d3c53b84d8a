"""The forced failure: a gate that is always red by its own assertion.

The runner runs this file by explicit path before any perturbation and
requires the plugin to report it failed, by assertion, with its reading
recorded. It proves the runner can see red at all (a broken plugin, a
swallowed exception or a misread results file would otherwise look green).
The file name does not match `test_*.py`, so the normal suite never collects it.
"""
from fidelity.gates.readings import record

FORCED_READING = 1.0
EXPECTED = 0.0


def test_forced_red():
    reading = record(FORCED_READING)
    assert reading == EXPECTED, f"forced failure: reading {reading} != expected {EXPECTED}"
