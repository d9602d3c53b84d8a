"""The mechanism declarations: their docs cannot drift from our implementation or our gates, the
registry is open (entry points, references) and says clearly what is wrong, and the CLI shows them."""
from __future__ import annotations

import dataclasses
import inspect
import json
import textwrap
import typing
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from fidelity.cli import main
from fidelity.impl import torch as ref
from fidelity.mechanisms import Capability, Mechanism, MechanismLoadError, NotRun, known_mechanisms, load_mechanism
from fidelity.mechanisms import undeclared_mechanisms
from fidelity.mechanisms.docs import as_dict, render_text
from fidelity.mechanisms.introspect import call_parameters, describe_protocol, named_parameters
from fidelity.mechanisms.loop_model import LoopConfigRecord
from fidelity.mechanisms.registry import ENTRY_POINT_GROUP, project_mechanisms
from fidelity.subjects.subject import Subject
from fidelity.subjects.torch_reference import SUBJECT as TORCH

REPO = Path(__file__).resolve().parents[2]
BUILTIN = known_mechanisms()


def _signature(params: list[inspect.Parameter]) -> list[tuple]:
    return [(p.name, p.kind, p.default) for p in params]


# ---------------------------------------------------------------- docs against the torch reference


@pytest.mark.parametrize("name", sorted(TORCH.mechanisms))
def test_the_interface_signature_is_the_torch_references(name):
    """Every argument / constructor keyword of our reference, its kind and its default, is documented, and
    nothing else is (a keyword added to the reference, or a default changed, fails here)."""
    impl = TORCH.get(name)
    impl_params = call_parameters(impl.__init__ if isinstance(impl, type) else impl)
    documented = call_parameters(BUILTIN[name].interface.__call__)
    assert _signature(documented) == _signature(impl_params)


def _shape(expr: str, sizes: dict[str, int]) -> tuple[int, ...]:
    """'[nC, n*n]' with sizes -> (6, 4); '[]' -> ()."""
    body = expr.strip()[1:-1].strip()
    return tuple(int(eval(dim, {"__builtins__": {}}, sizes)) for dim in body.split(",")) if body else ()


def _check_parameters(module: torch.nn.Module, protocol: type, holds, sizes_of) -> None:
    """named_parameters() of `module` has exactly the documented names whose conditions `holds`, each of its
    documented shape (`sizes_of(name)` gives the letters' values for that name)."""
    documented = {n: p for n, p, when in named_parameters(protocol) if all(holds(k, v) for k, v in when.items())}
    got = dict(module.named_parameters())
    assert sorted(got) == sorted(documented)
    for n, p in documented.items():
        assert tuple(got[n].shape) == _shape(p.shape, sizes_of(n)), n


def _documented(mechanism: str) -> set[str]:
    return {n for n, _, _ in named_parameters(BUILTIN[mechanism].module_interface)}


@pytest.mark.parametrize("learned_gain", [False, True])
def test_block_attnres_parameters_are_the_documented_ones(learned_gain):
    L, d, N = 5, 3, 2
    module = ref.BlockAttnRes([torch.tanh] * L, d, N, learned_gain=learned_gain)
    _check_parameters(module, BUILTIN["block_attnres"].module_interface,
                      lambda k, v: {"learned_gain": learned_gain}[k] == v, lambda _: {"L": L, "d": d})
    assert {"gains", "output_gain"} <= _documented("block_attnres")


@pytest.mark.parametrize("layout", ["paper", "sliced"])
def test_mhc_residual_parameters_are_the_documented_ones(layout):
    n, C = 3, 2
    module = ref.MhcResidual(n, C, layout=layout)
    _check_parameters(module, BUILTIN["mhc_residual"].module_interface, lambda k, v: False,
                      lambda _: {"n": n, "C": C, "nC": n * C})


@pytest.mark.parametrize("dynamic", [False, True])
def test_hyper_connection_parameters_are_the_documented_ones(dynamic):
    n, d = 3, 4
    module = ref.HyperConnection(n, d, 1, dynamic=dynamic)
    _check_parameters(module, BUILTIN["hyper_connection"].module_interface,
                      lambda k, v: {"dynamic": dynamic}[k] == v, lambda _: {"n": n, "d": d})
    assert {"dynamic_alpha_fn", "layer_norm.weight", "layer_norm.bias"} <= _documented("hyper_connection")


