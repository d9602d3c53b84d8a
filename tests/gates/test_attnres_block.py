"""Gates: Block AttnRes (arXiv:2603.15031, Eqs. 5-6, Algorithm 1, §5) and the defects D4-D8.

The subject's `block_attnres` factory is the only thing these gates touch:
module = BlockAttnRes(sublayers, d, num_blocks, convention=, mode=, dtype=, device=),
module(h1, mode="direct" | "two_phase") -> h_out, with the documented parameters
`queries` [L, d] and `output_query` [d] (the pseudo-queries).

How the source set is read without trusting the subject's bookkeeping: the gates pass
their own sublayers, which record the input h_l they receive and return a value the gate
chose. With one-hot values (h1 = e_0, f_l = e_l) and the pseudo-queries at zero, every
score is 0 and h_l = (1/K) sum over the K sources of their compositions: the coefficient
of e_t in h_l is (number of sources containing t) / K. So h_l spells out, exactly, which
sources layer l attended, how many there were, and what each one summed
(fixture attnres.block_sources gives the sets for every layout, including L mod N != 0).

Tolerances (relative, a multiple of the compared dtype's epsilon, beside each gate).
"""
from __future__ import annotations

import dataclasses

import pytest
import torch

from fidelity.gates import readings
from fidelity.gates.compare import Tolerance, assert_close
from fidelity.gates.fixture_values import fixture
from fidelity.mechanisms.depth_attention import SCORE_CONVENTIONS
from fidelity.subjects.subject import NotRun

MECH = "block_attnres"
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
MODES = ["direct", "two_phase"]
LAYOUTS_FX = "attnres.block_sources"

# At w = 0 each weight is softmax(0) = 1/K (one rounding) and h_l is a sum of <= 4 exact
# one-hot rows times it: entries are c/K to within ~2 eps, zeros exact (0 x alpha).
# Readings on the torch reference: 0 eps (f32 and f64, both modes); 8 eps allows a kernel's own rounding.
SOURCE_SET_TOL = Tolerance(eps_multiple=8, floor=1e-30)
# Two-phase against direct on the same module: phase 1 + merge reorders the softmax's sums and
# splits its exponentials (e^{m1-m} l1 + e^{m2-m} l2); the difference then travels through up to
# 6 tanh sublayers. Judged against h's scale. Readings: <= 3.0 eps (f32), <= 2.0 eps (f64); 32 eps, 10x room.
ALG1_TOL = Tolerance(eps_multiple=32)
# Fixture attnres.alg1_merge: scores up to |s| = 4.9 and one merge; exp amplifies the score's
# rounding by |s|. Readings: <= 1.1 eps (f32 and f64, both modes); 16 eps leaves > 10x room.
MERGE_FIXTURE_TOL = Tolerance(eps_multiple=16)
# The init gate averages random values: a sum of <= 4 terms times 1/K, against h's scale.
# Readings: <= 0.6 eps; 8 eps. (The parameters themselves must be exactly zero: tolerance 0.)
INIT_TOL = Tolerance(eps_multiple=8)


def _scaled(tol: Tolerance, expected: torch.Tensor) -> Tolerance:
    """`tol` with its floor at the expected tensor's own scale (largest |entry|)."""
    return dataclasses.replace(tol, floor=max(float(expected.detach().abs().max()), tol.floor))


def _close(actual, expected, tol, *, what, name="reading"):
    """assert_close, its reading kept under `name` as well; the failing comparison stays the gate's "reading"."""
    return readings.record(assert_close(actual, expected, tol, what=what), name)


class _Sublayer:
    """f_l: records every input h_l it receives, returns `fn(h)`."""

    def __init__(self, fn):
        self.fn, self.inputs = fn, []

    def __call__(self, h):
        self.inputs.append(h.detach())
        return self.fn(h)

    @property
    def h(self) -> torch.Tensor:
        if not self.inputs:
            raise RuntimeError("a sublayer was never called: the subject skipped it")
        return self.inputs[-1]


def _constant(out: torch.Tensor) -> _Sublayer:
    return _Sublayer(lambda h: out.expand_as(h).clone())


def _set_pseudo_queries(module, queries: torch.Tensor | None, output_query: torch.Tensor | None = None) -> None:
    """Write the documented pseudo-query parameters (None = zero)."""
    params = dict(module.named_parameters())
    for name, new in (("queries", queries), ("output_query", output_query)):
        if name not in params:
            raise NotRun(f"the module has no parameter {name!r} (the interface's pseudo-queries)")
        with torch.no_grad():
            p = params[name]
            p.copy_(torch.zeros_like(p) if new is None else new.to(dtype=p.dtype, device=p.device))


