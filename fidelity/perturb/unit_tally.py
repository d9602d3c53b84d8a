"""How a run's units stand while they run: done, running, queued (the progress line of a long run).

A unit is queued from the moment the runner hands it over until its executor says it runs (a Ray
task may wait there for a free worker or a GPU), running until its child's results are back, then
done. The line is said when the counts change, at most once every `every_s` seconds, and always
when the last unit in hand is done, so a quiet terminal means nothing moved. A unit done while others
are queued is not said by itself: its worker takes the next one at once, and a line said in that gap
would show one unit fewer running than the executor has (every line of a busy run did).
"""
from __future__ import annotations

import threading
import time
from typing import Callable


class UnitTally:
    def __init__(self, say: Callable[[dict], None], executor_name: str, every_s: float = 2.0,
                 clock: Callable[[], float] = time.monotonic):
        self._say, self._name, self._every, self._clock = say, executor_name, every_s, clock
        self._lock = threading.Lock()
        self.done = self.running = self.queued = 0
        self._said_at: float | None = None

    def queue(self) -> None:
        self._move(queued=+1)

    def start(self) -> None:
        self._move(queued=-1, running=+1)

    def finish(self, started: bool = True) -> None:
        """A unit is back (or never started: its executor gave up on it while queued)."""
        self._move(**({"running": -1} if started else {"queued": -1}), done=+1, hand_off=started)

    def line(self) -> str:
        return f"units on the {self._name} executor: {self.done} done, {self.running} running, {self.queued} queued"

    def _move(self, queued: int = 0, running: int = 0, done: int = 0, hand_off: bool = False) -> None:
        with self._lock:
            self.queued += queued
            self.running += running
            self.done += done
            now = self._clock()
            idle = self.queued == 0 and self.running == 0
            in_the_gap = hand_off and self.queued > 0  # a worker freed, about to start a queued unit
            if not (idle or self._said_at is None or (not in_the_gap and now - self._said_at >= self._every)):
                return
            self._said_at = now
            # said under the lock, so the lines come out in the order the counts changed
            self._say({"event": "units", "message": self.line(), "executor": self._name,
                       "done": self.done, "running": self.running, "queued": self.queued})
