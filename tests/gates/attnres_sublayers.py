"""Seeded smooth sublayers for the Block AttnRes gates: f_l(h) = tanh(h W_l^T + b_l), float64, drawn on the CPU."""
import torch


def tanh_sublayers(g: torch.Generator, count: int, d: int, device) -> list:
    """`count` sublayers [..., d] -> [..., d] with W ~ N(0, 1/d) and b ~ N(0, 1/4), drawn from `g` in order."""
    layers = []
    for _ in range(count):
        W = (torch.randn(d, d, generator=g, dtype=torch.float64) / d ** 0.5).to(device)
        b = (0.5 * torch.randn(d, generator=g, dtype=torch.float64)).to(device)
        layers.append(lambda h, W=W, b=b: torch.tanh(h @ W.T + b))
    return layers
