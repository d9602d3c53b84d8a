"""Discovery records: what `fidelity discover` found in one module, kept as evidence.

Path: `<reports>/discovery/<module>.json` for the project's own subjects, and
`<reports>/discovery/<subject>/<module>.json` for a run against another subject (a
third-party package), so neither overwrites the other. Written atomically and
deterministically (jsonio), like the perturbation records.

A record (SCHEMA "fidelity.discover/1"):
  schema, module, target_file, subject     what was mutated (target_file as the module name
                                           spells it), and against which subject (null: ours)
  hashes        {"target_source", "gates", "discovery"}: the meaning keys (source_meaning.py:
                comments, docstrings and layout change nothing) of the module's source, of the
                gate files that can decide its verdicts and the gate library modules they import
                (HashesNow.gates_sha256), and of the discovery
                code itself (operators and the equivalence decision; not this file, which only
                keys and keeps records)
  counts, dropped, mutants                 as `fidelity discover --json` prints them; each
                mutant has a `key` (see mutant_key) that stays the same while its edit does
  versions, recorded_at

A record is CURRENT while all three hashes match. A stale one still says what the last run found
(its blind spots are not forgotten because the source moved), but it is no pass: the code it
judged is not the code there now, so check's discovery stage is RED for its module until
`fidelity discover --stale` runs the module again. The whole module runs again, not only the
mutants on changed lines: a mutant is the whole file with one edit, so an edit anywhere (a cache
in front of the function, an early return) can change what every other mutant does under the
gates; keeping old verdicts for unchanged lines would be unsound.

Only a complete run is recorded: a run cut by --budget or --operator saw some mutants only,
and writing it would lose what a complete one found.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from fidelity.evidence import jsonio
from fidelity.evidence.gate_helpers import LIBRARY, GateHelpers
from fidelity.evidence.paths import sanitise
from fidelity.evidence.record import utc_now, versions
from fidelity.perturb import gate_index, launch
from fidelity.targets import locate
from fidelity.perturb.errors import GateCollectionError
from fidelity.source_meaning import meaning_sha256, memo_of
from fidelity.targets.errors import TargetNotFound

SCHEMA = "fidelity.discover/1"
DISCOVERY_DIR = "discovery"
_THIS = Path(__file__).resolve()
_CODE = _THIS.parent


def discovery_root(reports_dir: str | os.PathLike) -> Path:
    return Path(reports_dir) / DISCOVERY_DIR


def record_path(reports_dir: str | os.PathLike, module: str, subject: str | None = None) -> Path:
    folder = discovery_root(reports_dir)
    if subject:
        folder = folder / sanitise(subject)
    return folder / f"{sanitise(module)}.json"


def mutant_key(edit: dict) -> str:
    """A mutant's stable name: a hash of its find/replace edit, whose find text is unique in
    the file. It survives edits elsewhere in the module (unlike the running number in its id),
    so a spec can name the mutant it explains."""
    return hashlib.sha256(f"{edit['find']}\0{edit['replace']}".encode()).hexdigest()[:12]


def discovery_code_sha256() -> str:
    """The discovery code (operators, equivalence): a change in what it does may change any verdict.
    By meaning, and without this file: keying and keeping records decides no verdict."""
    h = hashlib.sha256()
    for f in sorted(_CODE.rglob("*.py")):
        if "__pycache__" not in f.parts and f != _THIS:
            h.update(f"{f.relative_to(_CODE).as_posix()} {meaning_sha256(f)}\n".encode())
    return h.hexdigest()


def _library_sha256(gate_files: set[Path], root: Path, helpers: GateHelpers) -> str:
    """The gate library modules (fidelity.gates: the comparisons a gate asserts with) the covering gates import,
    by meaning: they live outside the test paths, and a change in one can change a verdict. Found as the evidence
    records find them (`helpers`, gate_helpers.py, of the project at `root`)."""
    library = {name: path for f in gate_files for name, path in helpers.of(f).items() if name.startswith(LIBRARY)}
    return "".join(f"{name} {meaning_sha256(path, memo_of(root))}\n" for name, path in sorted(library.items()))


def current_hashes(module: str, repo_root: Path, test_paths: list[str], environment: dict | None = None) -> dict:
    """The three hashes a record of `module` would carry now (None for a module not found)."""
    return HashesNow(repo_root, test_paths, environment).of(module)


class HashesNow:
    """current_hashes for several modules of one project, test paths and environment: what every module
    shares (the discovery code's key, the gate index, the files under the test paths) is read once, not
    once per record (check's discovery stage judged 9 records in 4.4 s, re-reading them each time)."""

    def __init__(self, repo_root: Path, test_paths: list[str], environment: dict | None = None, index=None):
        """`index`: a callable giving the suite's gate index (a caller holding one, or whose own run collects the
        suite: check's); by default the index is read from the cache or collected."""
        self.root = Path(repo_root).resolve()
        self.env = launch.with_overrides(dict(os.environ), environment)
        self.memo = memo_of(repo_root)
        self.search = locate.child_search_path(str(repo_root))
        self.helpers = GateHelpers(self.root, locate.child_search_path(str(self.root)))
        self.discovery = discovery_code_sha256()
        self.files = gate_index.hashed_files(test_paths, self.root)
        try:
            self.index, self.uncollectable = (index() if index is not None else gate_index.collect(
                test_paths, repo_root=self.root, cache_dir=gate_index.cache_dir(self.root),
                environment=environment)), None
        except (GateCollectionError, OSError) as exc:  # a suite that cannot be collected: hash it all, read stale
            self.index, self.uncollectable = None, exc

    def of(self, module: str) -> dict:
        try:
            source = meaning_sha256(locate.find_source(module, self.search), self.memo)
        except TargetNotFound:
            source = None
        return {"target_source": source, "gates": self.gates_sha256(module), "discovery": self.discovery}

    def gates_sha256(self, module: str) -> str:
        """The files under the test paths that can change a verdict about `module`, by their paths relative
        to the project (a checkout elsewhere hashes the same), the gate library modules the covering gates
        import (_library_sha256), and the subject setting.

        A discovery run executes only the gates covering the module, so a file whose gates all cover other
        modules cannot change its verdicts and is left out: a gate added for the loop model leaves the
        Sinkhorn record current. Helpers, conftests and the pytest configuration stay in (of a pyproject.toml
        only the tables a gate run reads, _PYPROJECT_KEYS), and so does every
        file when the gate index cannot be collected (the record then reads stale, never current by mistake)."""
        root = self.root
        if self.index is None:
            unrelated: set[Path] = set()
            h = hashlib.sha256(f"uncollectable: {type(self.uncollectable).__name__}\n".encode())
        else:
            covering = {(root / self.index.file_of(g)).resolve() for g in self.index.gates_for_target(module)}
            unrelated = {(root / info["file"]).resolve() for info in self.index.gates.values()} - covering
            h = hashlib.sha256()
            h.update(_library_sha256(covering, root, self.helpers).encode())
        h.update(gate_index.subject_setting(self.env).encode())
        for f in self.files:
            if f in unrelated:
                continue
            try:
                name = f.relative_to(root).as_posix()
            except ValueError:
                name = f.name
            h.update(name.encode() + b"\0" + _content_sha256(f, self.memo).encode() + b"\n")
        return h.hexdigest()


# the parts of a pyproject.toml a gate run reads: pytest's configuration, and fidelity's subjects,
# mechanisms and gates; a dependency added or a fixture builder moved changes no verdict
_PYPROJECT_KEYS = {"pytest": None, "fidelity": ("subjects", "mechanisms", "gates")}


def _content_sha256(f: Path, memo: Path) -> str:
    if f.name != "pyproject.toml":
        return meaning_sha256(f, memo) or "missing"
    try:
        tool = tomllib.loads(f.read_text(encoding="utf-8")).get("tool", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return jsonio.sha256_file(f) or "missing"  # unreadable here: the whole file, as bytes
    kept = {}
    for table, keys in _PYPROJECT_KEYS.items():
        if table in tool:
            kept[table] = tool[table] if keys is None else {k: tool[table][k] for k in keys if k in tool[table]}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()


def build(discovery, *, target_file: str, subject: str | None, hashes: dict) -> dict:
    data = discovery.to_json()
    return {"schema": SCHEMA, "module": discovery.module, "target_file": target_file, "subject": subject,
            "hashes": hashes, "counts": data["counts"], "dropped": data["dropped"],
            "gates_set_aside": data["gates_set_aside"], "mutants": data["mutants"],
            "versions": versions(), "recorded_at": utc_now()}


def write(reports_dir: str | os.PathLike, record: dict) -> Path:
    path = record_path(reports_dir, record["module"], record.get("subject"))
    jsonio.write_json(path, record)
    return path


class CorruptRecord(Exception):
    """A discovery record that cannot be read: named, never skipped in silence."""


def load_all(reports_dir: str | os.PathLike) -> list[dict]:
    """Every record under `<reports>/discovery`, ours and other subjects'; a file that is not a
    valid record raises CorruptRecord naming it."""
    root = discovery_root(reports_dir)
    if not root.is_dir():
        return []
    records = []
    for f in sorted(root.rglob("*.json")):
        try:
            rec = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CorruptRecord(f"{f}: not readable JSON ({exc}); delete it and run `fidelity discover` again") from None
        if not isinstance(rec, dict) or rec.get("schema") != SCHEMA or not isinstance(rec.get("mutants"), list):
            raise CorruptRecord(f"{f}: not a discovery record (schema {SCHEMA}); delete it and run "
                                f"`fidelity discover` again")
        rec["_file"] = str(f)
        records.append(rec)
    return records


def staleness(record: dict, now: dict) -> list[str]:
    """Why `record` no longer describes the code (`now`: current_hashes for its module)."""
    was = record.get("hashes") or {}
    if now.get("target_source") is None:
        return [f"{record['module']} cannot be found on this import path: if the module is gone, delete "
                f"{record.get('_file') or 'its record'}"]
    names = {"target_source": f"the source of {record['module']} changed",
             "gates": "the gates changed", "discovery": "the discovery code (operators, equivalence) changed"}
    return [why for key, why in names.items() if was.get(key) != now.get(key)]


def judged(reports_dir: str | os.PathLike, repo_root: Path, test_paths: list[str], subject: str | None = None,
           environment: dict | None = None, index=None) -> list[tuple[dict, list[str]]]:
    """Each record of `subject` (None: the project's own) with why it is stale (empty: it is current): what
    check's discovery stage judges and `fidelity discover --stale` re-runs, from one rule. `index`: as HashesNow's."""
    mine = [r for r in load_all(reports_dir) if (r.get("subject") or None) == subject]
    now = HashesNow(repo_root, test_paths, environment, index) if mine else None
    return [(r, staleness(r, now.of(r["module"]))) for r in mine]

