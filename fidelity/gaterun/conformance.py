"""`fidelity check --subject X`: someone else's implementation, equation by equation.

The same gates that hold our reference run on the named subject alone. Per equation the
verdict is one of
  finding   a gate's own assertion failed on the subject (the gate, the reading, expected and
            got; a silent cast of the output is one too): a fact about that implementation
  error     the subject (or the run) raised instead of answering: the exception's type and
            message; a bare NotImplementedError is one, with the hint to raise NotRun
  differs from our choice
            a gate's assertion failed, but every equation it is attributed to is a choice of ours
            (tier c: a value the paper never states, fidelity.spec.choices): reported with the item,
            its tier, our value and what the gate compared, never counted as a finding
  passed    every instance that ran passed, and at least one ran
  not run   nothing ran: the subject refused every case (NotRun) or lacks the device
None of these fail our CI: the run exits non-zero only with --strict (on any finding or error; a
difference from our choice never). The project's own subjects are held to our choices: for them such a
failure stays a finding.
"""
from __future__ import annotations

import re

from fidelity import project
from fidelity.gaterun import gates_stage, instance_view, subject_gate_files, warm_pytest
from fidelity.gaterun.verdict_words import CHOICE, VERDICTS
from fidelity.spec import choices
from fidelity.subjects import registry

LACKED_REASON = ("the subject ran no instance that exercises this alone (it refused every one): no path of its own, so "
                 "gates that hold it beside other equations neither pass it nor find against it")
SHOWN_PER_EQUATION = 5  # findings or errors printed per equation; the rest are in --json


def _outcome(entry: dict) -> str:
    """'finding' or 'error' for a failed entry; rows recorded before errors were told apart
    carry no outcome, and were all counted as findings then."""
    if entry.get("outcome") in ("finding", "error"):
        return entry["outcome"]
    return "finding" if entry.get("kind", "assertion") == "assertion" else "error"


def _equations(n: int) -> str:
    return f"{n} equation" if n == 1 else f"{n} equations"


def _reason(text: str) -> str:
    """'Skipped: not run: no CUDA device' -> 'not run: no CUDA device' (pytest's prefix says nothing)."""
    return re.sub(r"^Skipped:\s*", "", text) or text


def _finding_entry(g: dict, f: dict) -> dict:
    return {"gate": g["gate"], "gate_class": g.get("gate_class"), "nodeid": f["nodeid"], "readings": f.get("readings"),
            "message": (f.get("message") or "").splitlines()[0] if f.get("message") else "",
            "full_message": f.get("message") or "", "exc_type": f.get("exc_type")}


PATH_KINDS = ("placement",)  # spec kinds that name a path a package may not have (a stream layout)


def paths_not_run(cat, gate_rows: list[dict], subject: str) -> frozenset[str]:
    """Placements (layouts) `subject` has no path for: some instance exercises the item alone (its parameter's
    gate_checks, or a gate holding only it) and the subject ran none of them (it refused every one). A failure of an
    instance that holds several equations is no finding about these. Only placements: a refused option (an init a
    package does not offer) or a mechanism it does not provide says nothing about the paths it has."""
    ran: dict[str, bool] = {}
    for g in gate_rows:
        for equation, did in (g["subjects"].get(subject, {}).get("ran_alone") or {}).items():
            ran[equation] = ran.get(equation, False) or did
    return frozenset(e for e, did in ran.items()
                     if not did and e in cat.equations and cat.equations[e].get("kind") in PATH_KINDS)


