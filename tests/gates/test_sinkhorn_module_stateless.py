"""Gates: the Sinkhorn projection is stateless: it leaves no state behind, and a call gives the same bits whatever ran before.

A module-level iteration counter, a warm start from the previous call's scalings, or a cache
keyed on the wrong thing makes a function's answer depend on what was called before it.
fidelity.gates.statelessness snapshots the state the function can reach (the subject's Sinkhorn
modules' globals, attributes on their functions and classes, what the subject's callable holds and
the globals it names, whatever package defined it; the global RNGs), then calls B (other logits of
the same shape and dtype) on the function as this gate found it (a function has no object to build
afresh: "fresh" is before this gate's other calls), A, B again, A again: A's two results must agree
bit for bit, B must not get A's result, B must give the bits it gave first, and no state may change
from before the first call to after the last, so a counter that would act only at its 500th call is
seen on the first. State the subject declares it keeps (Capability.keeps_state) is not counted, and
the gate says what it was told. Input A: a seeded 4x4 at logit scale 6 (M(20) unconverged, so a
changed number of steps or another starting point changes the output); B: another seed, the same
scale. Both dtypes, the forward alone and the forward with its gradient (a counter in a hand-written
backward is state too); each route the subject has (torch: autograd and manual; Triton: manual) is
its own instance.
"""
import pytest
import torch

from fidelity.gates.statelessness import assert_stateless, declared_kept_state
from fidelity.gates.routes import routed

STATE = "mhc.stateless"  # a difference is state kept between calls: listed under its cause
ROUTES = ["autograd", "manual"]
DTYPES = [pytest.param(torch.float32, id="f32"), pytest.param(torch.float64, id="f64")]
WITH_BACKWARD = [pytest.param(False, id="forward"), pytest.param(True, id="with_backward")]
LOGIT_SCALE = 6.0  # as test_sinkhorn_gradients.py: M(20) still unconverged (column defects 1e-4 .. 4e-2)
SEED_A, SEED_B = 14005, 14006


def _logits_and_cotangent(seed, dtype, device, requires_grad):
    g = torch.Generator().manual_seed(seed)
    logits = (torch.randn(4, 4, generator=g, dtype=torch.float64) * LOGIT_SCALE).to(dtype=dtype, device=device)
    cotangent = torch.randn(4, 4, generator=g, dtype=torch.float64).to(dtype=dtype, device=device)
    return logits.requires_grad_(requires_grad), cotangent


@pytest.mark.gate(equations=["mhc.eq9", STATE], mechanism="sinkhorn", gate_class="stateless")
@pytest.mark.parametrize("with_backward", WITH_BACKWARD)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backward", ROUTES)
def test_the_same_call_repeated_gives_the_same_bits(subject, device, backward, dtype, with_backward):
    """sinkhorn(logits, backward=route) with the default t_max, called on A's logits, on B's, on A's again:
    the output (and the gradient of <output, cotangent> for the logits) of both A calls identical, bit for
    bit, B's the same bits before and after A, and no state the function reaches changed by any call."""
    fn = routed(subject, "sinkhorn", backward, gradient=with_backward)

    def call_on(seed):
        logits, cotangent = _logits_and_cotangent(seed, dtype, device, with_backward)

        def call():
            with torch.enable_grad():
                out = fn(logits)
                if not with_backward:
                    return {"output": out}
                (grad,) = torch.autograd.grad((out * cotangent).sum(), logits)
            return {"output": out, "d logits": grad}
        return call

    other = call_on(SEED_B)
    assert_stateless(call_on(SEED_A), other, fresh_other=other, objects={"sinkhorn": fn},
                     implementation=subject.modules.get("sinkhorn", ()), kept=declared_kept_state(subject, "sinkhorn"),
                     cause=[STATE], what=f"sinkhorn ({backward} route, {str(dtype)[6:]}, "
                          f"{'with' if with_backward else 'without'} a backward)")
