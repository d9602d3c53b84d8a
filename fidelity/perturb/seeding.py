"""A patched child draws the same random numbers in every run.

torch seeds its global generator afresh in each process, as Python's `random` does. A defect that
draws from one (an init that calls torch.randn where the paper says zeros) turns a gate red with a
reading that changes from run to run, and so would the evidence of one catalogue run twice, or on
another executor. So a patched child (a perturbation's, a mutant's fork) seeds the global generators
of Python, NumPy and torch with SEED once its tests are collected, just before the first one runs
(the gates have imported what they use by then).

Unpatched children (the clean runs, green after) are left unseeded on purpose: a gate whose readings
depend on an unseeded generator then differs between its clean runs and is refused as flaky
(clean_runs.py), instead of passing ten identical runs on one seed.
"""
from __future__ import annotations

import random
import sys

SEED = 0


def seed_global_generators() -> None:
    """Seed the global generators of Python and of NumPy and torch where they are imported."""
    random.seed(SEED)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(SEED)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(SEED)  # every device's default generator
