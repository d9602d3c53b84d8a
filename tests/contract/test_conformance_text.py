"""The text conformance report keeps what a reader needs: expected and got, every not-run reason, errors."""
from fidelity.gaterun.conformance import SHOWN_PER_EQUATION, text_lines

LONG = ("M(t_max) at n = 16: 3 of 256 elements differ beyond 24 x eps(float32) = 2.86e-06 relative, floor 1; "
        "worst at index (3, 4): got 0.062500123456789, expected 0.0624999999999, |diff| 1.2e-07, relative 2e-06")


def _equation(findings=0, errors=0, reasons=()):
    return {"equation": "mhc.eq9", "verdict": "finding" if findings else "error" if errors else "passed",
            "findings": [{"nodeid": f"g[{i}]", "full_message": LONG + "\nsecond line", "message": LONG}
                         for i in range(findings)],
            "errors": [{"nodeid": f"e[{i}]", "exc_type": "ValueError", "message": "bad n\nmore",
                        "raised_in": "pkg/ops.py:3"} for i in range(errors)],
            "instances": {"not_run": len(reasons)}, "not_run_reasons": list(reasons)}


def test_a_long_finding_keeps_expected_and_got():
    text = "\n".join(text_lines(_equation(findings=1)))
    assert "got 0.062500123456789, expected 0.0624999999999" in text and len(LONG) > 160


def test_every_distinct_not_run_reason_is_listed():
    text = "\n".join(text_lines(_equation(reasons=("not run: no CUDA device", "no 'manual' backward", "no float16"))))
    assert all(r in text for r in ("no CUDA device", "no 'manual' backward", "no float16"))


def test_errors_show_type_message_and_where_and_overflow_points_to_json():
    lines = text_lines(_equation(errors=SHOWN_PER_EQUATION + 2))
    assert "ValueError: bad n (raised in pkg/ops.py:3)" in lines[1]
    assert lines[-1].strip() == "and 2 more errors; see --json"


class _Catalogue:
    """The two equations a toy gate holds, as the spec catalogue gives them to equation_verdicts."""

    def __init__(self, *ids, placements=()):
        from types import SimpleNamespace

        def item(i):
            data = {"kind": "placement"} if i in placements else {}
            return SimpleNamespace(id=i, paper=i.split(".")[0], get=lambda key, default=None: data.get(key, default))
        self.equations = {i: item(i) for i in ids}  # no tier: a paper statement, never our choice


def test_a_finding_whose_instance_names_its_equations_is_listed_under_those_alone():
    from fidelity.gaterun.conformance import equation_verdicts

    failed = [{"nodeid": "g[queries]", "message": "queries != 0", "outcome": "finding", "checks": ["p.init"]},
              {"nodeid": "g[other]", "message": "off", "outcome": "finding", "checks": []}]
    gate = {"gate": "g", "equations": ["p.gain", "p.init"], "gate_class": "init_through_module", "failed": failed,
            "subjects": {"pkg": {"status": "failed", "passed": 2, "not_run": 0, "not_run_reasons": []}}}
    verdicts = {v["equation"]: v for v in equation_verdicts(_Catalogue("p.init", "p.gain"), [gate], "pkg")}
    assert [f["nodeid"] for f in verdicts["p.init"]["findings"]] == ["g[queries]", "g[other]"]
    assert [f["nodeid"] for f in verdicts["p.gain"]["findings"]] == ["g[other]"]  # no checks: every equation of its gate


def _row(gate: str, equations: list[str], *, failed=(), ran_alone=None, passed=0, not_run=0) -> dict:
    status = "failed" if failed else "passed" if passed else "not run"
    return {"gate": gate, "equations": equations, "gate_class": None, "failed": list(failed),
            "subjects": {"pkg": {"status": status, "passed": passed, "not_run": not_run, "not_run_reasons": [],
                                 "ran_alone": ran_alone or {}}}}


def test_a_finding_is_not_listed_under_a_path_every_instance_of_which_the_subject_refused():
    """The subject refused every instance that exercises p.sliced alone: a width-0 acceptance found by a gate
    holding p.eq3 and p.sliced is a finding under p.eq3, not under a layout the package does not have."""
    from fidelity.gaterun.conformance import equation_verdicts, paths_not_run

    width = _row("contract", ["p.eq3", "p.sliced"],
                 failed=[{"nodeid": "contract[width_0]", "message": "built", "outcome": "finding", "checks": []}],
                 passed=3)
    sliced_alone = _row("sliced_only", ["p.sliced"], ran_alone={"p.sliced": False}, not_run=2)
    cat = _Catalogue("p.eq3", "p.sliced", placements=("p.sliced",))
    assert paths_not_run(cat, [width, sliced_alone], "pkg") == {"p.sliced"}
    verdicts = {v["equation"]: v for v in equation_verdicts(cat, [width, sliced_alone], "pkg")}
    assert [f["nodeid"] for f in verdicts["p.eq3"]["findings"]] == ["contract[width_0]"]
    assert verdicts["p.sliced"]["findings"] == [] and verdicts["p.sliced"]["verdict"] == "not run"


def test_a_path_the_subject_ran_alone_once_keeps_its_findings():
    from fidelity.gaterun.conformance import equation_verdicts

    width = _row("contract", ["p.eq3", "p.sliced"],
                 failed=[{"nodeid": "contract[width_0]", "message": "built", "outcome": "finding", "checks": []}])
    sliced_alone = _row("sliced_only", ["p.sliced"], ran_alone={"p.sliced": True}, passed=1)
    cat = _Catalogue("p.eq3", "p.sliced", placements=("p.sliced",))
    verdicts = {v["equation"]: v for v in equation_verdicts(cat, [width, sliced_alone], "pkg")}
    assert [f["nodeid"] for f in verdicts["p.sliced"]["findings"]] == ["contract[width_0]"]


def test_a_finding_on_paths_all_lacked_stays_under_every_equation_of_its_gate():
    """Never lose a finding: where every equation of its attribution is lacked, it stays under all of them."""
    from fidelity.gaterun.conformance import checked

    assert checked({"checks": []}, {"equations": ["p.a", "p.b"]}, frozenset({"p.a", "p.b"})) == ["p.a", "p.b"]


def test_state_kept_between_calls_is_said_first_as_a_cause():
    from fidelity.gaterun.conformance import cause_lines, causes_found

    verdicts = [{"equation": "p.eq9", "verdict": "finding"}, {"equation": "p.stateless", "verdict": "finding"},
                {"equation": "q.stateless", "verdict": "passed"}]
    assert causes_found(verdicts) == ["p.stateless"]
    (line,) = cause_lines(["p.stateless"])
    assert line.startswith("cause     p.stateless: the subject keeps state between calls")


def test_an_option_refused_or_a_mechanism_not_provided_is_no_missing_path():
    """Only a placement (a layout) can be a path the subject lacks: an item whose lone instances were refused as an
    option (an init the package does not offer) keeps the findings and differences of the instances that hold it."""
    from fidelity.gaterun.conformance import paths_not_run

    init_alone = _row("init_option", ["p.init"], ran_alone={"p.init": False}, not_run=2)
    assert paths_not_run(_Catalogue("p.init"), [init_alone], "pkg") == frozenset()
