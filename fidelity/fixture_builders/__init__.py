"""Fixture builders grouped by topic, one module each (registered in pyproject's fixture_builders).

Each module registers its fixtures with fidelity.fixture_store.fixture and the encoding helpers
there; the store itself (encode, load, verify) stays in fidelity/fixture_store.py.
"""
