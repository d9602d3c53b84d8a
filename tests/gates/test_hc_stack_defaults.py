"""Gates (defaults_as_shipped): the HC stack as its factory ships it has our n streams and one hyper-connection of
its own per layer (mechanism hc_stack, HC Eq. 5, Eq. 14, §2.1, Alg. 1).

What each builds and holds is stack_module_classes.py's, read through behaviour or a parameter count that hold for
any package's names:

- n: every body returning zero, Eq. 5 leaves H^ = A_r^T H; at Eq. 14's init A_r = I, the streams start as n
  copies of h (§2.1) and the readout sums them (Alg. 1), so the output is n h. Whole copies are compared first
  and attributed to Eq. 14, Eq. 5, the setup and the readout; then the number of copies against the spec's n = 4
  (hc.stack_n alone, tier c: the paper trains x1 to x8 and states no single n, so another package's n differs
  from our choice, no finding). Run on every subject, as test_hc_stack.py's init gate: the hc_stack
  interface is the paper's replicated streams and summed readout (§2.1, Alg. 1), so no layout need be declared;
- one connection per layer: Eq. 5 and Eq. 14 give layer k its own A^k, B^k (and Alg. 2's dynamic weights, scales
  and norm), and the readout no parameter, so an L-layer stack holds L times a one-layer stack's own parameters
  (L = 1, 2, 3).

Tolerance: whole copies to 1e-5 of the largest entry (float64 rounds to ~1e-16, float32 to ~1e-7; one stream
more or less is 1/n away); the stream count and the parameter counts are whole numbers, compared exactly.
"""
import pytest

import stack_module_classes as classes
from fidelity.spec.values import spec_value

MECH = "hc_stack"


@pytest.mark.gate(equations=["hc.stack_n", "hc.eq14", "hc.eq5", "hc.setup", "hc.readout_sum"], mechanism=MECH,
                  gate_class="defaults_as_shipped")
def test_with_every_body_zero_the_stack_as_shipped_returns_n_copies_of_the_hidden(subject, device):
    """stack(h) with zero bodies at the init as shipped = c h for a whole c, and c = n = 4 (hc.stack_n).
    Readings: the relative error from whole copies, and c."""
    classes.streams_as_the_spec(subject, MECH, device, spec_n=int(spec_value("hc.stack_n")),
                                copies_equations=("hc.eq14", "hc.eq5", "hc.setup", "hc.readout_sum"),
                                n_equations=("hc.stack_n",), layout_declared=False)


@pytest.mark.gate(equations=["hc.eq5", "hc.eq14"], mechanism=MECH, gate_class="defaults_as_shipped")
def test_a_stack_of_l_layers_holds_l_hyper_connections_of_its_own(subject, device):
    """own parameters (named_parameters() less the bodies') of the L-layer stack as shipped = L x the one-layer
    stack's, for L = 1, 2, 3. Readings: the one-layer count, and the largest difference from L times it."""
    classes.one_connection_per_layer(subject, MECH, device)
