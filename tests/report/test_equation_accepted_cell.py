"""The Equations table says "accepted by" only for the perturbations of that equation; an equation whose gates
were accepted under other equations' perturbations alone says so, naming them (issue 52 point 5)."""
from fidelity.report.blocks import Document, Table
from fidelity.report.markdown import render
from fidelity.report.sections.equations import accepted_cell


def _cell(**equation) -> str:
    e = {"status": "implemented", "gates": ["t.py::g"], "accepted": True, "accepted_by": [], **equation}
    doc = Document("t")
    doc.add(Table(("accepted",), ((accepted_cell(e),),)))
    return render(doc).splitlines()[-1]


def test_an_equation_its_own_perturbations_accept_names_them():
    cell = _cell(accepted_by=["P3"], gates_accepted_by=["P1", "P3"])
    assert "accepted** by" in cell and "P3" in cell and "P1" not in cell


def test_an_equation_no_perturbation_covers_is_not_said_accepted_by_other_equations_perturbations():
    cell = _cell(accepted_by=[], gates_accepted_by=["P1", "P4"]).replace("**", "")
    assert "accepted by" not in cell and "no perturbation of this equation" in cell and "P1" in cell and "P4" in cell
