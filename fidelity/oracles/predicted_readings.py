"""A spec's predicted readings, recomputed from the fixtures they name.

A perturbation's `predicted:` entry says what reading a gate should record once
the defect is in: `{gate, reading, oracle, note}`. Its `oracle` is a structured
value naming exactly how that number is computed, so nothing typed by hand goes
unchecked:

    oracle: {fixture: mhc.eq3_sliced, prediction: mhc.eq3.sigma_post, fields: [out],
             measure: worst_relative_error}

Keys (the schema, fidelity/spec/spec.schema.json `$defs.predicted_oracle`, holds them to these):

    fixture     a fixture id: `<fixtures dir>/<fixture>.json`
    prediction  a key of that fixture's `predictions` map (and, where
                fidelity.oracles.predictions registers it, of the same fixture and field)
    fields      dotted paths into the fixture's `expected` (`out`, `paper.alpha`,
                `n2.distance`): the values the gate compares. The prediction's value for a
                path is its `digits` when the path is the prediction's `field`, else (a
                prediction of a group, e.g. field `paper` holding `values`) the entry below it
    measure     worst_relative_error | on_prediction
    floor       (worst_relative_error) the gate's Tolerance floor under |expected|; default 1e-30,
                Tolerance's own default
    index       (optional) the entry of each expected field at this leading index, for a gate
                instance that compares one step of a stored sequence (M(t) of a trajectory)

Measures:

    worst_relative_error  max over the fields and their entries of |p - e| / max(|e|, floor), p the
                          prediction and e the expected value, from their 40-digit strings; a nan
                          or inf p is infinitely far (as in fidelity.gates.compare.assert_close).
                          It is the reading assert_close records when a subject returns p.
    on_prediction         the reading of a "...lies_ten_tolerances_away" gate when the subject
                          has turned into the modelled defect: its output sits ON the prediction,
                          so the distance from it is |p - p| = 0 by construction. The fixture,
                          the prediction and the fields must still exist.

`verify(catalogue, fixtures_dir) -> [ReadingProblem]` recomputes every predicted entry
and compares it with the spec's `reading` to 12 significant digits (the digits the specs
write; 0.0 and 1.0 exactly as written when the computed value rounds to them). A
mismatch, an unknown fixture, prediction, field or measure is a problem naming the spec
file and line: never skipped. `fidelity fixtures --verify` and check's fixtures stage
report them as drifts (a stale prediction is a drift).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mpmath

MEASURES = ("worst_relative_error", "on_prediction")
DEFAULT_FLOOR = 1e-30  # fidelity.gates.compare.Tolerance's default floor
SIGNIFICANT_DIGITS = 12
WORK_DPS = 60


class OracleError(ValueError):
    """The structured oracle names something that does not exist or cannot be computed."""


@dataclass(frozen=True)
class ReadingProblem:
    """A predicted reading that is stale (differs from its oracle) or cannot be recomputed."""

    file: Path
    line: int | None
    perturbation: str
    gate: str
    message: str
    spec: Any = None
    computed: Any = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else str(self.file)
        return f"{where}: {self.perturbation} predicted reading of {self.gate}: {self.message}"

    def to_json(self) -> dict:
        return {"file": str(self.file), "line": self.line, "perturbation": self.perturbation, "gate": self.gate,
                "field": "predicted.reading", "message": self.message, "stored": self.spec,
                "recomputed": self.computed}


# ---- reading a fixture ---------------------------------------------------------------------------

def _load_fixture(fixtures_dir: Path, fixture_id: str, cache: dict) -> dict:
    if fixture_id not in cache:
        path = Path(fixtures_dir) / f"{fixture_id}.json"
        if not path.is_file():
            raise OracleError(f"unknown fixture {fixture_id!r} (no {path})")
        try:
            cache[fixture_id] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise OracleError(f"fixture {fixture_id!r} unreadable: {exc}") from None
    return cache[fixture_id]


def _numbers(entry, what: str):
    """The nested mpf values of a stored value: its 40-digit strings, else its float64 twin."""
    if not isinstance(entry, dict):
        raise OracleError(f"{what} is not a stored value ({{digits, float64}})")
    if "digits" in entry:
        raw = entry["digits"]
    elif "float64" in entry:
        raw = entry["float64"]
    else:
        raise OracleError(f"{what} holds no digits nor float64 (keys: {sorted(entry)})")
    return _to_mpf(raw, what)


def _to_mpf(raw, what: str):
    if isinstance(raw, list):
        return [_to_mpf(v, what) for v in raw]
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise OracleError(f"{what} holds {raw!r}, not a number")
    try:
        return mpmath.mpf(raw)
    except (TypeError, ValueError):
        raise OracleError(f"{what} holds {raw!r}, not a number") from None


def _walk(tree, path: list[str], what: str):
    for key in path:
        if not isinstance(tree, dict) or key not in tree:
            known = sorted(tree) if isinstance(tree, dict) else []
            raise OracleError(f"{what}: no {key!r} (known: {known})")
        tree = tree[key]
    return tree


def _expected(fx: dict, fixture_id: str, field: str):
    return _numbers(_walk(fx.get("expected", {}), field.split("."), f"{fixture_id} expected {field!r}"),
                    f"{fixture_id} expected {field!r}")


def _predicted(pred: dict, name: str, field: str):
    """The prediction's value for expected field `field`."""
    own = pred.get("field")
    if not isinstance(own, str):
        raise OracleError(f"prediction {name!r} names no field")
    if field == own:
        return _numbers(pred, f"prediction {name!r}")
    if field.startswith(own + "."):
        rest = field[len(own) + 1:].split(".")
        return _numbers(_walk(pred.get("values", {}), rest, f"prediction {name!r} values"),
                        f"prediction {name!r} value {field!r}")
    raise OracleError(f"prediction {name!r} is about {own!r}, not {field!r}")


