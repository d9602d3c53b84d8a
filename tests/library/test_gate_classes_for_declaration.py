"""GateClassesFor refuses a declaration it cannot honour when the gate file is imported, naming what to fix;
and a fixture whose names the mechanism does not take is refused before any call, naming them."""
import pytest

from fidelity.gates.library import GateClassesFor
from fidelity.gates.library.example import Example, ExampleMismatch
from fidelity.gates.library.suite import applicable
from fidelity.gates.marker_names import UnknownMarkerName
from fidelity.mechanisms.registry import known_mechanisms


def test_a_mechanism_nobody_declares_is_refused_with_the_closest_names():
    with pytest.raises(UnknownMarkerName, match="'sinkhron' is declared by no one.*closest declared: sinkhorn"):
        class TestTypo(GateClassesFor, mechanism="sinkhron", example="sinkhorn.cross_ratio_2x2"):
            pass


def test_a_refused_argument_no_signature_takes_is_named():
    with pytest.raises(ValueError, match=r"refuses= names \['tmax'\], which no signature of 'sinkhorn' takes"):
        class TestRefuses(GateClassesFor, mechanism="sinkhorn", example="sinkhorn.cross_ratio_2x2",
                          refuses={"tmax": (-1,)}):
            pass


def test_an_oracle_gradient_without_a_stated_tolerance_is_refused():
    with pytest.raises(ValueError, match="gradient_example and gradient_tolerance come together"):
        class TestGradient(GateClassesFor, mechanism="sinkhorn", example="sinkhorn.cross_ratio_2x2",
                           gradient_example="sinkhorn.cross_ratio_2x2"):
            pass


def test_a_fixture_name_the_interface_does_not_take_is_named():
    # the fixture's params are order and t_max: sinkhorn takes t_max, not order
    with pytest.raises(ExampleMismatch, match=r"names \['order'\], which no signature of 'sinkhorn' takes"):
        Example(known_mechanisms()["sinkhorn"], "sinkhorn.cross_ratio_2x2").check_names()


def test_module_only_classes_apply_to_modules_alone():
    known = known_mechanisms()
    function = applicable(known["sinkhorn"], refuses=False, oracle_gradient=False)
    module = applicable(known["mhc_residual"], refuses=True, oracle_gradient=True)
    assert "train_eval" not in function and "parameters_alive" not in function and "refusals" not in function
    assert {"train_eval", "parameters_alive", "refusals", "gradients_from_oracle"} <= set(module)


def test_one_line_generates_one_marked_gate_per_class_that_applies():
    class TestSinkhorn(GateClassesFor, mechanism="sinkhorn", example="sinkhorn.cross_ratio_2x2"):
        pass

    gates = {name: getattr(TestSinkhorn, name) for name in dir(TestSinkhorn) if name.startswith("test_")}
    classes = {fn.pytestmark[-1].kwargs["gate_class"] for fn in gates.values()}
    assert classes == {"stateless", "dtype_device", "defaults_as_shipped", "gradients_finite_differences",
                       "gradient_reach"}
    assert all(fn.pytestmark[-1].kwargs["mechanism"] == "sinkhorn" for fn in gates.values())


def test_an_interface_with_no_optional_argument_has_no_defaults_as_shipped_to_miss():
    """The ledger's coverage and the generated classes agree (a new user's GELU was 'missing' it in the ledger)."""
    from typing import Protocol

    import torch

    from fidelity.gates.gate_classes import applies_to
    from fidelity.mechanisms import Mechanism
    from fidelity.report.coverage import gather, missing

    class Gelu(Protocol):
        def __call__(self, x: torch.Tensor) -> torch.Tensor: ...

    gelu = Mechanism(name="gelu", summary="GELU", kind="function", interface=Gelu, module_interface=None,
                     equations=("gelu.eq1",))
    assert not applies_to("defaults_as_shipped", gelu) and applies_to("stateless", gelu)
    assert "defaults_as_shipped" not in applicable(gelu, refuses=False, oracle_gradient=False)
    table = gather({}, mechanisms={"gelu": gelu}, gate_run=True, own=["gelu"])
    assert ("gelu", "defaults_as_shipped") not in missing(table) and ("gelu", "stateless") in missing(table)

