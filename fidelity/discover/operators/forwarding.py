"""Forwarded arguments: an option a function or constructor receives and passes on to a callee.

A value is *forwarded* when it is a name or an attribute chain (`eps`, `self.eps`, `cfg.attnres_eps`)
rooted at a parameter of an enclosing function (`self` included, alone excluded) or at a local that an
enclosing function binds to a forwarded value (`cfg = self.config`, `kw = dict(dtype=dtype)`). Such an
argument is where a module's option reaches the code that uses it; losing it on the way leaves every
caller that keeps the default unaffected, so only a gate that varies the option can see it.

The callee is *resolved* only within the module: a function of the module called by its name, a class
of the module (its `__init__`), or `self.method` of the enclosing class. Nothing is imported to resolve
anything else (a torch function, a callee of another module): its parameters and defaults are unknown.
A resolved default is used only when its text means the same at the call site: a literal, or a dotted
name rooted at a module-level name that no enclosing function rebinds.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from fidelity.discover.mutant import Mutant
from fidelity.discover.operators._base import Context, Operator, call_name

__all__ = ["ForwardedArgumentDefault", "ForwardedArgumentNone", "ForwardedKeywordDropped"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_NO_DEFAULT = object()  # a resolved parameter that has no default
_UNKNOWN = None  # a parameter nobody resolved


@dataclass(frozen=True)
class _Site:
    """One forwarded argument of one call: its node, the keyword (None when positional) and the callee's
    default for it (`_NO_DEFAULT`, `_UNKNOWN`, or the default expression)."""

    call: ast.Call
    value: ast.expr
    keyword: ast.keyword | None
    default: object


class _Module:
    """What the operators ask of a module: which values are forwarded, and what a callee's defaults are."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.bound: dict[ast.AST, set[str]] = {}  # function -> its forwarded parameters and locals
        self.module_names = _module_level_names(ctx.tree)
        self.functions = {n.name: n for n in ctx.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.classes = {n.name: n for n in ctx.tree.body if isinstance(n, ast.ClassDef)}

    def enclosing(self, node: ast.AST) -> list[ast.AST]:
        """The functions around node, innermost first."""
        out, parent = [], self.ctx.parents.get(node)
        while parent is not None:
            if isinstance(parent, _FUNCTIONS):
                out.append(parent)
            parent = self.ctx.parents.get(parent)
        return out

    def forwarded_names(self, function: ast.AST) -> set[str]:
        if function not in self.bound:
            self.bound[function] = _forwarded_in(function, self.enclosing(function))
        return self.bound[function]

    def is_forwarded(self, node: ast.expr, at: ast.AST) -> bool:
        root = _chain_root(node)
        if root is None or (isinstance(node, ast.Name) and node.id in ("self", "cls")):
            return False
        names = set().union(*(self.forwarded_names(f) for f in self.enclosing(at))) if self.enclosing(at) else set()
        return root in names

    def sites(self) -> Iterator[_Site]:
        for call in self.ctx.nodes:
            if isinstance(call, ast.Call):
                params = self.callee_parameters(call)
                yield from self._call_sites(call, params)

    def _call_sites(self, call: ast.Call, params: list[tuple[str, object]] | None) -> Iterator[_Site]:
        for index, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                break  # the positions after a *args are unknown
            if self.is_forwarded(arg, call):
                yield _Site(call, arg, None, params[index][1] if params and index < len(params) else _UNKNOWN)
        named = dict(params or [])
        for keyword in call.keywords:
            value = keyword.value
            if keyword.arg is None and isinstance(value, ast.Name) and self.is_forwarded(value, call):
                yield _Site(call, value, keyword, _UNKNOWN)
            elif keyword.arg is not None and self.is_forwarded(value, call):
                yield _Site(call, value, keyword, named.get(keyword.arg, _UNKNOWN) if params else _UNKNOWN)

    def callee_parameters(self, call: ast.Call) -> list[tuple[str, object]] | None:
        """(name, default) of the resolved callee's parameters, positional ones in order; None if unresolved."""
        func = call.func
        if isinstance(func, ast.Name) and func.id in self.functions:
            return _parameters(self.functions[func.id], skip_first=False)
        if isinstance(func, ast.Name) and func.id in self.classes:
            init = _method(self.classes[func.id], "__init__")
            return _parameters(init, skip_first=True) if init else None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            owner = next((p for p in self._ancestors(call) if isinstance(p, ast.ClassDef)), None)
            method = _method(owner, func.attr) if owner else None
            return _parameters(method, skip_first=not _is_static(method)) if method else None
        return None

    def optional_parameter(self, node: ast.expr, at: ast.AST) -> bool:
        """A bare name that is a parameter of the innermost enclosing function with the default None: the
        caller itself accepts None there, so None is a value its callee must handle."""
        functions = self.enclosing(at)
        if not isinstance(node, ast.Name) or not functions:
            return False
        params = dict(_parameters(functions[0], skip_first=False))
        default = params.get(node.id, _NO_DEFAULT)
        return isinstance(default, ast.Constant) and default.value is None

    def _ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        parent = self.ctx.parents.get(node)
        while parent is not None:
            yield parent
            parent = self.ctx.parents.get(parent)

    def default_text(self, default: object, at: ast.AST) -> str | None:
        """The default's source text when it means the same at `at`, else None."""
        if default is _NO_DEFAULT or default is _UNKNOWN:
            return None
        if isinstance(default, ast.Constant) or _is_negative_constant(default):
            return ast.unparse(default)
        root = _chain_root(default)
        local = set().union(*(_bound_names(f) for f in self.enclosing(at))) if self.enclosing(at) else set()
        if root is not None and root in self.module_names and root not in local:
            return ast.unparse(default)
        return None


# --- readers of the tree ----------------------------------------------------------------------


def _chain_root(node: ast.AST) -> str | None:
    """`a` for `a`, `a.b`, `a.b.c`; None for anything else (a call, a subscript, a literal)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _is_negative_constant(node: ast.AST) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)


def _parameter_names(function: ast.AST) -> list[str]:
    args = function.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    return names + [a.arg for a in (args.vararg, args.kwarg) if a is not None]


def _parameters(function: ast.AST, *, skip_first: bool) -> list[tuple[str, object]]:
    """(name, default expression or _NO_DEFAULT) for every named parameter, positional ones first in order."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [_NO_DEFAULT] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = [(a.arg, d) for a, d in zip(positional, defaults)][1 if skip_first else 0:]
    return pairs + [(a.arg, _NO_DEFAULT if d is None else d) for a, d in zip(args.kwonlyargs, args.kw_defaults)]


def _method(cls: ast.ClassDef, name: str) -> ast.AST | None:
    return next((n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name), None)


def _is_static(function: ast.AST) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list)


