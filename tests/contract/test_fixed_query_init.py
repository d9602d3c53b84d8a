"""A Block AttnRes package whose pseudo-queries start at 0.02 instead of zero (query_init_adapter.py) through
`fidelity check --subject`, as a user runs it: the fixed init is a finding labelled init_through_module under
attnres.init_zero_query, seen through the behaviour (every sublayer of a fresh stack averages its sources),
which needs no parameter name, as well as through the parameters' values; no other gate goes red."""
from subject_check import conformance_of

BEHAVIOUR = "tests/gates/test_attnres_block.py::test_pseudo_queries_start_at_zero_so_each_sublayer_averages_its_sources"
VALUES = "tests/gates/test_attnres_module_init.py::test_fresh_block_module_parameters_hold_the_spec_init"


def test_a_fixed_non_zero_query_init_is_an_init_finding_seen_through_the_behaviour():
    conformance = conformance_of("query_init_adapter", ("SUBJECT",))["SUBJECT"]
    eqs = {e["equation"]: e for e in conformance["equations"]}
    init = eqs["attnres.init_zero_query"]
    assert init["verdict"] == "finding"
    behaviour = [f for f in init["findings"] if f["gate"] == BEHAVIOUR]
    assert len(behaviour) == 4  # direct and two_phase, float32 and float64
    assert {f["gate_class"] for f in init["findings"]} == {"init_through_module"}
    assert {f["gate"] for e in eqs.values() for f in e["findings"]} == {BEHAVIOUR, VALUES}
    assert not any(e["errors"] for e in eqs.values())
    assert conformance["failing_instances"] == {"findings": 8, "errors": 0}
