"""A spec is input from anyone: its cost is bounded, and its syntax errors point at the line to fix.

Issue 15: a YAML alias bomb crashed the loader with a MemoryError after 52 s at 7 GB, and a 50 MB
spec was loaded and checked for 34 s."""
import os
import subprocess
import sys
import tracemalloc

import pytest

from fidelity import project
from fidelity.spec import SpecError, load_catalogue
from fidelity.spec import yaml_source


def _bomb(levels: int = 9, width: int = 9) -> str:
    """`levels` nested lists of `width` aliases each: a few hundred bytes that expand to width**levels nodes."""
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def _error(spec_dir, name: str, text: str) -> SpecError:
    (spec_dir / name).write_text(text)
    with pytest.raises(SpecError) as info:
        load_catalogue(spec_dir)
    return info.value


def test_an_alias_bomb_is_refused_before_it_is_built_naming_the_file(spec_dir):
    tracemalloc.start()
    try:
        err = _error(spec_dir, "bomb.yaml", _bomb())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert err.file.endswith("bomb.yaml") and err.line is not None
    assert f"expands to more than {yaml_source.MAX_EXPANDED_NODES:,} nodes" in err.message
    assert peak < 300e6, f"refusing the bomb allocated {peak / 1e6:.0f} MB"


def test_more_aliases_than_the_limit_are_refused_at_the_line_of_the_first_one_past_it(spec_dir):
    count = yaml_source.MAX_ALIASES + 1
    text = "base: &b 1\nuses:\n" + "".join(f"  - *b\n" for _ in range(count))
    err = _error(spec_dir, "aliases.yaml", text)
    assert err.line == 2 + count and f"more than {yaml_source.MAX_ALIASES} YAML aliases" in err.message


def test_a_few_aliases_are_still_yaml(spec_dir):
    (spec_dir / "toy.yaml").write_text((spec_dir / "toy.yaml").read_text().replace(
        "authors: [A. Author]", "authors: &who [A. Author]").replace("where: [a PDF]", "where: *who"))
    assert "toy.eq1" in load_catalogue(spec_dir).equations


