"""End to end: `fidelity discover` on a project module whose mechanism declares `[..., H]` calls a
wrong axis a blind spot, not an equivalent (issue 31).

A user's project (the one `fidelity init` writes) with its mechanism's shapes written `[..., H]`, a
letter no size table of fidelity knows, and gates on two-row inputs only (the 1-D ones removed, the generic
gate classes' file among them: its example is the 1-D fixture): on
[rows, H], `dim=-1` and `dim=1` are the same axis, so no gate can see the normaliser moved to dim=1.
Discovery's probes must read the declared shape, give H a size of its own and try a rank-3 input whose
axes all differ, where the two axes part."""
import json
import re

import pytest
from toy_project import fidelity

TWO_ROW_GATES_ONLY = ("test_softmax_at_temperature_two_matches_the_oracle",
                      "test_the_gradient_of_q1_is_the_oracles_at_temperature_two")


def _without_gates(source: str, names) -> str:
    """The gate file less the named gates (each from its first decorator to the gap before the next)."""
    for name in names:
        where = source.index(f"def {name}(")
        start, end = source.rindex("\n\n", 0, where) + 2, source.find("\n\n\n", where)
        source = source[:start] + (source[end + 3:] if end != -1 else "")
    return source


@pytest.fixture(scope="module")
def discovered_axes(tmp_path_factory, perturbed_init_project):
    root = perturbed_init_project.copy(tmp_path_factory.mktemp("axes") / "mypaper")
    mechanism = root / "mypaper" / "mechanism.py"
    text = mechanism.read_text()
    assert text.count('shape="[..., n]"') == 2
    mechanism.write_text(text.replace('shape="[..., n]"', 'shape="[..., H]"'))
    gates = root / "tests" / "gates" / "test_tempered_softmax.py"
    gates.write_text(_without_gates(gates.read_text(), TWO_ROW_GATES_ONLY))
    (root / "tests" / "gates" / "test_tempered_softmax_gate_classes.py").unlink()  # its example is 1-D too
    found = fidelity("discover", "--module", "mypaper.softmax", "--operator", "dim_argument", "--json", cwd=root)
    return found


def test_the_normaliser_on_axis_one_is_a_blind_spot_shown_on_a_rank_three_input(discovered_axes):
    report = json.loads(discovered_axes.stdout)
    moved = [m for m in report["mutants"] if re.fullmatch(r"dim=-1 -> dim=1", m["description"])]
    assert moved, [m["description"] for m in report["mutants"]]
    for m in moved:
        assert m["outcome"] == "blind_spot", (m["outcome"], m["equivalence"])
        witness = m["equivalence"]["witness"]
        assert "two leading axes, every axis its own size" in witness["input"], witness
    assert not [m for m in report["mutants"] if m["outcome"] == "undecided"]
    assert discovered_axes.returncode == 1  # a blind spot
