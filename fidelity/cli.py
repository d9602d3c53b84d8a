"""The `fidelity` command line: parse, dispatch to a verb, map errors to exit codes.

Exit codes: 0 all good; 1 something checked is red; 2 usage or spec error.
"""
from __future__ import annotations

import argparse
import sys

from fidelity import __version__
from fidelity.commands import check_cmd, fixtures_cmd, list_cmd, perturb_cmd, report_cmd, show_cmd
from fidelity.commands.common import EXIT_USAGE
from fidelity.spec import SpecError

VERBS = (list_cmd, show_cmd, check_cmd, fixtures_cmd, perturb_cmd, report_cmd)


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
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    sub.required = True
    for verb in VERBS:
        verb.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except SpecError as exc:
        print(f"fidelity {args.verb}: spec error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"fidelity {args.verb}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