def test_a_spec_file_over_the_size_limit_is_not_read(spec_dir):
    big = spec_dir / "big.yaml"
    with big.open("w") as f:
        f.write("# padding\n" * (yaml_source.MAX_SPEC_BYTES // 10 + 1))
    err = _error(spec_dir, "big.yaml", big.read_text())
    assert err.file.endswith("big.yaml") and f"over the limit of {yaml_source.MAX_SPEC_BYTES:,}" in err.message


def test_an_unclosed_bracket_is_reported_on_its_own_line(spec_dir):
    text = (spec_dir / "toy.yaml").read_text().replace("statement: y = 2 x", "statement: [y = 2 x")
    err = _error(spec_dir, "toy.yaml", text)
    assert err.line == 1 + text.splitlines().index("    statement: [y = 2 x"), str(err)
    assert "noticed on line" in err.message


def test_a_key_without_its_colon_is_reported_on_its_own_line(spec_dir):
    text = (spec_dir / "toy.yaml").read_text().replace("    tier: b\n", "    tier b\n", 1)
    err = _error(spec_dir, "toy.yaml", text)
    assert err.line == 1 + text.splitlines().index("    tier b"), str(err)


def test_the_cli_exits_2_on_the_bomb_naming_the_file_within_300_mb(tmp_path):
    root = tmp_path / "paper"
    (root / "specs").mkdir(parents=True)
    (root / "specs" / "bomb.yaml").write_text(_bomb())
    env = {k: v for k, v in os.environ.items() if k != project.ROOT_ENV}
    # a fresh interpreter whose only child is the CLI: its children's peak RSS is the CLI's own
    measure = ("import resource, subprocess, sys\n"
               "run = subprocess.run([sys.executable, '-m', 'fidelity', 'list', 'equations', '--specs', sys.argv[1]],"
               " capture_output=True, text=True)\n"
               "sys.stdout.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) + '\\n')\n"
               "sys.stderr.write(run.stderr)\n"
               "sys.exit(run.returncode)\n")
    run = subprocess.run([sys.executable, "-c", measure, str(root / "specs")], capture_output=True, text=True,
                         cwd=root, env=env)
    assert run.returncode == 2, run.stderr[-2000:]
    assert "bomb.yaml:1: <document>: the document expands to more than" in run.stderr and "Traceback" not in run.stderr
    peak_mb = int(run.stdout) / 1024  # ru_maxrss is in KiB on Linux
    assert peak_mb < 300, f"the CLI peaked at {peak_mb:.0f} MB refusing the bomb"


def _outcome(parse, file, text: str):
    """What a user gets from one loader: the data and every key's line, or the error's line and words."""
    try:
        data, index = parse(file, text)
    except SpecError as exc:
        return ("error", exc.line, exc.message)
    return ("data", data, index._lines)


ALIASED = {
    "bomb before a spec": _bomb() + "id: x\nrest: [1, 2]\n",
    "bomb after a spec": "id: x\nrest: [1, 2]\n" + _bomb(),
    "a key given twice before a bomb": "x0: &x0 [a, b]\nx1: [*x0, *x0]\nx1: again\n" + _bomb(),
    "a key given twice after a bomb": _bomb() + "x0: &x0 [a, b]\nx1: [*x0, *x0]\nx1: again\n",
    "a key given twice inside an anchored mapping": "a: &m {k: 1, k: 2}\nb: *m\n",
    "a merge key": "base: &b {x: 1, y: 2}\nmore:\n  <<: *b\n  y: 3\n",
    "a scalar alias": "a: &s text\nb: [*s, *s]\n",
    "an anchor inside itself": "a: &r [1, *r]\n",
    "an undefined alias": "a: *nowhere\n",
    "an anchor defined twice": "a: &d 1\nb: &d 2\nc: *d\n",
    "exactly the alias limit": "base: &b 1\nuses:\n" + "  - *b\n" * yaml_source.MAX_ALIASES,
    "one alias past the limit": "base: &b 1\nuses:\n" + "  - *b\n" * (yaml_source.MAX_ALIASES + 1),
    "two bombs, each within the budget, past it together": _bomb(5) + _bomb(5).replace("l", "m"),
    "a repeated mapping whose keys fill the budget": "m: &m {" + ", ".join(f"k{i}: [a, b]" for i in range(300))
                                                      + "}\nall: [" + ", ".join(["*m"] * 120) + "]\n",
}
COMPOSED = {k: v for k, v in ALIASED.items() if k not in ("an undefined alias", "an anchor defined twice")}


@pytest.mark.skipif(yaml_source._CParser is None, reason="PyYAML without libyaml has one loader only")
@pytest.mark.parametrize("text", ALIASED.values(), ids=ALIASED.keys())
def test_a_document_with_aliases_reads_the_same_whichever_composer_took_it(tmp_path, text):
    file = tmp_path / "aliased.yaml"

    def fast_or_python(f, t):
        return yaml_source._fast_parse(f, t) or yaml_source._parse(f, t)
    assert _outcome(fast_or_python, file, text) == _outcome(yaml_source._parse, file, text)


@pytest.mark.parametrize("text", COMPOSED.values(), ids=COMPOSED.keys())
def test_the_expansion_is_refused_where_a_walk_of_every_expanded_node_refuses_it(tmp_path, text):
    """_refuse_expansion skips a repeated node by its size; the walk it stands for visits every node."""
    import yaml

    file = tmp_path / "aliased.yaml"
    node = yaml.compose(text, Loader=yaml.SafeLoader)

    def refused(*walks):
        try:
            for walk in walks:
                walk()
        except SpecError as exc:
            return exc.line, exc.path, exc.message
        except RecursionError:
            return "recursion"
    every_node = lambda: yaml_source._index(node, (), yaml_source.LineIndex(), file, yaml_source._Budget(file))  # noqa: E731
    assert refused(lambda: yaml_source._refuse_expansion(node, file), every_node) == refused(every_node)


@pytest.mark.skipif(yaml_source._CParser is None, reason="PyYAML without libyaml has one loader only")
def test_a_bomb_is_refused_by_the_c_composers_graph_without_the_python_scanner(tmp_path, monkeypatch):
    """The cost that made the loader fuzz slow: each bomb sent the whole spec through the Python scanner, and
    its refusal visited 100,000 expanded nodes one by one."""
    text = _bomb() + (project.find(__file__).specs / "mhc.yaml").read_text(encoding="utf-8")
    visited = [0]  # a count: the nodes themselves would make a failure's message gigabytes long
    spend = yaml_source._Budget.spend

    def counted(self, node):
        visited[0] += 1
        spend(self, node)
    monkeypatch.setattr(yaml_source._Budget, "spend", counted)
    with pytest.raises(SpecError, match="expands to more than"):
        yaml_source._fast_parse(tmp_path / "bomb.yaml", text)
    assert visited[0] < 1000, f"refusing a bomb of 9**9 nodes visited {visited[0]} of them, one by one"
