"""Gates (stateless): one loop model, reused, keeps no state; switching arms and back changes nothing.

Both gates call A, B, A on ONE model (fidelity.gates.statelessness): both A results must agree bit
for bit, B must not get A's, B must give what B gives on a fresh model built alike (the same
generator seed), and the model's parameters, buffers, attributes and whatever objects it holds (its
config among them), the implementation modules and the global RNGs must be as they were before the
first A. State the subject declares it keeps (Capability.keeps_state) is not counted, and the gate
says what it was told.
- The same forward, every arm graph: A on seeded tokens, B on other seeded tokens of the same shape.
  A step counter, a cache or a buffer updated in forward makes a reused model drift; it shows in
  the state after the first call, though it might change the logits only after a thousand; gates
  that build a fresh model per case never see it.
- set_arm round trips: A is the logits at arm a; B is set_arm(b), a forward on other tokens,
  set_arm(a); for every ordered pair a != b. The model is built with non-default settings (GELU, the
  l2 score convention, the paper mHC layout with 4 streams, 3 HC streams, attnres_eps 1e-3, t_max 5),
  so a set_arm that rebuilds the configuration or the arms from defaults, or that leaves state of
  arm b behind, is seen.
"""
import itertools

import pytest

from fidelity.gates.statelessness import assert_stateless, built_twice, declared_kept_state
from loop_model_point import GRAPHS, MECH, build, tokens

ARMS = ("rezero", "attnres", "mhc", "hc")
NON_DEFAULT = dict(activation="gelu", score_convention="l2", mhc_layout="paper", mhc_streams=4, hc_streams=3,
                   attnres_eps=1e-3, sinkhorn_t_max=5, mhc_dynamic_init_std=0.1)
STATES = ("attnres.stateless", "mhc.stateless", "hc.stateless")  # the loop model runs all three papers' connections
EQUATIONS = ["attnres.placement_loop", "mhc.eq3", "hc.eq5", *STATES]


@pytest.mark.gate(equations=EQUATIONS, mechanism=MECH, gate_class="stateless")
@pytest.mark.parametrize("graph", list(GRAPHS))
def test_one_model_called_after_other_tokens_gives_the_same_logits(subject, device, graph):
    """Reading: the number of logit tensors and state entries that differ (must be 0)."""
    model, fresh = built_twice(lambda: build(subject, device, **GRAPHS[graph]))
    toks, other = tokens(device), tokens(device, seed=43)
    assert_stateless(lambda: tuple(model(toks)), lambda: tuple(model(other)), fresh_other=lambda: tuple(fresh(other)),
                     modules={"model": model}, implementation=subject.modules.get(MECH, ()),
                     kept=declared_kept_state(subject, MECH), cause=STATES,
                     what=f"{graph} graph of the loop model, one object")


@pytest.mark.gate(equations=EQUATIONS, mechanism=MECH, gate_class="stateless")
@pytest.mark.parametrize("a,b", list(itertools.permutations(ARMS, 2)), ids=lambda v: v)
def test_set_arm_there_and_back_gives_the_same_bits(subject, device, a, b):
    """Reading: the number of logit tensors and state entries that differ after set_arm(b); forward; set_arm(a)."""
    model, fresh = built_twice(lambda: build(subject, device, arm=a, **NON_DEFAULT))
    toks, other = tokens(device), tokens(device, seed=43)

    def visit_b(model=model):  # between the first call and the second: visit arm b and come back
        model.set_arm(b)
        logits = tuple(model(other))
        model.set_arm(a)
        return logits

    assert_stateless(lambda: tuple(model(toks)), visit_b, fresh_other=lambda: visit_b(fresh), modules={"model": model},
                     implementation=subject.modules.get(MECH, ()), kept=declared_kept_state(subject, MECH),
                     cause=STATES, what=f"arm {a} before and after set_arm({b!r}) and back")
