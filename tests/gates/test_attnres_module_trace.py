"""Gates: Block AttnRes's trace (forward(h1, return_trace=True)) is the oracle's, as users read it.

Issue 13: fidelity discover --module fidelity.impl.torch.attnres found the trace unheld: its block
numbers counted from 0 or 2 (`enumerate(self.blocks, start=...)`), its layer labels were l, l + 2
or 1, and in two_phase mode its alpha was left un-normalised (not divided by the merge's
denominator or by l1, or replaced by 1 / denom), lost a factor e^{m1-m} or e^{m2-m}, was cast to
float32 or detached, and every gate stayed green: none read the trace. The interface
(fidelity.mechanisms.block_attnres, forward's return_trace): one dict per sublayer, layer
(1-based), block, position, sources ('b0', 'b1', 'b2^1', ...), h, alpha, y, the tensors in the
autograd graph.

The case: the module case of attnres.module_alive (L = 5 affine sublayers f_l(h) = W_l h + c_l in
N = 2 blocks [1, 2, 3], [4, 5], d = 4, two positions, learned gains, every parameter at its
non-zero base), built through the subject's factory with the fixture's eps and convention and its
parameters written by name, in both modes, float32 and float64. Fixture attnres.module_trace holds
the oracle's alpha per layer (fidelity.oracles.block_attnres.depth_mix over the layer's Eq. 6
sources, rebuilt from stack_forward's run), [sources, positions].

1. partition (no gate class: a structure, not a class's promise): entry k's layer, block, position
   and sources are the k-th of fidelity.oracles.block_attnres.source_sets(L, N). Reading
   `trace_entries_off_partition`, 0 passes.
2. alpha equals the oracle's, every entry of every layer, relative to itself (alpha > 0.06
   everywhere here; layer 1's is the constant 1). A trace alpha of the wrong shape is counted by the
   assertion first (`alpha_off_shape`). Tolerance ALPHA_TOL: alpha is a softmax of scores
   q . (g v) / sqrt(mean(v^2) + eps) over two or three sources, the sources a few affine layers
   deep: a handful of roundings each, 16 eps relative per element. Readings on the torch reference
   (CPU): float32 2.24 eps (direct) and 2.02 eps (two_phase), float64 1.0 eps in both modes.
2b. h and y are what each sublayer was called with and returned: entry k's h is, bit for bit, the tensor
   sublayer `layer` was called on in that forward, and its y the tensor that sublayer returned (the interface
   names both). Issue 50: mutmut renamed the keys "h" and "y" and every gate stayed green (the dtype gate reads
   t.get(key), which a missing key passes). Reading `trace_h_y_off`, 0 passes: exact, the trace holds the
   tensors themselves.
3. dtype_device: every floating tensor of the trace (h, alpha, y) and h_out has h1's dtype and
   device. Reading `outputs_off_contract`, 0 passes.
4. gradient_reach: one backward of a seeded normal cotangent on every entry's alpha (and nothing
   else) gives `queries` a non-zero gradient in the rows of layers 2..L. Layer 1 attends b_0 alone,
   its alpha is the constant 1 (FIRST_LAYER_ROW in the alive gate), so row 0 is left out. Reading
   `dead_gradients`: the rows of layers 2..L whose gradient is None or all zero, 0 passes.
"""
from __future__ import annotations

import pytest
import torch

from fidelity.fixtures.attnres_modules import FIRST_LAYER_ROW
from fidelity.gates.compare import Tolerance, assert_bound, assert_close
from fidelity.gates.fixture_values import expected, fixture, param, value
from fidelity.gates.tensors import floating_tensors
from fidelity.oracles.block_attnres import source_sets
from fidelity.subjects.subject import NotRun

