"""Copied as tests/conftest.py into the temporary toy repo: adds a target at collection."""
import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.originalname == "test_neg_is_float":
            item.add_marker(pytest.mark.gate_targets("toysubj.arith"))
