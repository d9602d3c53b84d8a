"""Seeded smooth sublayers and the Block AttnRes module built on them, for the float64 gradient gates."""
import torch

from fidelity.gates.routes import routed
from fidelity.subjects.subject import NotRun


def tanh_sublayers(g: torch.Generator, count: int, d: int, device, dtype=torch.float64) -> list:
    """`count` sublayers [..., d] -> [..., d] with W ~ N(0, 1/d) and b ~ N(0, 1/4), drawn from `g` in order
    (in float64, then held in `dtype`)."""
    layers = []
    for _ in range(count):
        W = (torch.randn(d, d, generator=g, dtype=torch.float64) / d ** 0.5).to(device=device, dtype=dtype)
        b = (0.5 * torch.randn(d, generator=g, dtype=torch.float64)).to(device=device, dtype=dtype)
        layers.append(lambda h, W=W, b=b: torch.tanh(h @ W.T + b))
    return layers


def seeded_block_module(subject, device, mode, learned_gain, backward, L, N, D, seed=20261215, gradient=True):
    """The factory's Block AttnRes on L tanh sublayers in N blocks, d = D, float64, every parameter moved off
    its init to seeded values (at zero queries a gain's gradient is legitimately zero: q . (g v) = 0), and
    {name: leaf} for h1 [2, D] and each parameter. gradient=False: the gate only runs the forward (a
    forward-only subject builds it without `backward=`, fidelity.gates.routes)."""
    factory = routed(subject, "block_attnres", backward, gradient=gradient)
    g = torch.Generator().manual_seed(seed)
    kw = {"learned_gain": True} if learned_gain else {}
    module = factory(tanh_sublayers(g, L, D, device), D, N, mode=mode, dtype=torch.float64, device=device, **kw)
    params = dict(module.named_parameters())
    names = ["queries", "output_query"] + (["gains", "output_gain"] if learned_gain else [])
    tensors = {}
    for name in names:
        if name not in params:
            raise NotRun(f"the module has no parameter {name!r}" + (" with learned_gain=True" if learned_gain else ""))
        p = params[name]
        with torch.no_grad():
            draw = torch.randn(p.shape, generator=g, dtype=torch.float64)
            p.copy_((1.0 + 0.3 * draw if name in ("gains", "output_gain") else draw).to(device))
        tensors[name] = p
    h1 = torch.randn(2, D, generator=g, dtype=torch.float64).to(device).requires_grad_(True)
    return module, {"h1": h1, **tensors}
