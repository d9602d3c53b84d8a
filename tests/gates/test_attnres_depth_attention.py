"""Gates: AttnRes depth attention (arXiv:2603.15031, Eqs. 2-4, §3.1, §5) against the oracle.

The subject's `depth_attention` callable is the only thing these gates touch:
h, alpha = depth_attend(sources [L, ..., d], query [d], convention=, eps=, gain=, backward=).

Tolerances (relative, a multiple of the compared dtype's epsilon, written beside each gate).
Where a tensor holds entries that cancel to near zero (gradients, mixtures of signed
values) the floor is the tensor's own scale (its largest |entry|), so such an entry is
judged against the magnitude it was computed at, never against a fixed absolute number.
"""
from __future__ import annotations

import dataclasses

import pytest
import torch

from fidelity.gates import readings
from fidelity.gates.compare import Tolerance, assert_bound, assert_close, assert_predictions_separated, separation
from fidelity.gates.fixture_values import fixture, value
from fidelity.gates.gradient_reach import assert_gradients_reach
from fidelity.gates.jacobians import central_differences_along, jacobian_by_central_differences
from fidelity.gates.optional_inputs import INPUT_CASES, given_input, optional_input
from fidelity.gates.routes import routed
from fidelity.mechanisms.depth_attention import SCORE_CONVENTIONS

MECH = "depth_attention"
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
ROUTES = ["autograd", "manual"]

# One score (a dot product of d <= 4 terms and one rsqrt), one softmax over L <= 4 sources,
# one weighted sum: a handful of roundings, each <= 1 eps relative, which exp amplifies by |s| <= 4.
# Readings on the torch reference: <= 2.0 eps (f32), <= 3.6 eps (f64); 16 eps leaves 4x room.
FORWARD_TOL = Tolerance(eps_multiple=16, floor=1e-30)
# Gradients chain the softmax adjoint, the key-norm derivative and a sum over sources, about
# twice the forward's roundings; judged against the gradient's own scale.
# Readings: <= 0.9 eps (f32), <= 2.4 eps (f64); 32 eps leaves > 10x room.
GRADIENT_TOL = Tolerance(eps_multiple=32)
# The hand-written backward against autograd of the same forward, on random inputs:
# the two differ only in summation order. Readings: <= 0.7 eps (f32), <= 2.2 eps (f64); 32 eps, > 10x room.
ROUTES_TOL = Tolerance(eps_multiple=32)
# Central differences with step h = 1e-6 in float64 carry rounding ~ eps |f| / h ~ 1e-9 of the
# Jacobian's scale and truncation ~ h^2 ~ 1e-12; 1e8 eps = 2.2e-8 of the scale leaves > 80x room
# (readings <= 1.2e6 eps) and sits 7 orders below a dropped factor m (an O(1) relative change:
# reading 0.74 under P8).
FD_STEP = 1e-6
FD_TOL = Tolerance(eps_multiple=1e8)
# The gradient gates run twice: with the gain, and without it (the interface's None, a unit gain), so a
# subject that lacks the gain (Capability lacks=("gain",)) still has its sources' and query's backward held.
GAIN_IDS = [f"{case}_gain" for case in INPUT_CASES]


def _route(subject, backward, *, gradient):
    return routed(subject, MECH, backward, gradient=gradient)


def _eps(fx: str) -> float:
    raw = fixture(fx)["inputs"]["eps"]
    return float(raw["float64"]) if isinstance(raw, dict) else float(raw)


def _expected(fx: str, *path: str, dtype, device, section: str = "expected") -> torch.Tensor:
    node = fixture(fx)[section]
    for key in path:
        node = node[key]
    return torch.tensor(node["float64"], dtype=torch.float64).to(dtype=dtype, device=device)


def _close(actual, expected, tol, *, what, name):
    """assert_close, its reading kept under `name` as well; the failing comparison stays the gate's "reading"."""
    return readings.record(assert_close(actual, expected, tol, what=what), name)


