"""The evidence room: what the perturbation runner saw, kept as records, and the verdict over them.

  outcome    Outcome: red_by_assertion | red_other | survived | skipped
  record     EvidenceRecord (a frozen dataclass, checked on load), its schema and own hash;
             `accepted`, the one rule by which a record accepts its gate; CLEAN_RUNS
  paths      where a record lies under an evidence root: <id>.json, one file per perturbation
  evidence_file  that file's format: every record of the perturbation by gate, hashes proved from its bytes
  store      write a perturbation's records (atomic, deterministic, untouched when nothing new was seen);
             scan them; convert the old layout
  old_layout a folder per perturbation and a file per gate (before issue 54): named, refused, read to convert
  staleness  whether a record is current: gate file, target source, fixtures and edits unchanged
  verdict    judge every record; gates accepted; perturbations caught
  jsonio     deterministic JSON, atomic files, file hashes

The runner (fidelity.perturb) writes records; check and report read them through here only.
Nothing here imports torch or the runner.
"""
