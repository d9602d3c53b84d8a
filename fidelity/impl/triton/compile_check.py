"""Build every fused kernel for a CUDA target without a GPU: `python -m fidelity.impl.triton.compile_check`.

The interpreter runs a kernel's Python with numpy and accepts constructs the compiler
refuses (a non-constexpr shape, a reduction the layout cannot express, a type mismatch in a
branch). This check lowers each kernel through Triton's real pipeline (TTIR, TTGIR, LLVM
IR, PTX, and a cubin through the bundled ptxas) for sm_90 (H100/H200) by default, with the
block sizes the launch wrappers choose on a GPU, in float32 and float64.

It must run where TRITON_INTERPRET is NOT set (the kernels are defined compiled only then);
it refuses otherwise. Exit status 0 when every build succeeded.

API differences between Triton versions are feature-detected (`ast_source`): 3.3+ take
`ASTSource(fn, signature, constexprs=...)` with constexpr arguments named in the signature;
older ones took `constants=`.
"""
from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor

DTYPES = ("fp32", "fp64")
SINKHORN_N = (2, 4, 16)        # BLOCK_N 2 (smallest tile), 4 (BLOCK_B 128), 16 (BLOCK_B 8)
DEPTH_CASES = ((3, 256), (17, 1024))  # (L, d): BLOCK_L 4 and 32, BLOCK_D 128


def ast_source(fn, signature: dict, constexprs: dict):
    import triton

    params = inspect.signature(triton.compiler.ASTSource.__init__).parameters
    if "constexprs" in params:
        return triton.compiler.ASTSource(fn=fn, signature=signature, constexprs=constexprs)
    return triton.compiler.ASTSource(fn=fn, signature=signature, constants=constexprs)  # triton < 3.3


def gpu_target(arch: int):
    from triton.backends.compiler import GPUTarget

    return GPUTarget("cuda", arch, 32)


def cases() -> list[tuple[str, str, dict, dict, dict]]:
    """(module, kernel name, scalar/pointer signature with {t} for the dtype, constexprs, launch options)."""
    from fidelity.impl.triton import depth_attention as da
    from fidelity.impl.triton import sinkhorn as sk

    out = []
    for n in SINKHORN_N:
        block_b, block_n, _ = sk._config(1 << 20, n)
        base = {"x_ptr": "*{t}", "out_ptr": "*{t}", "states_ptr": "*{t}", "B": "i32", "N": "i32", "T_MAX": "i32"}
        for store in (False, True):
            out.append(("sinkhorn", "_sinkhorn_fwd_kernel", base,
                        {"BLOCK_B": block_b, "BLOCK_N": block_n, "STORE_STATES": store}, {"num_warps": sk.NUM_WARPS}))
        bwd = {"x_ptr": "*{t}", "out_ptr": "*{t}", "states_ptr": "*{t}", "gout_ptr": "*{t}", "gin_ptr": "*{t}",
               "B": "i32", "N": "i32", "T_MAX": "i32"}
        out.append(("sinkhorn", "_sinkhorn_bwd_kernel", bwd, {"BLOCK_B": block_b, "BLOCK_N": block_n},
                    {"num_warps": sk.NUM_WARPS}))
    for L, d in DEPTH_CASES:
        block_r, block_l, block_d = da._blocks(L, 1 << 16, d)
        blocks = {"BLOCK_R": block_r, "BLOCK_L": block_l, "BLOCK_D": block_d}
        for has_gain in (False, True):
            fwd = {k: "*{t}" for k in ("v_ptr", "q_ptr", "g_ptr", "c_ptr", "h_ptr", "alpha_ptr", "qgv_ptr", "inv_ptr")}
            fwd.update({"L": "i32", "R": "i32", "D": "i32"})
            out.append(("depth_attention", "_depth_fwd_kernel", fwd, {"HAS_GAIN": has_gain, **blocks},
                        {"num_warps": da.NUM_WARPS}))
            bwd = {k: "*{t}" for k in ("v_ptr", "q_ptr", "g_ptr", "c_ptr", "alpha_ptr", "qgv_ptr", "inv_ptr", "dh_ptr",
                                        "dalpha_ptr", "dv_ptr", "part_ptr")}
            bwd.update({"L": "i32", "R": "i32", "D": "i32"})
            out.append(("depth_attention", "_depth_bwd_kernel", bwd, {"HAS_GAIN": has_gain, **blocks},
                        {"num_warps": da.NUM_WARPS}))
    for has_gain in (False, True):
        red = {k: "*{t}" for k in ("part_ptr", "q_ptr", "g_ptr", "c_ptr", "dq_ptr", "dg_ptr")}
        red.update({"P": "i32", "D": "i32"})
        out.append(("depth_attention", "_depth_reduce_kernel", red, {"HAS_GAIN": has_gain, "BLOCK_P": 64,
                                                                    "BLOCK_D": 128}, {"num_warps": 4}))
    return out


def build_one(args: tuple) -> dict:
    """Compile one (kernel, dtype, constexprs) for the target; a dict with the outcome."""
    module, kernel_name, signature, constexprs, options, dtype, arch = args
    import importlib

    import triton

    mod = importlib.import_module(f"fidelity.impl.triton.{module}")
    if getattr(mod, "INTERPRETED", False):
        raise RuntimeError("TRITON_INTERPRET is set: the kernels were defined for the interpreter, not compiled")
    fn = getattr(mod, kernel_name)
    sig = {k: v.format(t=dtype) for k, v in signature.items()}
    sig.update({k: "constexpr" for k in constexprs})
    record = {"kernel": kernel_name, "dtype": dtype, "constexprs": constexprs, "arch": f"sm_{arch}"}
    start = time.perf_counter()
    try:
        compiled = triton.compile(ast_source(fn, sig, constexprs), target=gpu_target(arch), options=options)
        record.update(ok=True, stages=sorted(compiled.asm.keys()), cubin_bytes=len(compiled.asm.get("cubin", b"")))
    except Exception as exc:  # noqa: BLE001 - the outcome is the report
        record.update(ok=False, error=f"{type(exc).__name__}: {str(exc)[-2000:]}")
    record["seconds"] = round(time.perf_counter() - start, 2)
    return record


def run(arch: int = 90, dtypes=DTYPES, jobs: int = 2) -> list[dict]:
    jobs_list = [(*case, dtype, arch) for case in cases() for dtype in dtypes]
    if jobs <= 1:
        return [build_one(j) for j in jobs_list]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(build_one, jobs_list))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", type=int, default=90, help="CUDA compute capability x10 (default 90: sm_90)")
    parser.add_argument("--dtype", action="append", choices=DTYPES, help="repeatable; default both")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", help="write the records here")
    args = parser.parse_args(argv)
    from fidelity.impl.triton import _common

    if _common.INTERPRETED:
        print("compile_check: TRITON_INTERPRET is set; unset it to build for a GPU target", file=sys.stderr)
        return 2
    records = run(args.arch, tuple(args.dtype or DTYPES), args.jobs)
    for r in records:
        status = "ok  " if r["ok"] else "FAIL"
        extra = f"cubin {r.get('cubin_bytes')} B" if r["ok"] else r["error"]
        print(f"{status} sm_{args.arch} {r['dtype']} {r['kernel']} {r['constexprs']} {r['seconds']}s {extra}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(records, f, indent=1)
    failed = [r for r in records if not r["ok"]]
    print(f"{len(records) - len(failed)} of {len(records)} builds succeeded for sm_{args.arch}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
