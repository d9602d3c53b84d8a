"""The named inputs of every fixture, quantity and prediction, in one place.

Values are exact: ints, or strings read by `_precision.exact` ("1e-5" is the
decimal 1/100000, "-ln(4)" the natural log). Who chose each input is stated:
the source documents' fixtures are re-used where the brief names them, the
rest are OUR choices (tier c), picked to be hand-checkable and to make the
quantity under test visible.
"""
from __future__ import annotations

# AttnRes, source 000 section 3: B = T = 1, d = 4, h0 = e0, h1 = e1, w = 2 e0, eps = 1e-5.
ATTNRES_FIXTURE = {
    "sources": [[1, 0, 0, 0], [0, 1, 0, 0]],
    "query": [2, 0, 0, 0],
    "eps": "1e-5",
}

# The default eps of depth attention (attnres.eps, tier c: 1e-6), on keys small enough that
# mean(k^2) = 2.5e-7 and 1e-6 are comparable: the score moves by a third if eps is 1e-5 instead.
ATTNRES_DEFAULT_EPS = {
    "sources": [["1/1000", 0, 0, 0], [0, "1/500", 0, 0]],
    "query": [2, 0, 0, 0],
    "eps": "1e-6",
}

# Zero query (the paper's mandated init): any sources, uniform weights. Ours.
ATTNRES_ZERO_QUERY = {
    "sources": [[1, -2, 3, 0], [4, 0, -1, 2], [-3, 1, 1, 1]],
    "query": [0, 0, 0, 0],
    "eps": "1e-6",
}

# A general case (non-trivial gain, query, sources), with gradients. Ours.
ATTNRES_GENERAL = {
    "sources": [[1, 2, -1], ["1/2", -1, 3], [-2, 0, 1], [1, 1, 1]],
    "query": ["1/2", -1, "1/4"],
    "gain": [1, 2, "1/2"],
    "eps": "1e-6",
    "loss_weights": [1, -2, "1/2"],
}

# Algorithm 1: block n = 3 (inter-block sources b0, b1, b2), S = 3 layers, d = 4. Ours.
ALG1 = {
    "inter_sources": [[1, -1, 2, 0], ["1/2", 2, -1, 1], [-1, "1/2", 1, 3]],
    "layer_outputs": [[2, 1, 0, -1], [-1, 3, 1, "1/2"]],
    "queries": [["1/2", -1, "1/4", 1], [2, 1, "-1/2", 0], [1, -1, 2, "1/2"]],  # step 1: m2 > m1; step 2: m1 > m2
    "eps": "1e-6",
}

# RMSNorm: the quantity's vector (eps = 0, the paper's formula) and an eps-sensitive case. Ours.
RMSNORM_EXAMPLE = {"x": [10, 20, 30, 40], "eps": 0}
RMSNORM_EPS = {"x": ["1/1000", "-2/1000", "3/1000", "-4/1000"], "eps": "1e-5", "g": [1, "1/2", 2, -1]}

# Sinkhorn. Ours unless stated.
SK_2X2 = {"logits": [[1, "-1/2"], [0, 2]]}
SK_N3 = {  # A = 1/2 I + 1/3 S + 1/6 S^2 (S the cyclic shift), D1, D2 positive diagonals
    "A": [["1/2", "1/3", "1/6"], ["1/6", "1/2", "1/3"], ["1/3", "1/6", "1/2"]],
    "d1": [1, 2, 5],
    "d2": [3, "1/2", 1],
}
SK_N4 = {  # A = 3/10 I + 1/4 S + 1/5 S^2 + 3/20 S^3 + 1/10 P, P = (1 0)(3 2); not circulant
    "A": [["3/10", "7/20", "1/5", "3/20"],
          ["1/4", "3/10", "1/4", "1/5"],
          ["1/5", "3/20", "3/10", "7/20"],
          ["1/4", "1/5", "1/4", "3/10"]],
    "d1": [1, 3, "1/2", 2],
    "d2": ["1/4", 1, 2, 5],
}
SK_SLOW = {"logits": [[0, 0], [-12, 0]]}  # cross ratio e^12, M(0) near the zero pattern [[1,1],[0,1]]
SK_EXTREME = {"a": [0, 1, -1], "b": ["1/2", 0, 2], "offsets": [200, -200],
              "row_a": [0, 0, -400], "row_b": [0, 0, 0]}
FLOOR = "1e-7"  # the linear-domain floor of source 004 section 4.1

