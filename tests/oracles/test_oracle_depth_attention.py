"""Depth attention: the sympy oracle against an mpmath log-sum-exp route, the sympy proofs, gradients vs numerical differentiation."""
import mpmath
import pytest

from fidelity.oracles import cases
from fidelity.oracles import depth_attention as da
from fidelity.oracles._precision import mp, precision


def _lse_route(sources, query, eps, convention, gain=None):
    """A second formulation: keys normalised with an explicit divisor, weights via log-sum-exp."""
    with mpmath.workdps(70):
        V = [[mp(x) for x in v] for v in sources]
        q = [mp(x) for x in query]
        d = len(q)
        g = [mpmath.mpf(1)] * d if gain is None else [mp(x) for x in gain]
        divisor = {"paper": lambda ss: mpmath.sqrt(ss / d + mp(eps)),
                   "l2": lambda ss: mpmath.sqrt(ss + mp(eps)),
                   "l2_sqrt_d": lambda ss: mpmath.sqrt(ss + mp(eps)) * mpmath.sqrt(d)}[convention]
        s = []
        for v in V:
            k = [v[j] / divisor(mpmath.fsum(x**2 for x in v)) * g[j] for j in range(d)]
            s.append(mpmath.fdot(q, k))
        lse = max(s) + mpmath.log(mpmath.fsum(mpmath.exp(x - max(s)) for x in s))
        a = [mpmath.exp(x - lse) for x in s]
        h = [mpmath.fdot(a, [v[j] for v in V]) for j in range(d)]
        return {"scores": s, "alpha": a, "h": h}


@pytest.mark.parametrize("convention", da.CONVENTIONS)
@pytest.mark.parametrize("case", [cases.ATTNRES_FIXTURE, cases.ATTNRES_ZERO_QUERY, cases.ATTNRES_GENERAL])
def test_sympy_oracle_matches_log_sum_exp_route(case, convention):
    ours = da.depth_attention(case["sources"], case["query"], case["eps"], convention, case.get("gain"))
    other = _lse_route(case["sources"], case["query"], case["eps"], convention, case.get("gain"))
    with precision():
        for key in ("scores", "alpha", "h"):
            for a, b in zip(ours[key], other[key]):
                assert abs(mp(a) - b) <= mpmath.mpf("1e-40") * max(1, abs(b)), key


def test_the_coincidence_statements_are_proved():
    proofs = da.coincidences()
    assert set(proofs) == {"zero_query_uniform", "d1_all_equal", "l2_is_sqrt_d_times_l2_sqrt_d",
                           "paper_is_sqrt_d_times_l2_at_eps0", "eps_breaks_the_factor", "coincide_only_at_d1"}
    assert all(p["holds"] for p in proofs.values()), {k: p for k, p in proofs.items() if not p["holds"]}


def test_fixture_scores_relate_by_sqrt_d():
    c = cases.ATTNRES_FIXTURE
    s = {conv: da.depth_attention(c["sources"], c["query"], c["eps"], conv)["scores"][0] for conv in da.CONVENTIONS}
    with precision():
        assert abs(mp(s["l2"]) - 2 * mp(s["l2_sqrt_d"])) < mpmath.mpf("1e-50")
        assert mp(s["paper"]) < 4  # eps inside the root lowers the score below the eps-free 4


def test_unknown_convention_is_refused():
    with pytest.raises(ValueError, match="unknown score convention"):
        da.score([1], [1], 0, "rms")


@pytest.mark.parametrize("convention", da.CONVENTIONS)
def test_gradients_match_numerical_differentiation(convention):
    c = cases.ATTNRES_GENERAL
    g = da.gradients(c["sources"], c["query"], c["eps"], convention, c["gain"], c["loss_weights"])
    lw = c["loss_weights"]

    def loss(V, q):
        r = _lse_route(V, q, c["eps"], convention, c["gain"])
        return mpmath.fdot([mp(x) for x in lw], r["h"])

    with mpmath.workdps(70):
        V0 = [[mp(x) for x in v] for v in c["sources"]]
        q0 = [mp(x) for x in c["query"]]
        step = mpmath.mpf("1e-20")
        for i in range(len(V0)):
            for j in range(len(q0)):
                up = [row[:] for row in V0]
                dn = [row[:] for row in V0]
                up[i][j] += step
                dn[i][j] -= step
                fd = (loss(up, q0) - loss(dn, q0)) / (2 * step)
                assert abs(fd - g["dloss_dsource"][i][j]) < mpmath.mpf("1e-28")
                sfd = (_lse_route(up, q0, c["eps"], convention, c["gain"])["scores"][i]
                       - _lse_route(dn, q0, c["eps"], convention, c["gain"])["scores"][i]) / (2 * step)
                assert abs(sfd - g["dscore_dsource"][i][j]) < mpmath.mpf("1e-28")
        for j in range(len(q0)):
            up, dn = q0[:], q0[:]
            up[j] += step
            dn[j] -= step
            fd = (loss(V0, up) - loss(V0, dn)) / (2 * step)
            assert abs(fd - g["dloss_dquery"][j]) < mpmath.mpf("1e-28")