MECH = "block_attnres"
FX = "attnres.module_trace"
MODES = ["direct", "two_phase"]
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
PARAMETERS = ("queries", "output_query", "gains", "output_gain")
ALPHA_TOL = Tolerance(eps_multiple=16, floor=1e-30)  # measured 2.24 eps (f32), 1.0 eps (f64); see the docstring
EQUATIONS = ["attnres.eq2", "attnres.eq5", "attnres.eq6", "attnres.alg1"]


def build_module(subject, device, mode, dtype, *, queries: str = "queries", calls: list | None = None):
    """The factory's module on the fixture's case (learned gains), its parameters written from the fixture
    (`queries` from the input named `queries`), and h1. With `calls`, each sublayer appends (layer, its input,
    its output) to it when called."""
    W, c = value(FX, "W", dtype, device), value(FX, "c", dtype, device)

    def sublayer(l):
        def f(h):
            y = h @ W[l].T + c[l]
            if calls is not None:
                calls.append((l + 1, h, y))
            return y
        return f
    subs = [sublayer(l) for l in range(W.shape[0])]
    module = subject.get(MECH)(subs, W.shape[-1], int(fixture(FX)["inputs"]["num_blocks"]),
                               convention=param(FX, "convention"), eps=float(param(FX, "eps")["float64"]),
                               learned_gain=True, mode=mode, dtype=dtype, device=device)
    params = dict(module.named_parameters())
    for name in PARAMETERS:
        if name not in params:
            raise NotRun(f"the module has no parameter {name!r} (learned_gain=True)")
        with torch.no_grad():
            params[name].copy_(value(FX, queries if name == "queries" else name, dtype, device))
    return module, value(FX, "h1", dtype, device)


def _oracle_sets(module) -> list[dict]:
    return source_sets(int(module.L), int(module.num_blocks))


def _traced(subject, device, mode, dtype):
    module, h1 = build_module(subject, device, mode, dtype)
    h_out, trace = module(h1, mode=mode, return_trace=True)
    return module, h1, h_out, trace


@pytest.mark.gate(equations=EQUATIONS + ["attnres.block_limits"], mechanism=MECH)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_trace_entries_are_the_oracles_partition(subject, device, mode, dtype):
    """Entry k: (layer, block, position, sources) = the oracle's k-th (layer, block, i, sources)."""
    module, _, _, trace = _traced(subject, device, mode, dtype)
    want = [(e["layer"], e["block"], e["i"], list(e["sources"])) for e in _oracle_sets(module)]
    got = [(t.get("layer"), t.get("block"), t.get("position"), list(t.get("sources", []))) for t in trace]
    off = [f"entry {k}: {g} (oracle {w})" for k, (g, w) in enumerate(zip(got, want)) if g != w]
    off += [f"{abs(len(got) - len(want))} entries {'extra' if len(got) > len(want) else 'missing'}"] * \
        abs(len(got) - len(want))
    assert_bound(len(off), at_most=0, reading_name="trace_entries_off_partition",
                 what=f"the trace ({mode}, {dtype}) against source_sets(L, N) (layer, block, position, sources): "
                      f"{off[:3]}")


@pytest.mark.gate(equations=EQUATIONS + ["attnres.rmsnorm_gain"], mechanism=MECH)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_trace_alpha_is_the_oracles_depth_mix(subject, device, mode, dtype):
    """Every entry's alpha [sources, positions] against the oracle's, each element relative to itself."""
    module, _, _, trace = _traced(subject, device, mode, dtype)
    sets = _oracle_sets(module)
    if len(trace) != len(sets):
        raise ValueError(f"the trace has {len(trace)} entries, L = {len(sets)} (the partition gate's finding)")
    wants = [expected(FX, f"alpha_layer_{e['layer']}", torch.float64, device) for e in sets]
    shapes = [f"layer {e['layer']}: {tuple(t['alpha'].shape)} (oracle {tuple(w.shape)})"
              for e, t, w in zip(sets, trace, wants) if tuple(t["alpha"].shape) != tuple(w.shape)]
    assert_bound(len(shapes), at_most=0, reading_name="alpha_off_shape",
                 what=f"trace alpha shapes ({mode}, {dtype}): {shapes}")
    got = torch.cat([t["alpha"].detach().reshape(-1) for t in trace])
    want = torch.cat([w.reshape(-1) for w in wants])
    assert_close(got, want, ALPHA_TOL, dtype=dtype,
                 what=f"the trace's alpha of every layer ({mode}, {dtype}) against the oracle's depth_mix")


