"""Fuzz the loader: mutated specs may load or fail, but only ever with a SpecError."""
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fidelity.spec import SpecError, load_catalogue
from fidelity import project

from spec_toy import MINIMAL

SEEDS = [MINIMAL] + [p.read_text() for p in sorted(project.find(__file__).specs.glob("*.yaml"))]
YAML_NOISE = list(":-[]{}#&*!|>'\"%@`,? \n\t") + ["\n  ", "id: x", "~", "null", "- ", "{a: [", "\\", "\x00", "é"]


@st.composite
def mutated(draw):
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["insert", "delete", "replace_line", "swap_lines", "truncate"]))
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
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=mutated())
def test_only_spec_errors_escape(spec_dir: Path, text: str):
    for old in spec_dir.glob("*.yaml"):
        old.unlink()
    (spec_dir / "fuzzed.yaml").write_text(text, encoding="utf-8", errors="surrogateescape")
    try:
        load_catalogue(spec_dir)
    except SpecError as exc:
        assert exc.file.endswith("fuzzed.yaml") or "spec" in exc.file
        assert str(exc)  # the message renders
