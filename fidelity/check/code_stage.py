"""check stage: every spec code location (module:qualname) imports, and every
implemented or deviating equation names at least one; every subject the project
configures loads, and provides only mechanisms that are declared (a mechanism no
declaration names has no documented interface, and no gate asks for it), each in a shape its
declaration takes (mechanisms.registry.declaration_problems)."""
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
    problems += _subject_problems()
    for p in problems:
        if "subject" in p:
            say(f"code      RED  subject {p['subject']}: {p['problem']}")
        else:
            say(f"code      RED  {p['equation']} ({p['where']}): {p.get('code', '')} {p['problem']}")
    count = sum(len(e.data.get("code", [])) for e in cat.equations.values())
    say(f"code      {'ok ' if not problems else 'RED'}  {count} code locations, {len(problems)} problems")
    return {"stage": "code", "ok": not problems, "problems": problems}
