"""The end of a forked child: whatever its work does, the child leaves by os._exit and never returns into
the code of the process it was forked from (which would go on running the parent's loop twice)."""
from __future__ import annotations

import os
import sys
import traceback
from typing import Callable, NoReturn


def run_then_exit(work: Callable[[], int | None], *, when_raised: int = 3) -> NoReturn:
    """In a forked child: run `work`, then os._exit with the code it returned (None: 0); `when_raised` when it
    raised (its traceback printed), so the parent reads what the child left and how it ended."""
    code = when_raised
    try:
        code = work() or 0
    except BaseException:  # noqa: BLE001 - whatever happened, this fork ends here
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
