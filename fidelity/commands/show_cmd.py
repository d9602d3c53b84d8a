"""`fidelity show ID`: one item in full, with its provenance; `fidelity show mechanism:NAME`: a mechanism's interface;
`fidelity show reference`: where the installed reference for gate authors lies."""
from __future__ import annotations

import yaml

from fidelity.commands.common import EXIT_OK, EXIT_USAGE, add_json_option, add_specs_option, print_json
from fidelity.spec import load_catalogue

MECHANISM_PREFIX = "mechanism:"
REFERENCE = "reference"


def add_parser(sub) -> None:
    p = sub.add_parser("show", help="show one paper, equation, claim, perturbation or mechanism in full",
                       description="Show one item by id (e.g. mhc.eq9, attnres, P1): its text, "
                                   "provenance and the file and line it is written at. "
                                   "`mechanism:NAME` (e.g. mechanism:sinkhorn) shows a mechanism's interface: "
                                   "every argument, default and shape, and for a module factory its parameters, "
                                   "attributes and methods. `reference` prints where the reference for gate "
                                   "authors lies (the helpers gates, oracles and mechanisms are written with).")
    p.add_argument("id")
    add_specs_option(p)
    add_json_option(p)
    p.set_defaults(run=run, project_optional=True)  # mechanisms are documented outside any project too


def run(args) -> int:
    if args.id.startswith(MECHANISM_PREFIX):
        return _show_mechanism(args)
    if args.id == REFERENCE:
        return _show_reference(args)
    cat = load_catalogue(args.specs)
    item = cat.get(args.id)
    if item is None:
        close = sorted(i for i in cat.all_ids() if args.id.split(".")[0] in i)[:10]
        hint = f" Did you mean one of: {', '.join(close)}?" if close else ""
        raise SystemExit(_usage_error(f"no item with id {args.id!r}.{hint}"))
    record = {"item": item.kind, "id": item.id, "paper": item.paper,
              "defined_at": f"{item.file}:{item.line}", **item.data}
    if item.kind != "paper":
        paper = cat.papers[item.paper].data
        record["provenance_paper"] = {"arxiv": f"{paper['arxiv']}{paper['version']}", "title": paper["title"],
                                      "read": paper["read"]}
    record.update(_extras(item))
    if args.json:
        print_json(record)
    else:
        print(yaml.safe_dump(record, sort_keys=False, allow_unicode=True, width=100).rstrip())
    return EXIT_OK


def _show_mechanism(args) -> int:
    from fidelity.mechanisms import MechanismLoadError
    from fidelity.mechanisms.docs import as_dict, render_text
    from fidelity.mechanisms.registry import project_mechanisms

    name = args.id[len(MECHANISM_PREFIX):]
    try:
        known = project_mechanisms(getattr(args, "project", None))
    except MechanismLoadError as exc:
        raise SystemExit(_usage_error(str(exc))) from None
    if name not in known:
        raise SystemExit(_usage_error(f"no mechanism named {name!r}; known: {', '.join(sorted(known))}"))
    if args.json:
        print_json(as_dict(known[name]))
    else:
        print(render_text(known[name]), end="")
    return EXIT_OK


def _show_reference(args) -> int:
    from fidelity import docs_reference

    page = docs_reference.index_page()
    if not page.is_file():  # a source checkout whose pages were never generated
        raise SystemExit(_usage_error(f"no reference at {page}; generate it with `{docs_reference.REGENERATE}`"))
    if args.json:
        print_json({"reference": str(page), "modules": list(docs_reference.MODULES)})
    else:
        print(f"{page}\n  the reference for gate authors: open it in a browser (every example in it runs in fidelity's tests)")
    return EXIT_OK


def _extras(item) -> dict:
    """Later stages (claims, gates, evidence) add what they know about an item."""
    extras = {}
    if item.kind == "claim":
        from fidelity.claims import check_claim
        extras["check"] = check_claim(item)
    return extras


def _usage_error(message: str) -> int:
    import sys
    print(f"fidelity show: error: {message}", file=sys.stderr)
    return EXIT_USAGE
