"""Fixtures of the CLI's tests."""
from perturb.child_bytecode import shared_bytecode  # noqa: F401 (the fixture: a project's children share bytecode)
