"""Fused Triton kernels with hand-written backward kernels ("the CUDA implementations").

- sinkhorn.py         log-domain Sinkhorn-Knopp (mHC Eq. 9), many matrices per program, `sinkhorn`
- depth_attention.py  AttnRes depth attention (Eqs. 2-4), loops over d in blocks, `depth_attend`
- _common.py          what the kernels share: interpreter detection, exp/log, launch counting

Importing this package imports nothing heavy; importing a kernel module imports triton and
DEFINES the kernels, so TRITON_INTERPRET must be set (to run on CPU tensors) before that.
Each kernel module has the signature of its torch reference (fidelity.impl.torch) and the
route "manual" only: torch cannot differentiate through a Triton kernel, so the gradient is
always the hand-written backward kernel.
"""
