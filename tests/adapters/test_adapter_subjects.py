"""The adapter SUBJECT objects are valid subjects, import lazily, and say why they cannot run."""
import subprocess
import sys

import pytest
import torch

from fidelity.adapters import attn_res, hyper_connections, pot
from fidelity.adapters._common import INSTALL_HINT, unavailable
from fidelity.targets.locate import find_source
from fidelity.mechanisms import undeclared_mechanisms
from fidelity.subjects.registry import load_reference
from fidelity.subjects.subject import NotRun, Subject

SUBJECTS = {
    "fidelity.adapters.hyper_connections:SUBJECT": (
        "hyper-connections", {"sinkhorn", "mhc_residual", "hyper_connection", "hc_stack", "mhc_stack"}),
    "fidelity.adapters.hyper_connections:LOG_DOMAIN_SUBJECT": (
        "hyper-connections-log", {"sinkhorn", "mhc_residual", "hyper_connection", "hc_stack", "mhc_stack"}),
    "fidelity.adapters.attn_res:SUBJECT": ("attn-res", {"depth_attention", "block_attnres"}),
    "fidelity.adapters.pot:SUBJECT": ("pot", {"sinkhorn"}),
}
PACKAGES = {"hyper-connections": "hyper_connections", "hyper-connections-log": "hyper_connections",
            "attn-res": "attn_res", "pot": "ot"}


@pytest.mark.parametrize("ref", sorted(SUBJECTS))
def test_subject_is_valid_and_loads_through_the_registry(ref):
    subject = load_reference(ref)  # what FIDELITY_SUBJECTS / --subject / the entry point group do
    name, mechanisms = SUBJECTS[ref]
    assert isinstance(subject, Subject) and subject.name == name and subject.description
    assert set(subject.mechanisms) == mechanisms and undeclared_mechanisms(subject.mechanisms) == []
    for mech in mechanisms:
        assert callable(subject.get(mech))
        assert subject.capabilities[mech].backward == ("autograd",), "no package here ships a hand-written backward"
        assert subject.supports(mech, "autograd") and not subject.supports(mech, "manual")
        assert subject.supports(mech, dtype="float32") and not subject.supports(mech, dtype="bfloat16")
        modules = subject.modules[mech]
        assert modules and all(m.split(".")[0] == PACKAGES[name] for m in modules), "modules name the PACKAGE's code"
    reason = subject.unavailable_reason()
    assert reason is None or reason == f"package {name.removesuffix('-log')} not installed ({INSTALL_HINT})"


@pytest.mark.parametrize("ref", sorted(SUBJECTS))
def test_declared_modules_are_patchable_source_files(ref):
    """The perturbation runner patches these files: each must resolve to Python source, without importing it."""
    subject = load_reference(ref)
    if subject.unavailable_reason() is not None:
        pytest.skip(subject.unavailable_reason())
    for modules in subject.modules.values():
        for module in modules:
            assert find_source(module, sys.path).endswith(".py")


def test_importing_an_adapter_imports_no_package():
    code = (
        "import sys\n"
        "import fidelity.adapters.hyper_connections, fidelity.adapters.attn_res, fidelity.adapters.pot\n"
        "loaded = [m for m in ('hyper_connections', 'attn_res', 'ot') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_missing_package_is_reported_with_the_install_hint():
    reason = unavailable("no-such-dist", "no_such_module_for_fidelity_tests")()
    assert reason == f"package no-such-dist not installed ({INSTALL_HINT})"
    # a package that is present but whose submodule is missing is "does not import", not "not installed"
    broken = unavailable("pytest", "pytest.no_such_submodule_for_fidelity_tests")()
    assert broken is not None and broken.startswith("package pytest does not import: ModuleNotFoundError")


def test_module_constants_agree_with_the_subjects():
    assert hyper_connections.SUBJECT.modules["mhc_residual"] == (hyper_connections.MHC_MODULE,)
    assert attn_res.SUBJECT.modules["block_attnres"] == (attn_res.MAIN,)
    assert pot.SUBJECT.modules["sinkhorn"][0] == pot.SINKHORN_MODULE


# What each package computes in (read from its source; see each adapter's docstring): float32 only
# where it calls .float() inside, both dtypes where it computes in its input's dtype.
DTYPES = {
    ("hyper-connections", "sinkhorn"): ("float32",), ("hyper-connections", "mhc_residual"): ("float32",),
    ("hyper-connections", "hyper_connection"): ("float32", "float64"),
    ("hyper-connections", "hc_stack"): ("float32", "float64"), ("hyper-connections", "mhc_stack"): ("float32",),
    ("attn-res", "depth_attention"): ("float32",), ("attn-res", "block_attnres"): ("float32",),
    ("pot", "sinkhorn"): ("float32", "float64"),
}


@pytest.mark.parametrize("ref", sorted(SUBJECTS))
def test_declared_dtypes_are_what_the_package_computes_in(ref):
    subject = load_reference(ref)
    base = subject.name.removesuffix("-log")
    for mech, capability in subject.capabilities.items():
        assert capability.dtypes == DTYPES[(base, mech)], (subject.name, mech)
        assert capability.devices == ("cpu", "cuda")


def test_a_float32_only_adapter_refuses_float64_with_not_run():
    """The declared capability and the refusal agree: outside the dtypes, the call is NotRun (not run)."""
    sk = hyper_connections.SUBJECT.get("sinkhorn")
    assert not hyper_connections.SUBJECT.supports("sinkhorn", dtype=torch.float64)
    if hyper_connections.SUBJECT.unavailable_reason() is None:
        with pytest.raises(NotRun, match="only float32"):
            sk(torch.zeros(2, 2, dtype=torch.float64))


def test_a_subject_asked_for_by_name_loads_that_subject_alone_and_an_unknown_name_lists_every_one(monkeypatch):
    """perturb resolves the subject of each third-party group by name: loading every project subject for it
    (torch, Triton) cost `perturb --stale` 2.5 s with nothing to run."""
    from fidelity.subjects import registry

    loaded, real = [], registry.load_reference
    monkeypatch.setattr(registry, "load_reference", lambda ref: loaded.append(ref) or real(ref))
    ref, subject = registry.resolve("attn-res")
    assert (ref, subject.name, loaded) == ("fidelity.adapters.attn_res:SUBJECT", "attn-res", [ref])
    with pytest.raises(registry.SubjectLoadError, match=r"no subject named 'nobody'; known: .*torch.*attn-res"):
        registry.resolve("nobody")
