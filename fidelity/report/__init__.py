"""The ledger: `fidelity report` renders what the specs, the claims, the evidence
and the gate run say, as Markdown, one self-contained HTML page, JSON and a
Stryker mutation report.

One idea per file:
  gaterun     run the gate suite once for the subject matrix (and once per third-party
              subject asked for with --subject), or read a recorded run
  separation  relative distances of fixture predictions; separations in tolerance units
  discovery   the blind spots `fidelity discover` recorded, per paper, with the spec's explanations
  model       gather everything into one JSON-safe dict (the only input of the renderers)
  ledger      model's parts, one module each: terms, evidence entries, gates, perturbations,
              separations, subject matrix, third-party conformance, one paper's entry
  blocks      the shapes a page is made of (headings, tables, tags, mentions and their targets, ...)
  anchors     one stable id per paper, equation, claim, gate, perturbation, finding; the links to them
  document    the ledger laid out as blocks, paper by paper: only puts the sections in order
  sections    one module per section of the page (summary, third-party findings, equations, ...)
  inline      what the sections share: numbers as shown, mentions of gates, equations, perturbations
  markdown    blocks -> GitHub Markdown (LEDGER.md)
  gatematrix  a paper's gates x perturbations as an HTML grid
  html        blocks + plots -> one HTML page, no network (ledger.html)
  pagestyle   the page's style sheet (sticky headers, narrow screens)
  pagescript  the page's one inline script (search, links into closed sections) and its CSP hash
  plots       matplotlib, imported only there; deterministic PNGs
  jsonreport  the gathered dict as JSON (ledger.json)
  stryker     perturbations and discovered mutants as a mutation-testing-report-schema v2 report
  outputs     generate every file in memory, write them, or check them
"""
