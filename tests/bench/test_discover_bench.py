"""The pieces of fidelity.bench.discover_bench that can be checked without the whole benchmark.

The mutmut half is run for real, once, on a toy package in tmp_path with a one-line test per
function (about 10-20 s: mutmut's fork server, stats and clean runs), in `--quick` form, so the
name patterns, the copy, the copy's [tool.mutmut] table and the reading of `mutmut results`
are all exercised. The discover half runs against a stub command that prints the JSON shape
`fidelity discover --json` gives. Needs mutmut (the `bench` extra); skipped without it.
"""
from __future__ import annotations

import json
import sys
import textwrap
from fidelity.project import tomllib  # tomli on Python 3.10
from pathlib import Path

import pytest

from fidelity.bench import discover_bench as bench

TOY_SOURCE = textwrap.dedent("""
    import functools


    def add(a, b):
        return a + b


    def scale(x, factor=2):
        return x * factor


    class Box:
        def size(self, n):
            return n - 1


    @functools.lru_cache(maxsize=None)
    def cached(n):
        return n + 1
""")

TOY_TESTS = textwrap.dedent("""
    from toypkg.calc import Box, add, cached, scale


    def test_add():
        assert add(2, 3) == 5


    def test_scale():
        assert scale(3, 2) == 6


    def test_box():
        Box().size(3)


    def test_cached():
        assert cached(1) == 2
""")


def _toy_project(root: Path) -> Path:
    (root / "toypkg").mkdir(parents=True)
    (root / "toypkg" / "__init__.py").write_text("")
    (root / "toypkg" / "calc.py").write_text(TOY_SOURCE)
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(TOY_TESTS)
    (root / "pyproject.toml").write_text('[project]\nname = "toy"\nversion = "0"\n\n[tool.mutmut]\ndebug = true\n')
    (root / ".git").mkdir()  # left out of the copy
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return root


