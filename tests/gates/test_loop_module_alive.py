"""Gate (parameters_alive): every parameter wired in an arm's graph moves the logits as the oracle says.

Fixture loop_model.alive: per arm graph (rezero, attnres, mHC sliced and paper, HC dynamic and static) the
oracle's seeded parameters (fidelity.oracles.loop_model; generic values, not the init, where phi = 0 and W = 0
make the alphas and scales legitimately inert) and, per wired parameter, a seeded direction (entries up to 1/32)
with the oracle's max |change of the logits| along it. The gate builds the model by its factory (float64), sets
the fixture's parameters, moves ONE parameter along its direction and reads the ratio of its own change to the
oracle's (fidelity.gates.parameters_alive: >= 1/2; a parameter never read gives 0, a live one about 1).
One instance per (graph, parameter). A parameter the model rebuilds or overwrites (streams rebuilt from one
hidden, a coefficient replaced by a constant) is a finding here even when every other gate passes.
"""

import pytest
import torch

from fidelity.fixtures.loop_modules import VARIANTS
from fidelity.gates.compare import assert_bound
from fidelity.gates.fixture_values import fixture
from fidelity.gates.parameters_alive import assert_moves_output
from fidelity.mechanisms.loop_model import config_class

FIXTURE = "loop_model.alive"
CASES = [(graph, name) for graph, (_, wired) in VARIANTS.items() for name in wired]
EQUATIONS = ["attnres.placement_loop", "attnres.eq2", "mhc.eq3", "mhc.eq7", "mhc.eq8", "hc.eq5", "hc.eq11", "hc.eq12",
             "hc.eq13"]


def _config(fx, graph):
    """The fixture's full configuration (its defaults, then the graph's overrides), so no default of the
    subject's config enters this gate (defaults are the defaults_as_shipped gates' business)."""
    cfg = {k: (float(v["float64"]) if isinstance(v, dict) else v) for k, v in fx["params"]["defaults"].items()}
    return cfg | fx["inputs"][graph]["config"]


def _tensor(raw, device):
    return torch.tensor(raw["float64"] if isinstance(raw, dict) else raw, dtype=torch.float64).to(device)


@pytest.mark.gate(equations=EQUATIONS, mechanism="loop_model", gate_class="parameters_alive")
@pytest.mark.parametrize("graph,name", CASES, ids=[f"{g}-{n}" for g, n in CASES])
def test_each_wired_parameter_moves_the_logits_as_the_oracle_says(subject, device, graph, name):
    fx = fixture(FIXTURE)
    case = fx["inputs"][graph]
    factory = subject.get("loop_model")
    config_type = config_class(factory)
    model = factory(config_type(**_config(fx, graph)), torch.Generator().manual_seed(0), dtype=torch.float64,
                    device=device)
    named = dict(model.named_parameters())
    differ = sorted(set(case["params"]) ^ set(named))
    assert_bound(len(differ), at_most=0, reading_name="parameter_names_that_differ",
                 what=f"{graph}: the model's parameters against the fixture's: {differ}")
    with torch.no_grad():
        for pname, raw in case["params"].items():
            named[pname].copy_(_tensor(raw, device))
    toks = torch.tensor(fx["inputs"]["tokens"], dtype=torch.int64, device=device)
    with torch.no_grad():
        before = torch.stack(list(model(toks)))
        named[name].add_(_tensor(case["directions"][name], device))
        after = torch.stack(list(model(toks)))
    oracle_change = float(fx["expected"][graph]["max_change"][name]["float64"])
    assert_moves_output(before, after, oracle_change, what=f"{graph} graph, {name} moved along its seeded direction")
