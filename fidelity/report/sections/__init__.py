"""The ledger's sections, one module each, in the order the page (fidelity.report.document) lays them out.

Top of the page:
  summary        the heading, the verdict at a glance, the summary per paper, the deviations, how to read
  third_party    the glance at third-party findings, and "Findings about third-party subjects"
  plots          the plots this project's fixtures draw, and the separations not drawn
  subjects       the subjects the gate suite ran on; per paper, the subject matrix
  coverage       coverage by gate class
  gates          the gate catalogue; per paper, the gates x perturbations grid
  discovery      blind spots found by discovery (per paper, in other subjects, in modules no paper names)
Per paper, after equations (provenance, equations, deltas), perturbations and the gate grid:
  claims, subjects (the matrix), red_to_green, blind_spots, discovery, weak_gates, claim_ledger
After the papers: outside (evidence outside the specs), then fidelity.report.performance.
Pieces they share (numbers, mentions, outcome tags) are in fidelity.report.inline.
"""
