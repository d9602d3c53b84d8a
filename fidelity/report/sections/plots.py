"""The Plots section: each plot this project's fixtures draw, with its caption, and the
separations the separation plot cannot draw, named.
"""
from __future__ import annotations

from fidelity.report.blocks import Document, Heading, Para, Plot, Strong
from fidelity.report.inline import gate_codes


# (plot, the mechanism whose fixtures it draws: shown only in a project that holds it, or None, caption)
PLOTS = (
    ("sinkhorn_error", "sinkhorn", "Sinkhorn (mHC Eq. 9): max |M(t) - limit| against iteration t = 1..t_max, for each "
                       "sinkhorn fixture, from the oracle's 60-digit trajectory against the fixture's exact limit; "
                       "float32 and float64 epsilon for scale."),
    ("composite_distance", "mhc_residual", "The composite H^T of fixture mhc.composite_perturbed: spectral distance to J/n "
                           "against T (oracle values), with the fixture's predictions for a composite taken once "
                           "(dashed: predictions, not observations)."),
    ("separation", None, "Separation margins: distance of each predicted wrong value from the right one, in units of "
                   "the gate's tolerance (log scale; under 10 is a weak gate)."),
)


def section(doc: Document, ledger: dict) -> None:
    doc.add(Heading(2, "Plots", "plots", collapsed=True))
    held = {row["mechanism"] for row in ledger["coverage"]["rows"]}  # the project's own mechanisms
    for name, mechanism, caption in PLOTS:
        if mechanism is not None and mechanism not in held:
            continue  # another project's fixtures: not "not drawn" here, simply not this project's plot
        doc.add(Plot(name, caption))
        if name == "separation":
            _separations_not_drawn(doc, ledger)


def _separations_not_drawn(doc: Document, ledger: dict) -> None:
    """The separation plot draws computed separations only; the rest are named, not silently left out."""
    left_out = [r for r in ledger["separations"] if r["separation"] is None]
    if not left_out:
        return
    gates = sorted({g for r in left_out for g in ([r["gate"]] if r["gate"] else r["readers"])})
    doc.add(Para((Strong(f"Not in the separation plot: {len(left_out)} predictions"), " without a computed "
                  f"separation (no gate states its tolerance or records one), read by {len(gates)} gates: ",
                  gate_codes(gates, "no gate"), ". Each is in its paper's weak-gates table with the reason.")))
