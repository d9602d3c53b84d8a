"""Gates: mHC as a package exposes it, hidden in and hidden out (mechanism mhc_stack, mHC Eq. 3).

The stack is built by its factory as shipped, factory(D, bodies, dtype=, device=), around L = 2 layer
bodies the gate makes (its own: a seeded tanh MLP D -> 2D -> D, the same for every subject), and called
on a seeded hidden h of two tokens. What the gates hold does not depend on the stream layout inside:

- gradients_finite_differences: float64 backward against central differences, for h and every parameter
  of the stack (named_parameters() less the bodies'): a skip path detached from the graph still adds
  h to the output, so its derivative is there and the backward's is not;
- gradient_reach: h and every parameter of the stack get a non-zero gradient; a parameter no output
  depends on is named as dead;
- stateless: one stack called on h, on another hidden, on h again gives the same bits (and gradients)
  and leaves its state, the implementation's modules and the global RNGs as after the first call;
- the interface's refusals: no body, or a width below 1, is a ValueError at construction; width 1 builds and runs;
- its default dtype: built with no dtype, every parameter of the stack is float32.

The first two move every parameter of the stack to a seeded point in [-1, 1] first (written through
named_parameters(), so any package's names do): at mHC's init phi = 0 makes the alphas' gradient
legitimately zero, and b_res = 10 I makes the Sinkhorn stiff for central differences. The stateless
gate holds the stack at its init as shipped.
"""
import pytest
import torch

from fidelity.gates import readings
from fidelity.gates.gradient_reach import assert_gradients_reach
from fidelity.gates.jacobians import assert_gradcheck_every_tensor
from fidelity.gates.routes import require_gradient
from fidelity.gates.statelessness import assert_stateless

MECH = "mhc_stack"
D, LAYERS, TOKENS = 3, 2, 2
SEED = 8801
# as tests/gates/test_mhc_module_gradients.py: float64 central differences at h = 1e-6 of smooth maps, gradcheck's
# criterion atol + rtol |numeric| (truncation ~1e-12, rounding ~2e-10); a detached skip path leaves O(1) entries out
FD_STEP, FD_ATOL, FD_RTOL = 1e-6, 1e-8, 1e-6


def _bodies(dtype, device) -> list[torch.nn.Module]:
    """The gate's own layer bodies: tanh MLPs D -> 2D -> D with seeded weights."""
    g = torch.Generator().manual_seed(SEED)
    bodies = []
    for _ in range(LAYERS):
        body = torch.nn.Sequential(torch.nn.Linear(D, 2 * D), torch.nn.Tanh(), torch.nn.Linear(2 * D, D))
        with torch.no_grad():
            for p in body.parameters():
                p.copy_(torch.rand(p.shape, generator=g, dtype=torch.float64) * 2 - 1)
        bodies.append(body.to(dtype=dtype, device=device))
    return bodies


def _hidden(seed, dtype, device) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(TOKENS, D, generator=g, dtype=torch.float64).to(dtype=dtype, device=device)


def _stack(subject, dtype, device):
    """(stack as its factory builds it, the bodies, the stack's own parameters by name); dtype None: not passed."""
    bodies = _bodies(dtype or torch.float32, device)
    dtype_kw = {} if dtype is None else {"dtype": dtype}
    stack = subject.get(MECH)(D, bodies, **dtype_kw, device=device)
    of_bodies = {id(p) for body in bodies for p in body.parameters()}
    own = {name: p for name, p in stack.named_parameters() if id(p) not in of_bodies}
    return stack, bodies, own


def _at_seeded_point(subject, device):
    """A float64 stack whose own parameters are moved to seeded values in [-1, 1], and h requiring a gradient."""
    stack, _, own = _stack(subject, torch.float64, device)
    g = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for p in own.values():
            p.copy_((torch.rand(p.shape, generator=g, dtype=torch.float64) * 2 - 1).to(p))
    return stack, _hidden(SEED + 2, torch.float64, device).requires_grad_(True), own


