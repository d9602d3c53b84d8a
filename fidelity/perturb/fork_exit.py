"""The end of a forked child: whatever its work does, the child leaves by os._exit and never returns into
the code of the process it was forked from (which would go on running the parent's loop twice)."""
from __future__ import annotations

import os
import sys
import traceback
from typing import Callable, NoReturn


def run_then_exit(work: Callable[[], None]) -> NoReturn:
    """In a forked child: run `work`, then os._exit(0); 3 when it raised (its traceback printed), so the
    parent reads what the child left and how it ended."""
    code = 0
    try:
        work()
    except BaseException:  # noqa: BLE001 - whatever happened, this fork ends here
        traceback.print_exc()
        code = 3
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
