"""How a `fidelity` command's process ends: its exit handlers run and its output is flushed, as the
interpreter's own shutdown would do them, and then it leaves by os._exit, without tearing down every
module and object it holds.

That teardown is what a command leaves to the interpreter when it simply returns: with torch, NumPy and
pytest imported it took 0.2-0.3 s of this 2-core machine's time after `check` had printed its verdict
(0.3-1.0 s for `python -c "import torch, numpy, pytest, sympy"`), and it changes nothing anybody reads.
What the shutdown does that matters is done first, in its order:
- a thread that is not a daemon (a pool not shut down) is waited for by the interpreter: while one runs,
  the command leaves by SystemExit instead, and the interpreter does all of it;
- the exit handlers (atexit, and through it weakref.finalize: temporary folders, logging's flush,
  multiprocessing's and Ray's shutdown) run, an exception in one printed as the interpreter prints it;
- stdout and stderr are flushed; a stdout whose reader has gone (`fidelity check | head -1`) makes the
  exit status 120 where it was 0, as the interpreter's own flush does.

`end_command` runs a command and ends it so. A reader that goes away while the command is still writing
(more than the stream's buffer, or a line flushed as it is printed) ends it at that write with the same 120,
quietly: a pipe closed by `head` is the reader's choice, not an error of the command to print a traceback
for. A BrokenPipeError while the standard streams still have their readers came from elsewhere (a child's
pipe) and is raised as any error is.
"""
from __future__ import annotations

import atexit
import os
import select
import sys
import threading
from typing import Callable, NoReturn

FLUSH_FAILED = 120  # the interpreter's exit status when flushing the standard streams fails at exit


def end_command(main: Callable[[], int | None]) -> NoReturn:
    """Run `main` and end the process with its status by exit_now; a reader gone mid-run ends it with
    FLUSH_FAILED and no traceback (module docstring)."""
    try:
        code = main()
    except BrokenPipeError:
        gone = [stream for stream in (sys.stdout, sys.stderr) if _reader_gone(stream)]
        if not gone:
            raise
        for stream in gone:  # what is left in its buffer, and whatever is written yet, goes nowhere
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
        code = FLUSH_FAILED
    exit_now(code)


def _reader_gone(stream) -> bool:
    """Whether `stream` is a pipe or socket whose reader has closed it (poll says POLLERR or POLLHUP)."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def exit_now(code: int | None) -> NoReturn:
    """End this process with `code` (None: 0), as `sys.exit(code)` would but without the interpreter's
    teardown (module docstring)."""
    code = 0 if code is None else code
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    atexit._run_exitfuncs()
    flushed = True
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a reader that went away, a stream closed
            flushed = False
    os._exit(code if flushed or code else FLUSH_FAILED)
