"""Gates (defaults_as_shipped): the mHC stack as its factory ships it has Table 5's n streams and one connection of
its own per layer (mechanism mhc_stack, mHC Eq. 3, Eq. 7, Table 5).

What each builds and holds is stack_module_classes.py's, read through behaviour or a parameter count that hold for
any package's names:

- n: every body returning zero, Eq. 3 leaves x_{l+1} = H_res x_l; the replicated streams start as n copies of h
  and H_res's columns sum to one (Eq. 6), so the summed readout is n h at any point, here at the init as shipped.
  Whole copies are compared first and attributed to Eq. 3, Eq. 6 and the replicated layout; then the number of
  copies against Table 5's n = 4 (mhc.table5.n alone). Run where the subject declares replicated streams
  (fidelity.gates.stream_layout): sliced streams are not copies of h;
- one connection per layer: Eq. 3 and Eq. 7 give layer l its own H_l and phi_l, b_l, alpha_l and the readout no
  parameter, so an L-layer stack holds L times a one-layer stack's own parameters (L = 1, 2, 3).

Tolerance: whole copies to 1e-5 of the largest entry (float64 rounds to ~1e-16, float32 to ~1e-7; one stream
more or less is 1/n away); the stream count and the parameter counts are whole numbers, compared exactly.
"""
import pytest

import stack_module_classes as classes
from fidelity.spec.values import spec_value

MECH = "mhc_stack"


@pytest.mark.gate(equations=["mhc.table5.n", "mhc.eq3", "mhc.eq6", "mhc.layout.replicated"], mechanism=MECH,
                  gate_class="defaults_as_shipped")
def test_with_every_body_zero_the_stack_as_shipped_returns_table_5s_n_copies_of_the_hidden(subject, device):
    """stack(h) with zero bodies = c h for a whole c, and c = n = 4 (Table 5). Readings: the relative error from
    whole copies, and c."""
    classes.streams_as_the_spec(subject, MECH, device, spec_n=int(spec_value("mhc.table5.n")),
                                copies_equations=("mhc.eq3", "mhc.eq6", "mhc.layout.replicated"),
                                n_equations=("mhc.table5.n",), layout_declared=True)


@pytest.mark.gate(equations=["mhc.eq3", "mhc.eq7"], mechanism=MECH, gate_class="defaults_as_shipped")
def test_a_stack_of_l_layers_holds_l_connections_of_its_own(subject, device):
    """own parameters (named_parameters() less the bodies') of the L-layer stack as shipped = L x the one-layer
    stack's, for L = 1, 2, 3. Readings: the one-layer count, and the largest difference from L times it."""
    classes.one_connection_per_layer(subject, MECH, device)
