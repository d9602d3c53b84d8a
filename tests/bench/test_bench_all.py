"""fidelity.bench.all: figures beside their floor and peer from the same run, a missed target said as MISSED,
and memory peaks that see the process that used the memory."""
import sys

from fidelity.bench import all as bench_all
from fidelity.bench import timed_command


def _bench(figures):
    return {"floor": {"command": "python -c 'import torch'", "seconds": 1.5}, "figures": figures,
            "machine": {"cpu_count": 2, "load_average_before": (0.1, 0.1, 0.1), "load_average_after": (0.2, 0.1, 0.1)}}


def test_a_figure_over_its_target_reads_missed_and_one_under_it_met():
    slow = bench_all._figure("check", 18.0, 1.5, "fidelity check",
                             {"name": "serial", "command": "fidelity check --jobs 1", "seconds": 27.0})
    fast = bench_all._figure("fixtures_verify", 1.2, 1.5, "fidelity fixtures --verify")
    # issue 30 holds check to 10x the floor, with no target in seconds
    assert (slow["met"], slow["ratio_to_floor"], slow["met_ratio_to_floor"], slow["peer_over_figure"]) == (None, 12.0, False, 1.5)
    assert (fast["met"], fast["met_ratio_to_floor"]) == (True, True)
    table = bench_all.render(_bench([slow, fast])).splitlines()  # the floor line, headers, dashes, a row a figure
    assert "MISSED" in table[3] and "serial (fidelity check --jobs 1): 27.0 s, 1.50x the time" in table[3]
    assert "MISSED" not in table[4] and " met " in table[4]


def test_the_runner_is_held_to_thirty_times_the_naive_way():
    fig = bench_all._figure("perturb_p1_p5", 10.0, 1.5, "fidelity perturb P1..P5",
                            {"name": "naive", "command": "time_naive", "seconds": 200.0}, target_peer_over_figure=30.0)
    assert "20.00x the time (target >= 30x: MISSED)" in bench_all.render(_bench([fig]))


def test_the_peak_memory_is_the_child_that_allocated_it():
    grandchild = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'b = bytearray(300 << 20); import time; time.sleep(1)'])"
    timed = timed_command.run([sys.executable, "-c", grandchild])
    assert timed.returncode == 0 and timed.wall_s >= 1.0
    assert timed.peak_process_mib is not None and 300 <= timed.peak_process_mib < 400
    assert timed.peak_tree_mib >= timed.peak_process_mib


def test_discover_is_held_to_five_times_mutmuts_mutants_per_second_whatever_each_ran():
    # mutmut: 100 mutants in 200 s (0.5 a second); discover: 50 in 20 s (2.5 a second): 5x, met; in 25 s, 4x
    mutmut = {"tool": "mutmut 3.8.1", "command": "run", "exit": 0, "mutants": 100, "seconds": 200.0}
    discover = {"tool": "fidelity discover", "command": "discover", "exit": 0, "mutants": 50, "seconds": 20.0,
                "modules": {"pkg.mod": {}}}
    met = bench_all.discover_figure(discover, mutmut, 1.5)
    assert met["peer_over_figure"] == 5.0 and "50 mutants" in met["command"] and "pkg.mod" in met["command"]
    assert "(target >= 5x: met)" in bench_all.render(_bench([met]))
    missed = bench_all.discover_figure({**discover, "seconds": 25.0}, mutmut, 1.5)
    assert "4.00x the time (target >= 5x: MISSED)" in bench_all.render(_bench([missed]))


def test_a_side_that_ran_no_mutant_stops_the_bench_saying_so():
    import pytest

    mutmut = {"tool": "mutmut 3.8.1", "command": "run", "exit": 1, "mutants": 0, "seconds": 2.0, "output_tail": "boom"}
    discover = {"tool": "fidelity discover", "command": "discover", "exit": 0, "mutants": 5, "seconds": 2.0}
    with pytest.raises(SystemExit, match="mutmut 3.8.1 \\(run\\) exited 1 with 0 mutants:\nboom"):
        bench_all.discover_figure(discover, mutmut, 1.5)
