"""Gate: with dynamic_init_std > 0 the factory draws each phi_* from Normal(0, std), as the interface says.

fidelity discover --module fidelity.impl.torch.mhc found the std's factor unheld: every gate built
with phi = 0 (the default), so drawing Normal(0, 1) whatever std was asked passed. Here the module is
built by its factory with dynamic_init_std = 1/2 and a seeded generator (n = 4, C = 64: nC = 256
rows), and each phi_*'s sample standard deviation must be 1/2 within 6 standard errors of a sample
std, 6 / sqrt(2 N) relative (N = the parameter's entries: 1024, 1024, 4096), and its mean within
6 std / sqrt(N) of 0. The draw's order (which phi comes first) is the subject's own and is not held.
One instance per parameter.
"""
import math

import pytest
import torch

from fidelity.gates.compare import assert_bound
from fidelity.subjects.subject import NotRun

STD = 0.5
N_STREAMS, WIDTH = 4, 64


@pytest.mark.gate(equations=["mhc.init_dynamic", "mhc.eq7"], mechanism="mhc_residual", gate_class="init_through_module")
@pytest.mark.parametrize("moment", ["std", "mean"])
@pytest.mark.parametrize("name", ["phi_pre", "phi_post", "phi_res"])
def test_each_phi_is_drawn_from_normal_zero_std(subject, device, name, moment):
    """factory(4, 64, dynamic_init_std=1/2, generator=g): phi's sample std is 1/2, its mean 0, within 6 standard errors."""
    module = subject.get("mhc_residual")(N_STREAMS, WIDTH, dynamic_init_std=STD, generator=torch.Generator().manual_seed(7),
                                         dtype=torch.float64, device=device)
    named = dict(module.named_parameters())
    if name not in named:
        raise NotRun(f"the module has no parameter {name!r}")
    phi = named[name].detach().double().reshape(-1)
    N = phi.numel()
    if moment == "std":
        deviation = abs(float(phi.std()) / STD - 1)
        assert_bound(deviation, at_most=6 / math.sqrt(2 * N), reading_name="relative_std_deviation",
                     what=f"|std({name}) / {STD} - 1| over {N} entries (6 standard errors)")
    else:
        assert_bound(abs(float(phi.mean())) / STD, at_most=6 / math.sqrt(N), reading_name="mean_over_std",
                     what=f"|mean({name})| / {STD} over {N} entries (6 standard errors)")
