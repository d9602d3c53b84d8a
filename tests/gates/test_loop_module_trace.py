"""Gate: the loop model's trace (forward(tokens, return_trace=True)) says what each iteration computed.

The interface (fidelity.mechanisms.loop_model, forward's return_trace) names each record's entries: k, h_ctx,
y (rezero, attnres), alpha (attnres), coefficients (mhc), state, hidden. Issue 50: mutmut renamed or emptied
`hidden`, `alpha` and `coefficients` and every gate stayed green: the gradient gates read a record's alpha and
coefficients only `if key in record`, and nothing read hidden. Each entry is held here by what it must equal,
from the other entries of the same record and the model's documented parameters, on every arm graph:

- hidden: logits_k = hidden @ readout_w^T + readout_b (the interface's readout);
- alpha (attnres): the state leaving the iteration is sum_i alpha_i v_i over v = (h_0 = embed[tokens], y_0 .. y_k)
  (attnres.eq2/eq3 as the loop places them), alpha [k + 2, ..];
- coefficients (mhc, the paper layout): the state leaving the iteration is Eq. 3 of them at x_l = h_ctx,
  H_res x_l + H_post^T body(H_pre x_l), with the model's own body. The sliced layout reads the body at full
  width through its own readout, which the interface leaves to the subject: there only presence is held.

The model is built as users build it (loop_model_point.build, float32, its default sizes) and its parameters
are left as drawn; the mHC graphs with dynamic weights drawn at std 0.5, so the coefficients depend on the state. Tolerance: 64 eps(float32) relative, floor 1: each identity recomputes a few sums and
products of O(1) values in another order than the subject (a readout of d terms, a mixture of k + 2 sources,
Eq. 3's n-term mixes); a renamed or missing entry is counted before any comparison.
"""
import pytest
import torch

from fidelity.gates import readings
from fidelity.gates.compare import Tolerance, assert_bound, assert_close
from loop_model_point import GRAPHS, MECH, build, tokens

TOL = Tolerance(eps_multiple=64, floor=1.0)
# mHC's dynamic weights drawn non-zero: at the default 0 every iteration's coefficients are the same whatever the
# state, and coefficients of the wrong state would read right
DYNAMIC = {"mhc_paper": dict(mhc_dynamic_init_std=0.5), "mhc_sliced": dict(mhc_dynamic_init_std=0.5)}
ENTRIES = {"rezero": ("y",), "attnres": ("y", "alpha"), "mhc_paper": ("coefficients",),
           "mhc_sliced": ("coefficients",), "hc_dynamic": (), "hc_static": ()}


def _missing(trace, graph) -> list[str]:
    want = ("k", "h_ctx", "state", "hidden", *ENTRIES[graph])
    return [f"iteration {r.get('k', i)}: no {key!r} (keys {sorted(r)})"
            for i, r in enumerate(trace) for key in want if r.get(key) is None]


def _eq3(h_pre, h_post, h_res, x, body):
    u = (h_pre.unsqueeze(-1) * x).sum(dim=-2)  # H_pre x_l
    return h_res @ x + h_post.unsqueeze(-1) * body(u).unsqueeze(-2)  # H_res x_l + H_post^T F(H_pre x_l)


@pytest.mark.gate(equations=["attnres.placement_loop", "attnres.eq2", "mhc.eq3", "mhc.layout.replicated"],
                  mechanism=MECH)
@pytest.mark.parametrize("graph", list(GRAPHS))
def test_every_trace_record_holds_what_its_iteration_computed(subject, device, graph):
    """Every record has the interface's entries for its arm, and hidden, alpha and coefficients are what the
    iteration computed (the module docstring's identities)."""
    model = build(subject, device, **GRAPHS[graph], **DYNAMIC.get(graph, {}))
    toks = tokens(device)
    params = dict(model.named_parameters())
    with torch.no_grad():
        logits, trace = model(toks, return_trace=True)
        missing = _missing(trace, graph)
        assert_bound(len(missing), at_most=0, reading_name="trace_entries_missing",
                     what=f"the {graph} graph's trace against the interface's entries: {missing[:4]}")
        worst = 0.0
        for r, logit in zip(trace, logits):
            worst = max(worst, assert_close(logit, r["hidden"] @ params["readout_w"].T + params["readout_b"], TOL,
                                            what=f"{graph}: logits_{r['k']} vs the record's hidden read out"))
        if graph == "attnres":
            values = [params["embed"][toks]]
            for r in trace:
                values.append(r["y"])
                mix = (r["alpha"].unsqueeze(-1) * torch.stack(values)).sum(dim=0)
                worst = max(worst, assert_close(r["state"], mix, TOL,
                                                what=f"attnres: the state of iteration {r['k']} vs sum_i alpha_i v_i"))
        if graph == "mhc_paper":
            for r in trace:
                want = _eq3(*r["coefficients"], r["h_ctx"], model.body)
                worst = max(worst, assert_close(r["state"], want, TOL,
                                                what=f"mhc (paper): the state of iteration {r['k']} vs Eq. 3 of the "
                                                     "record's coefficients at h_ctx"))
    readings.record(worst)
