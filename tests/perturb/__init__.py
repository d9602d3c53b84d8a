"""Tests of the perturbation runner (fidelity.perturb)."""
