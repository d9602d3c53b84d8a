"""A toy subject whose value moves between runs: its gate is flaky."""
import time


def now():
    return time.perf_counter_ns()