@pytest.mark.parametrize("hc_dynamic", [False, True])
@pytest.mark.parametrize("layout", ["paper", "sliced"])
def test_loop_model_parameters_are_the_documented_ones(layout, hc_dynamic):
    """mhc.* and hc.* use the child mechanisms' letters with the loop's sizes (distinct n for each arm)."""
    cfg = ref.LoopConfig(vocab=5, d=6, T=4, mhc_streams=2, mhc_layout=layout, hc_streams=3, hc_dynamic=hc_dynamic,
                         hidden_mult=3)
    model = ref.LoopModel(cfg, torch.Generator().manual_seed(0))
    C = cfg.d // cfg.mhc_streams if layout == "sliced" else cfg.d

    def sizes_of(name: str) -> dict[str, int]:
        if name.startswith("mhc."):
            return {"n": cfg.mhc_streams, "C": C, "nC": cfg.mhc_streams * C}
        if name.startswith("hc."):
            return {"n": cfg.hc_streams, "d": cfg.d}
        return {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)} | {"hd": cfg.hidden_mult * cfg.d}

    _check_parameters(model, BUILTIN["loop_model"].module_interface,
                      lambda k, v: {"hc.dynamic": hc_dynamic}[k] == v, sizes_of)


def _built_modules():
    g = torch.Generator().manual_seed(0)
    return {
        "block_attnres": ref.BlockAttnRes([torch.tanh] * 3, 4, 3),
        "mhc_residual": ref.MhcResidual(2, 3),
        "hyper_connection": ref.HyperConnection(2, 3, 0),
        "loop_model": ref.LoopModel(ref.LoopConfig(), g),
    }


@pytest.mark.parametrize("name", ["block_attnres", "mhc_residual", "hyper_connection", "loop_model"])
def test_every_documented_attribute_and_method_exists_on_the_reference(name):
    module = _built_modules()[name]
    record = describe_protocol(BUILTIN[name].module_interface)
    members = [m["name"] for m in record["methods"]] + [a["name"] for a in record["attributes"]]
    members += [s["name"] for s in record["submodules"]]
    missing = [m for m in members if not hasattr(module, m)]
    assert not missing
    for m in record["methods"]:  # the documented arguments are the method's own, defaults included
        impl = call_parameters(getattr(type(module), m["name"]))
        assert [(p.name, None if p.default is inspect.Parameter.empty else repr(p.default)) for p in impl] == \
               [(a["name"], a["default"]) for a in m["arguments"]], m["name"]


def test_loop_config_record_is_the_reference_config_and_the_factory_annotates_it():
    """The gates build the config from get_type_hints(factory.__init__)['config']: the documented fields are
    LoopConfig's, name for name and default for default."""
    assert typing.get_type_hints(ref.LoopModel.__init__)["config"] is ref.LoopConfig
    fields = [(a["name"], a["default"]) for a in describe_protocol(LoopConfigRecord)["attributes"]]
    assert fields == [(f.name, repr(f.default)) for f in dataclasses.fields(ref.LoopConfig)]


def test_the_reference_provides_exactly_the_builtin_mechanisms_and_each_kind_matches():
    assert set(TORCH.mechanisms) == set(BUILTIN)
    for name, mechanism in BUILTIN.items():
        assert isinstance(TORCH.get(name), type) == (mechanism.kind == "module"), name


# ---------------------------------------------------------------- docs against the gates


