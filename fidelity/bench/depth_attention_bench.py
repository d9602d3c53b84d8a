"""Fused depth-attention kernels vs the PyTorch tensor path: `python -m fidelity.bench.depth_attention_bench [--quick]`.

AttnRes depth attention over L in {3, 9, 17} sources of width d in {256, 1024} at
tokens = b*t in {4k, 64k} (GPU; 1M tokens of 17 x 1024 float32 sources would be 71 GB before
any gradient), "paper" convention, learned gain, float32. Forward (no grad) and forward +
backward (grad of <G, h> for a random G, into sources, query and gain). The tensor path is
fidelity.impl.torch.depth_attend with backward="autograd". See _harness.py for what is
timed and counted; on a CPU the fused path runs under Triton's interpreter (use --quick).
"""
from __future__ import annotations

import sys

import torch

from fidelity.bench._harness import common_parser, interpreter_unless_cuda

TOKENS = (4096, 65536)
SOURCES = (3, 9, 17)
WIDTHS = (256, 1024)
QUICK_TOKENS = (64,)
QUICK_SOURCES = (3, 17)
QUICK_WIDTHS = (256,)


def parse(argv):
    p = common_parser(__doc__, "depth_attention_bench")
    p.add_argument("--sources", type=int, nargs="+", help="L values")
    p.add_argument("--d", type=int, nargs="+", help="widths")
    p.add_argument("--convention", default="paper", choices=("paper", "l2_sqrt_d", "l2"))
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    interpreter_unless_cuda(args.device)
    from fidelity.bench import _harness as h
    from fidelity.impl.torch import depth_attend as tensor_path
    from fidelity.impl.triton.depth_attention import depth_attend as fused

    device = h.pick_device(args.device)
    quick = args.quick or device == "cpu"
    tokens_list = args.tokens or (QUICK_TOKENS if quick else TOKENS)
    sources_list = args.sources or (QUICK_SOURCES if quick else SOURCES)
    widths = args.d or (QUICK_WIDTHS if quick else WIDTHS)
    warmup, reps = (1, 3) if quick else (2, 10)
    peak = h.device_peak_tbs(device, args.peak_tbs)
    conv = args.convention
    rows = []
    for tokens in tokens_list:
        for L in sources_list:
            for d in widths:
                g = torch.Generator().manual_seed(tokens + 31 * L + d)
                v = torch.randn(L, tokens, d, generator=g).to(device)
                q = (torch.randn(d, generator=g) * d ** -0.5).to(device)
                gain = (1 + 0.1 * torch.randn(d, generator=g)).to(device)
                cot = torch.randn(tokens, d, generator=g).to(device)
                s = v.element_size()
                small = L * tokens * s  # alpha
                row = h.Row(config={"tokens": tokens, "L": L, "d": d},
                            bytes_fwd=v.numel() * s + cot.numel() * s + small,
                            bytes_fwd_bwd=2 * v.numel() * s + 2 * cot.numel() * s + small)
                def paths_of(fn):
                    def forward():
                        with torch.no_grad():
                            fn(v, q, gain)

                    def forward_backward():
                        leaves = [t.detach().requires_grad_(True) for t in (v, q, gain)]
                        fn(*leaves)[0].backward(cot)
                    return forward, forward_backward

                h.measure_paths(row, {
                    "fused": paths_of(lambda a, b, c: fused(a, b, convention=conv, gain=c, backward="manual")),
                    "torch": paths_of(lambda a, b, c: tensor_path(a, b, convention=conv, gain=c, backward="autograd")),
                }, device, warmup=warmup, reps=reps)
                rows.append(row)
                del v, cot
                if device == "cuda":
                    torch.cuda.empty_cache()
    title = (f"AttnRes depth attention ({conv} convention, learned gain), float32, fused Triton kernels vs "
             "fidelity.impl.torch (autograd)")
    h.report("depth_attention_bench", title, rows, device, peak, quick, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
