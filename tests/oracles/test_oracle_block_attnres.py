"""Block AttnRes: source sets checked by the partition property of Eq. 1; Algorithm 1's merge against the joint softmax."""
import itertools

import mpmath
import pytest

from fidelity.oracles import block_attnres as ba
from fidelity.oracles import cases
from fidelity.oracles import depth_attention as da
from fidelity.oracles._precision import exact, mp, precision


def _valid(L, N):
    try:
        ba.block_partition(L, N)
        return True
    except ValueError:
        return False


@pytest.mark.parametrize("L,N", [(L, N) for L in range(1, 13) for N in range(1, L + 1) if _valid(L, N)])
def test_every_layer_sees_the_embedding_and_each_earlier_output_exactly_once(L, N):
    """Eq. 1's source multiset {h1, f1..f_{l-1}} is partitioned by layer l's block sources: no loss, no double count."""
    for entry in ba.source_sets(L, N):
        l = entry["layer"]
        flat = list(itertools.chain.from_iterable(entry["composition"][lab] for lab in entry["sources"]))
        assert sorted(flat) == sorted(["h1"] + [f"f{j}" for j in range(1, l)]), entry
        assert entry["sources"][0] == "b0" and entry["composition"]["b0"] == ["h1"]
        assert len(entry["sources"]) == entry["block"] + (1 if entry["i"] >= 2 else 0)


@pytest.mark.parametrize("L,N,sizes", [(4, 4, [1, 1, 1, 1]), (4, 1, [4]), (6, 2, [3, 3]), (7, 3, [3, 3, 1]),
                                       (8, 3, [3, 3, 2]), (5, 2, [3, 2])])
def test_last_block_holds_the_remainder(L, N, sizes):
    assert [len(b) for b in ba.block_partition(L, N)] == sizes


def test_full_and_single_block_limits():
    full = ba.source_sets(4, 4)
    assert [e["sources"] for e in full] == [["b0"], ["b0", "b1"], ["b0", "b1", "b2"], ["b0", "b1", "b2", "b3"]]
    one = ba.source_sets(4, 1)
    assert [e["sources"] for e in one] == [["b0"], ["b0", "b1^1"], ["b0", "b1^2"], ["b0", "b1^3"]]


def test_a_rule_that_empties_a_block_is_refused():
    with pytest.raises(ValueError, match="empty"):
        ba.block_partition(9, 4)


def test_merge_equals_joint_softmax_at_every_step():
    c = cases.ALG1
    steps = ba.two_phase_block(c["inter_sources"], c["layer_outputs"], c["queries"], c["eps"])
    partials = [[0, 0, 0, 0]]
    for f in c["layer_outputs"]:
        partials.append([exact(a) + exact(b) for a, b in zip(partials[-1], f)])
    for s in steps:
        srcs = list(c["inter_sources"]) + ([partials[s["i"]]] if s["i"] >= 1 else [])
        joint = da.depth_attention(srcs, c["queries"][s["i"]], c["eps"], "paper")
        with precision():
            for a, b in zip(s["h"], joint["h"]):
                assert abs(a - mp(b)) < mpmath.mpf("1e-45")


def test_fixture_exercises_both_branches_of_the_max():
    c = cases.ALG1
    steps = ba.two_phase_block(c["inter_sources"], c["layer_outputs"], c["queries"], c["eps"])
    assert steps[1]["phase1"]["m"] < steps[1]["phase2"]["m"]
    assert steps[2]["phase1"]["m"] > steps[2]["phase2"]["m"]


def test_merge_is_symmetric_in_its_two_phases():
    with precision():
        a = ba.merge([1, 2], 3, 2, [5, -1], "1/2", 1)
        b = ba.merge([5, -1], "1/2", 1, [1, 2], 3, 2)
        assert all(abs(x - y) < mpmath.mpf("1e-55") for x, y in zip(a["h"], b["h"]))
