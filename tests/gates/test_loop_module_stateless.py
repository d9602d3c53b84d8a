"""Gates (stateless): one loop model, reused, gives the same bits; switching arms and back changes nothing.

- The same forward on ONE model over 1001 calls (fidelity.gates.statelessness.REUSE_CALLS), every arm graph:
  a step counter, a cache or a buffer updated in forward makes a reused model drift; gates that build a fresh
  model per case never see it.
- set_arm round trips: logits at arm a, then set_arm(b) and a forward, then set_arm(a): the same bits as before,
  for every ordered pair a != b. The model is built with non-default settings (GELU, the l2 score convention,
  the paper mHC layout with 4 streams, 3 HC streams, attnres_eps 1e-3, t_max 5), so a set_arm that rebuilds
  the configuration or the arms from defaults, or that leaves state of arm b behind, is seen.
"""
import itertools
import typing

import pytest
import torch

from fidelity.gates.statelessness import assert_same_bits_every_call

ARMS = ("rezero", "attnres", "mhc", "hc")
GRAPHS = {
    "rezero": dict(arm="rezero"),
    "attnres": dict(arm="attnres"),
    "mhc_sliced": dict(arm="mhc", mhc_layout="sliced"),
    "mhc_paper": dict(arm="mhc", mhc_layout="paper"),
    "hc_dynamic": dict(arm="hc", hc_dynamic=True),
    "hc_static": dict(arm="hc", hc_dynamic=False),
}
NON_DEFAULT = dict(activation="gelu", score_convention="l2", mhc_layout="paper", mhc_streams=4, hc_streams=3,
                   attnres_eps=1e-3, sinkhorn_t_max=5, mhc_dynamic_init_std=0.1)
EQUATIONS = ["attnres.placement_loop", "mhc.eq3", "hc.eq5"]


def build(subject, device, **config):
    factory = subject.get("loop_model")
    config_type = typing.get_type_hints(factory.__init__)["config"]
    return factory(config_type(**config), torch.Generator().manual_seed(41), device=device)


def tokens(device):
    return torch.randint(0, 16, (2, 5), generator=torch.Generator().manual_seed(42)).to(device)


@pytest.mark.gate(equations=EQUATIONS, mechanism="loop_model", gate_class="stateless")
@pytest.mark.parametrize("graph", list(GRAPHS))
def test_one_model_reused_over_1001_calls_gives_the_same_logits(subject, device, graph):
    """Reading: the number of calls whose logits differ from the first call's in any bit (must be 0)."""
    model = build(subject, device, **GRAPHS[graph])
    toks = tokens(device)
    assert_same_bits_every_call(lambda: tuple(model(toks)), what=f"{graph} graph of the loop model, one object")


@pytest.mark.gate(equations=EQUATIONS, mechanism="loop_model", gate_class="stateless")
@pytest.mark.parametrize("a,b", list(itertools.permutations(ARMS, 2)), ids=lambda v: v)
def test_set_arm_there_and_back_gives_the_same_bits(subject, device, a, b):
    """Reading: the number of logit tensors that differ in any bit after set_arm(b); forward; set_arm(a)."""
    model = build(subject, device, arm=a, **NON_DEFAULT)
    toks = tokens(device)
    calls = iter(range(3))

    def call():
        if next(calls) == 1:  # between the first call and the second: visit arm b and come back
            model.set_arm(b)
            model(toks)
            model.set_arm(a)
        return tuple(model(toks))

    assert_same_bits_every_call(call, calls=2, what=f"arm {a} before and after set_arm({b!r}) and back")