def _flat(values) -> list:
    if isinstance(values, list):
        return [x for v in values for x in _flat(v)]
    return [values]


def _shape(values) -> tuple:
    if isinstance(values, list):
        return (len(values),) + (_shape(values[0]) if values else ())
    return ()


def _registered(name: str, fixture_id: str, field: str) -> None:
    """Where fidelity.oracles.predictions registers `name`, it must be about the same fixture."""
    from fidelity.oracles.predictions import PREDICTIONS

    reg = PREDICTIONS.get(name)
    if reg is not None and reg.fixture != fixture_id:
        raise OracleError(f"prediction {name!r} is registered for fixture {reg.fixture!r}, not {fixture_id!r}")
    if reg is not None and reg.field != field:
        raise OracleError(f"prediction {name!r} is registered about field {reg.field!r}; the fixture says {field!r}")


# ---- the measures -----------------------------------------------------------------------------------

def compute(oracle: dict, fixtures_dir: Path | str, _cache: dict | None = None):
    """The predicted reading `oracle` (a structured `oracle:` value) names, as an mpf."""
    cache = {} if _cache is None else _cache
    if not isinstance(oracle, dict):
        raise OracleError(f"oracle is {oracle!r}, not a structured {{fixture, prediction, fields, measure}}")
    measure = oracle.get("measure")
    if measure not in MEASURES:
        raise OracleError(f"unknown measure {measure!r} (known: {', '.join(MEASURES)})")
    fixture_id, name, fields = oracle.get("fixture"), oracle.get("prediction"), oracle.get("fields")
    if not isinstance(fixture_id, str) or not isinstance(name, str):
        raise OracleError("oracle needs a fixture and a prediction")
    if not isinstance(fields, list) or not fields or not all(isinstance(f, str) for f in fields):
        raise OracleError("oracle needs fields: a non-empty list of expected field paths")
    fx = _load_fixture(Path(fixtures_dir), fixture_id, cache)
    preds = fx.get("predictions", {})
    if name not in preds:
        raise OracleError(f"fixture {fixture_id!r} has no prediction {name!r} (known: {sorted(preds)})")
    pred = preds[name]
    _registered(name, fixture_id, pred.get("field"))
    floor = oracle.get("floor", DEFAULT_FLOOR)
    index = oracle.get("index")
    with mpmath.workdps(WORK_DPS):
        floor = mpmath.mpf(floor)
        worst = mpmath.mpf(0)
        for field in fields:
            e = _expected(fx, fixture_id, field)
            p = _predicted(pred, name, field)
            if index is not None:
                if not isinstance(e, list) or not 0 <= index < len(e):
                    raise OracleError(f"{fixture_id} expected {field!r} has no entry {index}")
                e = e[index]
            if _shape(p) != _shape(e):
                raise OracleError(f"prediction {name!r} has shape {_shape(p)}, {fixture_id} expected "
                                  f"{field!r}{'' if index is None else f'[{index}]'} {_shape(e)}")
            if measure == "on_prediction":
                continue  # the subject's output IS p: its distance from p is 0
            for a, b in zip(_flat(p), _flat(e)):
                err = mpmath.inf if not mpmath.isfinite(a) else abs(a - b) / max(abs(b), floor)
                worst = max(worst, err)
        return +worst