def equation_verdicts(cat, gate_rows: list[dict], subject: str, *, own: bool = False) -> list[dict]:
    """Per equation the verdict of `subject` (module docstring). `own`: the subject is one of the project's
    own, held to our choices (a failure attributed only to tier-c items stays a finding)."""
    rows = []
    lacked = paths_not_run(cat, gate_rows, subject)
    for eq in cat.equations.values():
        gates = [g for g in gate_rows if eq.id in g["equations"] and subject in g["subjects"]]
        if not gates:
            continue
        per = [(g, g["subjects"][subject]) for g in gates]
        failed = [(g, f) for g, s in per if s["status"] == "failed" for f in g["failed"] if eq.id in checked(f, g, lacked)]
        findings, differs = [], []
        for g, f in failed:
            if _outcome(f) != "finding":
                continue
            ours = [] if own else choices.our_choices(cat, checked(f, g, lacked))
            if ours:
                differs.append({**_finding_entry(g, f), "choices": [choices.describe(i) for i in ours]})
            else:
                findings.append(_finding_entry(g, f))
        errors = [{"gate": g["gate"], "gate_class": g.get("gate_class"), "nodeid": f["nodeid"],
                   "exc_type": f.get("exc_type") or "error",
                   "message": f.get("message") or "", "phase": f.get("phase"), "raised_in": f.get("raised_in"),
                   **({"hint": f["hint"]} if f.get("hint") else {})}
                  for g, f in failed if _outcome(f) == "error"]
        # a path the subject lacks is not passed by gates that hold it beside others
        passed = 0 if eq.id in lacked else sum(s["passed"] for _, s in per)
        not_run = sum(s["not_run"] for _, s in per)
        verdict = ("finding" if findings else "error" if errors else CHOICE if differs
                   else "passed" if passed else "not run")
        reasons = sorted({_reason(r) for _, s in per for r in s["not_run_reasons"]}
                         | ({LACKED_REASON} if eq.id in lacked else set()))
        rows.append({"equation": eq.id, "paper": eq.paper, "verdict": verdict,
                     "gates": {g["gate"]: s["status"] for g, s in per}, "findings": findings, "errors": errors,
                     "differs_from_our_choice": differs,
                     "instances": {"passed": passed, "findings": len(findings), "errors": len(errors),
                                   "differs_from_our_choice": len(differs), "not_run": not_run},
                     "not_run_reasons": reasons})
    return rows


CAUSE_ITEMS = (".stateless",)  # items whose finding can break every other equation of the subject at once


def causes_found(verdicts: list[dict]) -> list[str]:
    """The cause items with a finding (state kept between calls): a defect that several equations show."""
    return [v["equation"] for v in verdicts if v["verdict"] == "finding" and v["equation"].endswith(CAUSE_ITEMS)]


def cause_lines(causes: list[str]) -> list[str]:
    """Said first: a finding under a cause item may be why findings under other equations follow."""
    return [f"cause     {c}: the subject keeps state between calls; findings under other equations may follow "
            "from it (a later call sees what an earlier one left): fix this first" for c in causes]


def _label(entry: dict) -> str:
    """The promise the failing gate holds ('[stateless] '), from its gate class; '' for a plain gate."""
    return f"[{entry['gate_class']}] " if entry.get("gate_class") else ""


def checked(failed: dict, gate: dict, lacked: frozenset[str] = frozenset()) -> list[str]:
    """The equations a failed instance is attributed to: those its failing assertion or parameter names (checks),
    else its gate's; less the equations the subject has no path for (paths_not_run), unless none would remain."""
    named = failed.get("checks") or gate["equations"]
    return [e for e in named if e not in lacked] or named


def _finding_lines(f: dict) -> list[str]:
    """The finding's first line in full (our comparisons put got and expected there), and any
    later line that states an expected or got value (pytest's rewritten asserts put them below)."""
    lines = [ln.strip() for ln in f["full_message"].splitlines() if ln.strip()]
    if not lines:
        return [f"finding  {_label(f)}{f['nodeid']}: (no message)"]
    more = [ln for ln in lines[1:] if re.search(r"\b(expected|got|where|assert)\b", ln, re.IGNORECASE)]
    return [f"finding  {_label(f)}{f['nodeid']}: {lines[0]}", *(f"           {ln}" for ln in more[:4])]


def _error_lines(e: dict) -> list[str]:
    first = next((ln.strip() for ln in e["message"].splitlines() if ln.strip()), "(no message)")
    where = f" (raised in {e['raised_in']})" if e.get("raised_in") else ""
    lines = [f"error    {_label(e)}{e['nodeid']}: {e['exc_type']}: {first}{where}"]
    if e.get("hint"):
        lines.append(f"         {e['hint']}")
    return lines


def _choice_text(c: dict) -> str:
    return f"{c['id']}" + (f" = {c['ours']}" if c["ours"] is not None else "") + f" ({c['title']})"


def _choice_lines(d: dict) -> list[str]:
    """A difference from our choice: the items (tier, our value), then what the gate compared."""
    first = next((ln.strip() for ln in d["full_message"].splitlines() if ln.strip()), "(no message)")
    items = "; ".join(_choice_text(c) for c in d["choices"])
    return [f"ours     {_label(d)}{d['nodeid']}: differs from our choice, tier c, not the paper's: {items}",
            f"           compared: {first}"]