def _layout_entries(layout: str):
    """(L, N, the fixture's per-layer entries) of a layout id "L7_N3"."""
    L, N = (int(x) for x in layout[1:].split("_N"))
    return L, N, fixture(LAYOUTS_FX)["expected"]["layers"]["exact"][layout]


LAYOUTS = [f"L{L}_N{N}" for L, N in fixture(LAYOUTS_FX)["inputs"]["layouts"]]
"""One gate instance per layout of attnres.block_sources (one case, one instance: a layout that fails
or is refused hides no other)."""


def _layouts_where(pick) -> list[str]:
    """The layouts in which `pick` selects at least one layer (a gate about block n >= 2 has nothing
    to check in a one-block layout, so that layout is no instance of it)."""
    out = []
    for layout in LAYOUTS:
        L, _, entries = _layout_entries(layout)
        eye = torch.eye(L + 1, dtype=torch.float64)
        basis = {"h1": eye[0], **{f"f{l}": eye[l] for l in range(1, L + 1)}}
        if any(pick(e, basis) is not None for e in entries):
            out.append(layout)
    return out


def _one_hot_run(subject, L, N, mode, dtype, device):
    """Run a fresh L-sublayer, N-block stack on one-hot values with zero pseudo-queries.

    Returns (h [L, d] as received by the sublayers, basis: term -> one-hot row)."""
    d = L + 1
    eye = torch.eye(d, dtype=dtype, device=device)
    basis = {"h1": eye[0], **{f"f{l}": eye[l] for l in range(1, L + 1)}}
    subs = [_constant(basis[f"f{l}"]) for l in range(1, L + 1)]
    module = subject.get(MECH)(subs, d, N, convention="paper", mode=mode, dtype=dtype, device=device)
    _set_pseudo_queries(module, None)
    module(basis["h1"], mode=mode)
    return torch.stack([s.h for s in subs]), basis


def _mean_of_sources(entry, basis) -> torch.Tensor:
    """h_l at w = 0 per Eq. 6: the mean over the layer's sources of what each one sums."""
    rows = [sum(basis[t] for t in entry["composition"][name]) for name in entry["sources"]]
    return torch.stack(rows).sum(dim=0) / len(rows)


def _gate_on_layout(subject, layout, mode, dtype, device, pick, what):
    """On one layout: compare h_l of the layers `pick(entry)` selects with `pick`'s expectation."""
    L, N, entries = _layout_entries(layout)
    got, basis = _one_hot_run(subject, L, N, mode, dtype, device)
    rows_got, rows_want, layers = [], [], []
    for entry in entries:
        chosen = pick(entry, basis)
        if chosen is None:
            continue
        index, want = chosen
        layers.append(entry["layer"])
        rows_got.append(got[entry["layer"] - 1][index].reshape(-1))
        rows_want.append(want.reshape(-1))
    if not rows_got:
        raise ValueError(f"layout {layout}: the gate selects no layer (it should not be an instance)")
    g, w = torch.cat(rows_got), torch.cat(rows_want)  # the selected entries of every selected layer, in order
    assert_close(g, w, SOURCE_SET_TOL, what=f"{what}, layout L = {L}, N = {N}, layers {layers} in order ({mode})")


# ------------------------------------------------------------------ Eqs. 5-6: which sources


def _pick_every_layer(entry, basis):
    return slice(None), _mean_of_sources(entry, basis)


def _pick_embedding_weight(entry, basis):
    return 0, torch.ones((), dtype=basis["h1"].dtype, device=basis["h1"].device) / len(entry["sources"])


def _pick_first_of_a_later_block(entry, basis):
    if entry["i"] != 1 or entry["block"] < 2:
        return None
    return slice(None), _mean_of_sources(entry, basis)


def _pick_second_of_the_first_block(entry, basis):
    if entry["block"] != 1 or entry["i"] != 2:
        return None
    return slice(None), _mean_of_sources(entry, basis)


def _pick_completed_block_terms(entry, basis):
    blocks = [name for name in entry["sources"] if name != "b0" and "^" not in name]
    if not blocks:
        return None
    terms = [int(t[1:]) for name in blocks for t in entry["composition"][name]]
    one = torch.ones(len(terms), dtype=basis["h1"].dtype, device=basis["h1"].device)
    return terms, one / len(entry["sources"])


@pytest.mark.gate(equations=["attnres.eq5", "attnres.eq6", "attnres.eq1", "attnres.layer_def", "attnres.block_limits",
                             "attnres.fig2_forward", "attnres.block_defects"], mechanism=MECH)