def _scaled(tol: Tolerance, expected: torch.Tensor) -> Tolerance:
    """`tol` with its floor at the expected tensor's own scale (largest |entry|)."""
    return dataclasses.replace(tol, floor=max(float(expected.detach().abs().max()), tol.floor))


def _random_case(dtype, device, *, L=3, batch=(2,), d=4, seed=20260315):
    """Non-constant inputs from a fixed-seed generator: sources, query, gain, eps and cotangents."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape: torch.randn(*shape, generator=g, dtype=torch.float64)  # noqa: E731
    case = {
        "sources": r(L, *batch, d),
        "query": r(d),
        "gain": 1.0 + 0.5 * r(d),
        "dh": r(*batch, d),          # cotangent of h
        "dalpha": r(L, *batch),      # cotangent of alpha (the manual backward takes it too)
    }
    return {k: v.to(dtype=dtype, device=device) for k, v in case.items()}


# ------------------------------------------------------------------ forward, fixtures


@pytest.mark.gate(equations=["attnres.eq2", "attnres.eq3", "attnres.eq4", "attnres.phi", "attnres.score_conventions",
                             "attnres.no_temperature", "attnres.eps", "attnres.fig2", "attnres.table5.fn2"],
                  mechanism=MECH)
@pytest.mark.parametrize("convention", SCORE_CONVENTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
def test_three_score_conventions_give_the_oracle_weights_and_output(subject, device, dtype, backward, convention):
    """Source 000 §3's one-hot case: h0 = e0, h1 = e1, w = 2 e0, eps = 1e-5 inside the root.

    Each convention the formula supports has its own alpha and h (paper: alpha0 = 0.98201238,
    l2: 0.88079603, l2_sqrt_d: 0.73105760); a temperature or a norm swap moves alpha0 by 0.1.
    h = alpha0 e0 + alpha1 e1, so its zero channels are exact zeros.
    """
    fn = _route(subject, backward, gradient=False)
    fx = "attnres.three_conventions"
    sources, query = value(fx, "sources", dtype, device), value(fx, "query", dtype, device)
    h, alpha = fn(sources, query, convention=convention, eps=_eps(fx))
    _close(alpha, _expected(fx, convention, "alpha", dtype=dtype, device=device), FORWARD_TOL,
           what=f"alpha under the {convention!r} convention", name="alpha")
    _close(h, _expected(fx, convention, "h", dtype=dtype, device=device), FORWARD_TOL,
           what=f"h = sum_i alpha_i v_i under the {convention!r} convention", name="h")


@pytest.mark.gate(equations=["attnres.phi", "attnres.no_temperature", "attnres.score_conventions"], mechanism=MECH)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
def test_paper_score_is_ten_tolerances_from_each_predicted_defect(subject, device, dtype, backward):
    """The predicted defects of the one-hot case (a 1/sqrt(d) temperature on the paper score;
    the L2 norm in place of the mean norm) against the right values, in units of the fixture
    gate's tolerance: the fixture must keep them >= 10 tolerances apart (else a weak gate: an
    error, not the subject's fault; reading "weakest_fixture_separation"), and the subject's own
    paper-convention output must stay >= 10 tolerances from every prediction (the reading: the
    weakest one, over alpha and h).
    """
    fn = _route(subject, backward, gradient=False)
    fx = "attnres.three_conventions"
    sources, query = value(fx, "sources", dtype, device), value(fx, "query", dtype, device)
    h, alpha = fn(sources, query, convention="paper", eps=_eps(fx))
    got = {"alpha": alpha, "h": h}
    fixture_seps, subject_seps = {}, {}
    for name, pred in fixture(fx)["predictions"].items():
        if pred["field"] != "paper":
            raise ValueError(f"fixture {fx}: prediction {name} is about {pred['field']!r}, not the paper convention")
        for field, tensor in got.items():
            right = _expected(fx, "paper", field, dtype=torch.float64, device="cpu").reshape(-1).tolist()
            wrong = torch.tensor(pred["values"][field]["float64"], dtype=torch.float64).reshape(-1).tolist()
            mine = tensor.detach().to(torch.float64).cpu().reshape(-1).tolist()
            # a defect is caught when ANY entry leaves the tolerance: the separation is the largest entry's
            fixture_seps[f"{name}.{field}"] = max(separation(e, w, FORWARD_TOL, dtype) for e, w in zip(right, wrong))
            subject_seps[f"{name}.{field}"] = max(separation(w, a, FORWARD_TOL, dtype) for w, a in zip(wrong, mine))
    assert_predictions_separated(fixture_seps, subject_seps, output="paper-convention output")


@pytest.mark.gate(equations=["attnres.eq2", "attnres.eq4"], mechanism=MECH)
@pytest.mark.parametrize("convention", SCORE_CONVENTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
def test_zero_pseudo_query_gives_the_equal_weight_average(subject, device, dtype, backward, convention):
    """Eqs. 2 and 4 at w_l = 0: every score is 0, so alpha_i = 1/3 and h is the plain mean of the
    three sources, whatever the convention. This holds the function at a zero query the gate
    supplies, NOT the init (§5, attnres.init_zero_query): a zero the gate writes says nothing about
    the zero a module starts from (issue 14). The init is held through the modules that own a
    pseudo-query: test_attnres_module_init.py and test_attnres_block.py (block_attnres), the loop
    model's gates; depth attention is a function and owns none.
    The sources are laid out at two positions [L, 2, d] (the fixture's and their negation):
    each position has its own softmax over the L = 3 sources, never over positions.
    """
    fn = _route(subject, backward, gradient=False)
    fx = "attnres.zero_query"
    base = value(fx, "sources", dtype, device)
    sources = torch.stack([base, -base], dim=1)  # [3, 2, 4]
    query = value(fx, "query", dtype, device)
    h, alpha = fn(sources, query, convention=convention, eps=_eps(fx))
    a = _expected(fx, convention, "alpha", dtype=dtype, device=device)
    hh = _expected(fx, convention, "h", dtype=dtype, device=device)
    _close(alpha, torch.stack([a, a], dim=1), FORWARD_TOL, what="alpha at w = 0 (uniform, 1/3 per source)", name="alpha")
    _close(h, torch.stack([hh, -hh], dim=0), FORWARD_TOL, what="h at w = 0 (the mean of the sources)", name="h")


@pytest.mark.gate(equations=["attnres.eq2", "attnres.eq4", "attnres.fig2", "attnres.score_conventions"], mechanism=MECH)
@pytest.mark.parametrize("convention", SCORE_CONVENTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
def test_each_position_has_one_softmax_over_its_sources(subject, device, dtype, backward, convention):
    """Fig. 2: one softmax over the source axis (dim 0), independently at every position.
    The general case's 4 sources are laid out at 2 x 3 positions [L, 2, 3, d], each position
    holding them in a different order: alpha must follow its sources, h must not move.
    (A softmax over any other axis is invisible on an un-batched [L, d] input.) The gain is
    incidental here: a subject without one is called without it, against the oracle's unit-gain values.
    """
    fn = _route(subject, backward, gradient=False)
    fx = "attnres.general"
    base = value(fx, "sources", dtype, device)          # [4, 3]
    L = base.shape[0]
    perms = [[0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2], [2, 0, 3, 1], [1, 0, 3, 2], [3, 0, 1, 2]]
    sources = torch.stack([base[p] for p in perms], dim=1).reshape(L, 2, 3, -1)
    gain = optional_input(subject, MECH, "gain", value(fx, "gain", dtype, device))
    h, alpha = fn(sources, value(fx, "query", dtype, device), convention=convention, eps=_eps(fx), gain=gain)
    case = (convention,) if gain is not None else ("unit_gain", convention)
    a = _expected(fx, *case, "alpha", dtype=dtype, device=device)
    hh = _expected(fx, *case, "h", dtype=dtype, device=device)
    want_alpha = torch.stack([a[p] for p in perms], dim=1).reshape(L, 2, 3)
    _close(alpha, want_alpha, FORWARD_TOL, what="alpha per position (a softmax over the sources only)", name="alpha")
    _close(h, hh.expand(2, 3, -1), _scaled(FORWARD_TOL, hh), what="h per position (order of sources is immaterial)",
           name="h")


# ------------------------------------------------------------------ gradients


def _general_case(subject, backward, convention, dtype, device, *, gradient, gain_case):
    """The general case with its gain ("with": attnres.rmsnorm_gain) or without (None, the oracle's
    unit_gain section); returns (fixture, sources, query, h, alpha, the expected section's path)."""
    fn = _route(subject, backward, gradient=gradient)
    fx = "attnres.general"
    sources = value(fx, "sources", dtype, device).requires_grad_(True)
    query = value(fx, "query", dtype, device).requires_grad_(True)
    gain = given_input(subject, MECH, "gain", value(fx, "gain", dtype, device), gain_case)
    h, alpha = fn(sources, query, convention=convention, eps=_eps(fx), gain=gain)
    return fx, sources, query, h, alpha, (convention,) if gain is not None else ("unit_gain", convention)


@pytest.mark.gate(equations=["attnres.eq1", "attnres.eq2", "attnres.eq3", "attnres.eq4", "attnres.phi",
                             "attnres.score_conventions", "attnres.rmsnorm_gain", "attnres.table5.fn2"],
                  mechanism=MECH)
@pytest.mark.parametrize("gain_case", INPUT_CASES, ids=GAIN_IDS)
@pytest.mark.parametrize("convention", SCORE_CONVENTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
def test_general_case_outputs_match_the_closed_form(subject, device, dtype, backward, convention, gain_case):
    """d = 3, L = 4, q = [1/2, -1, 1/4], gain g = [1, 2, 1/2] (or no gain: g = 1), eps = 1e-6: alpha and h
    against the oracle, for every convention and both routes (the forward of the case whose gradients
    test_general_case_gradients_match_the_oracle holds: a forward that fails hides no gradient finding).
    """
    fx, _, _, h, alpha, case = _general_case(subject, backward, convention, dtype, device, gradient=False,
                                             gain_case=gain_case)
    want_alpha = _expected(fx, *case, "alpha", dtype=dtype, device=device)
    want_h = _expected(fx, *case, "h", dtype=dtype, device=device)
    _close(alpha, want_alpha, FORWARD_TOL, what=f"alpha ({convention})", name="alpha")
    _close(h, want_h, _scaled(FORWARD_TOL, want_h), what=f"h ({convention})", name="h")


def _grads(loss, leaves):
    """d loss / d leaves; a leaf the graph never reached (a detached input) gets zeros, which the
    comparison then shows as the finding it is, not as autograd's "not used in the graph" error."""
    grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    return tuple(torch.zeros_like(x) if g is None else g for g, x in zip(grads, leaves))


@pytest.mark.gate(equations=["attnres.eq1", "attnres.eq2", "attnres.eq3", "attnres.eq4", "attnres.phi",
                             "attnres.score_conventions", "attnres.rmsnorm_gain", "attnres.table5.fn2"],
                  mechanism=MECH, gate_class="gradients_from_oracle")
@pytest.mark.parametrize("gain_case", INPUT_CASES, ids=GAIN_IDS)
@pytest.mark.parametrize("convention", SCORE_CONVENTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
def test_general_case_gradients_match_the_oracle(subject, device, dtype, backward, convention, gain_case):
    """The general case with loss = c . h: dloss/dv and dloss/dq through the subject's backward against
    the oracle's closed-form derivatives (fidelity.oracles.depth_attention.gradients, mpmath at 60 digits,
    checked against differences of the exact forward in tests/oracles), for every convention and both
    routes, with the gain and without it (g = 1: a subject that lacks the gain is held here too).
    dloss/dv carries the norm's factor m (1/d under the paper's mean norm, 1 under L2), so a
    backward that drops it is red under "paper" only.
    """
    fx, sources, query, h, _, case = _general_case(subject, backward, convention, dtype, device, gradient=True,
                                                   gain_case=gain_case)
    c = value(fx, "loss_weights", dtype, device)
    want = {k: _expected(fx, *case, k, dtype=dtype, device=device) for k in ("dloss_dsource", "dloss_dquery")}
    dsources, dquery = _grads((h * c).sum(), (sources, query))
    _close(dsources, want["dloss_dsource"], _scaled(GRADIENT_TOL, want["dloss_dsource"]),
           what=f"dloss/dv via the {backward} backward ({convention})", name="dloss_dv")
    _close(dquery, want["dloss_dquery"], _scaled(GRADIENT_TOL, want["dloss_dquery"]),
           what=f"dloss/dq via the {backward} backward ({convention})", name="dloss_dq")


@pytest.mark.gate(equations=["attnres.phi", "attnres.eq2", "attnres.eq4", "attnres.score_conventions",
                             "attnres.rmsnorm_gain"], mechanism=MECH)
@pytest.mark.parametrize("gain_case", INPUT_CASES, ids=GAIN_IDS)
@pytest.mark.parametrize("convention", SCORE_CONVENTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_manual_backward_equals_autograd_of_the_same_forward(subject, device, dtype, convention, gain_case):
    """Random non-constant sources [3, 2, 4], query, gain, and cotangents on both h and alpha
    (a fixed-seed generator): the hand-written backward's dv, dq, dg against torch autograd
    of the same forward, under every convention (record 000 §3: a missing m hides under L2);
    dv and dq alone in the without_gain instance (gain None).
    """
    for route in ("autograd", "manual"):
        if not subject.supports(MECH, route):
            pytest.skip(f"subject {subject.name} has no {route!r} backward for {MECH}: nothing to compare")
    fn = subject.get(MECH)
    case = _random_case(dtype, device)
    names = ("sources", "query") + (("gain",) if given_input(subject, MECH, "gain", True, gain_case) else ())
    grads = {}
    for route in ("autograd", "manual"):
        leaves = [case[k].clone().requires_grad_(True) for k in names]
        h, alpha = fn(leaves[0], leaves[1], convention=convention, eps=1e-6, gain=(leaves[2:] or [None])[0],
                      backward=route)
        loss = (h * case["dh"]).sum() + (alpha * case["dalpha"]).sum()
        grads[route] = _grads(loss, leaves)
    for name, manual, auto in zip(("dv", "dq", "dg"), grads["manual"], grads["autograd"]):
        _close(manual, auto, _scaled(ROUTES_TOL, auto), what=f"manual {name} against autograd ({convention})", name=name)


def _outputs(fn, convention):
    """(h, alpha) as the float64 gradient checks call the subject: this convention, eps 1e-6."""
    def g(sources, query, gain=None):
        return fn(sources, query, convention=convention, eps=1e-6, gain=gain)
    return g


def _flat_outputs(fn, convention):
    outputs = _outputs(fn, convention)

    def f(*inputs):
        h, alpha = outputs(*inputs)
        return torch.cat([h.reshape(-1), alpha.reshape(-1)])
    return f


def _central_difference_jacobian(outputs, inputs, step):
    """[outputs, inputs] by central differences, in the inputs' dtype (float64 here). Every source column
    comes from ONE call: the 2 N shifted copies of the sources side by side on the positions axis, each
    position's output being a function of its own sources (Eq. 2-4); the query's and the gain's columns
    take a call each (one vector shared by every position: copies of it cannot be stacked). Under the
    Triton interpreter a call costs the same for 2 positions as for 100."""
    sources = inputs[0].detach()
    shared = [x.detach().clone() for x in inputs[1:]]  # the query (and the gain): shifted in place, entry by entry
    count = sources.shape[0]

    def forward(s=sources):
        return outputs(s, *shared)

    def of_sources(copies):  # [K, L, *batch, d] -> [K, outputs], in _flat_outputs' order
        k = copies.shape[0]
        h, alpha = forward(copies.movedim(0, 1).reshape(count, -1, copies.shape[-1]))
        return torch.cat([h.reshape(k, -1), alpha.reshape(count, k, -1).movedim(1, 0).reshape(k, -1)], dim=1)

    columns = [jacobian_by_central_differences(of_sources, sources, step).reshape(-1, sources.numel())]
    for x in shared:
        basis = torch.eye(x.numel(), dtype=x.dtype, device=x.device)
        columns += [central_differences_along(forward, x, e.reshape(x.shape), step)[:, None] for e in basis]
    return torch.cat(columns, dim=1)


@pytest.mark.gate(equations=["attnres.phi", "attnres.eq2", "attnres.eq4", "attnres.score_conventions",
                             "attnres.rmsnorm_gain"], mechanism=MECH, gate_class="gradients_finite_differences")
@pytest.mark.parametrize("gain_case", INPUT_CASES, ids=GAIN_IDS)
@pytest.mark.parametrize("convention", SCORE_CONVENTIONS)
@pytest.mark.parametrize("backward", ROUTES)
def test_gradients_pass_gradcheck_in_float64_for_every_convention(subject, device, backward, convention, gain_case):
    """float64, random non-constant inputs (sources [3, 2, 4], query, and the gain in the with_gain
    instance, differentiated too; none in the without_gain one): the Jacobian of (h, alpha) through the
    chosen backward against central differences (the reading, relative to the Jacobian's scale), then
    torch.autograd.gradcheck's own verdict (fast mode) on the same inputs.
    """
    fn = _route(subject, backward, gradient=True)
    case = _random_case(torch.float64, device)
    gain = given_input(subject, MECH, "gain", case["gain"], gain_case)
    inputs = [case["sources"], case["query"]] + ([gain] if gain is not None else [])
    f = _flat_outputs(fn, convention)
    analytic = torch.cat([j.reshape(j.shape[0], -1) for j in
                          torch.autograd.functional.jacobian(f, tuple(x.clone() for x in inputs))], dim=1)
    numeric = _central_difference_jacobian(_outputs(fn, convention), inputs, FD_STEP)
    assert_close(analytic, numeric, _scaled(FD_TOL, numeric),
                 what=f"Jacobian of (h, alpha) via the {backward} backward against central differences ({convention})")
    # our comparison above is the per-element check of gradcheck's slow mode; its fast mode (a
    # projection v^T J u by torch's own code) is the independent second opinion, at a tenth of the calls
    ok = torch.autograd.gradcheck(f, tuple(x.clone().requires_grad_(True) for x in inputs), raise_exception=False,
                                  fast_mode=True)
    readings.record(1.0 if ok else 0.0, "gradcheck_passed")
    assert_bound(0.0 if ok else 1.0, at_most=0.0, reading_name="gradcheck_failed",
                 what=f"torch.autograd.gradcheck verdict (1 = failed) for the {backward} backward ({convention})")


@pytest.mark.gate(equations=["attnres.eq2", "attnres.eq4", "attnres.rmsnorm_gain", "attnres.phi"], mechanism=MECH,
                  gate_class="gradient_reach")
@pytest.mark.parametrize("gain_case", INPUT_CASES, ids=GAIN_IDS)
@pytest.mark.parametrize("convention", SCORE_CONVENTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("backward", ROUTES)
def test_sources_query_and_gain_all_receive_a_gradient(subject, device, dtype, backward, convention, gain_case):
    """Random non-constant sources [3, 2, 4], query and gain (none of them zero, so no gradient is
    legitimately zero): one backward of a seeded cotangent on h and alpha reaches each input with a
    non-zero gradient (a detached gain, query or key path reads exactly zero): all three in the with_gain
    instance, sources and query in the without_gain one (gain None). Reading: the number that get none.
    """
    fn = _route(subject, backward, gradient=True)
    case = _random_case(dtype, device)
    names = ("sources", "query") + (("gain",) if given_input(subject, MECH, "gain", True, gain_case) else ())
    leaves = {k: case[k].clone().requires_grad_(True) for k in names}
    assert_gradients_reach(lambda: fn(leaves["sources"], leaves["query"], convention=convention, eps=1e-6,
                                      gain=leaves.get("gain")),
                           leaves, what=f"depth attention's inputs via the {backward} backward ({convention}, "
                                        f"{gain_case} gain)")
