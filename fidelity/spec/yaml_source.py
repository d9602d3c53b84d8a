"""YAML to plain data, keeping the line of every key so errors can point at it.

Only JSON's types come out: timestamps stay strings (a date is text in our
schema), and a key given twice in one mapping is an error, not a silent
overwrite as in plain PyYAML.

A spec is input from anyone, so its cost is bounded before anything is built from
it: a file over MAX_SPEC_BYTES is not read, and a document that uses more than
MAX_ALIASES aliases or expands (aliases repeated where they are used) to more than
MAX_EXPANDED_NODES nodes is refused while its line index is made, before the
document is constructed (an alias bomb of nine nested lists of nine expands to 9^9
nodes from a few hundred bytes).

Speed: a file is parsed by libyaml's C parser when PyYAML has it, and the result kept per process
keyed on the file's path and text (a changed file is parsed again; each caller gets its own copy of
the data). A document the C parser rejects, a key error, or more than MAX_ALIASES aliases is parsed again
by the Python loader, so those errors (their line, their message) are exactly the Python loader's; the
expansion budget walks the composed graph, the same nodes and lines whichever composer made it.
"""
from __future__ import annotations

import copy
from pathlib import Path

import yaml

from fidelity.spec.errors import SpecError

MAX_SPEC_BYTES = 2 * 1024 * 1024  # the largest spec here is 0.12 MB (2,651 nodes); a paper fits many times over
MAX_ALIASES = 1000
MAX_EXPANDED_NODES = 100_000  # 40x the largest spec here, more than 2 MB of plain YAML holds (~45 bytes a node)


class _JsonLikeLoader(yaml.SafeLoader):
    """SafeLoader that counts the aliases it composes (and refuses too many)."""

    def __init__(self, text: str, file: Path):
        super().__init__(text)
        self.file, self.aliases = file, 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                line = self.peek_event().start_mark.line + 1
                raise SpecError(self.file, line, (), f"more than {MAX_ALIASES} YAML aliases (*name): a spec "
                                                     f"writes its values out; aliases are for a few repeats")
        return super().compose_node(parent, index)


# Drop the timestamp resolver: `date: 2026-11-29` must stay the string the schema expects.
_JsonLikeLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


try:
    from yaml._yaml import CParser as _CParser  # libyaml's; absent when PyYAML was built without it
except ImportError:
    _CParser = None


if _CParser is not None:
    class _CJsonLikeLoader(_CParser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
        """The same loader on libyaml's parser and composer (no alias counting: see _alias_uses)."""

        yaml_implicit_resolvers = _JsonLikeLoader.yaml_implicit_resolvers

        def __init__(self, text: str):
            _CParser.__init__(self, text)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)


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


class _Expanded(SpecError):
    """The document expands past MAX_EXPANDED_NODES: a refusal either loader's graph decides alike."""


class _Budget:
    """Nodes left to visit: an alias counts again wherever it is used, as it would once built."""

    def __init__(self, file: Path):
        self.file, self.left = file, MAX_EXPANDED_NODES

    def spend(self, node: yaml.Node) -> None:
        self.left -= 1
        if self.left < 0:
            raise _Expanded(self.file, node.start_mark.line + 1, (),
                            f"the document expands to more than {MAX_EXPANDED_NODES:,} nodes (YAML aliases "
                            f"repeated where they are used): refused before it is built")


def _entries(node: yaml.Node, path: tuple, file: Path):
    """(path, line of its key or None, node) of each value under `node`, in order; a key given twice in one
    mapping is refused where the walk reaches it."""
    if isinstance(node, yaml.MappingNode):
        seen: dict = {}
        for key_node, value_node in node.value:
            key = key_node.value
            if key in seen:
                raise SpecError(file, key_node.start_mark.line + 1, path + (key,),
                                f"key given twice (first on line {seen[key]})")
            seen[key] = key_node.start_mark.line + 1
            yield path + (key,), key_node.start_mark.line + 1, value_node
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            yield path + (i,), None, item


def _index(node: yaml.Node, path: tuple, index: LineIndex, file: Path, budget: _Budget) -> None:
    budget.spend(node)
    index.add(path, node.start_mark.line + 1)
    for child_path, key_line, child in _entries(node, path, file):
        if key_line is not None:
            index.add(child_path, key_line)
        _index(child, child_path, index, file, budget)


def _values(node: yaml.Node) -> list[yaml.Node]:
    """The nodes `_entries` walks into (a mapping's values, a sequence's items), keys unjudged."""
    if isinstance(node, yaml.MappingNode):
        return [v for _, v in node.value]
    return node.value if isinstance(node, yaml.SequenceNode) else []


def _expanded_sizes(node: yaml.Node) -> dict[int, int] | None:
    """id(node) -> the nodes `_index` visits under it (itself included, aliases counted wherever they are
    used), each node sized once; None for a graph that reaches itself (the walk's RecursionError says so)."""
    sizes: dict[int, int] = {}
    open_ = set()
    stack = [(node, False)]
    while stack:
        n, done = stack.pop()
        if done:
            open_.discard(id(n))
            sizes[id(n)] = 1 + sum(sizes[id(c)] for c in _values(n))
            continue
        if id(n) in sizes:
            continue
        if id(n) in open_:
            return None
        open_.add(id(n))
        stack.append((n, True))
        stack.extend((c, False) for c in _values(n) if id(c) not in sizes)
    return sizes


