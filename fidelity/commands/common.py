"""What every verb shares: the --specs option, exit codes, JSON output."""
from __future__ import annotations

import argparse
import json
import sys

EXIT_OK, EXIT_RED, EXIT_USAGE = 0, 1, 2


def add_specs_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--specs", metavar="DIR", default=None,
                        help="directory of spec YAML files (default: the project's specs/)")


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of text")


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (a count of processes, runs, ...)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not at least 1")
    return value


def print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")


def where_text(where: dict) -> str:
    """{'section': '3.1', 'equation': '2'} -> 'section 3.1, equation 2'."""
    return ", ".join(f"{k} {v}" for k, v in where.items())
