"""The mHC residual at a fixture's point: built by the subject's factory, the fixture's parameters written.

Shared by the module gates (gradients, parameters alive, stateless, defaults): the fixture holds
x [n, C], the nine parameters by the interface's names, and a linear body W_<layout>; a module
lacking a parameter is not run (fidelity.gates.module_parameters).
"""

from fidelity.gates.fixture_values import value
from fidelity.gates.module_parameters import write_parameters
from fidelity.gates.routes import routed

MECH = "mhc_residual"
PARAMS = ("phi_pre", "phi_post", "phi_res", "alpha_pre", "alpha_post", "alpha_res", "b_pre", "b_post", "b_res")


def module_at_fixture(subject, fixture_id: str, layout: str, dtype, device, route: str = "autograd",
                      names=PARAMS):
    """(module, x, body, {name: parameter}) with `names` written from the fixture; every other
    parameter as the factory made it. route "manual" is asked for with sinkhorn_backward=, where the
    subject's capability has it (routes.routed: else not run, saying why); "autograd" is the default."""
    x = value(fixture_id, "x", dtype, device)
    n, C = x.shape
    factory = subject.get(MECH) if route == "autograd" else routed(subject, MECH, route, gradient=False,
                                                                   keyword="sinkhorn_backward")
    module = factory(n, C, layout=layout, dtype=dtype, device=device)
    params = write_parameters(module, {name: value(fixture_id, name, dtype, device) for name in names}, MECH)
    W = value(fixture_id, f"W_{layout}", dtype, device)
    return module, x, (lambda v: v @ W.T), params
