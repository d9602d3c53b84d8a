"""`fidelity perturb --convert-evidence [--evidence DIR | --file FILE]`: an evidence folder in the old layout
(a file per gate, a folder per perturbation) converted once to a file per perturbation, the same records
with the same hashes (fidelity.evidence.store.convert_old_layout). Nothing runs; the folder's writer lock is held."""
from __future__ import annotations

import sys
from pathlib import Path

from fidelity.commands.common import EXIT_OK, EXIT_RED, EXIT_USAGE, print_json


def run(args, folder: Path) -> int:
    from fidelity import writer_lock
    from fidelity.evidence import store

    try:
        with writer_lock.writing(folder, "perturb"):
            records, files, left = store.convert_old_layout(folder)
    except writer_lock.FolderBusy as exc:
        print(f"fidelity perturb: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    shown = args.project.relative(folder)
    if args.json:
        print_json({"ok": not left, "evidence": shown, "records": records, "files": files,
                    "left": [{"file": args.project.relative(f), "why": why, "todo": todo} for f, why, todo in left]})
    else:
        for f, why, todo in left:
            print(f"perturb --convert-evidence: {args.project.relative(f)} left in place ({why}): {todo}",
                  file=sys.stderr)
        print(f"perturb --convert-evidence: {records} records converted into {files} files under {shown}"
              + (f"; {len(left)} files left in the old layout (above)" if left else ""))
    return EXIT_RED if left else EXIT_OK