def _refuse_expansion(node: yaml.Node, file: Path) -> None:
    """Raise what `_index` would raise on a document that expands past MAX_EXPANDED_NODES (the same node, or
    a key given twice that it meets first), without visiting the expansion: a node met again is skipped by
    its size while the budget holds it (its keys were judged the first time). Nothing on any other document."""
    sizes = _expanded_sizes(node)
    if sizes is None or sizes[id(node)] <= MAX_EXPANDED_NODES:
        return
    budget, met = _Budget(file), set()

    def walk(n: yaml.Node, path: tuple) -> None:
        budget.spend(n)
        met.add(id(n))
        for child_path, _, child in _entries(n, path, file):
            if id(child) in met and sizes[id(child)] <= budget.left:
                budget.left -= sizes[id(child)]
            else:
                walk(child, child_path)
    walk(node, ())


# Errors inside these constructs are usually made where the construct starts (an unclosed
# bracket or quote, a key without its colon); the parser notices only where it gives up.
_STARTS_AT_CONTEXT = ("flow sequence", "flow mapping", "quoted scalar", "simple key", "block scalar")


def _syntax_error(file: Path, exc: yaml.MarkedYAMLError, last_line: int) -> SpecError:
    problem, context = exc.problem_mark, exc.context_mark
    text = " ".join(str(p) for p in (exc.context, exc.problem) if p)
    line = problem.line + 1 if problem else (context.line + 1 if context else None)
    if problem and context and context.line < problem.line:
        if any(kind in (exc.context or "") for kind in _STARTS_AT_CONTEXT):
            line = context.line + 1
            text += f" (noticed on line {problem.line + 1})"
        else:
            text += f" (inside what starts on line {context.line + 1})"
    if line is not None and line > last_line:  # noticed at the end of the stream, after the last line
        line = max(1, last_line)
    return SpecError(file, line, (), f"malformed YAML: {text}")


_CACHE: dict[tuple[str, str], tuple[object, "LineIndex"]] = {}
"""(resolved path, text) -> (data, index) of a file parsed in this process."""


def _read(file: Path) -> str:
    try:
        size = file.stat().st_size
        if size > MAX_SPEC_BYTES:
            raise SpecError(file, None, (), f"{size:,} bytes, over the limit of {MAX_SPEC_BYTES:,} for one spec "
                                            f"file: split the paper's spec, or check that this is a spec at all")
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(file, None, (), f"cannot read: {exc}") from None


def load_yaml(file: Path) -> tuple[object, LineIndex]:
    """Parse `file`; raise SpecError (never a yaml exception) on any problem."""
    text = _read(file)
    key = (str(Path(file).resolve()), text)
    if key not in _CACHE:
        _CACHE[key] = _fast_parse(file, text) or _parse(file, text)
    data, index = _CACHE[key]
    return copy.deepcopy(data), index


def _alias_uses(node: yaml.Node) -> int:
    """How many aliases (*name) a composed graph holds: the times a node is reached again, each counted where
    it is used and not inside it (a use inside an anchor's node is one alias in the text, however often that
    node is repeated). Both composers share an anchor's node among its aliases, so this is the count the
    Python loader's compose_node makes, event by event."""
    seen, uses, stack = set(), 0, [node]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            uses += 1
            continue
        seen.add(id(n))
        if isinstance(n, yaml.MappingNode):
            stack.extend(v for pair in n.value for v in pair)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)
    return uses


def _fast_parse(file: Path, text: str) -> tuple[object, LineIndex] | None:
    """The C parser's (data, index), or None where only the Python loader may answer: an error of the parser
    or of a key (its wording and line are the Python loader's), or more aliases than MAX_ALIASES (refused at
    the alias's own line, which a shared node no longer holds).

    A document within the alias limit stays here, and so does the refusal of one that expands past
    MAX_EXPANDED_NODES: the same walk over the same graph (the same nodes and lines) refuses it at the same
    node, without the Python scanner's pass over the whole text (an alias bomb before a long spec: 0.3 s)."""
    if _CParser is None:
        return None
    try:
        loader = _CJsonLikeLoader(text)
        try:
            node = loader.get_single_node()
            if node is None or _alias_uses(node) > MAX_ALIASES:
                return None
            _refuse_expansion(node, file)
            index = LineIndex()
            _index(node, (), index, file, _Budget(file))
            return loader.construct_document(node), index
        finally:
            loader.dispose()
    except _Expanded:
        raise
    except (SpecError, yaml.YAMLError, ValueError, TypeError, RecursionError):
        return None


def _parse(file: Path, text: str) -> tuple[object, LineIndex]:
    try:
        loader = _JsonLikeLoader(text, file)
        try:
            node = loader.get_single_node()
            index = LineIndex()
            if node is None:
                raise SpecError(file, 1, (), "the file is empty")
            _refuse_expansion(node, file)
            _index(node, (), index, file, _Budget(file))
            data = loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(file, exc, len(text.splitlines())) from None
    except yaml.YAMLError as exc:
        raise SpecError(file, None, (), f"malformed YAML: {exc}") from None
    except (ValueError, TypeError, RecursionError) as exc:
        # e.g. an unhashable key like `? [a, b]`: still the spec's fault, still one clear line
        raise SpecError(file, None, (), f"malformed YAML: {exc}") from None
    return data, index
