"""The gate plugin, registered with pytest by entry point (`pytest11`), so any project's gates
get it without copying a conftest: each gate runs against every subject that provides its
mechanism, on every device.

A gate declares `@pytest.mark.gate(equations=[...], mechanism="sinkhorn")` and takes the
`subject` and `device` fixtures. This plugin parametrises them over the project's subjects
(fidelity.subjects.registry) and the devices, prints the subjects in the run header, and
marks which modules each instance covers (so the perturbation runner can find the gates a
patched module must turn red). A subject or device that is missing is SKIPPED with the
reason: reported as not run, never as passed. A subject that raises NotRun for a feature
it cannot drive gets the same. A gate marker naming a mechanism, gate class or equation that
nothing declares is a collection error naming it and the closest declared names (marker_names.py).
Gates get the subject through fidelity.gates.output_contract: every floating output must keep
its inputs' dtype and device, else the gate fails by that check.

Outside a fidelity project, and for tests that are not gates, the plugin does nothing
(nor does it import torch), but for one saving in any run: hypothesis_summary.py keeps
hypothesis's plugin from importing hypothesis at the end of a run that never used it.
"""
from __future__ import annotations

import sys

import pytest

DEVICES = ("cpu", "cuda")
NO_CUDA = "not run: no CUDA device"


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def pytest_configure(config):
    from fidelity.gates import hypothesis_summary

    config.pluginmanager.register(hypothesis_summary, "fidelity-hypothesis-summary")
    config.addinivalue_line("markers", "gate(equations, mechanism, gate_class=None): a gate of the given spec "
                                       "equations; gate_class one of fidelity.gates.gate_classes.GATE_CLASSES")
    config.addinivalue_line("markers", "gate_targets(*modules): modules whose source this gate covers")
    config.addinivalue_line("markers", "gate_checks(*equations): on a parameter of a gate, the equations that "
                                       "instance checks, among the gate's (a finding of it is attributed to them alone)")
    config.addinivalue_line("markers", "gate_subject(name, device): the subject and device of this instance")


def pytest_report_header(config):
    from fidelity import project

    if project.current_or_none() is None:
        return None
    from fidelity.subjects.registry import all_subjects

    rows = []
    for s in all_subjects():
        reason = s.unavailable_reason()
        rows.append(f"  {s.name}: {'available' if reason is None else 'NOT RUN: ' + reason} ({s.description})")
    cuda = "available" if _cuda_available() else "NOT RUN: no CUDA device"
    return ["fidelity subjects:", *rows, f"  devices: cpu available; cuda {cuda}"]


def _mechanism(definition) -> str | None:
    marker = definition.get_closest_marker("gate")
    return marker.kwargs.get("mechanism") if marker else None


def _takes_gradient(definition) -> bool:
    """Whether the gate's class takes a gradient; first, every name its gate markers give must be declared
    (marker_names.py): an unknown mechanism, gate class or equation is a collection error naming it."""
    markers = list(definition.iter_markers("gate"))
    if not markers:
        return False
    from fidelity.gates.gate_classes import GRADIENT, check_gate_class
    from fidelity.gates.marker_names import check_equations, check_mechanism, marker_equations

    for marker in markers:
        check_gate_class(marker.kwargs.get("gate_class"), definition.nodeid)
        check_mechanism(marker.kwargs.get("mechanism"), definition.nodeid)
        check_equations(marker_equations(marker), definition.nodeid)
    return definition.get_closest_marker("gate").kwargs.get("gate_class") in GRADIENT


def pytest_generate_tests(metafunc):
    takes_gradient = _takes_gradient(metafunc.definition)
    mechanism = _mechanism(metafunc.definition)
    if mechanism is None or "subject" not in metafunc.fixturenames:
        return
    from fidelity.gates.routes import forward_only_reason, is_forward_only
    from fidelity.subjects.registry import subjects_for

    cuda = _cuda_available()
    params = []
    for subject in subjects_for(mechanism):
        declared = subject.capabilities[mechanism].devices
        for device in DEVICES:
            # a device this machine lacks, or the subject does not declare, is known at collection:
            # marked there, so a runner can leave the instance out rather than start it only to skip it
            if device not in declared:
                marks = [pytest.mark.skip(reason=f"not run: subject {subject.name} declares devices "
                                                 f"{', '.join(declared)} for {mechanism}")]
            elif takes_gradient and is_forward_only(subject, mechanism):
                marks = [pytest.mark.skip(reason=forward_only_reason(subject.name, mechanism))]
            else:
                marks = [] if device != "cuda" or cuda else [pytest.mark.skip(reason=NO_CUDA)]
            params.append(pytest.param((subject, device), id=f"{subject.name}-{device}", marks=marks))
    if not params:
        params = [pytest.param(None, id="no-subject",
                               marks=pytest.mark.skip(reason=f"not run: no subject in this run provides {mechanism}"))]
    metafunc.parametrize("subject_on_device", params, indirect=False)


@pytest.fixture
def subject_on_device():  # replaced by parametrisation; a gate without a mechanism gets no subject
    pytest.fail("a gate that takes `subject` must declare @pytest.mark.gate(mechanism=...)")


@pytest.fixture
def subject(subject_on_device):
    subject, device = subject_on_device
    reason = subject.unavailable_reason()
    if reason is not None:
        pytest.skip(f"subject {subject.name} not run: {reason}")
    if device == "cuda" and not _cuda_available():
        pytest.skip(NO_CUDA)
    # every gate sees the subject through the output contract: a silent cast or device move is a
    # finding of its own, never judged at the wrong tolerance (fidelity.gates.output_contract)
    from fidelity.gates.output_contract import checked

    return checked(subject)


@pytest.fixture
def device(subject_on_device):
    return subject_on_device[1]


def pytest_collection_modifyitems(items):
    for item in items:
        mechanism = _mechanism(item)
        callspec = getattr(item, "callspec", None)
        if mechanism and callspec and isinstance(callspec.params.get("subject_on_device"), tuple):
            subject, device = callspec.params["subject_on_device"]
            item.add_marker(pytest.mark.gate_subject(subject.name, device))
            modules = subject.modules.get(mechanism, ())
            if modules:
                item.add_marker(pytest.mark.gate_targets(*modules))


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    """A subject that cannot drive a feature raises NotRun: that instance is not run (skipped
    with the subject's reason), never passed and never failed. A bare NotImplementedError
    (e.g. an op torch lacks on a device) is not caught: it is red for another reason.

    NotRun is looked up, not imported: its package imports torch, which a gate that never
    raised it (a project without torch) should not pay for in every process."""
    try:
        return (yield)
    except NotImplementedError as exc:
        refusal = sys.modules.get("fidelity.mechanisms.refusal")  # imported by whatever raised a NotRun
        if refusal is None or not isinstance(exc, refusal.NotRun):
            raise
        pytest.skip(f"not run: {exc}")
