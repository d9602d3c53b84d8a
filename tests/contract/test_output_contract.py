"""The output contract the gate plugin's `subject` fixture applies (fidelity.gates.output_contract)."""
import traceback
import typing
from pathlib import Path

import pytest
import torch

from fidelity.gates import output_contract
from fidelity.gates.output_contract import OutputContractViolation, checked
from fidelity.subjects.subject import Capability, Subject

CAP = Capability(dtypes=("float32", "float64"), devices=("cpu",), backward=("autograd",))


class Mixer(torch.nn.Module):
    """An mhc_residual-like module whose forward and declared method `coefficients` may upcast."""

    def __init__(self, n: int, *, upcast: bool = False, dtype: torch.dtype = torch.float32, device=None):
        super().__init__()
        self.n, self.upcast = n, upcast
        self.w = torch.nn.Parameter(torch.ones(n, dtype=dtype, device=device))

    def coefficients(self, x):
        return x.double() if self.upcast else x

    def forward(self, x, body=None):
        return self.coefficients(x) * 2  # a nested checked call: judged once, at the outer call

    def undeclared(self, x):
        return x.double()  # not in the mechanism's Protocol: not checked


def _subject(**mechanisms):
    return checked(Subject(name="toy", description="toy", mechanisms=mechanisms,
                           capabilities={m: CAP for m in mechanisms}, unavailable_reason=lambda: None))


def _frames_outside(exc: BaseException) -> list[str]:
    """Files of the traceback's frames that are neither this test nor fidelity/gates/: the
    perturbation recorder counts an AssertionError as the gate's own only when there are none."""
    gates = Path(output_contract.__file__).parent
    return [f.filename for f in traceback.extract_tb(exc.__traceback__)
            if Path(f.filename) != Path(__file__) and Path(f.filename).parent != gates]


def test_a_function_that_upcasts_is_a_silent_cast_raised_as_the_gates_own_assertion():
    fn = _subject(sinkhorn=lambda logits, **kw: logits.double()).get("sinkhorn")
    with pytest.raises(OutputContractViolation, match=r"^silent cast: float32 in, float64 out from sinkhorn") as e:
        fn(torch.zeros(2, 2))
    assert isinstance(e.value, AssertionError) and not _frames_outside(e.value)
    assert fn(torch.zeros(2, 2, dtype=torch.float64)).dtype == torch.float64       # same dtype: fine


def test_a_function_that_moves_device_is_a_finding():
    fn = _subject(sinkhorn=lambda logits, **kw: logits.to("meta")).get("sinkhorn")
    with pytest.raises(OutputContractViolation, match=r"^device change: cpu in, meta out from sinkhorn"):
        fn(torch.zeros(2, 2))


def test_every_floating_output_in_a_tuple_is_checked_and_integer_outputs_are_not():
    fn = _subject(depth_attention=lambda s, q, **kw: (s.sum(0), s.double().sum(-1), torch.arange(3))).get("depth_attention")
    with pytest.raises(OutputContractViolation, match="float32 in, float64 out from depth_attention"):
        fn(torch.ones(3, 4), torch.ones(4))


def test_a_module_factory_keeps_its_class_and_introspection_and_checks_forward_once():
    factory = _subject(mhc_residual=Mixer).get("mhc_residual")
    hints = typing.get_type_hints(factory.__init__)
    assert hints["n"] is int and issubclass(factory, Mixer) and factory.__name__ == "Mixer"
    good = factory(3)
    assert isinstance(good, Mixer) and good(torch.ones(3)).dtype == torch.float32
    bad = factory(3, upcast=True)
    with pytest.raises(OutputContractViolation, match=r"^silent cast: float32 in, float64 out from mhc_residual ") as e:
        bad(torch.ones(3))
    assert not _frames_outside(e.value)      # raised after torch's Module.__call__ returned, not inside it
    with pytest.raises(OutputContractViolation, match=r"from mhc_residual \(subject toy\)\.coefficients"):
        bad.coefficients(torch.ones(3))
    assert bad.undeclared(torch.ones(3)).dtype == torch.float64


def test_a_module_built_by_a_function_factory_is_checked_too():
    factory = _subject(mhc_residual=lambda n, **kw: Mixer(n, upcast=True, **kw)).get("mhc_residual")
    module = factory(3, dtype=torch.float32)
    with pytest.raises(OutputContractViolation, match="silent cast"):
        module(torch.ones(3))


def test_the_checked_subject_is_the_same_record_otherwise():
    s = _subject(sinkhorn=lambda x, **kw: x)
    assert s.name == "toy" and s.supports("sinkhorn", "autograd") and not s.supports("sinkhorn", "manual")
    assert checked(s) is s
