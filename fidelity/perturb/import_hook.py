"""Serve a patched module from memory (evidence rule 2).

`install` puts a finder first on `sys.meta_path`. For the target module name,
and only for it, the finder returns a spec whose loader compiles the PATCHED
source with the module's real filename, so tracebacks, `inspect` and pytest
point at the file (and show the patched lines: they are primed in
`linecache`). Every other import goes on untouched. Nothing is written to
disk: no source, no bytecode.

Before serving, the finder asks the ordinary path finder where the module
would come from; if that is not the file the patch was computed on, the import
fails loudly rather than patching the wrong copy.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import os
import sys


class PatchedSourceLoader(importlib.abc.Loader):
    def __init__(self, fullname: str, filename: str, source: str):
        self.fullname = fullname
        self.filename = filename
        self.source = source

    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module) -> None:
        lines = self.source.splitlines(keepends=True)
        # mtime None: linecache.checkcache never replaces these lines with the file's.
        linecache.cache[self.filename] = (len(self.source), None, lines, self.filename)
        code = compile(self.source, self.filename, "exec", dont_inherit=True)
        exec(code, module.__dict__)

    def get_source(self, fullname: str) -> str:
        return self.source

    def get_filename(self, fullname: str) -> str:
        return self.filename

    def is_package(self, fullname: str) -> bool:
        return os.path.basename(self.filename) == "__init__.py"


class PatchedSourceFinder(importlib.abc.MetaPathFinder):
    def __init__(self, module: str, filename: str, source: str):
        self.module = module
        self.filename = os.path.abspath(filename)
        self.source = source
        self.served = 0

    def find_spec(self, fullname, path, target=None):
        if fullname != self.module:
            return None
        real = importlib.machinery.PathFinder.find_spec(fullname, path)
        real_origin = os.path.abspath(real.origin) if real is not None and real.origin else None
        if real_origin != self.filename:
            raise ImportError(
                f"fidelity perturb: {fullname} would be imported from {real_origin}, "
                f"but the patch was computed on {self.filename}",
                name=fullname,
            )
        loader = PatchedSourceLoader(fullname, self.filename, self.source)
        is_pkg = loader.is_package(fullname)
        spec = importlib.util.spec_from_file_location(
            fullname,
            self.filename,
            loader=loader,
            submodule_search_locations=[os.path.dirname(self.filename)] if is_pkg else None,
        )
        self.served += 1
        return spec


def install(module: str, filename: str, source: str) -> PatchedSourceFinder:
    """Serve `source` for `module` from now on in this process. The module must
    not be imported yet (it would keep its unpatched code)."""
    if module in sys.modules:
        raise RuntimeError(f"fidelity perturb: {module} was imported before the patch could be installed")
    finder = PatchedSourceFinder(module, filename, source)
    sys.meta_path.insert(0, finder)
    return finder


def put_first() -> None:
    """Move every patch finder back to the front of sys.meta_path. pytest puts its assertion
    rewriter first when it configures, and it rewrites every module of a distribution that
    registers a pytest plugin (fidelity does): without this, the rewriter would load the
    target from disk and the patch would never be served."""
    finders = [f for f in sys.meta_path if isinstance(f, PatchedSourceFinder)]
    for finder in finders:
        sys.meta_path.remove(finder)
    sys.meta_path[:0] = finders


def uninstall(finder: PatchedSourceFinder) -> None:
    """Remove the finder (tests use this; a child simply exits)."""
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
    linecache.cache.pop(finder.filename, None)
