"""A Block AttnRes package whose pseudo-queries start at 0.02 instead of zero (query_init_adapter.py) through
`fidelity check --subject`, as a user runs it: the fixed init is a finding labelled init_through_module under
attnres.init_zero_query, seen through the behaviour (every sublayer of a fresh stack averages its sources),
which needs no parameter name, as well as through the parameters' values; no other gate goes red."""
import pytest

from subject_check import conformance_of

BEHAVIOUR = "tests/gates/test_attnres_block.py::test_pseudo_queries_start_at_zero_so_each_sublayer_averages_its_sources"
VALUES = "tests/gates/test_attnres_module_init.py::test_fresh_block_module_parameters_hold_the_spec_init"


@pytest.fixture(scope="module")
def conformance() -> dict:
    return conformance_of("query_init_adapter", ("SUBJECT",))["SUBJECT"]


def test_a_fixed_non_zero_query_init_is_an_init_finding_seen_through_the_behaviour(conformance):
    eqs = {e["equation"]: e for e in conformance["equations"]}
    init = eqs["attnres.init_zero_query"]
    assert init["verdict"] == "finding"
    behaviour = [f for f in init["findings"] if f["gate"] == BEHAVIOUR]
    assert len(behaviour) == 4  # direct and two_phase, float32 and float64
    assert {f["gate_class"] for f in init["findings"]} == {"init_through_module"}
    assert {f["gate"] for e in eqs.values() for f in e["findings"]} == {BEHAVIOUR, VALUES}
    assert not any(e["errors"] for e in eqs.values())
    assert conformance["failing_instances"] == {"findings": 8, "errors": 0, "differs_from_our_choice": 0}


def test_a_finding_is_listed_under_the_equation_its_instance_checks_not_every_equation_of_its_gate(conformance):
    """test_attnres_module_init.py holds attnres.init_zero_query (queries, output_query) and attnres.rmsnorm_gain
    (gains, output_gain): the queries' findings are the first equation's alone, and the gains pass."""
    eqs = {e["equation"]: e for e in conformance["equations"]}
    assert {f["nodeid"].rsplit("-", 1)[1] for f in eqs["attnres.init_zero_query"]["findings"] if f["gate"] == VALUES} \
        == {"queries]", "output_query]"}
    assert eqs["attnres.rmsnorm_gain"]["verdict"] == "passed", eqs["attnres.rmsnorm_gain"]["findings"]
