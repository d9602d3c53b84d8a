"""YAML to plain data, keeping the line of every key so errors can point at it.

Only JSON's types come out: timestamps stay strings (a date is text in our
schema), and a key given twice in one mapping is an error, not a silent
overwrite as in plain PyYAML.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from fidelity.spec.errors import SpecError


class _JsonLikeLoader(yaml.SafeLoader):
    pass


# Drop the timestamp resolver: `date: 2026-11-29` must stay the string the schema expects.
_JsonLikeLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class LineIndex:
    """Key path -> 1-based line, for every mapping key and sequence item."""

    def __init__(self) -> None:
        self._lines: dict[tuple, int] = {}

    def add(self, path: tuple, line: int) -> None:
        self._lines.setdefault(path, line)

    def line_of(self, path: tuple) -> int | None:
        """The line of `path`, or of its nearest ancestor that has one."""
        path = tuple(path)
        while path:
            if path in self._lines:
                return self._lines[path]
            path = path[:-1]
        return self._lines.get((), None)


def _index(node: yaml.Node, path: tuple, index: LineIndex, file: Path) -> None:
    index.add(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict = {}
        for key_node, value_node in node.value:
            key = key_node.value
            if key in seen:
                raise SpecError(file, key_node.start_mark.line + 1, path + (key,),
                                f"key given twice (first on line {seen[key]})")
            seen[key] = key_node.start_mark.line + 1
            index.add(path + (key,), key_node.start_mark.line + 1)
            _index(value_node, path + (key,), index, file)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index(item, path + (i,), index, file)


def load_yaml(file: Path) -> tuple[object, LineIndex]:
    """Parse `file`; raise SpecError (never a yaml exception) on any problem."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(file, None, (), f"cannot read: {exc}") from None
    try:
        loader = _JsonLikeLoader(text)
        try:
            node = loader.get_single_node()
            index = LineIndex()
            if node is None:
                raise SpecError(file, 1, (), "the file is empty")
            _index(node, (), index, file)
            data = loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        raise SpecError(file, line, (), f"malformed YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise SpecError(file, None, (), f"malformed YAML: {exc}") from None
    except (ValueError, TypeError, RecursionError) as exc:
        # e.g. an unhashable key like `? [a, b]`: still the spec's fault, still one clear line
        raise SpecError(file, None, (), f"malformed YAML: {exc}") from None
    return data, index