def _own_statements(function: ast.AST) -> Iterator[ast.AST]:
    """The function's nodes, not those of the functions or classes nested in it."""
    stack = list(function.body) if isinstance(function.body, list) else [function.body]
    while stack:
        node = stack.pop(0)
        yield node
        if not isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _bound_names(function: ast.AST) -> set[str]:
    """Every name the function binds: its parameters and the targets of its assignments."""
    names = set(_parameter_names(function))
    for node in _own_statements(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _forwarded_in(function: ast.AST, outer: list[ast.AST]) -> set[str]:
    """The function's parameters and the locals it binds, in order, to forwarded values."""
    names = set(_parameter_names(function))
    outer_names = set().union(*(_forwarded_in(f, []) for f in outer)) if outer else set()
    for node in _own_statements(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                names |= _assigned(target, node.value, names | outer_names)
    return names


def _assigned(target: ast.AST, value: ast.AST, names: set[str]) -> set[str]:
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        return set().union(*(_assigned(t, v, names) for t, v in zip(target.elts, value.elts)))
    if isinstance(target, ast.Name) and _forwards(value, names):
        return {target.id}
    return set()


def _forwards(value: ast.AST, names: set[str]) -> bool:
    if call_name(value) == "dict" and isinstance(value.func, ast.Name) and not value.args and value.keywords:
        return any(_forwards(k.value, names) for k in value.keywords)
    return _chain_root(value) in names and not (isinstance(value, ast.Name) and value.id in ("self", "cls"))


def _module_level_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _keyword_span(ctx: Context, call: ast.Call, keyword: ast.keyword) -> tuple[int, int]:
    """The keyword's text with one separating comma: `, k=v` after another argument, else `k=v, `."""
    arguments = sorted([*call.args, *call.keywords], key=lambda n: (n.lineno, n.col_offset))
    start, end = ctx.span(keyword)
    index = arguments.index(keyword)
    if index > 0:
        return ctx.span(arguments[index - 1])[1], end
    if len(arguments) > 1:
        return start, ctx.span(arguments[1])[0]
    return start, end


def _label(site: _Site) -> str:
    return call_name(site.call) or "a call"


# --- the operators ----------------------------------------------------------------------------


class ForwardedKeywordDropped(Operator):
    """Drop a keyword argument whose value is forwarded from a parameter or attribute of the caller
    (`eps=self.eps`, `generator=generator`, `**kw`), so the callee's own default applies. Models an option
    a constructor or function accepts but never passes on: every caller that keeps the default sees
    nothing. A keyword the module's own callee requires (no default) is left alone."""

    name = "forwarded_keyword_dropped"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        module = _Module(ctx)
        for site in module.sites():
            if site.keyword is None or site.default is _NO_DEFAULT:
                continue
            start, end = _keyword_span(ctx, site.call, site.keyword)
            text = ctx.text(site.keyword)
            if site.keyword.arg is None:
                description = f"`{text}` of {_label(site)} dropped: the callee's defaults apply"
            else:
                description = f"keyword `{text}` of {_label(site)} dropped: the callee's default applies"
            yield ctx.mutant(self.name, start, end, "", description)


class ForwardedArgumentNone(Operator):
    """Replace a forwarded argument by None: a keyword one (`generator=generator` to `generator=None`), a
    positional one the module's own callee gives a default, or a positional parameter of the caller whose
    own default is None (`check(x, gain)` to `check(x, None)`: an optional input left unchecked). Models an
    option passed on as None (a stale variable, a forgotten assignment), which an optional parameter
    accepts silently. Left alone where the resolved default is None (forwarded_argument_default's) or
    there is none (a TypeError)."""

    name = "forwarded_argument_none"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        module = _Module(ctx)
        for site in module.sites():
            if site.keyword is not None and site.keyword.arg is None:
                continue  # `**kw` has no single value to replace
            default = site.default
            unknown_positional = default is _UNKNOWN and site.keyword is None
            if default is _NO_DEFAULT or (unknown_positional and not module.optional_parameter(site.value, site.call)):
                continue
            if isinstance(default, ast.Constant) and default.value is None:
                continue
            text = ctx.text(site.value)
            yield ctx.replace_node(self.name, site.value, "None", f"`{text}` passed to {_label(site)} replaced by None")


class ForwardedArgumentDefault(Operator):
    """Replace a forwarded positional argument by the default of the parameter it fills, where the callee
    is the module's own and the default means the same at the call site (`rms_norm(x, eps, gain)` to
    `rms_norm(x, eps, None)`). Models a positional option lost on the way: the callee runs at its default.
    (A keyword argument at its default is forwarded_keyword_dropped's.)"""

    name = "forwarded_argument_default"

    def mutants_in(self, ctx: Context) -> Iterator[Mutant]:
        module = _Module(ctx)
        for site in module.sites():
            if site.keyword is not None:
                continue
            replacement = module.default_text(site.default, site.call)
            if replacement is not None:
                text = ctx.text(site.value)
                description = f"`{text}` passed to {_label(site)} replaced by its default {replacement}"
                yield ctx.replace_node(self.name, site.value, replacement, description)
