"""The documentation of a mechanism, for the terminal (`fidelity show mechanism:NAME`) and as JSON.

Both come from introspect.describe, which reads the Protocols: the text is a rendering of
the JSON record, so the two cannot disagree.
"""
from __future__ import annotations

import textwrap
from typing import Any

from .introspect import describe
from .mechanism import Mechanism

INDENT = "  "


def as_dict(mechanism: Mechanism) -> dict[str, Any]:
    """The JSON-able documentation of `mechanism` (`fidelity show mechanism:NAME --json`)."""
    return describe(mechanism)


def render_text(mechanism: Mechanism) -> str:
    """The documentation of `mechanism` for the terminal."""
    rec = describe(mechanism)
    provides = ("a factory (called as below) returning an nn.Module of the interface `module`"
                if rec["kind"] == "module" else "a callable with this signature")
    out = [
        f"mechanism {rec['name']} ({rec['kind']})",
        f"{INDENT}{rec['summary']}",
        f"{INDENT}equations: {', '.join(rec['equations'])}",
        f"{INDENT}declared in: {rec['declared_in']}",
        f"{INDENT}a subject provides: {provides}",
        f"{INDENT}refusals: raise NotRun(reason) (fidelity.mechanisms.NotRun) for what the subject cannot drive: "
        "reported as not run, never failed",
        "",
    ]
    iface, call = rec["interface"], rec["interface"]["call"]
    title = "factory" if rec["kind"] == "module" else "callable"
    out.append(f"{title} {iface['name']}: {call['signature']}")
    out += _paragraph(iface["doc"], 1)
    out += _arguments(call, 1)
    if rec["module"] is not None:
        out += ["", f"module {rec['module']['name']}"]
        out += _protocol(rec["module"], 1)
        out += _named_parameters(rec["module"]["named_parameters"], 1)
    for other in rec["types"]:
        if other["see_mechanism"]:
            out += ["", f"type {other['name']}: the module of mechanism {other['see_mechanism']} "
                        f"(fidelity show mechanism:{other['see_mechanism']})"]
            continue
        out += ["", f"type {other['name']} ({other['module']})"]
        out += _protocol(other, 1)
    return "\n".join(out).rstrip() + "\n"


# ---------------------------------------------------------------- pieces


def _paragraph(text: str, level: int) -> list[str]:
    if not text:
        return []
    pad = INDENT * level
    return [pad + line if line else "" for line in textwrap.dedent(text).splitlines()]


def _columns(rows: list[list[str]], level: int) -> list[str]:
    """Aligned columns, the last one free (never clipped: these are the docs)."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    pad = INDENT * level
    return [(pad + "  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1]).rstrip() for r in rows]


def _type_and_shape(item: dict[str, Any]) -> str:
    return item["type"] + (f" {item['shape']}" if item.get("shape") else "")


def _when(when: dict[str, Any]) -> str:
    return " (only when " + ", ".join(f"{k}={v!r}" for k, v in when.items()) + ")" if when else ""


def _arguments(method: dict[str, Any], level: int) -> list[str]:
    rows = [[a["name"], _type_and_shape(a), "required" if a["required"] else f"default {a['default']}", a["doc"]]
            for a in method["arguments"]]
    out = [INDENT * level + "arguments:"] + _columns(rows, level + 1) if rows else []
    ret = method["returns"]
    if ret["type"] != "None" or ret["doc"]:
        out.append(f"{INDENT * level}returns: {_type_and_shape(ret)}" + (f"  {ret['doc']}" if ret["doc"] else ""))
    return out


def _protocol(rec: dict[str, Any], level: int) -> list[str]:
    out = _paragraph(rec["doc"], level)
    pad = INDENT * level
    if rec["parameters"]:
        out.append(pad + "parameters:")
        out += _columns([[p["name"], p["shape"], f"init {p['init']}" if p["init"] else "", p["doc"] + _when(p["when"])]
                         for p in rec["parameters"]], level + 1)
    if rec["submodules"]:
        out.append(pad + "submodules:")
        out += _columns([[s["name"], s["type"], s["doc"] + _when(s["when"])] for s in rec["submodules"]], level + 1)
    if rec["attributes"]:
        out.append(pad + "attributes:")
        out += _columns([[a["name"], _type_and_shape(a), f"default {a['default']}" if a["default"] else "", a["doc"]]
                         for a in rec["attributes"]], level + 1)
    for m in rec["methods"]:
        out.append(f"{pad}method {m['signature']}")
        out += _paragraph(m["doc"], level + 1)
        out += _arguments(m, level + 1)
    return out


def _named_parameters(params: list[dict[str, Any]], level: int) -> list[str]:
    if not params:
        return []
    out = [INDENT * level + "named_parameters() (every name a module of this interface registers):"]
    return out + _columns([[p["name"], p["shape"], _when(p["when"]).strip()] for p in params], level + 1)
