"""The module a perturbation or a mutant edits: found by name without importing it, edited in memory.

  locate    the `.py` file that importing a module would execute, on a child's search path
  patching  apply find/replace edits to its source (each `find` exactly once), the diff
  errors    TargetNotFound, PatchError: the input names a module or an edit that cannot be

The runner (fidelity.perturb), discovery (fidelity.discover), the evidence's staleness and the
report's mutation export all read targets through here, so none of them reaches into another.
"""
