"""A faithful Sinkhorn that rounds otherwise than ours passes the fixture gates: the dual-potential form
(potentials_sinkhorn_adapter.py) through `fidelity check --subject`, as a user runs it. Its float32
SK(10 I + e_01) reads 168 eps on the e^-10 entries, where the gates once allowed 64 and reported POT and
hyper-connections' log-domain Sinkhorn for it (test_sinkhorn_fixtures.py's module doc says why)."""
from subject_check import reports_of

STIFF_GATE = "tests/gates/test_sinkhorn_fixtures.py::test_one_unit_on_an_off_diagonal_logit_moves_h_res_by_order_e_minus_10"


def test_the_dual_potential_form_has_no_finding_in_the_sinkhorn_fixture_gates():
    report = reports_of("potentials_sinkhorn_adapter", ("SUBJECT",),
                        gate_files={"SUBJECT": ("test_sinkhorn_fixtures.py",)})["SUBJECT"]
    instances = report["conformance"]["instances"]
    wrong = [(i["nodeid"], i["reason"]) for i in instances if i["outcome"] not in ("passed", "not run")]
    assert not wrong, wrong
    stiff_f32 = [i for i in instances if i["gate"] == STIFF_GATE and i["inputs"]["device"] == "cpu"
                 and i["inputs"]["backward"] == "autograd" and "-f32" in i["nodeid"]]  # manual: not run, its NotRun
    assert stiff_f32 and all(i["outcome"] == "passed" for i in stiff_f32), stiff_f32