@pytest.mark.parametrize("layout", _layouts_where(_pick_every_layer))
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_each_sublayer_attends_exactly_the_eq6_sources(subject, device, dtype, mode, layout):
    """Eq. 6 for every layout of the fixture ((4,4) Full, (4,1), (6,2), (7,3), (8,3), (5,2)), one
    instance each: layer i of block n attends [b_0 .. b_{n-1}] (+ b_n^{i-1} when i >= 2), b_0 = h_1
    alone, b_n = the sum of block n's outputs. One-hot values at w = 0 make h_l spell out the set
    (composition and count) exactly. Any of D5-D8 changes some h_l.
    """
    _gate_on_layout(subject, layout, mode, dtype, device, _pick_every_layer,
                    "h_l = the mean of exactly the Eq. 6 sources")


@pytest.mark.gate(equations=["attnres.eq6", "attnres.layer_def", "attnres.block_defects"], mechanism=MECH)
@pytest.mark.parametrize("layout", _layouts_where(_pick_embedding_weight))
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_embedding_is_a_permanent_source_of_its_own(subject, device, dtype, mode, layout):
    """Not D5: b_0 = h_1 is one source among the K of every layer, never summed into block 1,
    so at w = 0 the weight on h_1 in every h_l is exactly 1/K (K from Eq. 6).
    """
    _gate_on_layout(subject, layout, mode, dtype, device, _pick_embedding_weight, "the weight on h_1 (b_0) in h_l")


@pytest.mark.gate(equations=["attnres.eq6", "attnres.block_defects"], mechanism=MECH)
@pytest.mark.parametrize("layout", _layouts_where(_pick_first_of_a_later_block))
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_first_sublayer_of_a_block_attends_every_completed_block(subject, device, dtype, mode, layout):
    """Not D6: layer i = 1 of block n >= 2 attends [b_0 .. b_{n-1}] (a mixture), never returns
    the stored previous block b_{n-1} unchanged. (Layouts with one block have no such layer.)
    """
    _gate_on_layout(subject, layout, mode, dtype, device, _pick_first_of_a_later_block,
                    "h_l of a block's first sublayer")


@pytest.mark.gate(equations=["attnres.eq6", "attnres.eq2", "attnres.block_defects"], mechanism=MECH)
@pytest.mark.parametrize("layout", _layouts_where(_pick_second_of_the_first_block))
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_second_sublayer_of_the_first_block_is_a_softmax_mixture(subject, device, dtype, mode, layout):
    """Not D7: layer 2 of block 1 attends [b_0, b_1^1] with weights summing to one, so at w = 0
    h_2 = (h_1 + f_1) / 2, not the un-normalised sum h_1 + f_1. (Full AttnRes has no such layer.)
    """
    _gate_on_layout(subject, layout, mode, dtype, device, _pick_second_of_the_first_block,
                    "h_2, the second sublayer of block 1")


@pytest.mark.gate(equations=["attnres.eq5", "attnres.eq6", "attnres.block_defects"], mechanism=MECH)
@pytest.mark.parametrize("layout", _layouts_where(_pick_completed_block_terms))
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_a_completed_block_is_one_source_merged_once(subject, device, dtype, mode, layout):
    """Not D8: every completed block b_m is ONE of the K distinct sources of each later layer,
    so at w = 0 the weight on each of its terms f_j is exactly 1/K (a block merged twice
    would weigh 2/(K+1): the sum of exponentials must count each distinct source once).
    """
    _gate_on_layout(subject, layout, mode, dtype, device, _pick_completed_block_terms,
                    "the weight on each completed block's terms in h_l")


# ------------------------------------------------------------------ Algorithm 1


def _tanh_sublayer(g: torch.Generator, d: int, dtype, device) -> _Sublayer:
    W = (torch.randn(d, d, generator=g, dtype=torch.float64) / d ** 0.5).to(dtype=dtype, device=device)
    b = (0.5 * torch.randn(d, generator=g, dtype=torch.float64)).to(dtype=dtype, device=device)
    return _Sublayer(lambda h: torch.tanh(h @ W.T + b))


@pytest.mark.gate(equations=["attnres.alg1", "attnres.eq6", "attnres.table5.fn3", "attnres.table5.block_row",
                             "attnres.score_conventions", "attnres.block_defects"], mechanism=MECH)
