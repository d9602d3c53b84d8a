"""Oracles: pure sympy/mpmath functions computing each equation exactly or to 40+ digits.

One idea per module:
- rmsnorm:          RMSNorm, mean form x / sqrt(mean(x^2) + eps) * g
- depth_attention:  AttnRes depth attention, three score conventions, and which coincide
- block_attnres:    Block AttnRes source sets (Eq. 5/6) and Algorithm 1's online-softmax merge
- sinkhorn:         mHC Eq. 9 Sinkhorn-Knopp and its exactly known limits
- mhc:              mHC Eq. 3 (both layouts), Eq. 7/8 coefficients, the parameter count
- hc:               Hyper-Connections (static, Eq. 14 init, DHC)
- predictions:      predicted red readings of named defects
- quantities:       the registry that CLAIMS in specs are checked against, and compare_claim
- cases:            the named inputs every fixture, quantity and prediction uses
- _precision:       working precision (local mpmath.workdps), exact parsing, digit strings

No torch and no numpy in any computation here.
"""