def rounded(value, digits: int = SIGNIFICANT_DIGITS) -> float:
    """`value` rounded to `digits` significant digits, as the float the spec would write."""
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        return value
    return float(f"{value:.{digits}g}")


def matches(spec_reading, computed, digits: int = SIGNIFICANT_DIGITS) -> bool:
    """The spec's reading equals the computed one to the digits the spec writes (12 significant)."""
    if isinstance(spec_reading, bool) or not isinstance(spec_reading, (int, float)):
        return False
    return rounded(spec_reading, digits) == rounded(computed, digits)


# ---- every entry of a catalogue -----------------------------------------------------------------------

def _entry_lines(file: Path, cache: dict) -> tuple[dict, Any]:
    if file not in cache:
        from fidelity.spec.yaml_source import load_yaml

        cache[file] = load_yaml(file)
    return cache[file]


def _position(data, perturbation_id: str) -> int | None:
    for i, entry in enumerate(data.get("perturbations", []) if isinstance(data, dict) else []):
        if isinstance(entry, dict) and entry.get("id") == perturbation_id:
            return i
    return None


def verify(catalogue=None, fixtures_dir: Path | str | None = None) -> list[ReadingProblem]:
    """Every predicted reading of `catalogue` (default: the project's specs) recomputed from the
    fixtures in `fixtures_dir` (default: the project's fixtures/) and compared with the spec."""
    if catalogue is None or fixtures_dir is None:
        from fidelity import project

        if fixtures_dir is None:
            fixtures_dir = project.current().fixtures
        if catalogue is None:
            from fidelity.spec.errors import SpecError
            from fidelity.spec.loader import load_catalogue

            try:
                catalogue = load_catalogue()
            except SpecError as exc:
                return [ReadingProblem(Path(exc.file), exc.line, "-", "-", f"specs unreadable: {exc.message}")]
    problems: list[ReadingProblem] = []
    fixtures, sources = {}, {}
    for item in catalogue.perturbations.values():
        entries = item.get("predicted") or []
        if not entries:
            continue
        data, index = _entry_lines(Path(item.file), sources)
        pos = _position(data, item.id)
        for j, entry in enumerate(entries):
            path = ("perturbations", pos, "predicted", j)
            line = index.line_of(path + ("reading",)) if pos is not None else item.line
            gate = entry.get("gate", "?")
            spec = entry.get("reading")
            if "oracle" not in entry:
                problems.append(ReadingProblem(Path(item.file), line, item.id, gate,
                                               "no oracle: a predicted reading must name how it is computed "
                                               "({fixture, prediction, fields, measure})", spec, None))
                continue
            try:
                got = compute(entry.get("oracle"), fixtures_dir, fixtures)
            except OracleError as exc:
                problems.append(ReadingProblem(Path(item.file), line, item.id, gate, str(exc), spec, None))
                continue
            if not matches(spec, got):
                problems.append(ReadingProblem(
                    Path(item.file), line, item.id, gate,
                    f"the spec says {spec!r}, the oracle computes {rounded(got)!r} "
                    f"({mpmath.nstr(got, 17)}; {entry['oracle'].get('measure')} of {entry['oracle'].get('prediction')} "
                    f"on {entry['oracle'].get('fixture')})",
                    spec, rounded(got)))
    return problems
