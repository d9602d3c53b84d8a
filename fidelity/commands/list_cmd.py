"""`fidelity list [papers|equations|claims|perturbations|mechanisms]`: what the specs say, one row each."""
from __future__ import annotations

from fidelity import textable
import sys

from fidelity.commands.common import EXIT_OK, EXIT_USAGE, add_json_option, add_specs_option, print_json, where_text
from fidelity.spec import load_catalogue

WHAT = ("papers", "equations", "claims", "perturbations", "mechanisms")


def add_parser(sub) -> None:
    p = sub.add_parser("list", help="list papers, equations, claims, perturbations or mechanisms",
                       description="List the items the specs define. Equations show their tier "
                                   "(a: checked against author code, b: transcription, c: our choice) and status. "
                                   "Mechanisms are what a subject may provide (built-in, installed entry points "
                                   "of the group fidelity.mechanisms, and the project's own); "
                                   "`fidelity show mechanism:NAME` shows one in full.")
    p.add_argument("what", nargs="?", choices=WHAT, default="equations", help="what to list (default: equations)")
    p.add_argument("--paper", help="only items of this paper id (e.g. mhc); for mechanisms, those with an "
                                   "equation of that paper")
    add_specs_option(p)
    add_json_option(p)
    p.set_defaults(run=run, project_optional=True)  # mechanisms are documented outside any project too


def run(args) -> int:
    if args.what == "mechanisms":  # declared in code, not in the specs: no catalogue needed
        rows = _mechanisms(args)
        if rows is None:
            return EXIT_USAGE
    else:
        cat = load_catalogue(args.specs)
        if args.paper is not None and args.paper not in cat.papers:
            # a misspelt paper id would otherwise list nothing and exit 0, as if the paper had no items
            return _usage(args, f"no paper {args.paper!r} in the specs; the papers are: "
                                f"{', '.join(sorted(cat.papers)) or 'none'}")
        rows = globals()[f"_{args.what}"](cat, args.paper)
    if args.json:
        print_json(rows)
    else:
        if not rows:
            print(f"no {args.what}")
            return EXIT_OK
        headers = list(rows[0])
        print(textable.render(headers, [[_cell(r[h]) for h in headers] for r in rows]))
        print(f"\n{len(rows)} {args.what}")
    return EXIT_OK


def _usage(args, message: str) -> int:
    if args.json:
        print_json({"ok": False, "error": {"kind": "usage", "message": message}})
    print(f"fidelity list: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _cell(value) -> str:
    if isinstance(value, dict):
        return where_text(value)
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return "" if value is None else str(value)


def _papers(cat, paper):
    return [{"id": p.id, "arxiv": f"{p.data['arxiv']}{p.data['version']}", "title": p.data["title"],
             "author_code": p.data["author_code"]["status"],
             "equations": len(cat.equations_of(p.id)),
             "claims": sum(1 for c in cat.claims.values() if c.paper == p.id)}
            for p in cat.papers.values() if paper in (None, p.id)]


def _equations(cat, paper):
    return [{"id": e.id, "paper": e.paper, "where": e.data["where"], "tier": e.data["tier"],
             "status": e.data["status"], "title": e.data["title"]}
            for e in cat.equations.values() if paper in (None, e.paper)]


def _claims(cat, paper):
    from fidelity.claims import check_claims  # oracles load only when claims are asked for
    return [r for r in check_claims(cat) if paper in (None, r["paper"])]


def _perturbations(cat, paper):
    return [{"id": p.id, "paper": p.paper, "title": p.data["title"], "target": p.data["target"],
             "gates": len(p.data["gates"])}
            for p in cat.perturbations.values() if paper in (None, p.paper)]


def _mechanisms(args):
    from fidelity.mechanisms import MechanismLoadError
    from fidelity.mechanisms.registry import project_mechanisms

    try:
        known = project_mechanisms(getattr(args, "project", None))
    except MechanismLoadError as exc:
        print(f"fidelity list: error: {exc}", file=sys.stderr)
        return None
    paper = args.paper
    return [{"name": m.name, "kind": m.kind, "equations": list(m.equations), "summary": m.summary}
            for m in known.values() if paper is None or any(e.split(".")[0] == paper for e in m.equations)]
