"""What the fused kernels share: interpreter detection, exp/log, dtype checks, launch counting.

Triton decides at DEFINITION time (the @triton.jit decorator) whether a kernel is compiled
for a GPU or run by its interpreter (TRITON_INTERPRET=1, numpy on the host). `INTERPRETED`
says which one happened in this process, read from a probe kernel rather than the
environment, so a variable set too late is reported as what it is.

exp/log: under the interpreter they are numpy's. Compiled, they are libdevice's (__nv_expf,
__nv_logf: ~1-2 ulp, like the CUDA math library PyTorch calls); float32 tl.exp lowers to
ex2.approx(x * log2 e) and loses about |x|/2 ulp more on large arguments.

Interpreter speed: the interpreter re-patches triton.language on EVERY call of a jit function,
including tl.sum and tl.max (~1.5 ms each). Helpers are therefore plain Python functions under
the interpreter (`device_function`), and sum_/max_ call the bodies of tl.sum/tl.max directly.
The kernels' source is the same text in both modes.
"""
from __future__ import annotations

import numpy
import torch
import triton
import triton.language as tl

from fidelity.mechanisms.refusal import NotRun


@triton.jit
def _probe_kernel(x_ptr):
    tl.store(x_ptr, 0)


INTERPRETED: bool = type(_probe_kernel).__name__ == "InterpretedFunction"


def device_function(fn):
    """A helper that kernels call: @triton.jit when compiled, the plain function under the interpreter."""
    return fn if INTERPRETED else triton.jit(fn)


if INTERPRETED:

    def exp_(x):
        return tl.exp(x)

    def log_(x):
        return tl.log(x)

    # the bodies of tl.sum / tl.max (triton.language is already patched while a kernel runs)
    def sum_(x, AXIS):
        return tl.sum.fn(x, AXIS, keep_dims=True)

    def max_(x, AXIS):
        return tl.max.fn(x, AXIS, keep_dims=True)

else:
    from triton.language.extra import libdevice

    @triton.jit
    def exp_(x):
        return libdevice.exp(x)

    @triton.jit
    def log_(x):
        return libdevice.log(x)

    @triton.jit
    def sum_(x, AXIS: tl.constexpr):
        return tl.sum(x, axis=AXIS, keep_dims=True)

    @triton.jit
    def max_(x, AXIS: tl.constexpr):
        return tl.max(x, axis=AXIS, keep_dims=True)


SUPPORTED_DTYPES = (torch.float32, torch.float64)

# Kernel launches made through `launch`, by kernel name: the benchmarks read it (on a CPU the
# interpreter's programs are invisible to torch.profiler).
LAUNCHES: dict[str, int] = {}


def launch(kernel, grid, *args, **kwargs) -> None:
    """kernel[grid](*args, **kwargs), counted in LAUNCHES."""
    name = getattr(kernel, "__name__", None) or getattr(getattr(kernel, "fn", None), "__name__", "kernel")
    LAUNCHES[name] = LAUNCHES.get(name, 0) + 1
    if INTERPRETED:
        # numpy warns on the padding lanes (log(0), -inf - -inf), which every kernel masks out
        with numpy.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            kernel[grid](*args, **kwargs)
    else:
        kernel[grid](*args, **kwargs)


def check_runnable(*tensors: torch.Tensor) -> None:
    """NotRun (the gates' 'not run') where these kernels cannot run; TypeError on a dtype."""
    for t in tensors:
        if t is None:
            continue
        if t.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"the Triton kernels compute in float32 or float64, got {t.dtype}; no silent casts")
        if not INTERPRETED and t.device.type != "cuda":
            raise NotRun(
                f"compiled Triton kernels need CUDA tensors, got a {t.device.type} tensor "
                "(CPU tensors run only under TRITON_INTERPRET=1, set before the kernels are imported)")


def next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


@device_function
def div_(a, b):
    """a / b rounded correctly in float32 too (Triton's float32 `/` is an approximate division)."""
    if a.dtype == tl.float32:
        return tl.div_rn(a, b)
    else:
        return a / b  # float64 division is IEEE round-to-nearest


@device_function
def sqrt_(x):
    """sqrt rounded correctly in float32 too (Triton's float32 tl.sqrt may be approximate)."""
    if x.dtype == tl.float32:
        return tl.sqrt_rn(x)
    else:
        return tl.sqrt(x)  # float64 sqrt is IEEE round-to-nearest