@pytest.mark.gate(equations=EQUATIONS, mechanism=MECH, gate_class="dtype_device")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_trace_tensors_keep_the_dtype_and_device_of_the_input(subject, device, mode, dtype):
    _, h1, h_out, trace = _traced(subject, device, mode, dtype)
    off = [f"h_out: {h_out.dtype} on {h_out.device}"] if (h_out.dtype, h_out.device) != (h1.dtype, h1.device) else []
    for t in trace:
        for key in ("h", "alpha", "y"):
            for x in floating_tensors(t.get(key)):
                if (x.dtype, x.device) != (h1.dtype, h1.device):
                    off.append(f"layer {t.get('layer')} {key}: {x.dtype} on {x.device}")
    assert_bound(len(off), at_most=0, reading_name="outputs_off_contract",
                 what=f"the trace on a {h1.dtype} input on {h1.device} ({mode}): {off[:4]}")


@pytest.mark.gate(equations=EQUATIONS, mechanism=MECH, gate_class="gradient_reach")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_one_backward_through_the_trace_alpha_reaches_every_query_but_layer_ones(subject, device, mode, dtype):
    module, h1 = build_module(subject, device, mode, dtype)
    queries = dict(module.named_parameters())["queries"]
    queries.grad = None
    _, trace = module(h1, mode=mode, return_trace=True)
    alphas = [t["alpha"] for t in trace if t["alpha"].requires_grad]
    g = torch.Generator().manual_seed(1313)
    if alphas:
        loss = sum((a * torch.randn(a.shape, generator=g, dtype=torch.float64).to(a.device, a.dtype)).sum()
                   for a in alphas)
        loss.backward()
    rows = [r for r in range(queries.shape[0]) if r != FIRST_LAYER_ROW]
    dead = [f"queries[{r}] (layer {r + 1})" for r in rows
            if queries.grad is None or not bool(torch.any(queries.grad[r] != 0))]
    assert_bound(len(dead), at_most=0, reading_name="dead_gradients",
                 what=f"one backward of a seeded cotangent on every trace alpha ({mode}, {dtype}; "
                      f"{len(alphas)} of {len(trace)} alphas in the graph): rows with no gradient: {dead}")


@pytest.mark.gate(equations=["attnres.eq6", "attnres.alg1"], mechanism=MECH)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_trace_h_and_y_are_what_each_sublayer_was_called_with_and_returned(subject, device, mode, dtype):
    """Entry of layer l: h is the tensor sublayer l was called on, y the tensor it returned, bit for bit."""
    calls: list = []
    module, h1 = build_module(subject, device, mode, dtype, calls=calls)
    _, trace = module(h1, mode=mode, return_trace=True)
    seen = {layer: (h, y) for layer, h, y in calls}
    off = []
    for t in trace:
        layer = t.get("layer")
        for key, index in (("h", 0), ("y", 1)):
            got = t.get(key)
            if not isinstance(got, torch.Tensor):
                off.append(f"layer {layer}: no tensor under {key!r} (keys {sorted(t)})")
            elif layer not in seen or not torch.equal(got.detach(), seen[layer][index].detach()):
                off.append(f"layer {layer}: {key} is not what sublayer {layer} was "
                           f"{'called on' if key == 'h' else 'returning'}")
    assert_bound(len(off), at_most=0, reading_name="trace_h_y_off",
                 what=f"the trace's h and y ({mode}, {dtype}) against each sublayer's own input and output: {off[:4]}")
