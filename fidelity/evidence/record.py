"""One evidence record: what one gate did under one perturbation, and whether that accepts the gate.

A record (SCHEMA "fidelity.perturb.evidence/1"), as written to JSON:
  schema, perturbation, title, spec_file, target, target_file, edits,
  edits_sha256, diff                      what was perturbed, and how; target is the
                                          module's dotted name, target_file its path
                                          as the module name spells it (no venv, no
                                          site-packages: the same record everywhere)
  gate, gate_file, equations, listed      the gate; listed = named in the
                                          perturbation as one that must go red
  outcome        an Outcome: red_by_assertion | red_other | survived | skipped
  detail         one line: the failing instance and exception, or why red_other
  reading        OBSERVED reading of the first instance red by assertion, or null
  predicted      {"reading", "note"} from the perturbation, or null; kept apart
                 from `reading` and never merged into it
  instances      per test instance: nodeid, outcome, phase, kind, exc_type,
                 message, raised_in, skip_reason, readings
  green_after    the gate passed again without the patch, in the run after
  clean_runs     unpatched runs of the gate's instances before the patch, each in its own
                 child, all green with bit-identical readings (fidelity.perturb.clean_runs),
                 counted up to CLEAN_RUNS: kept runs under the same inputs key count
                 (fidelity.perturb.clean_run_store), so the record is the same however many
  patch_served   times the child imported the patched module (0: no gate
                 imported the target; null: no child ran)
  hashes         {"gate_file": key, "target_source": key of the ORIGINAL source,
                 "perturbed_source": key of the source with the edits applied,
                 "fixtures": {path: key}, "helpers": {name: key}}: meaning keys
                 (fidelity.source_meaning: a comment or docstring changes none; a
                 fixture's is its bytes') (paths relative to the repo root where they
                 lie inside it; the helpers are the gate's conftests and the helper
                 and gate library modules it imports, fidelity.evidence.gate_helpers)
  versions       python, torch, pytest, fidelity, platform
  recorded_at    UTC, ISO 8601: when this outcome was first seen (kept while it stays the same)
  record_sha256  sha256 of the record's canonical JSON without this field (record_hash):
                 a record edited by hand no longer matches it, and is named as such

`EvidenceRecord.from_json` checks all of that on load (InvalidRecord says why and what to do);
`EvidenceRecord.accepted` is the verdict, decided here once for the runner, check and report.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import platform
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Mapping

from fidelity.evidence import jsonio
from fidelity.evidence.outcome import Outcome

SCHEMA = "fidelity.perturb.evidence/1"

CLEAN_RUNS = 10
"""Unpatched runs, each in its own child, all green with identical readings, before a red counts.

