"""Implementations under test.

- `fidelity.impl.torch`: the PyTorch reference implementations (tensor path).
- `fidelity.impl.triton`: fused kernels with hand-written backward (elsewhere).

Each file holds one idea, and each paper step sits on its own line with a short
comment naming its equation id (e.g. `# mhc.eq8`), so a perturbation can patch
exactly that line by find/replace.
"""