def text_lines(v: dict) -> list[str]:
    """One equation of the text report: verdict, then findings, errors, differences from our choices and every
    not-run reason."""
    lines = [f"  {v['verdict']:8} {v['equation']}"]
    pad = " " * 11
    for kind, entries, render in (("findings", v["findings"], _finding_lines), ("errors", v["errors"], _error_lines),
                                  ("differences from our choices", v.get("differs_from_our_choice", []),
                                   _choice_lines)):
        for entry in entries[:SHOWN_PER_EQUATION]:
            lines += [pad + ln for ln in render(entry)]
        if len(entries) > SHOWN_PER_EQUATION:
            lines.append(f"{pad}and {len(entries) - SHOWN_PER_EQUATION} more {kind}; see --json")
    if v["not_run_reasons"]:
        n = v["instances"]["not_run"]
        lines.append(f"{pad}not run ({n} instance{'s' if n != 1 else ''}), for these reasons:")
        lines += [f"{pad}  - {r}" for r in v["not_run_reasons"]]
    return lines


def _refuse_declaration_problems(ref: str, subject) -> None:
    """A mechanism name no declaration knows (a typo: 'sinkhron') would run no gate and pass, and a factory
    whose shape the gates cannot use would error in every instance: one line, naming the subject, before
    anything runs."""
    from fidelity.mechanisms.registry import declaration_problems, project_mechanisms

    problems = declaration_problems(subject, project_mechanisms(project.current()))
    if problems:
        raise registry.SubjectLoadError(f"subject {subject.name!r} ({ref}) " + "; ".join(problems))


def run(cat, args, say) -> dict:
    """`check --subject args.subject` (one name or module:object): its conformance (module docstring)."""
    return run_each(cat, [args.subject], args, say)[0]


def run_each(cat, names: list[str], args, say) -> list[dict]:
    """The conformance of each subject `names` asks for, in that order. The available ones run in ONE gate
    run (one child pytest, each instance on its own subject, as in a run of that subject alone), and each is
    judged on its own instances (items_of): its verdicts, instances and the gate rows it has an instance in are
    those of a run of it alone; several subjects cost one interpreter start and one collection, not one each."""
    warm = warm_pytest.WarmPytest.fork_if_safe(str(project.current().root))  # before the adapters load
    try:
        loaded = [_loaded(name) for name in names]
        _refuse_one_name_twice(loaded)
        results: dict[str, dict] = {}
        runnable = []
        for ref, subject, own, reason in loaded:
            if reason is not None:
                say(f"subject   {subject.name}: NOT RUN: {reason}")
                results[subject.name] = {"ok": not args.strict, "subject": subject.name, "reference": ref,
                                         "not_run": reason, "equations": [], "gates": []}
            else:
                say(f"subject   {subject.name} ({ref}): {subject.description}")
                runnable.append((ref, subject, own))
        if runnable:
            results.update(_run_together(cat, runnable, args, say, warm))
            warm = None  # the run's now
    finally:
        if warm is not None:
            warm.close()
    return [results[subject.name] for _, subject, _, _ in loaded]


def _loaded(name: str) -> tuple:
    """(reference, Subject, held to our choices, the reason it cannot run here or None)."""
    ref, subject = registry.resolve(name)
    _refuse_declaration_problems(ref, subject)
    own = ref in registry.project_references()  # our own reference is held to our choices
    try:
        reason = subject.unavailable_reason()
    except Exception as exc:  # the adapter's own check broke: nothing ran, say so in one line
        raise registry.SubjectLoadError(f"subject {subject.name!r} ({ref}): unavailable_reason() raised "
                                        f"{type(exc).__name__}: {' '.join(str(exc).split())}") from None
    return ref, subject, own, reason


def _refuse_one_name_twice(loaded: list[tuple]) -> None:
    """Two references to subjects of one name: their instances could not be told apart."""
    seen: dict[str, str] = {}
    for ref, subject, _, _ in loaded:
        if subject.name in seen:
            raise registry.SubjectLoadError(f"two subjects are named {subject.name!r} ({seen[subject.name]} and "
                                            f"{ref}): check each in a run of its own")
        seen[subject.name] = ref


