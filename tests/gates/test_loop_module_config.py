"""Gates: the loop model's configuration refuses what the interface says it refuses, and no more.

fidelity.mechanisms.loop_model: ValueError for an unknown arm (or one not given as a str), layout, convention
or activation, a size < 1, or a sliced layout whose d is not divisible by mhc_streams; TypeError when the generator is not a
torch.Generator. One instance per case. A configuration that is accepted where it should be refused trains
something else in silence (an unknown activation runs GELU, mhc_streams = 0 an empty stream, a sliced d = 6
over 4 streams a 4-wide hidden), so each refusal is a gate.
The boundary of each size guard is a case too: every size at 1 (n = 1 streams included) is a valid
configuration and must build; a guard moved to <= 1 would refuse the one-stream arms in silence.
Reading: 1 when the case has the promised outcome (ValueError, or a model that builds), 0 otherwise.
"""

import pytest
import torch

from fidelity.gates.compare import assert_bound
from fidelity.mechanisms.loop_model import config_class

REFUSED = {
    "unknown_arm": dict(arm="resnet"),
    "two_arms": dict(arm=("rezero", "mhc")),
    "one_arm_in_a_tuple": dict(arm=("rezero",)),  # the interface's arm is a str: a sequence is refused, not unpacked
    "unknown_layout": dict(mhc_layout="diagonal"),
    "unknown_convention": dict(score_convention="cosine"),
    "unknown_activation": dict(activation="relu"),
    "vocab_0": dict(vocab=0),
    "d_0": dict(d=0),
    "T_0": dict(T=0),
    "hidden_mult_0": dict(hidden_mult=0),
    "sinkhorn_t_max_0": dict(sinkhorn_t_max=0),
    "mhc_streams_0": dict(mhc_streams=0),
    "hc_streams_0": dict(hc_streams=0),
    "sliced_d_not_divisible": dict(d=6, mhc_streams=4, mhc_layout="sliced"),
}
ACCEPTED = {f"{field}_1": {field: 1} for field in ("vocab", "d", "T", "hidden_mult", "sinkhorn_t_max", "mhc_streams",
                                                   "hc_streams")}
ACCEPTED["d_1"] = dict(d=1, mhc_streams=1)  # d = 1 splits into one slice only (the default n = 2 is refused)
ACCEPTED["sliced_d_divisible"] = dict(d=6, mhc_streams=3, mhc_layout="sliced")
ACCEPTED["paper_d_not_divisible"] = dict(d=6, mhc_streams=4, mhc_layout="paper")
CASES = {**{k: (v, "ValueError") for k, v in REFUSED.items()}, **{k: (v, "accepted") for k, v in ACCEPTED.items()}}


def config_type(subject):
    factory = subject.get("loop_model")
    return factory, config_class(factory)


@pytest.mark.gate(equations=["attnres.loop.config", "mhc.layout.sliced"], mechanism="loop_model")
@pytest.mark.parametrize("case", list(CASES))
def test_each_loop_config_is_refused_or_accepted_as_the_interface_says(subject, device, case):
    factory, config = config_type(subject)
    fields, promised = CASES[case]
    outcome = "accepted"
    try:
        built = config(**fields)
        factory(built, torch.Generator().manual_seed(0), device=device)  # a refusal at construction counts too
    except ValueError:
        outcome = "ValueError"
    except Exception as exc:  # noqa: BLE001 - another error type is not the promised refusal
        outcome = type(exc).__name__
    assert_bound(1 if outcome == promised else 0, at_least=1, reading_name="as_promised",
                 what=f"LoopConfig({fields}) gave {outcome}, the interface promises {promised}")


@pytest.mark.gate(equations=["attnres.loop.config"], mechanism="loop_model")
@pytest.mark.parametrize("generator", ["none", "seed_int"])
def test_a_model_without_a_torch_generator_is_refused_with_type_error(subject, device, generator):
    factory, config = config_type(subject)
    outcome = "accepted"
    try:
        factory(config(), None if generator == "none" else 0, device=device)
    except TypeError:
        outcome = "TypeError"
    except Exception as exc:  # noqa: BLE001
        outcome = type(exc).__name__
    assert_bound(1 if outcome == "TypeError" else 0, at_least=1, reading_name="refused",
                 what=f"factory(config, generator={generator}) gave {outcome}, the interface promises TypeError")
