"""statefulpkg: a package the fidelity project has never seen, whose objects keep state between calls.

Its own API, not fidelity's:
- `SinkhornProjection()(logits, iterations=20)`: Sinkhorn-Knopp in the log domain (columns, then rows). The
  object counts the iterations it has run in `total_iterations` and never resets it; its budget is 1000
  iterations in all, after which every call runs one (a schedule meant per training run). Three calls of
  20 iterations are as exact as a fresh object's: only the counter shows the state.
- `WorkspaceSinkhorn()`: the same projection, with a diagnostics buffer per (shape, dtype, device) it
  allocates on the first call and overwrites with the column sums on every call (never read back).
- `MemoStack(dim, layers, streams=4)`: hiddenmhc's stack, for inference, that memoises its first output
  per input shape and returns it for every later input of that shape.
Nothing here knows fidelity.
"""
from statefulpkg.core import SinkhornProjection, WorkspaceSinkhorn
from statefulpkg.memo import MemoStack

__all__ = ["MemoStack", "SinkhornProjection", "WorkspaceSinkhorn"]
