"""Gates: every floating output keeps the dtype and device of its input, for every mechanism and method.

A package that returns float32 for float64 input is otherwise judged at float64's tolerance and
never named (issue 14). The contract is held by fidelity.gates.output_contract, which wraps every
subject the gates see: each call's floating outputs must have the inputs' dtype and device (a
factory's `dtype=` / `device=` where a method has no floating input), else OutputContractViolation,
an assertion of the gate. These gates call every public method the mechanism's interface declares,
in every dtype the subject declares, so a silent cast is found even where no fixture gate looks.
A dtype outside the subject's capability is not run (fidelity.gates.within_capability).
The reading `outputs_checked` counts the floating outputs the contract held.
"""

import pytest
import torch

from fidelity.gates.compare import assert_bound
from fidelity.gates.optional_inputs import optional_input
from fidelity.gates.tensors import floating_tensors
from fidelity.mechanisms.loop_model import config_class

DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["f32", "f64"]
CLASS = "dtype_device"


def _randn(g: torch.Generator, *shape, dtype, device) -> torch.Tensor:
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(device=device, dtype=dtype)


def _routes(subject, mechanism: str) -> list[str]:
    return list(subject.capabilities[mechanism].routes) or ["none"]


def _held(outputs: list) -> float:
    count = sum(1 for out in outputs for _ in floating_tensors(out))
    return assert_bound(count, at_least=1, reading_name="outputs_checked",
                        what="floating outputs the output contract held (a call returned none)")


@pytest.mark.gate(equations=["mhc.eq9"], mechanism="sinkhorn", gate_class=CLASS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_sinkhorn_returns_the_dtype_and_device_of_its_logits(subject, device, dtype):
    g = torch.Generator().manual_seed(1)
    logits = _randn(g, 2, 3, 3, dtype=dtype, device=device)
    sinkhorn = subject.get("sinkhorn")
    _held([sinkhorn(logits, backward=route) for route in _routes(subject, "sinkhorn") if route != "none"]
          or [sinkhorn(logits)])


@pytest.mark.gate(equations=["attnres.eq2", "attnres.eq4"], mechanism="depth_attention", gate_class=CLASS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_depth_attention_returns_the_dtype_and_device_of_its_sources(subject, device, dtype):
    g = torch.Generator().manual_seed(2)
    sources, query = _randn(g, 3, 2, 4, dtype=dtype, device=device), _randn(g, 4, dtype=dtype, device=device)
    gain = optional_input(subject, "depth_attention", "gain", _randn(g, 4, dtype=dtype, device=device))
    attend = subject.get("depth_attention")
    _held([attend(sources, query, gain=gain, backward=route) for route in _routes(subject, "depth_attention")
           if route != "none"] or [attend(sources, query)])


@pytest.mark.gate(equations=["mhc.eq3", "mhc.eq7", "mhc.eq8"], mechanism="mhc_residual", gate_class=CLASS)
@pytest.mark.parametrize("layout", ["paper", "sliced"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_mhc_residual_returns_the_dtype_and_device_of_its_stream_state(subject, device, dtype, layout):
    g = torch.Generator().manual_seed(3)
    module = subject.get("mhc_residual")(2, 3, layout=layout, dtype=dtype, device=device)
    x = _randn(g, 2, 2, 3, dtype=dtype, device=device)
    hidden = module.readout(x)
    _held([module.coefficients(x), module(x, torch.tanh), hidden, module.expand(hidden)])


@pytest.mark.gate(equations=["hc.eq5", "hc.eq10"], mechanism="hyper_connection", gate_class=CLASS)
@pytest.mark.parametrize("dynamic", [True, False], ids=["dhc", "static"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_hyper_connection_returns_the_dtype_and_device_of_its_hyper_hidden(subject, device, dtype, dynamic):
    g = torch.Generator().manual_seed(4)
    module = subject.get("hyper_connection")(2, 3, 1, dynamic=dynamic, dtype=dtype, device=device)
    H = _randn(g, 2, 2, 3, dtype=dtype, device=device)
    hidden = module.readout(H)
    _held([module.connections(H), module(H, torch.tanh), hidden, module.expand(hidden)])


@pytest.mark.gate(equations=["attnres.eq6", "attnres.alg1"], mechanism="block_attnres", gate_class=CLASS)
@pytest.mark.parametrize("mode", ["direct", "two_phase"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_block_attnres_returns_the_dtype_and_device_of_its_embedding(subject, device, dtype, mode):
    g = torch.Generator().manual_seed(5)
    module = subject.get("block_attnres")([torch.tanh, torch.sin, torch.tanh], 4, 2, dtype=dtype, device=device)
    _held([module(_randn(g, 2, 4, dtype=dtype, device=device), mode=mode)])


@pytest.mark.gate(equations=["attnres.placement_loop", "mhc.composite"], mechanism="loop_model", gate_class=CLASS)
@pytest.mark.parametrize("arm", ["rezero", "attnres", "mhc", "hc"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_loop_model_returns_logits_in_the_dtype_and_on_the_device_of_its_parameters(subject, device, dtype, arm):
    factory = subject.get("loop_model")
    config = config_class(factory)(arm=arm)
    model = factory(config, torch.Generator().manual_seed(6), dtype=dtype, device=device)
    tokens = torch.randint(0, config.vocab, (2, 3), generator=torch.Generator().manual_seed(7)).to(device)
    x = _randn(torch.Generator().manual_seed(8), 2, config.d, dtype=dtype, device=device)
    outputs = [model(tokens), model.body(x)]
    if arm == "mhc":
        outputs.append(model.composite_h_res(x))
    _held(outputs)
