"""Gate: one mHC residual module, reused, keeps no state between calls.

An iteration counter that is never reset, a warm-started Sinkhorn, or a cache keyed on the
wrong thing makes a reused module drift; gates that build a fresh module per case never see it.
The module is built by its factory as shipped (float32, the default dtype; t_max and eps as
shipped), given the seeded point of mhc.module_jacobian (phi, alpha, b non-trivial, so every
coefficient depends on x and H_res is not at a fixed point after one pass) and called with the
fixture's linear body on the fixture's token x (A), on a seeded x of the same shape (B), and on x
again (fidelity.gates.statelessness): both A outputs (and, with a backward, the gradients of x and
of every parameter) identical bit for bit, B not given A's, B what B gives on a fresh module built
alike (the same global seed), and the module's parameters, buffers, attributes and whatever objects
it holds (t_max among them; a package's Sinkhorn object and its counter too), the implementation
modules and the global RNGs as they were before the first call: a counter that would drop a
Sinkhorn step only after 500 calls shows on the first. State the subject declares it keeps
(Capability.keeps_state) is not counted, and the gate says what it was told.
"""
import pytest
import torch

from fidelity.gates.routes import require_gradient
from fidelity.gates.statelessness import assert_stateless, built_twice, declared_kept_state
from mhc_module_point import MECH, module_at_fixture

STATE = "mhc.stateless"  # a difference is state kept between calls: listed under its cause
FIXTURE = "mhc.module_jacobian"


@pytest.mark.gate(equations=["mhc.eq3", "mhc.eq7", "mhc.eq8", "mhc.eq9", STATE], mechanism=MECH, gate_class="stateless")
@pytest.mark.parametrize("with_backward", [False, True], ids=["forward", "with_backward"])
@pytest.mark.parametrize("route", ["autograd", "manual"])
@pytest.mark.parametrize("layout", ["paper", "sliced"])
def test_one_module_called_after_another_input_gives_the_same_bits(subject, device, layout, route, with_backward):
    """module(x, body) on x, on another x, on x again: the same output bits (and gradients) and the same state."""
    if with_backward:
        require_gradient(subject, MECH)
    (module, x, body, params), (fresh, _, _, fresh_params) = built_twice(
        lambda: module_at_fixture(subject, FIXTURE, layout, torch.float32, device, route))
    g = torch.Generator().manual_seed(7302)
    x_b = torch.randn(x.shape, generator=g, dtype=torch.float64).to(x)
    cotangent = torch.randn(x.shape, generator=g, dtype=torch.float64).to(x)

    def call_on(x, module=module, params=params):
        x = x.detach().clone().requires_grad_(with_backward)

        def call():
            with torch.enable_grad():
                out = module(x, body)
                if not with_backward:
                    return {"output": out}
                leaves = [x, *params.values()]
                grads = torch.autograd.grad((out * cotangent).sum(), leaves, allow_unused=True)
            return {"output": out, **{f"d {name}": torch.zeros_like(leaf) if gr is None else gr
                                      for name, gr, leaf in zip(["x", *params], grads, leaves)}}
        return call

    assert_stateless(call_on(x), call_on(x_b), fresh_other=call_on(x_b, fresh, fresh_params), modules={"module": module},
                     implementation=subject.modules.get(MECH, ()), kept=declared_kept_state(subject, MECH),
                     cause=[STATE], what=f"one {layout}-layout module ({route} Sinkhorn, "
                          f"{'with' if with_backward else 'without'} a backward)")
