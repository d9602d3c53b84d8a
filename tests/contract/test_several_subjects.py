"""`fidelity check --subject A --subject B`: one gate run holds both, and each subject is judged on its own
instances, exactly as a run of it alone judges it (its conformance, its instances, the rows of its gates); the
contract tests share such runs, since each run's fixed cost (an interpreter with torch, a collection) is
most of a small subject's."""
from concurrent.futures import ThreadPoolExecutor

import pytest

from fidelity import project
from fidelity.gaterun.conformance import items_of
from subject_check import check_subject, check_subjects

STACKLESS = "no_t_max_0_adapter:SUBJECT"  # sinkhorn only
STACK = "no_t_max_0_adapter:NO_WIDTH_1_STACK"  # mhc_stack only
FILES = ("test_sinkhorn_contract.py", "test_mhc_stack.py")


@pytest.fixture(scope="module")
def runs() -> tuple[dict, dict]:
    """(ref -> its report from the run of both, ref -> its report from a run of it alone)."""
    with ThreadPoolExecutor(3) as pool:
        together = pool.submit(check_subjects, (STACKLESS, STACK), gate_files=FILES)
        alone = {ref: pool.submit(check_subject, ref, gate_files=FILES) for ref in (STACKLESS, STACK)}
        return together.result(), {ref: run.result() for ref, run in alone.items()}


@pytest.mark.parametrize("ref", [STACKLESS, STACK])
def test_each_subject_of_a_shared_run_is_judged_as_in_a_run_of_it_alone(runs, ref):
    together, alone = runs
    assert together[ref]["conformance"]["instances"], ref  # it ran: the comparison is of something
    assert together[ref]["conformance"] == alone[ref]["conformance"]
    name = together[ref]["conformance"]["subject"]
    held = [row for row in alone[ref]["gates"] if name in row["subjects"]]
    assert held and [row for row in together[ref]["gates"] if name in row["subjects"]] == held
    # the other rows are of gates no subject of the run provides; a run of it alone has those of the others' too
    assert all(row in alone[ref]["gates"] for row in together[ref]["gates"])
    assert together[ref]["ok"] is alone[ref]["ok"] is True


def test_a_shared_run_keeps_the_subjectless_instances_of_a_file_only_for_the_subjects_that_select_it():
    """Instances of no subject (a gate whose mechanism nobody in the run provides) belong to the subjects whose
    own selection holds their file, or to all where the file was run for every subject (a misnamed mechanism)."""
    here = project.current()
    mine, theirs, extra = (here.gates / name for name in ("test_sinkhorn_contract.py", "test_mhc_stack.py",
                                                          "test_misnamed.py"))
    items = [{"nodeid": f"{here.relative(f)}::test_x", "file": here.relative(f), "subject": None}
             for f in (mine, theirs, extra)]
    items += [{"nodeid": f"{here.relative(mine)}::test_y[{s}]", "subject": s} for s in ("a", "b")]
    kept = items_of(items, "a", [mine], [mine, theirs])
    assert [it["nodeid"] for it in kept] == [items[0]["nodeid"], items[2]["nodeid"], items[3]["nodeid"]]
