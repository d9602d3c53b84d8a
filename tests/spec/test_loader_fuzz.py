"""Fuzz the loader: mutated specs may load or fail, but only ever with a SpecError that names the file,
the key path and (where the text has one) the line, within a memory bound. Issue 15: at least 1000
mutated specs, some of them given anchors, aliases and alias bombs."""
import resource
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fidelity.spec import SpecError, load_catalogue
from fidelity import project

from spec_toy import MINIMAL

SEEDS = [MINIMAL] + [p.read_text() for p in sorted(project.find(__file__).specs.glob("*.yaml"))]
YAML_NOISE = list(":-[]{}#&*!|>'\"%@`,? \n\t") + ["\n  ", "id: x", "~", "null", "- ", "{a: [", "\\", "\x00", "é",
                                                       "&a ", "*a", "&a [*a, *a]", "<<: *a"]
# An alias bomb to splice in whole: a few hundred bytes that would expand to 9**8 nodes.
BOMB = "bomb0: &b0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"bomb{i}: &b{i} [{', '.join([f'*b{i - 1}'] * 9)}]\n" for i in range(1, 8))
MEMORY_BOUND_MB = 300  # how far the process's peak RSS may rise over the examples (tracing them is 5x slower)
_START_MB: list[float] = []  # the peak when the first example ran: what the tests before this one left


@st.composite
def mutated(draw):
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["insert", "delete", "replace_line", "swap_lines", "truncate", "bomb"]))
        pos = draw(st.integers(0, max(0, len(text) - 1)))
        lines = text.splitlines(keepends=True)
        if kind == "insert":
            text = text[:pos] + draw(st.sampled_from(YAML_NOISE)) + text[pos:]
        elif kind == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 20)):]
        elif kind == "replace_line" and lines:
            i = draw(st.integers(0, len(lines) - 1))
            pieces = draw(st.lists(st.sampled_from(YAML_NOISE + list("abc019")), max_size=12))
            lines[i] = "".join(pieces) + "\n"
            text = "".join(lines)
        elif kind == "swap_lines" and len(lines) > 1:
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
            text = "".join(lines)
        elif kind == "truncate":
            text = text[:pos]
        elif kind == "bomb":
            text = BOMB + text
    return text


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=mutated())
def test_only_spec_errors_escape(spec_dir: Path, text: str):
    for old in spec_dir.glob("*.yaml"):
        old.unlink()
    (spec_dir / "fuzzed.yaml").write_text(text, encoding="utf-8", errors="surrogateescape")
    _START_MB[:] = _START_MB or [_peak_rss_mb()]
    try:
        load_catalogue(spec_dir)
    except SpecError as exc:
        assert exc.file.endswith("fuzzed.yaml") or "spec" in exc.file
        where = exc.to_json()  # what `--json` prints: file, line, key path, message
        assert where["path"] and where["message"]
        head = f"fuzzed.yaml:{exc.line}: " if exc.line is not None else "fuzzed.yaml: "
        assert head + f"{where['path']}: " in str(exc), str(exc)  # the one line a user reads
    grown = _peak_rss_mb() - _START_MB[0]
    assert grown < MEMORY_BOUND_MB, f"the loader's peak memory grew by {grown:.0f} MB over the examples"


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
