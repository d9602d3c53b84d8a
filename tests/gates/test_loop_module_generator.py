"""Gate (init_through_module): the loop model draws its random inits from the generator it is given, and only from it.

fidelity discover's forwarded-argument operators found the generator unheld: a `generator=generator` dropped
from the draws of the loop model's normal or uniform inits (so they come from the global RNG instead), or
replaced by None, passed every gate, since the init gates read statistics of the draws, not which stream they
came from. Here factory(LoopConfig(), G) is built twice from two generators of one seed, with the global RNG
seeded between them to other values: every parameter must be the same bits, and the global RNG must not have
advanced. Reading: parameters that differ, plus 1 if the global RNG advanced; it must be 0.
"""
import pytest
import torch

from fidelity.gates.compare import assert_bound
from fidelity.mechanisms.loop_model import config_class

SEED = 20261


@pytest.mark.gate(equations=["attnres.placement_loop", "attnres.loop.config", "attnres.loop.init.embed_std",
                             "attnres.loop.init.uniform_exponent"],
                  mechanism="loop_model", gate_class="init_through_module")
def test_the_loop_model_draws_its_inits_from_the_generator_it_was_given_alone(subject, device):
    factory = subject.get("loop_model")
    config_type = config_class(factory)
    built = []
    for global_seed in (1, 2):  # a draw from the global RNG would differ between the two builds
        torch.manual_seed(global_seed)
        before = torch.random.get_rng_state()
        model = factory(config_type(), torch.Generator().manual_seed(SEED), device=device)
        built.append((dict(model.named_parameters()), not torch.equal(torch.random.get_rng_state(), before)))
    (first, advanced_first), (second, advanced_second) = built
    differing = sorted(name for name in first if name not in second or not torch.equal(first[name], second[name]))
    advanced = int(advanced_first or advanced_second)
    assert_bound(len(differing) + advanced, at_most=0, reading_name="draws_not_from_the_generator",
                 what=f"factory(LoopConfig(), G) built twice from equal seeds, the global RNG seeded apart: parameters "
                      f"differing {differing[:8]}{' ...' if len(differing) > 8 else ''}, global RNG advanced "
                      f"{bool(advanced)}")