A gate failing in half of all processes passes ten with probability 1/1024, so it is refused with
probability above 0.999 (fidelity.perturb.clean_runs.refusal_probability)."""

RECREATE = "run `fidelity perturb --stale` to re-create it"


class InvalidRecord(ValueError):
    """A file under the evidence root that is not a valid record: `why`, and `todo` (what to do)."""

    def __init__(self, why: str, todo: str = RECREATE):
        super().__init__(why)
        self.why, self.todo = why, todo


# field -> the types a valid record gives it; the other fields are optional (older records lack some)
_REQUIRED = {"perturbation": (str,), "gate": (str,), "gate_file": (str,), "target": (str,), "outcome": (str,),
             "hashes": (dict,), "green_after": (bool, type(None)), "edits_sha256": (str,)}


@dataclass(frozen=True)
class EvidenceRecord:
    perturbation: str
    gate: str
    gate_file: str
    target: str
    outcome: Outcome
    hashes: Mapping[str, Any]
    green_after: bool | None
    edits_sha256: str
    title: str = ""
    spec_file: str | None = None
    target_file: str | None = None
    diff: str | None = ""  # None: a light read (read_memo.py) left it out
    equations: tuple[str, ...] = ()
    listed: bool = False
    detail: str = ""
    reading: Any = None                 # encoded as jsonio writes it: a non-finite reading is a string
    predicted: Mapping[str, Any] | None = None
    instances: tuple[Mapping[str, Any], ...] | None = ()  # None: a light read left it out
    clean_runs: int | None = None
    patch_served: int | None = None
    versions: Mapping[str, Any] = field(default_factory=dict)
    recorded_at: str | None = None
    json: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)  # as read, for renderers

    @classmethod
    def from_text(cls, text: str) -> "EvidenceRecord":
        """The record a file's text holds, checked as from_json does (ValueError when it is not JSON)."""
        return cls.from_json(json.loads(text), as_written=text)

    @classmethod
    def from_json(cls, obj: object, as_written: str | None = None, proven: bool = False,
                  light: bool = False) -> "EvidenceRecord":
        """The record `obj` (parsed JSON) holds, checked: InvalidRecord when it is not one.
        `as_written`: the text `obj` was parsed from, whose own bytes may prove the hash (see _hashes_as_written);
        `proven`: its hash was proven when the same bytes were read before (read_memo.py); `light`: `obj` is
        read_memo's light view, so `instances` and `diff` are None (not read), never an empty value."""
        if not isinstance(obj, dict):
            raise InvalidRecord(f"not a record (a JSON {type(obj).__name__}, not an object)")
        if obj.get("schema") != SCHEMA:
            raise InvalidRecord(f"schema {obj.get('schema')!r}, not {SCHEMA!r}")
        for key, types in _REQUIRED.items():
            if key not in obj:
                raise InvalidRecord(f"no {key!r} field")
            if not isinstance(obj[key], types):
                raise InvalidRecord(f"{key!r} is a {type(obj[key]).__name__}")
        try:
            outcome = Outcome(obj["outcome"])
        except ValueError:
            raise InvalidRecord(f"outcome {obj['outcome']!r} is none of {', '.join(o.value for o in Outcome)}") from None
        if "record_sha256" not in obj:
            raise InvalidRecord("it carries no record_sha256 (written before records did, or not by the runner)")
        if not proven and not _hashes_as_written(as_written, obj["record_sha256"]) and obj["record_sha256"] != record_hash(obj):
            raise InvalidRecord("its content does not match its record_sha256 (edited by hand?)")
        runs = obj.get("clean_runs")
        return cls(
            perturbation=obj["perturbation"], gate=obj["gate"], gate_file=obj["gate_file"], target=obj["target"],
            outcome=outcome, hashes=obj["hashes"], green_after=obj["green_after"], edits_sha256=obj["edits_sha256"],
            title=obj.get("title") or "", spec_file=obj.get("spec_file"), target_file=obj.get("target_file"),
            diff=None if light else obj.get("diff") or "", equations=tuple(obj.get("equations") or ()),
            listed=bool(obj.get("listed")), detail=obj.get("detail") or "", reading=obj.get("reading"),
            predicted=obj.get("predicted"), instances=None if light else tuple(obj.get("instances") or ()),
            clean_runs=runs if isinstance(runs, int) and not isinstance(runs, bool) else None,
            patch_served=obj.get("patch_served"), versions=obj.get("versions") or {},
            recorded_at=obj.get("recorded_at"), json=obj)

    @property
    def accepted(self) -> bool:
        """Whether this record accepts its gate (when it is current, see staleness): red by the gate's
        own assertion under the patch, green again without it, after CLEAN_RUNS clean runs."""
        return (self.outcome is Outcome.RED_BY_ASSERTION and self.green_after is True
                and self.clean_runs is not None and self.clean_runs >= CLEAN_RUNS)

    def shortfall(self) -> str:
        """What the record shows where it does not accept its gate, in the words tables use (the outcome,
        then what is missing of green after and clean runs); one home for check's messages."""
        words = [self.outcome.words]
        if self.green_after is not True:
            words.append("not green after" if self.green_after is False else "green after not seen")
        if (self.clean_runs or 0) < CLEAN_RUNS:
            words.append(f"after {self.clean_runs or 0} clean runs ({CLEAN_RUNS} needed)")
        return ", ".join(words)

    @property
    def fixtures(self) -> list[str]:
        """The fixture files the gate read, as recorded (relative to the repo root where inside it)."""
        return sorted(self.hashes.get("fixtures") or {})


def record_hash(record: Mapping[str, Any]) -> str:
    """The record's own hash: its canonical JSON (jsonio.dumps) without `record_sha256`."""
    body = {k: v for k, v in record.items() if k != "record_sha256"}
    return hashlib.sha256(jsonio.dumps(body).encode("utf-8")).hexdigest()


def _hashes_as_written(text: str | None, sha: object) -> bool:
    """Whether `text` hashes to `sha` once its top-level record_sha256 line is cut out. A record
    written by jsonio.dumps (indent 1: only top-level keys start a line with one space, and no JSON
    string holds a newline) then IS its body's canonical text, so the check needs no re-serialising
    (json's indenting encoder is pure Python: ~1 ms a record, seconds over the store). Any other
    text (hand-formatted, the key last) answers False and is checked the canonical way."""
    if text is None or not isinstance(sha, str):
        return False
    line = "\n " + json.dumps("record_sha256") + ": " + json.dumps(sha) + ","
    at = text.find(line)
    if at < 0:
        return False
    body = text[:at] + text[at + len(line):]
    return hashlib.sha256(body.encode("utf-8")).hexdigest() == sha


def edits_sha256(target: str, edits: list[dict]) -> str:
    blob = json.dumps({"target": target, "edits": edits}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def versions() -> dict:
    """The versions a record carries: python, torch, pytest, fidelity, platform."""
    def v(dist: str) -> str | None:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    import fidelity

    return {"python": platform.python_version(), "torch": v("torch"), "pytest": v("pytest"),
            "fidelity": getattr(fidelity, "__version__", None), "platform": platform.platform()}


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
