"""The words a subject's equation verdicts are given in (`fidelity check --subject`): one home for both
the verdicts per equation (conformance) and the outcome of each instance they are drawn from (instance_view)."""
from __future__ import annotations

CHOICE = "differs from our choice"
VERDICTS = ("passed", "finding", "error", CHOICE, "not run")