def _gate_equations() -> dict[str, set[str]]:
    """mechanism -> the equations of every gate in tests/gates that declares it (from the markers of the
    imported gate modules, so equations built from constants and imported names count as pytest sees them)."""
    import importlib.util
    import sys

    gates_dir = REPO / "tests" / "gates"
    found: dict[str, set[str]] = {}
    sys.path.insert(0, str(gates_dir))  # the gates' shared helpers (mhc_module_point, ...) import by name
    try:
        for path in sorted(gates_dir.glob("test_*.py")):
            spec = importlib.util.spec_from_file_location(f"_gates_{path.stem}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            for fn in vars(module).values():
                for mark in getattr(fn, "pytestmark", []):
                    if mark.name == "gate" and "mechanism" in mark.kwargs:
                        found.setdefault(mark.kwargs["mechanism"], set()).update(mark.kwargs["equations"])
    finally:
        sys.path.remove(str(gates_dir))
    return found


def test_each_builtin_lists_exactly_the_equations_its_gates_hold():
    gates = _gate_equations()
    assert set(gates) == set(BUILTIN)
    for name, mechanism in BUILTIN.items():
        assert set(mechanism.equations) == gates[name], name
        assert len(mechanism.equations) == len(set(mechanism.equations)), f"{name}: an equation listed twice"


# ---------------------------------------------------------------- the renderer


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_text_and_json_name_every_argument_and_parameter(name):
    mechanism = BUILTIN[name]
    record = as_dict(mechanism)
    assert json.loads(json.dumps(record)) == record
    text = render_text(mechanism)
    args = [p.name for p in call_parameters(mechanism.interface.__call__)]
    assert [a["name"] for a in record["interface"]["call"]["arguments"]] == args
    for arg in args:
        assert f"\n    {arg} " in text, arg
    for eq in mechanism.equations:
        assert eq in text
    if mechanism.module_interface is not None:
        names = [p["name"] for p in record["module"]["named_parameters"]]
        assert names == [n for n, _, _ in named_parameters(mechanism.module_interface)]
        for n in names:
            assert f"\n    {n} " in text, n


def test_shapes_defaults_and_conditions_come_from_the_protocol():
    sk = as_dict(BUILTIN["sinkhorn"])["interface"]["call"]
    logits, t_max, backward = sk["arguments"]
    assert (logits["shape"], logits["required"], logits["kind"]) == ("[..., n, n]", True, "positional")
    assert (t_max["default"], t_max["kind"]) == ("20", "keyword") and backward["default"] == "'autograd'"
    assert sk["returns"]["shape"] == "[..., n, n]"
    hc = as_dict(BUILTIN["hyper_connection"])["module"]
    by_name = {p["name"]: p for p in hc["named_parameters"]}
    assert by_name["layer_norm.weight"]["when"] == {"dynamic": True} and by_name["static_alpha"]["when"] == {}
    loop = as_dict(BUILTIN["loop_model"])
    assert {t["name"]: t["see_mechanism"] for t in loop["types"]} == {
        "LoopConfigRecord": None, "MhcResidualModule": "mhc_residual", "HyperConnectionModule": "hyper_connection"}
    assert "fidelity show mechanism:mhc_residual" in render_text(BUILTIN["loop_model"])


# ---------------------------------------------------------------- the registry

TOY = textwrap.dedent('''\
    from typing import Annotated, Protocol

    import torch

    from fidelity.mechanisms import Mechanism
    from fidelity.mechanisms.markers import Doc


    class Scale(Protocol):
        """y = fn(x, factor=): x times a factor."""

        def __call__(self, x: Annotated[torch.Tensor, Doc("the input", shape="[..., d]")], *,
                     factor: Annotated[float, Doc("the factor")] = 2.0) -> torch.Tensor:
            ...


    MECHANISM = Mechanism(name="{name}", summary="x times a factor", kind="function", interface=Scale,
                          module_interface=None, equations=("toy.eq1",))
    NOT_A_MECHANISM = 3
    ''')


@pytest.fixture
def toy(tmp_path, monkeypatch, request):
    """A module `toy_mech_<test>` on sys.path declaring a mechanism `toy_scale`; returns its module name."""
    module = f"toy_mech_{request.node.name.replace('[', '_').replace(']', '').replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(TOY.format(name="toy_scale"))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield module
    import sys
    sys.modules.pop(module, None)


def _install_entry_point(tmp_path: Path, name: str, value: str) -> None:
    dist = tmp_path / "toy_mech_dist-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-mech-dist\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{name} = {value}\n")


def test_an_extra_reference_adds_a_mechanism_and_keeps_the_builtins(toy):
    known = known_mechanisms([f"{toy}:MECHANISM"])
    assert set(known) == set(BUILTIN) | {"toy_scale"}
    assert known["toy_scale"].interface.__name__ == "Scale"
    assert "factor" in render_text(known["toy_scale"])
    assert "toy_scale" in project_mechanisms(SimpleNamespace(mechanisms=[f"{toy}:MECHANISM"]))
    assert "toy_scale" not in project_mechanisms(None)


