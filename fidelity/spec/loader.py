"""Load every spec in a directory: YAML -> JSON Schema -> ids and references.

Every problem surfaces as one SpecError naming the file, the line and the key
path. Nothing else escapes (the fuzz test in tests/spec holds us to that).
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema

from fidelity.spec.catalogue import Catalogue, Item
from fidelity.spec.errors import SpecError
from fidelity.spec.yaml_source import LineIndex, load_yaml

SCHEMA_NAME = "spec.schema.json"
SCHEMA_FILE = Path(__file__).with_name(SCHEMA_NAME)  # ships inside the package


def load_schema(specs_dir: Path) -> dict:
    """A schema beside the specs (a project that extends it), else the one fidelity ships."""
    for candidate in (specs_dir / SCHEMA_NAME, SCHEMA_FILE):
        if candidate.is_file():
            try:
                return json.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise SpecError(candidate, None, (), f"unreadable schema: {exc}") from None
    raise SpecError(specs_dir, None, (), f"no {SCHEMA_NAME} found")


def _schema_error(file: Path, index: LineIndex, error: jsonschema.ValidationError) -> SpecError:
    path = tuple(error.absolute_path)
    message = error.message
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        unknown = sorted(str(k) for k in error.instance if k not in allowed)
        if unknown:
            path = path + (unknown[0],)
            message = f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})"
    elif error.validator == "required":
        message = f"missing field: {error.message.split(' is a required')[0]}"
    elif len(message) > 300:
        message = message[:300] + "..."
    return SpecError(file, index.line_of(path), path, message)


def _validate(file: Path, data: object, index: LineIndex, validator) -> None:
    errors = sorted(validator.iter_errors(data), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    if errors:
        # The deepest error is the most specific one a person can act on.
        best = max(errors, key=lambda e: len(e.absolute_path))
        raise _schema_error(file, index, best)


_SECTIONS = (("equations", "equation"), ("claims", "claim"), ("perturbations", "perturbation"))


def _register(cat: Catalogue, file: Path, data: dict, index: LineIndex) -> None:
    paper_id = data["paper"]["id"]
    if paper_id in cat.papers:
        first = cat.papers[paper_id]
        raise SpecError(file, index.line_of(("paper", "id")), ("paper", "id"),
                        f"duplicate paper id {paper_id!r} (first in {first.file}:{first.line})")
    cat.papers[paper_id] = Item("paper", paper_id, paper_id, data["paper"], file, index.line_of(("paper",)))
    for section, kind in _SECTIONS:
        for i, entry in enumerate(data.get(section, [])):
            path = (section, i, "id")
            item_id = entry["id"]
            if kind != "perturbation" and item_id.split(".")[0] != paper_id:
                raise SpecError(file, index.line_of(path), path,
                                f"id {item_id!r} must start with this paper's id {paper_id!r}.")
            existing = cat.get(item_id)
            if existing is not None:
                raise SpecError(file, index.line_of(path), path,
                                f"duplicate id {item_id!r} (first in {existing.file}:{existing.line})")
            cat.by_kind(kind)[item_id] = Item(kind, item_id, paper_id, entry, file, index.line_of((section, i)))


def _references(item: Item) -> list[tuple[tuple, str]]:
    """(key path inside the item, referenced id) for every cross-reference."""
    data, refs = item.data, []
    for key in ("refs", "about", "covers"):
        refs += [((key, i), r) for i, r in enumerate(data.get(key, []))]
    for d, delta in enumerate(data.get("deltas", [])):
        refs += [(("deltas", d, "refs", i), r) for i, r in enumerate(delta.get("refs", []))]
    return refs


def _check_references(cat: Catalogue, indexes: dict[Path, LineIndex], sections: dict[str, str]) -> None:
    for table in (cat.equations, cat.claims, cat.perturbations):
        for item in table.values():
            base = _item_path(item, indexes[item.file], sections)
            for sub, ref in _references(item):
                if cat.get(ref) is None:
                    path = base + sub
                    raise SpecError(item.file, indexes[item.file].line_of(path), path,
                                    f"refers to {ref!r}, which no spec defines")


def _item_path(item: Item, index: LineIndex, sections: dict[str, str]) -> tuple:
    section = {"equation": "equations", "claim": "claims", "perturbation": "perturbations"}[item.kind]
    return (section, int(sections[f"{item.file}|{item.id}"]))


def load_catalogue(specs_dir: Path | str | None = None) -> Catalogue:
    """Load and validate every *.yaml / *.yml in `specs_dir` (default: the current project's specs)."""
    if specs_dir is None:
        from fidelity import project

        specs_dir = project.current().specs
    specs_dir = Path(specs_dir)
    if not specs_dir.is_dir():
        raise SpecError(specs_dir, None, (), "not a directory")
    files = sorted([*specs_dir.glob("*.yaml"), *specs_dir.glob("*.yml")])
    if not files:
        raise SpecError(specs_dir, None, (), "no *.yaml spec files in this directory")
    validator = jsonschema.Draft202012Validator(load_schema(specs_dir))
    cat = Catalogue(specs_dir=specs_dir, files=files)
    indexes: dict[Path, LineIndex] = {}
    positions: dict[str, str] = {}
    for file in files:
        data, index = load_yaml(file)
        _validate(file, data, index, validator)
        indexes[file] = index
        for section, _ in _SECTIONS:
            for i, entry in enumerate(data.get(section, [])):
                positions[f"{file}|{entry['id']}"] = str(i)
        _register(cat, file, data, index)
    _check_references(cat, indexes, positions)
    return cat


# A --file catalogue's ids are its own namespace (swap-axes, my.defect_1, P24): any identifier,
# kept to characters an evidence folder name holds as they are. The project's specs keep P<n>.
CATALOGUE_ID_PATTERN = "^[A-Za-z_][A-Za-z0-9_.-]*$"


def catalogue_schema(schema: dict, full_spec: bool) -> dict:
    """The schema a --file catalogue is validated with: the project's, its perturbation ids any
    identifier and `gates` optional (whether they are needed is the caller's to say: --observe).
    `full_spec`: the file is a whole spec (it has `paper`), else a file of `perturbations:` only."""
    defs = copy.deepcopy(schema["$defs"])
    pert = defs["perturbation"]
    pert["properties"]["id"] = {"type": "string", "pattern": CATALOGUE_ID_PATTERN}
    pert["required"] = [k for k in pert.get("required", []) if k != "gates"]
    if full_spec:
        return dict(schema, **{"$defs": defs})
    return {"$defs": defs, "type": "object", "additionalProperties": False, "required": ["perturbations"],
            "properties": {"perturbations": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/perturbation"}}}}


def load_perturbation_file(file: Path | str, cat: Catalogue, *, require_gates: bool = True) -> list[Item]:
    """A user's own catalogue: a full spec, or a YAML file holding only `perturbations:`.

    Validated with the project's schema and the same clear errors, except that ids are any
    identifiers (CATALOGUE_ID_PATTERN) and `gates` may be omitted when `require_gates` is
    False (an observation). Its ids are its own, so one the project's catalogue `cat` already
    defines is an error naming both places (else its evidence could be taken for the
    project's); `covers` must name equations `cat` defines.
    """
    file = Path(file)
    data, index = load_yaml(file)
    full_spec = not (isinstance(data, dict) and "paper" not in data)
    schema = catalogue_schema(load_schema(cat.specs_dir), full_spec)
    _validate(file, data, index, jsonschema.Draft202012Validator(schema))
    items, seen = [], {}
    for i, entry in enumerate(data["perturbations"]):
        path = ("perturbations", i, "id")
        if entry["id"] in seen:
            raise SpecError(file, index.line_of(path), path,
                            f"duplicate id {entry['id']!r} (first on line {seen[entry['id']]})")
        seen[entry["id"]] = index.line_of(path)
        _check_not_the_projects(file, index, path, entry["id"], cat)
        if require_gates and "gates" not in entry:
            raise SpecError(file, index.line_of(("perturbations", i)), ("perturbations", i),
                            "missing field: gates (the gates that must go red); list them, or run with "
                            "--observe to see which gates go red")
        for j, ref in enumerate(entry.get("covers", [])):
            if cat.get(ref) is None:
                sub = ("perturbations", i, "covers", j)
                raise SpecError(file, index.line_of(sub), sub, f"refers to {ref!r}, which no spec defines")
        items.append(Item("perturbation", entry["id"], data.get("paper", {}).get("id", "user"), entry, file,
                          index.line_of(("perturbations", i))))
    return items


def _check_not_the_projects(file: Path, index: LineIndex, path: tuple, item_id: str, cat: Catalogue) -> None:
    existing = cat.get(item_id)
    if existing is None:
        return
    hint = f" (to run the project's own, `fidelity perturb {item_id}`)" if existing.kind == "perturbation" else ""
    raise SpecError(file, index.line_of(path), path,
                    f"id {item_id!r} is already the project's {existing.kind} ({_shown(existing.file)}:{existing.line}); "
                    f"a --file catalogue's ids are its own: rename it here{hint}")


def _shown(file: Path | str) -> str:
    """A path relative to the working directory when below it, else as given."""
    try:
        return str(Path(file).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(file)