@pytest.mark.gate(equations=["mhc.eq3"], mechanism=MECH, gate_class="gradients_finite_differences")
def test_the_stacks_backward_is_the_derivative_of_its_forward_for_the_hidden_and_every_parameter(subject, device):
    stack, h, own = _at_seeded_point(subject, device)
    assert_gradcheck_every_tensor(lambda: stack(h), {"h": h, **own}, step=FD_STEP, atol=FD_ATOL, rtol=FD_RTOL,
                                  what="d stack(h) / d (h, every parameter of the stack), float64")


@pytest.mark.gate(equations=["mhc.eq3"], mechanism=MECH, gate_class="gradient_reach")
def test_the_hidden_and_every_parameter_of_the_stack_receive_a_gradient(subject, device):
    stack, h, own = _at_seeded_point(subject, device)
    assert_gradients_reach(lambda: stack(h), {"h": h, **own},
                           what="d stack(h) / d (h, every parameter of the stack); each one named here is dead")


@pytest.mark.gate(equations=["mhc.eq3"], mechanism=MECH, gate_class="stateless")
@pytest.mark.parametrize("with_backward", [False, True], ids=["forward", "with_backward"])
def test_one_stack_called_after_another_hidden_gives_the_same_bits(subject, device, with_backward):
    """stack(h) on h, on another hidden, on h again, at the init as shipped (float32, the default dtype)."""
    if with_backward:
        require_gradient(subject, MECH)
    stack, _, own = _stack(subject, torch.float32, device)
    cotangent = _hidden(SEED + 3, torch.float32, device)

    def call_on(seed):
        h = _hidden(seed, torch.float32, device).requires_grad_(with_backward)

        def call():
            with torch.enable_grad():
                out = stack(h)
                if not with_backward:
                    return {"output": out}
                leaves = [h, *own.values()]
                grads = torch.autograd.grad((out * cotangent).sum(), leaves, allow_unused=True)
            return {"output": out, **{f"d {name}": torch.zeros_like(leaf) if gr is None else gr
                                      for name, gr, leaf in zip(["h", *own], grads, leaves)}}
        return call

    assert_stateless(call_on(SEED + 2), call_on(SEED + 4), modules={"stack": stack},
                     implementation=subject.modules.get(MECH, ()),
                     what=f"one stack ({'with' if with_backward else 'without'} a backward)")


@pytest.mark.gate(equations=["mhc.eq3"], mechanism=MECH)
def test_a_stack_without_a_body_or_below_width_one_is_refused_and_one_of_width_one_runs(subject, device):
    """factory(D, []) and factory(0, bodies) raise ValueError (Eq. 3 has no layer to connect, or no stream
    width); factory(1, one body) builds and maps a hidden [2, 1] to a hidden [2, 1]."""
    factory = subject.get(MECH)
    not_refused = []
    for case, (d, bodies) in {"no body": (D, []), "width 0": (0, _bodies(torch.float64, device))}.items():
        try:
            factory(d, bodies, dtype=torch.float64, device=device)
        except ValueError:
            continue
        not_refused.append(case)
    readings.record(len(not_refused))  # cases the interface refuses that were built (0 passes)
    assert not not_refused, f"built instead of refused with ValueError: {not_refused}"
    narrow = factory(1, [torch.nn.Tanh()], dtype=torch.float64, device=device)
    out = narrow(torch.ones(2, 1, dtype=torch.float64, device=device))
    assert out.shape == (2, 1), f"a stack of width 1 returned shape {tuple(out.shape)} for a hidden [2, 1]"


@pytest.mark.gate(equations=["mhc.eq3"], mechanism=MECH)
def test_a_stack_built_without_a_dtype_holds_float32_parameters(subject, device):
    """factory(D, bodies) with no dtype: every parameter of the stack is float32, the interface's default."""
    stack, _, own = _stack(subject, None, device)
    other = {name: str(p.dtype).removeprefix("torch.") for name, p in own.items() if p.dtype != torch.float32}
    readings.record(len(other))  # parameters of another dtype (0 passes)
    assert not other, f"built with no dtype, the stack holds parameters that are not float32: {other}"
