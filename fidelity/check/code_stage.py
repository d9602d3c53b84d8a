"""check stage: every spec code location (module:qualname) imports, and every
implemented or deviating equation names at least one; every subject the project
configures loads, and provides only mechanisms that are declared (a mechanism no
declaration names has no documented interface, and no gate asks for it), each in a shape its
declaration takes (mechanisms.registry.declaration_problems). With `--changed`, a clean stage kept under
the key of the same inputs is read instead of run (kept_code_check.py); a plain check always runs it."""
from __future__ import annotations

from fidelity import references


def _subject_problems() -> list[dict]:
    from fidelity import project
    from fidelity.mechanisms import MechanismLoadError
    from fidelity.mechanisms.registry import declaration_problems, project_mechanisms
    from fidelity.subjects.registry import SubjectLoadError, load_reference

    here = project.current()
    try:
        known = project_mechanisms(here)
    except MechanismLoadError as exc:
        return [{"subject": "(mechanisms)", "where": str(here.config_file), "problem": str(exc)}]
    problems = []
    for ref in here.subjects:
        try:
            subject = load_reference(ref)
        except SubjectLoadError as exc:
            problems.append({"subject": ref, "where": str(here.config_file), "problem": str(exc)})
            continue
        for problem in declaration_problems(subject, known):
            problems.append({"subject": ref, "where": str(here.config_file), "problem": problem})
    return problems


def run(cat, args, say) -> dict:
    from fidelity import project
    from fidelity.check import kept_code_check

    here = project.current()
    count = sum(len(e.data.get("code", [])) for e in cat.equations.values())
    if getattr(args, "changed", False) and kept_code_check.unchanged(here.root, cat.files, here.config_file):
        say(f"code      ok   {count} code locations, 0 problems (--changed: read from the last clean code stage of "
            f"the same inputs)")
        return {"stage": "code", "ok": True, "problems": [], "kept": True}
    problems = _problems(cat)
    for p in problems:
        if "subject" in p:
            say(f"code      RED  subject {p['subject']}: {p['problem']}")
        else:
            say(f"code      RED  {p['equation']} ({p['where']}): {p.get('code', '')} {p['problem']}")
    say(f"code      {'ok ' if not problems else 'RED'}  {count} code locations, {len(problems)} problems")
    if not problems:
        kept_code_check.save(here.root, cat.files, here.config_file)
    return {"stage": "code", "ok": not problems, "problems": problems, "kept": False}


def _problems(cat) -> list[dict]:
    problems = []
    for eq in cat.equations.values():
        refs = eq.data.get("code", [])
        if eq.data["status"] in ("implemented", "deviates") and not refs:
            problems.append({"equation": eq.id, "where": f"{eq.file}:{eq.line}",
                             "problem": f"status {eq.data['status']} but no code location"})
        for ref in refs:
            try:
                references.resolve(ref)
            except references.UnresolvedReference as exc:
                problems.append({"equation": eq.id, "where": f"{eq.file}:{eq.line}", "code": ref,
                                 "problem": str(exc)})
    return problems + _subject_problems()
