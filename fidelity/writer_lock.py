"""One writer per folder: a run that writes evidence, discovery records or the ledger holds a lock
on the folder it writes, and a second run that would write there is refused, naming the holder.

Issue 15: two `fidelity perturb` runs in one checkout interleaved their writes and the last writer
won. The lock is an advisory `flock` on a file named after the folder's real path in the
machine's temporary directory (nothing is added to the folders users read), so it is released
when its holder exits however it exits (a crash or SIGKILL leaves no lock to clean up by hand);
the file says who holds it (pid, verb, start time, folder) for the refusal's message.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

LOCKS_DIR = "fidelity-locks"


def lock_path(folder: str | os.PathLike) -> Path:
    """The lock file of `folder`: one per real path, so two spellings of one folder share it."""
    key = hashlib.sha256(os.path.realpath(folder).encode()).hexdigest()[:24]
    return Path(tempfile.gettempdir()) / LOCKS_DIR / f"{key}.lock"


class FolderBusy(Exception):
    """Another run holds the folder's lock: the message names it and what to do."""


@contextlib.contextmanager
def writing(folder: str | os.PathLike, verb: str):
    """Hold the lock of `folder` (created if missing) for the body; FolderBusy if another run holds it."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = lock_path(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderBusy(f"another run is writing {folder} ({_holder(path)}): wait for it to finish, "
                             f"or stop it; two runs writing one folder would interleave their records") from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "verb": verb, "folder": str(folder.resolve()),
                                 "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}).encode())
        yield path
    finally:
        os.close(fd)  # releases the flock


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        return f"`fidelity {info['verb']}`, pid {info['pid']}, since {info['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a run that has not said who it is yet"