def test_the_copys_config_replaces_any_mutmut_table_and_keeps_the_rest(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\n\n[tool.mutmut]\ndebug = true\n\n[tool.other]\nkeep = 1\n')
    table = bench.mutmut_config(["fidelity/impl/torch/sinkhorn.py"], source_paths=["fidelity"],
                                tests=["tests/gates"])
    bench.write_mutmut_config(pyproject, table)
    data = tomllib.loads(pyproject.read_text())
    assert data["project"] == {"name": "x"} and data["tool"]["other"] == {"keep": 1}
    mutmut = data["tool"]["mutmut"]
    assert mutmut == table and "debug" not in mutmut
    assert mutmut["process_isolation"] == "forkserver"  # a plain fork after a torch import hangs
    assert mutmut["source_paths"] == ["fidelity"] and mutmut["only_mutate"] == ["fidelity/impl/torch/sinkhorn.py"]
    assert mutmut["pytest_add_cli_args_test_selection"] == ["tests/gates"]
    assert {"fixtures", "specs"} <= set(mutmut["also_copy"])
    missing = tmp_path / "new" / "pyproject.toml"
    missing.parent.mkdir()
    bench.write_mutmut_config(missing, {"debug": False})
    assert tomllib.loads(missing.read_text()) == {"tool": {"mutmut": {"debug": False}}}


def test_module_files_names_and_patterns(tmp_path):
    root = _toy_project(tmp_path / "toy")
    assert bench.module_file("toypkg.calc", root) == "toypkg/calc.py"
    assert bench.module_file("toypkg", root) == "toypkg/__init__.py"
    with pytest.raises(SystemExit):
        bench.module_file("toypkg.nothing", root)
    assert bench.module_file("fidelity.impl.torch.sinkhorn", Path(bench.__file__).parents[2]) \
        == "fidelity/impl/torch/sinkhorn.py"
    assert bench.function_names(root / "toypkg" / "calc.py") == ["x_add", "x_scale", "x\u01c1Box\u01c1size", "x_cached"]
    assert bench.quick_patterns(["a.b"], per_function=2) == ["a.b.*__mutmut_1", "a.b.*__mutmut_2"]
    assert bench.mutant_module("toypkg.calc.x\u01c1Box\u01c1size__mutmut_2") == "toypkg.calc"
    assert bench.mutant_module("a.b.c.x_f__mutmut_10") == "a.b.c"


def test_parse_results_reads_mutmuts_lines():
    text = ("    toypkg.calc.x_add__mutmut_1: killed\n    toypkg.calc.x_scale__mutmut_1: survived\n"
            "    toypkg.calc.xǁBoxǁsize__mutmut_2: not checked\n    other.x_f__mutmut_3: no tests\n"
            "Saved CI/CD stats\n")
    statuses = bench.parse_results(text)
    assert statuses == {"toypkg.calc.x_add__mutmut_1": "killed", "toypkg.calc.x_scale__mutmut_1": "survived",
                        "toypkg.calc.xǁBoxǁsize__mutmut_2": "not checked", "other.x_f__mutmut_3": "no tests"}
    s = bench.summarise_mutmut(statuses)
    assert s["mutants"] == 3 and s["not_checked"] == 1
    assert s["counts"] == {"killed": 1, "survived": 1, "no tests": 1}
    assert s["modules"]["toypkg.calc"] == {"mutants": 2, "counts": {"killed": 1, "survived": 1}}


def _stub_discover(modules: list[str]) -> list[str]:
    payload = {"modules": [{"module": m, "seconds": 0.5, "mutants_per_second": 8.0,
                            "counts": {"killed": 3, "blind_spot": 1}} for m in modules],
               "mutants": [{"id": f"M{i}", "module": modules[0], "outcome": o}
                           for i, o in enumerate(["killed", "killed", "killed", "blind_spot"])]}
    return [sys.executable, "-c", f"print({json.dumps(json.dumps(payload))})"]


def test_mutmut_quick_on_a_toy_package_then_a_stub_discover_and_the_ratio(tmp_path):
    pytest.importorskip("mutmut", reason="mutmut is the bench extra: pip install -e '.[bench]'")
    root = _toy_project(tmp_path / "toy")
    before = (root / "pyproject.toml").read_text()
    mm = bench.run_mutmut(root, ["toypkg.calc"], tmp_path / "work", tests=["tests"], quick=True,
                         per_function=1, max_children=2)
    assert mm["exit"] == 0, mm["output_tail"]
    assert (root / "pyproject.toml").read_text() == before and not (root / "mutants").exists()  # the copy only
    copy = tmp_path / "work" / "project"
    assert not (copy / ".git").exists() and (copy / "mutants").is_dir()
    assert tomllib.loads((copy / "pyproject.toml").read_text())["tool"]["mutmut"]["only_mutate"] == ["toypkg/calc.py"]
    # --quick, one a function: the first mutant of each of the three undecorated functions; scale's is its default 2 -> 3,
    # which the test (passing factor=2) cannot see; the second mutants of scale and size are not checked.
    assert mm["mutants"] == 3 and mm["not_checked"] >= 1
    assert mm["counts"] == {"killed": 1, "survived": 2}
    assert mm["modules"] == {"toypkg.calc": {"mutants": 3, "counts": {"killed": 1, "survived": 2}}}
    assert mm["seconds"] > 0 and mm["mutants_per_second"] == pytest.approx(3 / mm["seconds"])
    assert mm["reported_mutants_per_second"] is not None
    assert mm["functions_not_mutated"] == ["toypkg.calc.x_cached"]  # mutmut skips a decorated function

    dc = bench.run_discover(root, ["toypkg.calc"], tmp_path / "d", command=_stub_discover(["toypkg.calc"]))
    assert dc["exit"] == 0 and dc["mutants"] == 4 and dc["counts"] == {"killed": 3, "blind_spot": 1}
    assert dc["reported_mutants_per_second"] == pytest.approx(8.0)
    figures = {"modules": ["toypkg.calc"], "quick": True, "cpu_cores": 2, "mutmut": mm, "discover": dc,
               "ratio": bench.ratio(dc, mm)}
    assert figures["ratio"] == pytest.approx(dc["mutants_per_second"] / mm["mutants_per_second"])
    text = bench.render(figures)
    lines = text.splitlines()
    assert lines[1].startswith("mutmut   :") and "killed 1, survived 2" in lines[1]
    assert lines[2].startswith("discover :") and "4 mutants" in lines[2]
    assert lines[3].startswith("ratio    :") and " x (target >= 5 x" in lines[3]
    json.dumps(figures)  # --out writes these


def test_a_discover_that_fails_is_reported_not_raised(tmp_path):
    dc = bench.run_discover(tmp_path, ["m"], tmp_path, command=[sys.executable, "-c", "import sys; sys.exit('boom')"])
    assert dc["exit"] == 1 and dc["mutants"] is None and "boom" in dc["error"]
    mm = {"mutants": 3, "seconds": 1.0, "mutants_per_second": 3.0, "counts": {"killed": 3}, "exit": 0}
    assert bench.ratio(dc, mm) is None
    text = bench.render({"modules": ["m"], "quick": False, "cpu_cores": 2, "mutmut": mm, "discover": dc, "ratio": None})
    assert "discover : did not run" in text and "n/a" in text


def test_main_prints_one_line_a_side_and_writes_the_figures(tmp_path, capsys):
    out = tmp_path / "figures" / "bench.json"
    module = "fidelity.impl.torch.sinkhorn"
    code = bench.main(["--skip-mutmut", "--module", module, "--out", str(out)], discover_cmd=_stub_discover([module]))
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"modules: {module}; gates: tests/gates")
    assert lines[1] == "mutmut   : skipped (--skip-mutmut)" and lines[2].startswith("discover :     4 mutants")
    assert lines[-1].endswith("n/a")
    figures = json.loads(out.read_text())
    assert figures["modules"] == [module] and figures["discover"]["mutants"] == 4 and figures["ratio"] is None
