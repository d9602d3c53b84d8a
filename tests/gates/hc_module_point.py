"""The hyper-connection at a fixture's point: built by the subject's factory, the fixture's parameters written.

Shared by the module gates (parameters alive, the oracle's Jacobian, stateless): the fixture's
inputs hold n, d, layer_index, H, a linear body W_T and every parameter by the interface's
(dotted) names; a module lacking one is not run (fidelity.gates.module_parameters).
"""
import torch

from fidelity.gates.fixture_values import fixture, value
from fidelity.gates.module_parameters import parameter, write_parameters

MECH = "hyper_connection"


def _tensor(raw, dtype, device) -> torch.Tensor:
    raw = raw["float64"] if isinstance(raw, dict) and "float64" in raw else raw
    return torch.tensor(raw, dtype=torch.float64).to(dtype=dtype, device=device)


def module_at_fixture(subject, fixture_id: str, dynamic: bool, dtype, device):
    """(module, H, body) with every parameter of the fixture written."""
    fx = fixture(fixture_id)["inputs"]
    n, d, k = int(fx["n"]), int(fx["d"]), int(fx["layer_index"])
    module = subject.get(MECH)(n, d, k, dynamic=dynamic, dtype=dtype, device=device)
    shapes = {name: parameter(module, name, MECH).shape for name in fx["params"]}
    write_parameters(module, {name: _tensor(raw, dtype, device).reshape(shapes[name])
                              for name, raw in fx["params"].items()}, MECH)
    W_T = value(fixture_id, "W_T", dtype, device)
    return module, value(fixture_id, "H", dtype, device), (lambda h: h @ W_T)