# mHC. Eq. 3 fixture of source 004 section 5.1 (alpha = 0); b_pre is OUR choice.
MHC_EQ3 = {
    "x": [[1, 2], [3, 4]],
    "y": [[10, 20], [30, 40]],
    "F": [10, 20],
    "b_pre": [0, "ln(3)"],
    "b_post": ["-1/2", "3/2"],
    "b_res": [[0, "-ln(4)"], ["-ln(4)", 0]],
}
MHC_NONSYM_N2 = {  # the brief's suggestion; a 2x2 doubly stochastic matrix is always symmetric
    "x": [[1, 2], [3, 4]],
    "y": [[10, 20], [30, 40]],
    "b_post": ["-1/2", "3/2"],
    "b_res": [[0, "-ln(4)"], ["-ln(2)", 0]],
}
MHC_NONSYM_N3 = {  # b_res = ln(2A), A as in SK_N3: one column normalisation gives A exactly
    "x": [[1, 2], [9, -3], [0, 4]],  # rows chosen so H_res and H_res^T give out[0,0] 1.5 apart
    "y": [[10, 20], [30, 40], [50, 60]],
    "b_post": ["-1/2", "3/2", 0],
    "b_res": [[0, "ln(2/3)", "ln(1/3)"], ["ln(1/3)", 0, "ln(2/3)"], ["ln(2/3)", "ln(1/3)", 0]],
}
MHC_DYNAMIC = {  # Eq. 7/8 with alpha != 0, n = 2, C = 2, eps = 1e-20 (paper App. A.1)
    "x": [[1, 2], [3, 4]],
    "y": [[10, 20], [30, 40]],
    "F": [10, 20],
    "phi_pre": [["1/2", 0], [0, "1/2"], ["-1/4", "1/4"], ["1/4", "-1/4"]],
    "phi_post": [[1, -1], ["1/2", "1/2"], [0, 1], [-1, 0]],
    "phi_res": [["1/4", -1, "1/2", 0], [0, "1/2", -1, "1/4"], [1, 0, 0, -1], ["-1/2", "1/4", "1/4", "1/2"]],
    "alpha_pre": "1/10",
    "alpha_post": "1/5",
    "alpha_res": "1/2",
    "b_pre": [0, "ln(3)"],
    "b_post": ["-1/2", "3/2"],
    "b_res": [[0, "-ln(4)"], ["-ln(4)", 0]],
    "eps": "1e-20",
}
MHC_INIT = {"diag": 10, "n": [2, 4, 8, 16]}  # b_res = 10 I, OUR init (source 004 section 2.1)
MHC_PERTURBED = {"off": 2, "n": [2, 4], "T": list(range(1, 9))}  # b_res = 2 (J - I), source 004 section 5.1b
MHC_STIFFNESS = {"diag": 10, "bump": 1, "entry": [0, 1], "n": [2, 4]}
MHC_PARAMS = {"D": 768, "n": [2, 4], "model_params": 9197390}  # "small": 9 197 390 parameters, stated in source 004
SINKHORN_LAUNCHES = {"directions": 2, "ops_per_direction": 7}  # per iteration of Table 5's t_max, as source 004 section 3.2 states

# mHC ablation (source 004 section 3.3, quoting the paper): absolute loss gaps.
MHC_ABLATION = {"none": "0", "H_res": "-0.022", "H_res+H_pre": "-0.025", "all": "-0.027"}

# HC Table 1 (V2 eval loss), as transcribed in paper-facts.md.
HC_TABLE1 = {"baseline": "2.811", "n1": "2.819", "n2": "2.802", "n4": "2.781", "n8": "2.778"}

# Hyper-Connections. Ours.
HC_STATIC = {
    "n": 3,
    "h": [1, -2],
    "H0_distinct": [[1, 2], [3, -1], [0, 1]],
    "W": [[["1/2", 1], [0, -1]], [[1, 0], ["1/4", "1/2"]], [[-1, "1/2"], [2, 0]], [[0, 1], [1, 0]]],
}
HC_DHC = {
    "n": 2,
    "k": 1,
    "H": [[1, 2, -1], [0, 1, 3]],
    "W_T": [["1/2", 0, 1], [-1, 1, 0], [0, "1/4", "1/2"]],
    "W_beta": [["1/2"], [-1], ["1/4"]],
    "W_m": [[1], ["1/2"], [-1]],
    "W_r": [[1, -1], [0, "1/2"], ["1/2", 1]],
    "s_alpha": "1/10",
    "s_beta": "1/10",
    "eps": "1e-5",
}
