"""The steps of a perturbation run, one module each (fidelity.perturb.runner puts them in order).

  settings     the run's options resolved against the repo root (read by every step)
  state        the run object passed between the steps: what each one found
  children     where the children run: executor, scratch directory, worker threads
  inputs       1. every perturbation checked and its patch computed
  selection    2. the gate index; which gates and instances each perturbation runs
  current      3. what current records already say (stale_only, covering gates kept)
  forced       4. the forced failure
  baseline     4. the clean runs, judged; trace_lines: which instances reach a patch
  perturbing   5. a child per perturbation, judged as it ends
  batches      5. with `batched`: batch children that fork per perturbation
  green_after  6. the gates run unpatched again
  sources      7. nothing on disk moved
  records      8. the evidence written
  items        what node ids and a child's items say (shared by the steps)
"""
