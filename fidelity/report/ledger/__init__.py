"""The ledger's parts, gathered into one dict by fidelity.report.model.gather (whose docstring
states the rules they follow), one idea a module:
  terms             the words and keys the ledger and its renderers share (OBSERVED, CHOICE, perturbation_key...)
  evidence_entries  one JSON-safe entry per evidence record, with its verdict; each perturbation's diff
  gates             one row per gate: its run, equations, fixtures read, tolerance, acceptance
  perturbations     one row per perturbation (its status, the gates that caught it) and its red-to-green rows
  separations       how far each fixture prediction lies outside the loosest tolerance reading it
  subject_matrix    a paper's equations x subjects (ours and third-party packages')
  third_party       each third-party subject's conformance, equation by equation
  paper             one paper's entry: provenance, equation rows, blind spots, claim ledger
"""
