"""faintmhc: an mHC package the fidelity project has never seen, whose H_res is there and does nothing.

Its own API, not fidelity's: `FaintResStack(dim, layers, streams=4)` is hiddenmhc's MHCStack (the hidden
copied into the streams, static coefficients, H_res = Sinkhorn of its logits, the streams summed at the end),
but it mixes the streams by I + 1e-30 (H_res - I) ("start as a plain residual, let the mix grow in"): the mix
is still doubly stochastic, so every identity of the streams holds, and res_logits get gradients ~1e-30 of the
others'. `FaintPostStack` is the same stack with H_post = 2 sigmoid(1e-30 post_logits) ("keep the write-back at
one until it is trained"): post_logits get gradients ~1e-30 of the others'. Nothing here knows fidelity.
"""
from __future__ import annotations

import torch

from hiddenmhc import MHCStack

__all__ = ["FaintPostStack", "FaintResStack"]

FAINT = 1e-30


class FaintResStack(MHCStack):
    def _h_res(self, c) -> torch.Tensor:
        eye = torch.eye(self.streams, dtype=c.res_logits.dtype, device=c.res_logits.device)
        return eye + FAINT * (super()._h_res(c) - eye)


class FaintPostStack(MHCStack):
    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        x = hidden.unsqueeze(-2).expand(*hidden.shape[:-1], self.streams, self.dim)
        for c, layer in zip(self.connections, self.layers):
            pre, post = torch.sigmoid(c.pre_logits), 2 * torch.sigmoid(FAINT * c.post_logits)
            y = layer((pre.unsqueeze(-1) * x).sum(-2))
            x = self._mix(self._h_res(c), x) + post.unsqueeze(-1) * y.unsqueeze(-2)
        return x.sum(-2)
