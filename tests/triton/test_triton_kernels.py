"""The fused kernels' own tests: the subject's lazy import, its availability, the refusals, and the
paths of the kernels the gates' small inputs do not reach (many programs, several d blocks,
several row blocks per program, t_max = 0 and 1, n = 1, non-contiguous inputs, launch counts,
bit-reproducible backward).

They need the kernels to run here: under TRITON_INTERPRET=1 (set before the kernels are
imported) on CPU tensors, or compiled on a CUDA device; otherwise they are skipped with the
reason. Block sizes are shrunk through the modules' tuning constants (monkeypatch), so small
inputs take the paths a GPU takes on large ones.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fidelity.impl.torch import depth_attend as ref_depth_attend
from fidelity.impl.torch import sinkhorn as ref_sinkhorn
from fidelity.subjects import triton_kernels

ROOT = Path(__file__).resolve().parents[2]
REASON = triton_kernels.available()
needs_kernels = pytest.mark.skipif(REASON is not None, reason=f"Triton kernels cannot run here: {REASON}")


def _run(code: str, env: dict[str, str]) -> str:
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip()


def test_importing_the_registry_and_the_subject_imports_no_triton():
    out = _run("import sys; import fidelity.subjects.registry, fidelity.subjects.triton_kernels as t; "
               "print(sorted(m for m in sys.modules if m == 'triton' or m.startswith('fidelity.impl.triton')))",
               dict(os.environ))
    assert out == "[]"


def test_subject_says_why_it_cannot_run_without_interpreter_or_cuda():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = _run("import torch; from fidelity.subjects.triton_kernels import available; "
               "print('cuda' if torch.cuda.is_available() else available())", env)
    assert out in ("cuda", "no CUDA device and TRITON_INTERPRET is not 1")
    env["TRITON_INTERPRET"] = "1"
    assert _run("from fidelity.subjects.triton_kernels import available; print(available())", env) == "None"


def test_subject_declares_only_the_manual_route():
    s = triton_kernels.SUBJECT
    assert {m: c.routes for m, c in s.capabilities.items()} == {"sinkhorn": ("manual",), "depth_attention": ("manual",)}
    assert s.modules == {"sinkhorn": ("fidelity.impl.triton.sinkhorn",),
                         "depth_attention": ("fidelity.impl.triton.depth_attention",)}


# ---------------------------------------------------------------- needs the kernels


@pytest.fixture
def device():
    from fidelity.impl.triton import _common

    return "cpu" if _common.INTERPRETED else "cuda"


@pytest.fixture
def sk():
    from fidelity.impl.triton import sinkhorn

    return sinkhorn


@pytest.fixture
def da():
    from fidelity.impl.triton import depth_attention

    return depth_attention


@needs_kernels
def test_refusals_match_the_reference(sk, da, device):
    with pytest.raises(ValueError):
        sk.sinkhorn(torch.zeros(2, 3, device=device))
    with pytest.raises(ValueError):
        sk.sinkhorn(torch.zeros(2, 2, device=device), t_max=-1)
    with pytest.raises(ValueError):
        sk.sinkhorn(torch.zeros(2, 2, device=device), backward="fused")
    with pytest.raises(NotImplementedError):
        sk.sinkhorn(torch.zeros(2, 2, device=device), backward="autograd")
    with pytest.raises(TypeError):
        sk.sinkhorn(torch.zeros(2, 2, dtype=torch.float16, device=device))
    v, q = torch.zeros(3, 4, device=device), torch.zeros(4, device=device)
    with pytest.raises(ValueError):
        da.depth_attend(v, torch.zeros(5, device=device))
    with pytest.raises(ValueError):
        da.depth_attend(v, q, convention="rms")
    with pytest.raises(TypeError):
        da.depth_attend(v, q.double())
    with pytest.raises(NotImplementedError):
        da.depth_attend(v, q, backward="autograd")


@needs_kernels
@pytest.mark.parametrize("n", [1, 2, 3, 5, 16])
@pytest.mark.parametrize("t_max", [0, 1, 20])
def test_sinkhorn_on_one_matrix_per_program_matches_the_reference(sk, device, monkeypatch, n, t_max):
    """TILE_ELEMENTS shrunk to one matrix per program: 6 programs for [2, 3, n, n] logits."""
    monkeypatch.setattr(sk, "TILE_ELEMENTS", 1)
    g = torch.Generator().manual_seed(n * 100 + t_max)
    logits = (torch.randn(2, 3, n, n, generator=g, dtype=torch.float64) * 4).to(device)
    cot = torch.randn(2, 3, n, n, generator=g, dtype=torch.float64).to(device)
    got = logits.clone().requires_grad_(True)
    want = logits.clone().requires_grad_(True)
    out = sk.sinkhorn(got, t_max=t_max)
    ref = ref_sinkhorn(want, t_max=t_max, backward="autograd")
    (out * cot).sum().backward()
    (ref * cot).sum().backward()
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(got.grad, want.grad, rtol=1e-10, atol=1e-12 * float(want.grad.abs().max()) + 1e-300)


@needs_kernels
def test_sinkhorn_takes_non_contiguous_logits_and_counts_one_launch_each_way(sk, device):
    from fidelity.impl.triton import _common

    logits = torch.randn(4, 4, 3, dtype=torch.float64, device=device).transpose(0, 2)[:, :, :]  # [3, 4, 4], strided
    logits = logits[..., :4, :4].transpose(-1, -2)
    assert not logits.is_contiguous()
    leaf = logits.clone().requires_grad_(True)
    before = dict(_common.LAUNCHES)
    out = sk.sinkhorn(leaf)
    out.sum().backward()
    after = _common.LAUNCHES
    assert after.get("_sinkhorn_fwd_kernel", 0) - before.get("_sinkhorn_fwd_kernel", 0) == 1
    assert after.get("_sinkhorn_bwd_kernel", 0) - before.get("_sinkhorn_bwd_kernel", 0) == 1
    torch.testing.assert_close(out, ref_sinkhorn(logits), rtol=1e-12, atol=1e-14)


@needs_kernels
@pytest.mark.parametrize("convention", ["paper", "l2_sqrt_d", "l2"])
@pytest.mark.parametrize("with_gain", [False, True], ids=["no-gain", "gain"])
def test_depth_attention_on_small_blocks_matches_the_reference(da, device, monkeypatch, convention, with_gain):
    """BLOCK_D 4 over d = 10 (three d blocks, the last partial), one position per block, at most
    2 backward programs for 7 positions (so a program loops over several row blocks), L = 5."""
    monkeypatch.setattr(da, "TILE_ELEMENTS", 1)
    monkeypatch.setattr(da, "BLOCK_D_MAX", 4)
    monkeypatch.setattr(da, "PROGRAMS_PER_SM", 2)
    monkeypatch.setattr(da, "_max_programs", lambda device: 2)
    g = torch.Generator().manual_seed(11)
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64).to(device)  # noqa: E731
    v, q, gain, dh, dal = r(5, 7, 10), r(10) * 0.5, 1 + 0.3 * r(10), r(7, 10), r(5, 7)
    results = []
    for fn, kw in ((da.depth_attend, {}), (ref_depth_attend, {"backward": "autograd"})):
        leaves = [t.clone().requires_grad_(True) for t in (v, q, gain)]
        h, alpha = fn(leaves[0], leaves[1], convention=convention, eps=1e-6,
                      gain=leaves[2] if with_gain else None, **kw)
        wrt = leaves if with_gain else leaves[:2]
        grads = torch.autograd.grad((h * dh).sum() + (alpha * dal).sum(), wrt)
        results.append((h, alpha, *grads))
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12 * float(want.detach().abs().max()))


@needs_kernels
def test_depth_attention_unbatched_sources_and_a_loss_on_alpha_only(da, device):
    g = torch.Generator().manual_seed(3)
    v = torch.randn(4, 6, generator=g, dtype=torch.float64).to(device).requires_grad_(True)
    q = torch.randn(6, generator=g, dtype=torch.float64).to(device).requires_grad_(True)
    h, alpha = da.depth_attend(v, q)
    assert h.shape == (6,) and alpha.shape == (4,)
    (alpha[0] * 3).backward()
    v2, q2 = v.detach().clone().requires_grad_(True), q.detach().clone().requires_grad_(True)
    h2, alpha2 = ref_depth_attend(v2, q2)
    (alpha2[0] * 3).backward()
    torch.testing.assert_close(v.grad, v2.grad, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(q.grad, q2.grad, rtol=1e-12, atol=1e-14)


@needs_kernels
def test_depth_attention_counts_one_forward_and_two_backward_launches_and_is_bit_reproducible(da, device):
    from fidelity.impl.triton import _common

    g = torch.Generator().manual_seed(5)
    v = torch.randn(9, 33, 40, generator=g).to(device)
    q = torch.randn(40, generator=g).to(device)
    grads = []
    for _ in range(2):
        leaves = [v.clone().requires_grad_(True), q.clone().requires_grad_(True)]
        before = dict(_common.LAUNCHES)
        h, _ = da.depth_attend(*leaves, convention="paper")
        h.square().sum().backward()
        delta = {k: n - before.get(k, 0) for k, n in _common.LAUNCHES.items() if n != before.get(k, 0)}
        assert delta == {"_depth_fwd_kernel": 1, "_depth_bwd_kernel": 1, "_depth_reduce_kernel": 1}
        grads.append([t.grad for t in leaves])
    for a, b in zip(*grads):
        assert torch.equal(a, b)
