"""Which fixture files a test read (its entry's `fixtures_read`): files under the fixtures folder opened
while the test ran, while a pytest fixture it uses was set up, or while its module was collected. An
audit hook hears every "open" (and the fixture store's READ_AUDIT_EVENT for a fixture it parsed earlier)
and files it under whatever is running then: the top of the recorder's stack."""
from __future__ import annotations

import os
import sys

import pytest

from fidelity.fixtures import READ_AUDIT_EVENT

# The audit hook cannot be removed once added; it forwards to the active recorder.
_ACTIVE = None
_AUDIT_INSTALLED = False


def _audit(event, args):
    if event not in ("open", READ_AUDIT_EVENT) or _ACTIVE is None:
        return
    try:
        _ACTIVE._on_open(args[0])
    except Exception:
        pass


def _fixture_key(fixturedef) -> str:
    return f"fixture:{getattr(fixturedef, 'baseid', '')}::{getattr(fixturedef, 'argname', '?')}"


class FixtureReads:
    """The recorder's part that files each read under the collector, fixture or item running then."""

    def _watch_fixtures(self, fixtures: str | None) -> None:
        """Files under `fixtures` (None: none) are the ones to hear; nothing is heard before `_hear_reads`."""
        self._stack: list[str] = []
        self._buckets: dict[str, set[str]] = {}
        self._prefixes: tuple[str, ...] = ()
        if fixtures:
            fx = os.path.abspath(fixtures)
            self._prefixes = tuple({fx + os.sep, os.path.realpath(fx) + os.sep})

    def _hear_reads(self) -> None:
        """Make this the recorder the audit hook forwards to (installing the hook once a process)."""
        global _ACTIVE, _AUDIT_INSTALLED
        if self._prefixes:
            _ACTIVE = self
            if not _AUDIT_INSTALLED:
                sys.addaudithook(_audit)
                _AUDIT_INSTALLED = True

    def _stop_hearing(self) -> None:
        global _ACTIVE
        if _ACTIVE is self:
            _ACTIVE = None

    def _on_open(self, path) -> None:
        if isinstance(path, int):
            return
        path = os.fspath(path)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        full = os.path.abspath(path)
        if not full.startswith(self._prefixes):
            return
        key = self._stack[-1] if self._stack else "session"
        self._buckets.setdefault(key, set()).add(full)

    def _fixtures_of(self, item) -> list[str]:
        files: set[str] = set(self._buckets.get("item:" + item.nodeid, ()))
        for node in item.listchain():
            files |= self._buckets.get("collector:" + node.nodeid, set())
        info = getattr(item, "_fixtureinfo", None)
        for defs in (getattr(info, "name2fixturedefs", None) or {}).values():
            for fd in defs:
                files |= self._buckets.get(_fixture_key(fd), set())
        return sorted(files)

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector):
        self._stack.append("collector:" + collector.nodeid)
        try:
            return (yield)
        finally:
            self._stack.pop()

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        self._stack.append(_fixture_key(fixturedef))
        try:
            return (yield)
        finally:
            self._stack.pop()