@pytest.mark.parametrize("convention", SCORE_CONVENTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_two_phase_equals_direct_at_every_step_of_every_block(subject, device, dtype, convention):
    """Alg. 1 is exact: on ONE module (shared weights), L = 7 sublayers in N = 3 blocks of
    3, 3, 1, random non-zero pseudo-queries and tanh sublayers, h1 [2, 3, d]: h_l from the
    two-phase computation equals the direct softmax at EVERY layer, so the merge is exercised
    at i = 2 and 3 of two blocks, under every convention (not D4: phase 2 must score with the
    same convention, scale included, as phase 1).
    """
    L, N, d = 7, 3, 8
    g = torch.Generator().manual_seed(20260316)
    subs = [_tanh_sublayer(g, d, dtype, device) for _ in range(L)]
    module = subject.get(MECH)(subs, d, N, convention=convention, dtype=dtype, device=device)
    _set_pseudo_queries(module, torch.randn(L, d, generator=g, dtype=torch.float64),
                        torch.randn(d, generator=g, dtype=torch.float64))
    h1 = torch.randn(2, 3, d, generator=g, dtype=torch.float64).to(dtype=dtype, device=device)
    runs = {}
    for mode in ("direct", "two_phase"):
        for s in subs:
            s.inputs.clear()
        out = module(h1, mode=mode)
        runs[mode] = torch.stack([s.h for s in subs] + [out.detach()])  # [L + 1, 2, 3, d]: h_1..h_L, h_out
    want = runs["direct"]
    _close(runs["two_phase"], want, _scaled(ALG1_TOL, want),
           what=f"two-phase h_l against direct h_l at every layer (index 0 = layer 1; last = output) ({convention})")


@pytest.mark.gate(equations=["attnres.alg1", "attnres.eq5", "attnres.eq6", "attnres.phi"], mechanism=MECH)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_online_softmax_merge_matches_the_oracle_at_every_step(subject, device, dtype, mode):
    """Fixture attnres.alg1_merge: block 3 over b_0, b_1, b_2 with given layer outputs and
    queries; h at step 0 (inter-block only), step 1 (the intra-block source wins the max)
    and step 2 (the inter-block sources win). The stack is L = 9 sublayers in 3 blocks whose
    sublayers return the fixture's values: f_1 = b_1, f_4 = b_2, f_7, f_8 as given, others 0.
    """
    fx = fixture("attnres.alg1_merge")
    t = lambda x: torch.tensor(x, dtype=torch.float64).to(dtype=dtype, device=device)  # noqa: E731
    inter, outs, queries = (t(fx["inputs"][k]) for k in ("inter_sources", "layer_outputs", "queries"))
    eps = float(fx["inputs"]["eps"]["float64"])
    d = inter.shape[-1]
    zero = torch.zeros(d, dtype=dtype, device=device)
    values = [inter[1], zero, zero, inter[2], zero, zero, outs[0], outs[1], zero]
    subs = [_constant(v) for v in values]
    module = subject.get(MECH)(subs, d, 3, convention=fx["params"]["convention"], eps=eps, dtype=dtype, device=device)
    q = torch.zeros(9, d, dtype=torch.float64)
    q[6:] = torch.tensor(fx["inputs"]["queries"], dtype=torch.float64)
    _set_pseudo_queries(module, q)
    module(inter[0], mode=mode)
    got = torch.stack([subs[6].h, subs[7].h, subs[8].h])
    want = t([fx["expected"][f"step{i}"]["h"]["float64"] for i in range(3)])
    _close(got, want, _scaled(MERGE_FIXTURE_TOL, want), what=f"h at steps 0, 1, 2 of block 3 ({mode})")


# ------------------------------------------------------------------ §5: initialisation


@pytest.mark.gate(equations=["attnres.init_zero_query", "attnres.eq6"], mechanism=MECH,
                  gate_class="init_through_module")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_pseudo_queries_start_at_zero_so_each_sublayer_averages_its_sources(subject, device, dtype, mode):
    """§5 "all pseudo-query vectors must be initialized to zero": a stack freshly built by the
    factory (L = 7, N = 3; random h_1 and random constant sublayer outputs), its parameters as the
    factory made them (the gate writes none), gives every h_l as the equal-weight mean of its Eq. 6
    sources and h_out as the mean of [b_0 .. b_N] (output_query at zero). The parameters' own values
    are held by test_attnres_module_init.py, one instance per parameter.
    """
    L, N, d = 7, 3, 6
    g = torch.Generator().manual_seed(20260317)
    rand = lambda: torch.randn(d, generator=g, dtype=torch.float64).to(dtype=dtype, device=device)  # noqa: E731
    basis = {"h1": rand(), **{f"f{l}": rand() for l in range(1, L + 1)}}
    subs = [_constant(basis[f"f{l}"]) for l in range(1, L + 1)]
    module = subject.get(MECH)(subs, d, N, convention="paper", mode=mode, dtype=dtype, device=device)
    out = module(basis["h1"], mode=mode)
    fx = fixture(LAYOUTS_FX)["expected"]
    entries = fx["layers"]["exact"][f"L{L}_N{N}"]
    blocks = [basis["h1"]] + [sum(basis[f"f{j}"] for j in members) for members in fx["blocks"]["exact"][f"L{L}_N{N}"]]
    got = torch.stack([s.h for s in subs] + [out.detach()])
    want = torch.stack([_mean_of_sources(e, basis) for e in entries] + [torch.stack(blocks).mean(dim=0)])
    _close(got, want, _scaled(INIT_TOL, want),
           what=f"h_1 .. h_L and h_out of a fresh stack = the means of their sources (last = output) ({mode})",
           name="h")