def test_an_installed_entry_point_declares_a_mechanism(toy, tmp_path):
    _install_entry_point(tmp_path, "toy_scale", f"{toy}:MECHANISM")
    known = known_mechanisms()
    assert "toy_scale" in known and known["toy_scale"].equations == ("toy.eq1",)


def test_an_entry_point_named_unlike_its_mechanism_is_an_error(toy, tmp_path):
    _install_entry_point(tmp_path, "other_name", f"{toy}:MECHANISM")
    with pytest.raises(MechanismLoadError, match="entry point 'other_name'.*named 'toy_scale'"):
        known_mechanisms()


@pytest.mark.parametrize("suffix, reason", [
    ("", "is not of the form module:object"),
    (":NO_SUCH_NAME", "has no attribute 'NO_SUCH_NAME'"),
    (":NOT_A_MECHANISM", "is a int, not a fidelity.mechanisms.Mechanism"),
])
def test_a_bad_reference_is_a_clear_error_naming_it(toy, suffix, reason):
    ref = f"{toy}{suffix}"
    with pytest.raises(MechanismLoadError) as err:
        known_mechanisms([ref])
    assert repr(ref) in str(err.value) and reason in str(err.value)


def test_a_missing_module_and_a_name_declared_twice_are_clear_errors(toy, tmp_path):
    with pytest.raises(MechanismLoadError, match="module 'no_such_module_xyz' does not import: ModuleNotFound"):
        load_mechanism("no_such_module_xyz:MECHANISM")
    (tmp_path / f"{toy}_sinkhorn.py").write_text(TOY.format(name="sinkhorn"))
    with pytest.raises(MechanismLoadError, match="'sinkhorn' is declared twice: by built-in"):
        known_mechanisms([f"{toy}_sinkhorn:MECHANISM"])


def test_a_mechanism_record_refuses_what_is_inconsistent():
    iface = BUILTIN["sinkhorn"].interface
    with pytest.raises(ValueError, match="needs a module_interface"):
        Mechanism("x", "one line", "module", iface, None, ())
    with pytest.raises(ValueError, match="identifier"):
        Mechanism("not a name", "one line", "function", iface, None, ())
    with pytest.raises(TypeError, match="sequence of ids"):
        Mechanism("x", "one line", "function", iface, None, "mhc.eq9")


# ---------------------------------------------------------------- subjects: open names, declared capabilities


def _subject(mechanisms, capabilities) -> Subject:
    return Subject(name="toy", description="a toy", mechanisms=mechanisms, capabilities=capabilities,
                   unavailable_reason=lambda: None)


def test_a_subject_may_provide_an_undeclared_mechanism_and_callers_can_list_it():
    cap = Capability(("float32",), ("cpu",), ("none",))
    s = _subject({"sinkhorn": abs, "my_op": abs}, {"sinkhorn": cap, "my_op": cap})
    assert undeclared_mechanisms(s.mechanisms) == ["my_op"]
    assert undeclared_mechanisms(s.mechanisms, {**BUILTIN, "my_op": BUILTIN["sinkhorn"]}) == []
    assert s.supports("my_op") and not s.supports("my_op", "autograd") and s.capabilities["my_op"].routes == ()


def test_supports_reads_the_capability():
    s = _subject({"sinkhorn": abs}, {"sinkhorn": Capability(("float32", "float64"), ("cuda",), ("manual",))})
    assert s.supports("sinkhorn", "manual") and not s.supports("sinkhorn", "autograd")
    assert s.supports("sinkhorn", dtype=torch.float64) and not s.supports("sinkhorn", dtype=torch.float16)
    assert s.supports("sinkhorn", device="cuda:1") and not s.supports("sinkhorn", device=torch.device("cpu"))
    assert not s.supports("depth_attention")
    with pytest.raises(NotRun, match="does not implement 'depth_attention'"):
        s.get("depth_attention")


