"""Oracle tests for the module-level HC functions (issue 14): the LayerNorm's affine map, module_layer
read by parameter name, and the exact Jacobian d out / d H."""
import sympy

from fidelity.oracles import hc


def test_layer_norm_rows_affine_is_the_plain_norm_times_weight_plus_bias():
    H = sympy.Matrix([[1, 2, -1], [0, 1, 3]])
    plain = hc.layer_norm_rows(H, "1e-5")
    w, b = [2, sympy.Rational(1, 2), -1], [sympy.Rational(1, 4), 0, 3]
    affine = hc.layer_norm_rows(H, "1e-5", w, b)
    for i in range(2):
        for j in range(3):
            assert sympy.simplify(affine[i, j] - (plain[i, j] * w[j] + b[j])) == 0
    assert hc.layer_norm_rows(H, "1e-5", [1, 1, 1], [0, 0, 0]) == plain


def test_module_layer_is_dhc_layer_and_hc_layer_under_the_interfaces_names():
    H = [[1, 2, -1], [0, 1, 3]]
    T = hc.linear_T([[1, 0, 1], [0, 1, 0], [1, 0, 0]])
    params = {"static_beta": [1, sympy.Rational(1, 2)], "static_alpha": [[0, 1, 0], [1, 0, 1]],
              "dynamic_alpha_fn": [[1, 0, -1], [0, 1, 0], [1, 1, 0]], "dynamic_beta_fn": [1, -1, 0],
              "alpha_scale": "1/4", "beta_scale": "1/8", "layer_norm.weight": [1, 2, 1], "layer_norm.bias": [0, 1, 0]}
    got = hc.module_layer(params, H, T, "1e-5")["out"]
    M = sympy.Matrix
    want = hc.dhc_layer(M(H), M([[1, sympy.Rational(1, 2)]]), M([[0], [1]]), M([[1, 0], [0, 1]]), M([[1], [-1], [0]]),
                        M([[1], [0], [1]]), M([[0, -1], [1, 0], [1, 0]]), "1/4", "1/8", "1e-5", T,
                        [1, 2, 1], [0, 1, 0])["out"]
    assert sympy.simplify(got - want) == sympy.zeros(2, 3)
    static = hc.module_layer(params, H, T, dynamic=False)["out"]
    assert static == hc.hc_layer(M(H), M([[1, sympy.Rational(1, 2)]]), M([[0], [1]]), M([[1, 0], [0, 1]]), T)["out"]


def test_static_jacobian_is_the_linear_map_and_dynamic_jacobian_matches_a_difference_quotient():
    H = [[1, 2, -1], [0, 1, 3]]
    T = hc.linear_T([[1, 0, 1], [0, 1, 0], [1, 0, 0]])
    params = {"static_beta": [1, 2], "static_alpha": [[0, 1, 0], [1, 0, 1]]}
    J = hc.module_jacobian_wrt_H(params, H, T, dynamic=False)
    # static HC is linear in H: J times vec(H) is vec(out)
    out = hc.module_layer(params, H, T, dynamic=False)["out"]
    vecH = [v for r in H for v in r]
    assert [sum(J[r][c] * vecH[c] for c in range(6)) for r in range(6)] == list(out)
    dyn = params | {"dynamic_alpha_fn": [[1, 0, -1], [0, 1, 0], [1, 1, 0]], "dynamic_beta_fn": [1, -1, 0],
                    "alpha_scale": "1/4", "beta_scale": "1/8", "layer_norm.weight": [1, 1, 1],
                    "layer_norm.bias": [0, 0, 0]}
    J = hc.module_jacobian_wrt_H(dyn, H, T, "1e-5")
    h = sympy.Rational(1, 10 ** 12)
    up = [[v + (h if (i, j) == (1, 2) else 0) for j, v in enumerate(r)] for i, r in enumerate(H)]
    dn = [[v - (h if (i, j) == (1, 2) else 0) for j, v in enumerate(r)] for i, r in enumerate(H)]
    fd = (hc.module_layer(dyn, up, T, "1e-5")["out"] - hc.module_layer(dyn, dn, T, "1e-5")["out"]) / (2 * h)
    for r in range(6):
        assert abs(sympy.N(fd[r] - J[r][5], 50)) < 1e-18
