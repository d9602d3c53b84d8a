"""`fidelity init DIR` writes a project that is green out of the box, and whose gate sees a defect
in the scaffolded implementation by its own assertion."""
import json
import subprocess
import sys

import pytest


def fidelity(*argv, cwd):
    return subprocess.run([sys.executable, "-m", "fidelity", *argv], capture_output=True, text=True, cwd=cwd)


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("scratch")
    init = fidelity("init", "mypaper", cwd=scratch)
    assert init.returncode == 0, init.stderr
    root = scratch / "mypaper"
    perturb = fidelity("perturb", "--all", cwd=root)
    assert perturb.returncode == 0, perturb.stdout + perturb.stderr
    return root


def test_perturb_all_then_check_is_green_in_the_new_project(scaffolded):
    check = fidelity("check", "--json", cwd=scaffolded)
    report = json.loads(check.stdout)
    assert check.returncode == 0 and report["ok"], check.stdout[-3000:]
    assert {s["stage"] for s in report["stages"]} == {"specs", "fixtures", "claims", "code", "gates", "evidence", "discovery"}
    assert [c["verdict"] for c in report["claims"]] == ["confirmed"]
    [gate] = report["gates"]
    assert gate["status"] == "passed" and gate["accepted_by"] == ["P1"]
    assert gate["subjects"]["mypaper"]["passed"] == 2  # float32 and float64 on the CPU


def test_the_fixture_was_made_by_the_scaffolds_own_oracle(scaffolded):
    verify = fidelity("fixtures", "--verify", "--json", cwd=scaffolded)
    assert verify.returncode == 0 and json.loads(verify.stdout)["drifts"] == []
    stored = json.loads((scaffolded / "fixtures" / "mypaper.t2.json").read_text())
    assert stored["oracle"] == "mypaper.oracle.tempered_softmax"
    assert stored["expected"]["q"]["digits"][2].startswith("0.50648039105565402590")  # e^1.5 / (e^.5 + e + e^1.5)


def test_breaking_the_implementation_turns_check_red_by_the_gates_assertion(scaffolded, tmp_path):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(scaffolded, broken)
    impl = broken / "mypaper" / "softmax.py"
    impl.write_text(impl.read_text().replace("z = logits / temperature", "z = logits * temperature"))
    check = fidelity("check", "--json", cwd=broken)
    report = json.loads(check.stdout)
    assert check.returncode == 1 and not report["ok"]
    [gate] = report["gates"]
    assert gate["status"] == "failed"
    messages = [f["message"] for f in gate["failed"]]
    assert messages and all("q at T = 2" in m and "differ beyond" in m for m in messages)  # assert_close's words


def test_init_never_overwrites(scaffolded):
    before = {p: p.read_bytes() for p in scaffolded.rglob("*") if p.is_file()}
    again = fidelity("init", str(scaffolded), "--name", "mypaper", cwd=scaffolded.parent)
    assert again.returncode == 2 and "nothing written" in again.stderr
    assert {p: p.read_bytes() for p in scaffolded.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("name, says", [("torch", "already an importable module"), ("My-Paper", "lower-case")])
def test_a_name_that_cannot_be_used_is_refused_before_anything_is_written(tmp_path, name, says):
    proc = fidelity("init", "p", "--name", name, cwd=tmp_path)
    assert proc.returncode == 2 and says in proc.stderr
    assert not (tmp_path / "p").exists()
