"""Fused Sinkhorn kernel vs the PyTorch tensor path: `python -m fidelity.bench.sinkhorn_bench [--quick]`.

One H_res = M(20) per token: logits [tokens, n, n], n in {2, 4, 8}, tokens = b*t in
{4k, 64k, 1M} (GPU). Forward (no grad: the fused kernel stores no states) and forward +
backward (grad of <G, M(20)> for a random G), float32. The tensor path is
fidelity.impl.torch.sinkhorn with backward="autograd". See _harness.py for what is timed
and counted. On a CPU the fused path runs under Triton's interpreter: use --quick (small
sizes, < 60 s), and read the figures as what CI pays.
"""
from __future__ import annotations

import sys

import torch

from fidelity.bench._harness import common_parser, interpreter_unless_cuda

TOKENS = (4096, 65536, 1 << 20)
SIZES = (2, 4, 8)
QUICK_TOKENS = (256, 1024)


def parse(argv):
    p = common_parser(__doc__, "sinkhorn_bench")
    p.add_argument("--n", type=int, nargs="+", help="override the matrix sizes")
    p.add_argument("--t-max", type=int, default=20)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    interpreter_unless_cuda(args.device)
    from fidelity.bench import _harness as h
    from fidelity.impl.torch import sinkhorn as tensor_path
    from fidelity.impl.triton.sinkhorn import sinkhorn as fused

    device = h.pick_device(args.device)
    quick = args.quick or device == "cpu"
    tokens_list = args.tokens or (QUICK_TOKENS if quick else TOKENS)
    sizes = args.n or SIZES
    warmup, reps = (1, 3) if quick else (2, 10)
    peak = h.device_peak_tbs(device, args.peak_tbs)
    t_max = args.t_max
    rows = []
    for tokens in tokens_list:
        for n in sizes:
            g = torch.Generator().manual_seed(tokens + n)
            x = (torch.randn(tokens, n, n, generator=g) * 2.0).to(device)
            cot = torch.randn(tokens, n, n, generator=g).to(device)
            itemsize = x.element_size()
            row = h.Row(config={"tokens": tokens, "n": n}, bytes_fwd=2 * x.numel() * itemsize,
                        bytes_fwd_bwd=4 * x.numel() * itemsize)
            def paths_of(fn):
                def forward():
                    with torch.no_grad():
                        fn(x)

                def forward_backward():
                    leaf = x.detach().requires_grad_(True)
                    fn(leaf).backward(cot)
                return forward, forward_backward

            h.measure_paths(row, {"fused": paths_of(lambda t: fused(t, t_max=t_max, backward="manual")),
                                  "torch": paths_of(lambda t: tensor_path(t, t_max=t_max, backward="autograd"))},
                            device, warmup=warmup, reps=reps)
            rows.append(row)
            del x, cot
            if device == "cuda":
                torch.cuda.empty_cache()
    title = f"Sinkhorn M({t_max}) (mHC Eq. 9), float32, fused Triton kernel vs fidelity.impl.torch (autograd)"
    h.report("sinkhorn_bench", title, rows, device, peak, quick, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
