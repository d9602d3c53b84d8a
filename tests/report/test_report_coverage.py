"""The coverage table: per mechanism, the gate classes that hold it, accepted or not, missing or not applicable."""
from types import SimpleNamespace

from fidelity.report import coverage
from fidelity.report.blocks import Document, plain
from fidelity.report.sections.coverage import section as coverage_section

MECHANISMS = {"op": SimpleNamespace(kind="function"), "block": SimpleNamespace(kind="module")}
GATES = {
    "t.py::test_op_is_stateless": {"gate": "t.py::test_op_is_stateless", "mechanism": "op", "gate_class": "stateless",
                                   "accepted": True},
    "t.py::test_block_reach": {"gate": "t.py::test_block_reach", "mechanism": "block", "gate_class": "gradient_reach",
                               "accepted": False},
    "t.py::test_plain": {"gate": "t.py::test_plain", "mechanism": "op", "gate_class": None, "accepted": True},
}


def test_cells_list_each_class_gates_and_which_are_accepted():
    table = coverage.gather(GATES, mechanisms=MECHANISMS, gate_run=True)
    rows = {r["mechanism"]: r["cells"] for r in table["rows"]}
    assert rows["op"]["stateless"] == {"applies": True, "gates": ["t.py::test_op_is_stateless"],
                                       "accepted": ["t.py::test_op_is_stateless"]}
    assert rows["block"]["gradient_reach"]["accepted"] == []
    assert rows["op"]["parameters_alive"]["applies"] is False
    gaps = coverage.missing(table)
    assert ("block", "gradient_reach") in gaps and ("op", "stateless") not in gaps
    assert ("op", "parameters_alive") not in gaps and ("block", "parameters_alive") in gaps


def test_without_a_gate_run_the_table_says_why_it_is_not_shown():
    doc = Document("t")
    coverage_section(doc, {"coverage": coverage.gather(GATES, mechanisms=MECHANISMS, gate_run=False)})
    assert "--no-gates" in " ".join(plain(b.content) for b in doc.blocks if hasattr(b, "content"))


def test_the_rendered_table_marks_missing_and_not_applicable_cells():
    doc = Document("t")
    coverage_section(doc, {"coverage": coverage.gather(GATES, mechanisms=MECHANISMS, gate_run=True)})
    [table] = [b for b in doc.blocks if hasattr(b, "rows")]
    cells = {plain(row[0]): [plain(c) for c in row[1:]] for row in table.rows}
    assert cells["op"][list(coverage.GATE_CLASSES).index("stateless")] == "1 gate, 1 accepted"
    assert cells["op"][list(coverage.GATE_CLASSES).index("parameters_alive")] == "does not apply"
    assert cells["block"][list(coverage.GATE_CLASSES).index("stateless")] == "missing"


def test_a_mechanism_no_gate_names_and_the_project_does_not_declare_is_no_row_of_missing_cells():
    """Issue 33: a user's project listed fidelity's six built-in mechanisms as "missing" in every class."""
    known = {**MECHANISMS, "someone_elses": SimpleNamespace(kind="module"), "declared": SimpleNamespace(kind="function")}
    table = coverage.gather(GATES, mechanisms=known, own=["declared"], gate_run=True)
    assert [r["mechanism"] for r in table["rows"]] == ["block", "declared", "op"]
    assert ("declared", "stateless") in coverage.missing(table)   # declared, ungated: its gaps are shown
