"""How the plugin describes a test that did not pass: a failure's kind ("assertion" when the gate's own
code raised an AssertionError in the call phase, "other" for anything else: see pytest_plugin's
docstring), its exception type, message and where it was raised; a skip's reason; a collection error's
exception type."""
from __future__ import annotations

import inspect
import os
import traceback

from fidelity.gates.attribution import checked_by
from fidelity.perturb.gate_markers import gate_markers
from fidelity.perturb.machine_neutral import shown_path, without_addresses

MESSAGE_LIMIT = 2000

_ASSERTION_LIBRARIES = tuple(
    os.sep + os.path.join(*parts) + os.sep
    for parts in (("_pytest",), ("pytest",), ("torch", "testing"), ("numpy", "testing"), ("unittest",))
)


def describe_failure(item, call, rep, *, rootdir: str | None, subject_files: set[str], gates_dir: str) -> dict:
    """A failed phase of `item`: {phase, kind, exc_type, message, raised_in} (and `checks`, the failing
    assertion's checking() block, when it names equations). `subject_files`: the patched subject's
    files (an assert raised there is "other"); `gates_dir`: fidelity/gates/, whose frames count as the gate's."""
    excinfo = call.excinfo
    if excinfo is None:
        return {"phase": call.when, "kind": "other", "exc_type": "Failed",
                "message": without_addresses(str(rep.longrepr))[:MESSAGE_LIMIT], "raised_in": None}
    value = excinfo.value
    frames = [(f.f_code, os.path.abspath(f.f_code.co_filename), lineno) for f, lineno in traceback.walk_tb(excinfo.tb)]
    raised_in = f"{shown_path(frames[-1][1], rootdir)}:{frames[-1][2]}" if frames else None
    by_test = (
        call.when == "call"
        and isinstance(value, AssertionError)
        and raised_by_test(item, frames, subject_files, gates_dir)
    )
    t = type(value)
    exc_type = t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    try:
        message = str(value)
    except Exception as e:  # a broken __str__ is still a failure
        message = f"<unprintable {exc_type}: {e!r}>"
    described = {"phase": call.when, "kind": "assertion" if by_test else "other", "exc_type": exc_type,
                 "message": without_addresses(message)[:MESSAGE_LIMIT], "raised_in": raised_in}
    checks = checked_by(value, gate_markers(item)["equations"])
    if checks:  # the failing assertion's checking() block: finer than the parameter's gate_checks
        described["checks"] = checks
    return described


def raised_by_test(item, frames, subject_files: set[str], gates_dir: str) -> bool:
    """Every frame from the test function to the raise lies in the test's file, its directory, a
    conftest, `gates_dir` or an assertion library, and none in a subject file."""
    fn = getattr(item, "obj", None)
    try:
        code = inspect.unwrap(fn).__code__ if fn is not None else None
    except Exception:
        code = None
    test_file = os.path.abspath(str(item.path))
    start = next((i for i, (c, _, _) in enumerate(frames) if code is not None and c is code), None)
    if start is None:
        start = next((i for i, (_, f, _) in enumerate(frames) if f == test_file), None)
    if start is None:
        return False
    test_dir = os.path.dirname(test_file) + os.sep
    for _, filename, _ in frames[start:]:
        if filename in subject_files:
            return False
        if (
            filename == test_file
            or filename.startswith(test_dir)
            or os.path.basename(filename) == "conftest.py"
            or filename.startswith(gates_dir)
            or any(lib in filename for lib in _ASSERTION_LIBRARIES)
        ):
            continue
        return False
    return True


def skip_reason(rep) -> str:
    """Why a skipped report was skipped (an xfail says so), at most MESSAGE_LIMIT characters."""
    if hasattr(rep, "wasxfail"):
        reason = f"xfail: {rep.wasxfail}".rstrip(": ")
    elif isinstance(rep.longrepr, tuple) and len(rep.longrepr) == 3:
        reason = str(rep.longrepr[2])
    else:
        reason = str(rep.longrepr)
    return reason[:MESSAGE_LIMIT]


def exc_type_from_text(text: str) -> str:
    """The exception type named on the last 'E   Type: message' line of a pytest report."""
    for line in reversed(text.splitlines()):
        s = line.strip()
        if s.startswith("E ") and ":" in s:
            name = s[1:].strip().split(":", 1)[0].strip()
            if name.replace(".", "").replace("_", "").isalnum():
                return name
    return "CollectError"
