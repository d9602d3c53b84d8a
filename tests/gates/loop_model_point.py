"""The loop model as a user builds it: its config type read from the factory, a seeded generator, seeded tokens.

Shared by the module gates that call one model on tokens (stateless, train/eval): GRAPHS names each
arm graph by the config fields that select it.
"""

import torch

from fidelity.mechanisms.loop_model import config_class

MECH = "loop_model"
GRAPHS = {
    "rezero": dict(arm="rezero"),
    "attnres": dict(arm="attnres"),
    "mhc_sliced": dict(arm="mhc", mhc_layout="sliced"),
    "mhc_paper": dict(arm="mhc", mhc_layout="paper"),
    "hc_dynamic": dict(arm="hc", hc_dynamic=True),
    "hc_static": dict(arm="hc", hc_dynamic=False),
}


def build(subject, device, **config):
    """The subject's loop model for LoopConfig(**config), drawn from generator seed 41."""
    factory = subject.get(MECH)
    config_type = config_class(factory)
    return factory(config_type(**config), torch.Generator().manual_seed(41), device=device)


def tokens(device, seed=42):
    """Seeded token ids [2, 5] below the default vocabulary (16)."""
    return torch.randint(0, 16, (2, 5), generator=torch.Generator().manual_seed(seed)).to(device)
