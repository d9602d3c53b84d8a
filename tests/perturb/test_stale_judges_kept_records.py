"""`fidelity perturb --stale` judges the records it keeps by today's specs, exactly as `fidelity check` does
(issue 50, point 5). In a `fidelity init` project P1 (the temperature dropped) comes to list a gate that a dropped
temperature cannot turn red (no temperature given: T = 1 either way). That gate ran under P1 as a covering gate
and survived; its record is current (P2..P7 stay current). perturb --stale used to keep it and say GREEN while check said RED.

Now the record that ran before the spec listed the gate does not stand for the listed gate: perturb --stale runs
P1 again (exit 1, the listed gate missed), and from then on keeps the current records and is RED by the same
judgement check makes (fidelity.evidence.listed_gates), naming P1 and the gate."""
import json

from toy_project import fidelity

P1_LISTS = "      - tests/gates/test_tempered_softmax.py::test_softmax_at_temperature_two_matches_the_oracle\n"
NO_T = "tests/gates/test_tempered_softmax.py::test_with_no_temperature_given_each_row_is_the_ordinary_softmax_of_that_row"


def _evidence_stage(root):
    """check's evidence stage at `root`, in-process (the gate suite's run adds nothing to a refusal)."""
    from fidelity import project
    from fidelity.check import evidence_stage
    from fidelity.spec import load_catalogue

    here = project.load(root).activate()
    return evidence_stage.run(load_catalogue(here.specs), None, lambda *said: None)


def test_perturb_stale_is_red_naming_p1_and_the_gate_it_now_lists_as_check_is(perturbed_init_project, tmp_path):
    root = perturbed_init_project.copy(tmp_path / "mypaper")
    spec = root / "specs" / "mypaper.yaml"
    text = spec.read_text()
    assert text.count(P1_LISTS) == 1
    spec.write_text(text.replace(P1_LISTS, P1_LISTS + f"      - {NO_T}\n"))

    check = _evidence_stage(root)
    assert not check["ok"] and any(p.startswith(f"perturbation P1 lists gate {NO_T}") for p in check["problems"])

    first = fidelity("perturb", "--stale", cwd=root)  # the record ran before the list named the gate: P1 again
    assert first.returncode == 1, first.stdout[-3000:] + first.stderr[-2000:]
    assert f"MISS P1: listed gate {NO_T} survived" in first.stdout, first.stdout
    assert "6 current (evidence kept, not re-run)" in first.stdout and "1 missed a listed gate" in first.stdout

    again = fidelity("perturb", "--stale", "--json", cwd=root)  # every record current now: kept, and judged
    assert again.returncode == 1, again.stdout[-3000:] + again.stderr[-2000:]
    report = json.loads(again.stdout)
    p1 = next(p for p in report["perturbations"] if p["id"] == "P1")
    assert p1["status"] == "current" and [m["gate"] for m in p1["misses"]] == [NO_T]
    assert p1["misses"][0]["detail"].startswith(f"perturbation P1 lists gate {NO_T}, whose current record under it "
                                                f"reads survived")
    assert all(p["status"] == "current" and not p["misses"] for p in report["perturbations"] if p["id"] != "P1")

    text_run = fidelity("perturb", "--stale", cwd=root)
    check = _evidence_stage(root)
    sentence = f"perturbation P1 lists gate {NO_T}, whose current record under it reads survived"
    assert text_run.returncode == 1 and f"MISS P1: listed gate {NO_T} survived" in text_run.stdout, text_run.stdout
    assert f"P1 ... evidence current, not re-run; RED by today's spec: {sentence}" in text_run.stderr, text_run.stderr
    assert "perturb: RED" in text_run.stdout and "1 missed a listed gate" in text_run.stdout
    assert any(p.startswith(sentence) for p in check["problems"]), check["problems"]
