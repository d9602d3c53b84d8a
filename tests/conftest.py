"""Session-wide set-up shared by every test directory.

Triton kernels run on the CPU in Triton's interpreter, which must be chosen
before any kernel module is imported: without a CUDA device we set
TRITON_INTERPRET=1 here, at the root conftest, which pytest loads first.
"""
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
