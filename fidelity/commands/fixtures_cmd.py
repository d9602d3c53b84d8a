"""`fidelity fixtures --regen | --verify`: write the oracle fixtures, or prove they have not drifted."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from fidelity.commands.common import EXIT_OK, EXIT_RED, EXIT_USAGE, add_json_option, print_json


def add_parser(sub) -> None:
    p = sub.add_parser("fixtures", help="regenerate or verify the oracle fixtures in fixtures/",
                       description="Fixtures are named inputs with oracle-computed expected values "
                                   "(30+ significant digits, float64 beside them) and a derivation a person "
                                   "can check by hand. --regen rewrites them (byte-identical on every run); "
                                   "--verify recomputes every one and exits 1 on any drift, naming the "
                                   "fixture and the field, or 2 if a file is unreadable or malformed.")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--regen", action="store_true", help="recompute and write every fixture")
    mode.add_argument("--verify", action="store_true", help="recompute every fixture and compare with the files")
    p.add_argument("--dir", type=Path, default=None, help="fixtures directory (default: the project's fixtures/)")
    add_json_option(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from fidelity.fixtures import store

    directory = args.dir or args.project.fixtures
    start = time.perf_counter()
    if args.regen:
        written = store.regenerate(directory)
        if args.json:
            print_json({"ok": True, "written": [str(p) for p in written]})
        else:
            print(f"wrote {len(written)} fixtures to {directory} in {time.perf_counter() - start:.2f} s")
        return EXIT_OK
    try:
        drifts = store.verify(directory)
        drifts += _stale_predictions(directory)
    except store.FixtureError as exc:
        if args.json:
            print_json({"ok": False, "error": str(exc)})
        else:
            print(f"fidelity fixtures: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    elapsed = time.perf_counter() - start
    if args.json:
        print_json({"ok": not drifts, "seconds": round(elapsed, 3), "drifts": [d.to_json() for d in drifts]})
    else:
        for d in drifts:
            print(f"DRIFT {d}")
        print(f"fixtures: {'GREEN' if not drifts else 'RED'} ({len(drifts)} drifts, {elapsed:.2f} s)")
    return EXIT_OK if not drifts else EXIT_RED


def _stale_predictions(directory):
    """The specs' predicted readings recomputed from these fixtures: a stale prediction is a drift."""
    from fidelity.oracles import predicted_readings

    return predicted_readings.verify(None, directory)
