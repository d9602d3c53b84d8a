"""Toy subjects for the perturbation runner's own tests (copied into a temporary repo)."""
