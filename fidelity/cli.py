"""The `fidelity` command line: parse, dispatch to a verb, map errors to exit codes.

Exit codes: 0 all good; 1 something checked is red; 2 usage or spec error.
"""
from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from fidelity import __version__, own_checkout, project
from fidelity.command_exit import end_command
from fidelity.commands import (check_cmd, discover_cmd, fixtures_cmd, init_cmd, list_cmd, perturb_cmd, report_cmd,
                               show_cmd)
from fidelity.commands.common import EXIT_USAGE
from fidelity.spec import SpecError

VERBS = (init_cmd, list_cmd, show_cmd, check_cmd, fixtures_cmd, perturb_cmd, discover_cmd, report_cmd)
ROOT_HELP = ("the project's root directory (default: the nearest directory, from here upward, holding "
             "fidelity.toml or a pyproject.toml with [tool.fidelity])")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own usage errors: exit 2, as documented
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="fidelity",
        description="Prove an implementation is faithful to the paper it came from: "
                    "specs (YAML, one per paper), oracles and fixtures, gates, perturbations, ledger.",
        epilog="Exit codes: 0 all good, 1 something checked is red, 2 usage or spec error. "
               "Run `fidelity VERB --help` for each verb.")
    parser.add_argument("--version", action="version", version=f"fidelity {__version__}")
    parser.add_argument("--root", metavar="DIR", default=None, help=ROOT_HELP)
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    sub.required = True
    for verb in VERBS:
        verb.add_parser(sub)
    for verb_parser in sub.choices.values():  # `fidelity check --root DIR` as well as `fidelity --root DIR check`
        if verb_parser.get_default("needs_project") is not False:  # init makes a project: it has no root yet
            verb_parser.add_argument("--root", metavar="DIR", default=argparse.SUPPRESS, help=ROOT_HELP)
    return parser


def _project(args) -> project.Project | None:
    """The project the verb works on, activated for this process and its children."""
    if getattr(args, "project_optional", False) and not args.root:
        try:
            found = project.find()
        except project.ProjectNotFound:
            return None
    else:
        found = project.load(args.root) if args.root else project.find()
    wrong = own_checkout.mismatch(found.root)
    if wrong:
        raise project.ProjectError(wrong)
    return found.activate()


def _json_error(args, error: dict) -> None:
    """Under --json, a verb that cannot start still answers on stdout: a script reads why, not nothing."""
    if getattr(args, "json", False):
        from fidelity.commands.common import print_json

        print_json({"ok": False, "error": error})


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if getattr(args, "needs_project", True):
            args.project = _project(args)
        return args.run(args)
    except SpecError as exc:
        _json_error(args, {"kind": "spec", **exc.to_json()})
        print(f"fidelity {args.verb}: spec error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except project.ProjectError as exc:  # none found, a bad configuration, or a verb that needed one
        _json_error(args, {"kind": "project", "message": str(exc)})
        print(f"fidelity {args.verb}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"fidelity {args.verb}: interrupted", file=sys.stderr)
        return 130


def console_main() -> NoReturn:
    """The `fidelity` script: main(), then the process ends as command_exit.py says."""
    end_command(main)


if __name__ == "__main__":
    console_main()
