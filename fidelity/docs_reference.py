"""Writing gates, oracles and mechanisms: the reference of the helpers they are written with.

Every page here is generated from the helpers' docstrings, and every `>>>` example in them runs in the
test suite, so what it shows is what the helper does. `fidelity show reference` prints where the
installed copy of these pages lies; open its `index.html` in a browser.

Where to start:

- **A fixture builder** (your oracle module, listed in `fixture_builders`): register it with
  `fidelity.fixtures.store.fixture`; encode inputs with `fidelity.fixtures.store.inp`, computed values
  with `fidelity.fixtures.store.num`, and the numbers of the derivation text with
  `fidelity.fixtures.store.f10`. A default the paper fixes is read from the spec with
  `fidelity.spec.values.spec_value` (or `fidelity.spec.values.spec_value_exact` in an exact oracle).
- **A gate** (`tests/gates/test_*.py`, marked `@pytest.mark.gate(...)`): read the fixture as tensors with
  `fidelity.gates.fixture_values.value`, `fidelity.gates.fixture_values.expected` and
  `fidelity.gates.fixture_values.param`; compare with `fidelity.gates.compare.assert_close` under a
  `fidelity.gates.compare.Tolerance` (a multiple of the dtype's machine epsilon, relative, with a
  floor under |expected|), or hold a scalar with `fidelity.gates.compare.assert_bound`; in a gate that
  holds several equations, wrap each part in `fidelity.gates.attribution.checking`.
- **The gate classes** (`fidelity.gates.gate_classes`): the promises every mechanism is held to. One line
  per mechanism holds it to all that apply: `fidelity.gates.library.suite.GateClassesFor`. A gate of your own
  that holds one uses its assertion helper: `fidelity.gates.statelessness`, `fidelity.gates.train_eval`,
  `fidelity.gates.parameters_alive`, `fidelity.gates.gradient_reach`, `fidelity.gates.jacobians`,
  `fidelity.gates.refusals`.
- **A mechanism and a subject**: declare what a subject may provide with
  `fidelity.mechanisms.mechanism.Mechanism`, its interface a Protocol documented with the markers of
  `fidelity.mechanisms.markers` (`Doc`, `Param`, `Submodule`); a subject
  (`fidelity.subjects.subject.Subject`) says what it drives with
  `fidelity.mechanisms.capability.Capability` and refuses the rest with
  `fidelity.mechanisms.refusal.NotRun`.

Regenerate these pages after a docstring changes (needs the `[dev]` extra):
`python -m fidelity.docs_reference`. The tests check that the committed pages are what this
command writes now, and run every example in the modules of `MODULES`.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

MODULES: tuple[str, ...] = (
    "fidelity.docs_reference",
    "fidelity.fixtures.store",
    "fidelity.spec.values",
    "fidelity.gates.fixture_values",
    "fidelity.gates.compare",
    "fidelity.gates.attribution",
    "fidelity.gates.gate_classes",
    "fidelity.gates.library.suite",
    "fidelity.gates.statelessness",
    "fidelity.gates.train_eval",
    "fidelity.gates.parameters_alive",
    "fidelity.gates.gradient_reach",
    "fidelity.gates.jacobians",
    "fidelity.gates.refusals",
    "fidelity.mechanisms.mechanism",
    "fidelity.mechanisms.capability",
    "fidelity.mechanisms.refusal",
    "fidelity.mechanisms.markers",
    "fidelity.subjects.subject",
)
"""The modules the reference documents, in the order of the guide: adding one is one line here (then
regenerate). Every one of them must hold at least one `>>>` example (tests/docs checks it), or say in
WITHOUT_EXAMPLES why it cannot."""

EXAMPLES: dict[str, tuple[str, ...]] = {
    "fidelity.fixtures.store": ("fixture", "inp", "num", "f10"),
    "fidelity.spec.values": ("spec_value", "spec_value_exact"),
    "fidelity.gates.fixture_values": ("value", "expected", "param"),
    "fidelity.gates.compare": ("Tolerance", "assert_close", "assert_bound"),
    "fidelity.gates.attribution": ("checking",),
}
"""The main helpers that must each carry an example of their own, in their own docstring."""

WITHOUT_EXAMPLES: dict[str, str] = {
    "fidelity.docs_reference": "this guide: a map of the other pages, no helper of its own",
    "fidelity.gates.library.suite": "its helper is a pytest test class; the project `fidelity init` writes uses it, and "
                              "tests/scaffold runs that project's gates",
}
"""Modules of the reference that hold no `>>>` example, each with the reason."""

REGENERATE = "python -m fidelity.docs_reference"
"""The one command that rewrites the package's copy of the reference from the docstrings."""

_INDEX = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>fidelity: reference for gate authors</title>
<meta http-equiv="refresh" content="0; url=fidelity/docs_reference.html"></head>
<body><p><a href="fidelity/docs_reference.html">fidelity: reference for gate authors</a></p></body></html>
"""
"""The first page: it opens the guide (this module's page), which links every other page."""


def reference_dir() -> Path:
    """Where the generated pages are kept: inside the package, so an installed fidelity ships them."""
    return Path(__file__).parent / "reference"


def index_page() -> Path:
    """The installed reference's first page (open it in a browser)."""
    return reference_dir() / "index.html"


def generate(output_directory: Path) -> list[Path]:
    """Write the reference of MODULES as HTML into `output_directory` (created; emptied of old pages first);
    return the files written, sorted. Needs pdoc (the `[dev]` extra)."""
    try:
        import pdoc
        import pdoc.render
    except ImportError:
        raise SystemExit(f"the reference is generated by pdoc, which the [dev] extra installs: "
                         f"pip install -c .ci/constraints.txt -e '.[dev]', then {REGENERATE}") from None
    # no search index (half a megabyte shipped in every install) and no source (it churns the pages on
    # every code edit; the reference documents what the docstrings and signatures promise)
    pdoc.render.configure(docformat="markdown", search=False, show_source=False,
                          footer_text="fidelity: reference for gate authors")
    output_directory.mkdir(parents=True, exist_ok=True)
    for old in output_directory.rglob("*.html"):
        old.unlink()
    pdoc.pdoc(*MODULES, output_directory=output_directory)
    (output_directory / "index.html").write_text(_INDEX, encoding="utf-8")  # pdoc's own is a bare module list
    return sorted(p for p in output_directory.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    """`python -m fidelity.docs_reference [--output DIR]`: regenerate the reference (default: the package's copy)."""
    parser = argparse.ArgumentParser(prog="python -m fidelity.docs_reference",
                                     description="Regenerate the reference for gate authors from the docstrings.")
    parser.add_argument("--output", type=Path, default=reference_dir(),
                        help="where to write the pages (default: the package's own copy, fidelity/reference)")
    args = parser.parse_args(argv)
    written = generate(args.output)
    print(f"{len(written)} pages written to {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
