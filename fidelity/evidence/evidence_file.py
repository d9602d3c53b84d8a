"""One perturbation's evidence file: every record of it, by gate, as a reviewer reads and diffs it.

FILE_SCHEMA "fidelity.perturb.evidence-file/1", written by jsonio (sorted keys, indent 1):
  {"perturbation": id, "records": {gate id: record (record.py, with its record_sha256)}, "schema": ...}
Each record is the one a file of its own held before (the same fields, the same record_sha256); the
file's bytes depend on its records alone, so writing the same records again gives the same bytes.

Reading checks each record's own hash. jsonio lays a record out inside the file as it would alone, two
spaces further in (no JSON string holds a newline), so `parse` cuts each record's canonical text out
of the file's and the hash is proved from bytes (record._hashes_as_written), without re-serialising
13,000 records through json's pure-Python indenting encoder; a file laid out otherwise is checked the
canonical way.
"""
from __future__ import annotations

import json

from fidelity.evidence import jsonio

FILE_SCHEMA = "fidelity.perturb.evidence-file/1"

_RECORD_START = '  "'    # `  "<gate>": {`: a record begins (the only keys at depth 2 are gates)
_RECORD_ENDS = ("  }", "  },")
_NESTING = "  "          # what a record's lines carry in front of the text it would have alone


class InvalidFile(ValueError):
    """Not an evidence file: the reason, in the words check prints."""


def text(perturbation: str, records: dict[str, dict]) -> str:
    """The file's text for `records` (gate -> stamped record)."""
    return jsonio.dumps({"schema": FILE_SCHEMA, "perturbation": perturbation, "records": records})


def parse(content: str) -> tuple[str, list[tuple[str, object, str | None]]]:
    """(the perturbation the file names, [(gate key, record as parsed, its canonical text or None)]).
    ValueError when it is not JSON; InvalidFile when it is not an evidence file."""
    obj = json.loads(content)
    if not isinstance(obj, dict):
        raise InvalidFile(f"not an evidence file (a JSON {type(obj).__name__}, not an object)")
    if obj.get("schema") != FILE_SCHEMA:
        raise InvalidFile(f"schema {obj.get('schema')!r}, not {FILE_SCHEMA!r}")
    if not isinstance(obj.get("perturbation"), str) or not isinstance(obj.get("records"), dict):
        raise InvalidFile("no 'perturbation' string or no 'records' object")
    records = list(obj["records"].items())
    texts = _record_texts(content)
    if len(texts) != len(records):  # laid out by another writer: every hash is checked the canonical way
        texts = [None] * len(records)
    return obj["perturbation"], [(gate, rec, t) for (gate, rec), t in zip(records, texts)]


def _record_texts(content: str) -> list[str | None]:
    """Each record's text as jsonio.dumps would write it alone, in the file's order."""
    out: list[str | None] = []
    body: list[str] | None = None
    for line in content.split("\n"):
        if body is None:
            if line.startswith(_RECORD_START) and line.endswith(": {"):
                body = []
        elif line in _RECORD_ENDS:
            out.append("{\n" + "\n".join(body) + "\n}\n")
            body = None
        else:
            body.append(line[len(_NESTING):] if line.startswith(_NESTING + " ") else line)
    return out