def test_a_subject_must_declare_a_capability_per_mechanism():
    cap = Capability(("float32",), ("cpu",), ("autograd",))
    assert _subject({"sinkhorn": abs}, {"sinkhorn": cap}).problems() == []
    [problem] = _subject({"sinkhorn": abs}, {}).problems()
    assert "no capabilities declared for ['sinkhorn']" in problem
    [problem] = _subject({"sinkhorn": abs}, {"sinkhorn": cap, "mhc_residual": cap}).problems()
    assert "which it does not provide" in problem
    [problem] = _subject({"sinkhorn": abs}, {"sinkhorn": ("autograd",)}).problems()
    assert "not a fidelity.mechanisms.Capability" in problem


@pytest.mark.parametrize("kwargs, match", [
    (dict(dtypes=("float33",), devices=("cpu",), backward=("autograd",)), "not a torch dtype name"),
    (dict(dtypes=("float32",), devices=("gpu",), backward=("autograd",)), "not a device type"),
    (dict(dtypes=("float32",), devices=("cuda:0",), backward=("autograd",)), "not a device type"),
    (dict(dtypes=("float32",), devices=("cpu",), backward=("autograd", "none")), "unknown routes"),
    (dict(dtypes="float32", devices=("cpu",), backward=("autograd",)), "non-empty tuple"),
    (dict(dtypes=("float32",), devices=("cpu",), backward=()), "non-empty tuple"),
    (dict(dtypes=("float32",), devices=("cpu",), backward=("autograd",), lacks="gain"), "tuple of parameter names"),
    (dict(dtypes=("float32",), devices=("cpu",), backward=("autograd",), lacks=("learned gain",)),
     "tuple of parameter names"),
])
def test_a_capability_names_each_unknown_name_among_its_problems(kwargs, match):
    [problem] = Capability(**kwargs).problems
    assert match in problem
    [named] = _subject({"sinkhorn": abs}, {"sinkhorn": Capability(**kwargs)}).problems()
    assert named.startswith("the capability of 'sinkhorn': ") and match in named


# ---------------------------------------------------------------- the CLI


def _cli(capsys, monkeypatch, *argv):
    monkeypatch.chdir(REPO)
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_mechanisms_has_one_row_per_mechanism(capsys, monkeypatch):
    code, out, _ = _cli(capsys, monkeypatch, "list", "mechanisms", "--json")
    rows = json.loads(out)
    assert code == 0 and [r["name"] for r in rows] == list(BUILTIN)
    assert rows[1] == {"name": "sinkhorn", "kind": "function", "equations": list(BUILTIN["sinkhorn"].equations),
                       "summary": BUILTIN["sinkhorn"].summary}
    code, out, _ = _cli(capsys, monkeypatch, "list", "mechanisms", "--paper", "hc", "--json")
    assert code == 0 and [r["name"] for r in json.loads(out)] == ["hyper_connection", "loop_model", "hc_stack"]
    code, out, _ = _cli(capsys, monkeypatch, "list", "mechanisms")
    assert code == 0 and "8 mechanisms" in out
    assert all(any(line.startswith(f"{name} ") for line in out.splitlines()) for name in BUILTIN)


def test_show_mechanism_prints_its_docs_as_text_and_json(capsys, monkeypatch):
    code, out, _ = _cli(capsys, monkeypatch, "show", "mechanism:mhc_residual")
    assert code == 0 and out == render_text(BUILTIN["mhc_residual"])
    code, out, _ = _cli(capsys, monkeypatch, "show", "mechanism:mhc_residual", "--json")
    assert code == 0 and json.loads(out) == as_dict(BUILTIN["mhc_residual"])


def test_show_an_unknown_mechanism_exits_2_listing_the_known_ones(capsys, monkeypatch):
    with pytest.raises(SystemExit) as exit_:
        _cli(capsys, monkeypatch, "show", "mechanism:no_such")
    _, err = capsys.readouterr()
    assert exit_.value.code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "no mechanism named 'no_such'" in lines[0]
    assert all(name in lines[0] for name in BUILTIN)


def test_show_keeps_showing_spec_items(capsys, monkeypatch):
    code, out, _ = _cli(capsys, monkeypatch, "show", "mhc.eq9", "--json")
    assert code == 0 and json.loads(out)["id"] == "mhc.eq9"
