"""`fidelity init DIR`: scaffold a working fidelity project for your own paper."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fidelity.commands.common import EXIT_OK, EXIT_USAGE, add_json_option, print_json

DESCRIPTION = """\
Write a working fidelity project into DIR (created if missing): a spec with one equation,
one claim and one perturbation; a source note the claim quotes; the mechanism's interface
(a Protocol); an implementation and its subject; an exact oracle and the fixture it
generates; and a gate. The example is Eq. 1 of arXiv:1503.02531 (softmax at temperature
T): replace it with your own paper, one file at a time.

Then, in DIR:
  fidelity perturb --all    the gate must go red under the perturbation, then green again
  fidelity check            specs, fixtures, claims, code, gates, evidence: GREEN

Nothing is overwritten: if any file of the scaffold exists in DIR already, nothing is
written and the exit code is 2.

--adapter: write only DIR/fidelity_subject.py, an adapter template for someone else's
implementation: a function adapter, a forward-only one, one that lacks an optional input,
a module adapter and a stack adapter, each a Subject that loads and passes as written
(they wrap fidelity's reference until you swap in your package's calls). Check one with
`fidelity check --subject fidelity_subject:FUNCTION`, DIR on PYTHONPATH.
"""


def add_parser(sub) -> None:
    p = sub.add_parser("init", help="scaffold a fidelity project for your own paper",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("directory", type=Path, metavar="DIR", help="where the project is written")
    p.add_argument("--name", default=None,
                   help="the Python package of your implementation and the paper id of the spec "
                        "(default: DIR's name, as lower-case letters, digits and _)")
    p.add_argument("--adapter", action="store_true",
                   help="write only an adapter template, DIR/fidelity_subject.py (see above)")
    add_json_option(p)
    p.set_defaults(run=run, needs_project=False)


def run(args) -> int:
    from fidelity import project, scaffold
    from fidelity.fixtures import store

    if getattr(args, "root", None):
        print("fidelity init: error: --root names an existing project; init writes a new one into DIR",
              file=sys.stderr)
        return EXIT_USAGE
    if getattr(args, "adapter", False):
        return _adapter(args)
    name = args.name or scaffold.package_name(args.directory)
    try:
        written = scaffold.write(args.directory, name)
    except scaffold.ScaffoldError as exc:
        print(f"fidelity init: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    here = project.load(args.directory).activate()
    fixtures = store.regenerate(here.fixtures)  # the scaffold's fixture, made by its own oracle
    files = [here.relative(p) for p in [*written, *fixtures]]
    if args.json:
        print_json({"ok": True, "root": str(here.root), "package": name, "files": files})
        return EXIT_OK
    print(f"wrote a fidelity project for package {name!r} to {here.root}:")
    for f in files:
        print(f"  {f}")
    print(f"next:\n  cd {args.directory}\n  fidelity perturb --all\n  fidelity check")
    return EXIT_OK


def _adapter(args) -> int:
    from fidelity import scaffold
    from fidelity.scaffold.adapter import OBJECTS, write_adapter

    try:
        written = write_adapter(args.directory)
    except scaffold.ScaffoldError as exc:
        print(f"fidelity init: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print_json({"ok": True, "root": str(args.directory.resolve()), "files": [written.name], "objects": list(OBJECTS)})
        return EXIT_OK
    print(f"wrote an adapter template to {written}: subjects {', '.join(OBJECTS)}")
    print(f"next: replace fidelity.impl.torch with your package's calls, then, with {args.directory} on PYTHONPATH,\n"
          f"  fidelity check --subject {written.stem}:FUNCTION")
    return EXIT_OK
