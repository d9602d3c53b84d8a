"""Benchmarks, each runnable as `python -m fidelity.bench.NAME`, each printing figures measured in one run.

- sinkhorn_bench.py         the fused Sinkhorn kernel vs the PyTorch tensor path [--quick] [--out DIR]
- depth_attention_bench.py  the fused depth-attention kernels vs the PyTorch tensor path [--quick] [--out DIR]
- gpu_check.py              on a CUDA machine: gates (torch, triton) + kernel tests + the two benchmarks -> OUTDIR
- _harness.py               timing, launch counting (torch.profiler), bandwidth, tables for the kernel benchmarks
- fixtures_bench.py         `fidelity fixtures --verify` wall time
- perturb_bench.py          the perturbation runner against the naive whole-suite-per-perturbation way
- all.py                    every speed figure (check, fixtures --verify, report --no-gates, perturb) beside its
                            floor or peer from the same run -> reports/bench.json (the ledger's Performance section)
- timed_command.py          a command's wall clock and its process tree's peak memory (from /proc)

On a CPU the fused kernels run under Triton's interpreter: their figures are what CI pays,
never a speed claim.
"""