def _run_together(cat, runnable: list[tuple], args, say, warm) -> dict[str, dict]:
    """subject name -> its conformance, from one gate run holding every subject of `runnable`, in `warm`
    where it is not None (warm_pytest.py)."""
    gates = project.current().gates
    files = {subject.name: subject_gate_files.files_for(gates, subject.mechanisms) for _, subject, _ in runnable}
    every_file = list(dict.fromkeys(f for chosen in files.values() for f in chosen))
    alone = "this subject alone" if len(runnable) == 1 else f"these {len(runnable)} subjects, each on its own instances"
    say(f"gates     running the gate suite on {alone} ...")
    env = {registry.EXTRA_ENV: ",".join(ref for ref, _, _ in runnable),
           registry.ONLY_ENV: ",".join(subject.name for _, subject, _ in runnable)}
    with instance_view.InstanceRecording() as recording:  # each instance's inputs and calls, for --json
        data = gates_stage.run_gate_suite(env={**env, **recording.env}, extra_args=recording.args,
                                          jobs=getattr(args, "jobs", None), files=every_file, warm=warm)
        if data["returncode"] not in (0, 1):
            raise RuntimeError(f"the gate run did not complete (pytest exit {data['returncode']}):\n"
                               f"{data['output_tail'][-1500:]}")
        results = {}
        for ref, subject, own in runnable:
            items = items_of(data["items"], subject.name, files[subject.name], every_file)
            instances = recording.instances(items, cat, subject.name, own=own)
            results[subject.name] = _judged(cat, args, say, ref, subject, own, items, instances)
    return results


def items_of(items: list[dict], name: str, chosen: list, every_file: list) -> list[dict]:
    """Subject `name`'s items of a run of several: its instances, and the instances of no subject (a gate whose
    mechanism no subject of the run provides) in a gate file its own selection (`chosen`) holds or no subject's
    selection does (one run for every subject, such as a file naming a mechanism nobody declares). A run of it
    alone has these too, and more of no subject: those of the gates only the others provide (rows without it)."""
    here = project.current()
    mine, anyone = {here.relative(f) for f in chosen}, {here.relative(f) for f in every_file}
    kept = []
    for it in items:
        if it.get("subject"):
            if it["subject"] == name:
                kept.append(it)
            continue
        file = it.get("file") or it["nodeid"].split("::", 1)[0]  # pytest's node ids, from the project's root
        if file in mine or file not in anyone:
            kept.append(it)
    return kept


def _judged(cat, args, say, ref: str, subject, own: bool, items: list[dict], instances: list[dict]) -> dict:
    """The verdicts of `subject` on its items, said equation by equation, then counted."""
    rows = gates_stage.summarise(items)
    verdicts = equation_verdicts(cat, rows, subject.name, own=own)
    causes = causes_found(verdicts)
    for line in cause_lines(causes):
        say(line)
    for v in verdicts:
        for line in text_lines(v):
            say(line)
    count = {k: sum(1 for v in verdicts if v["verdict"] == k) for k in VERDICTS}
    failing = failing_instances(verdicts)
    red = count["finding"] + count["error"]
    say(f"conformance of {subject.name}: {_equations(count['passed'])} passed, {count['finding']} with findings, "
        f"{count['error']} with errors, {count[CHOICE]} differing only from our choices (tier c), "
        f"{count['not run']} not run; {_instances(failing['findings'])} with a finding, "
        f"{failing['errors']} with an error, {failing['differs_from_our_choice']} differing from our choice "
        "(an instance holding several equations counted once)"
        + ("" if args.strict or not red else " (findings and errors do not fail this run; use --strict)"))
    return {"ok": not (args.strict and red), "subject": subject.name, "reference": ref, "held_to_our_choices": own,
            "causes": causes, "equations": verdicts, "failing_instances": failing, "gates": rows, "instances": instances}


def _instances(n: int) -> str:
    return f"{n} instance{'' if n == 1 else 's'}"


def failing_instances(verdicts: list[dict]) -> dict[str, int]:
    """Gate instances with a finding, and with an error, each counted once: an instance whose gate holds
    several equations is listed under each of them."""
    return {kind: len({entry["nodeid"] for v in verdicts for entry in v.get(kind, [])})
            for kind in ("findings", "errors", "differs_from_our_choice")}
