"""Files written into a `fidelity init` project: a module mechanism beside the scaffold's function, and one
subject per defect the generic gate classes must each see (the scaffold's own subject is the faithful one)."""

NORM_MECHANISM = '''
from __future__ import annotations

from typing import Annotated, Protocol

import torch

from fidelity.mechanisms import Mechanism
from fidelity.mechanisms.markers import Doc, Param


class ScaledNormModule(Protocol):
    """y = x / sqrt(mean(x^2) + eps) * g over the last axis."""

    weight: Annotated[torch.nn.Parameter, Param("[d]", "the gain g", init="1")]

    def __call__(self, x: Annotated[torch.Tensor, Doc("x", shape="[..., d]")]
                 ) -> Annotated[torch.Tensor, Doc("y", shape="[..., d]")]:
        ...


class ScaledNormFactory(Protocol):
    """module = factory(d, eps=, dtype=, device=). ValueError for d < 1 or eps < 0."""

    def __call__(self, d: Annotated[int, Doc("the width")], *,
                 eps: Annotated[float, Doc("added under the root")] = 1e-6,
                 dtype: Annotated[torch.dtype, Doc("dtype of the gain")] = torch.float32,
                 device: Annotated[str | None, Doc("device of the gain")] = None) -> ScaledNormModule:
        ...


MECHANISM = Mechanism(name="scaled_norm", summary="RMS normalisation with a gain", kind="module",
                      interface=ScaledNormFactory, module_interface=ScaledNormModule, equations=("mypaper.eq1",))
'''

NORM = '''
import torch


class ScaledNorm(torch.nn.Module):
    def __init__(self, d, *, eps=1e-6, dtype=torch.float32, device=None):
        super().__init__()
        if d < 1 or eps < 0:
            raise ValueError(f"d must be >= 1 and eps >= 0, got {d}, {eps}")
        self.weight = torch.nn.Parameter(torch.ones(d, dtype=dtype, device=device))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Memo(ScaledNorm):  # keeps its first output
    def forward(self, x):
        if not hasattr(self, "first"):
            self.first = super().forward(x)
        return self.first


class DeadGain(ScaledNorm):  # the gain's term scaled to nothing
    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * (1 + 1e-30 * self.weight)


class ZeroInit(ScaledNorm):  # the gain starts at 0, not the interface's 1
    def __init__(self, d, **kw):
        super().__init__(d, **kw)
        with torch.no_grad():
            self.weight.zero_()


class EvalPath(ScaledNorm):  # eval mode drops eps
    def forward(self, x):
        eps = self.eps if self.training else 0.0
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * self.weight


def factory(kind):
    def build(d, *, eps=1e-6, dtype=torch.float32, device=None):
        return kind(d, eps=eps, dtype=dtype, device=device)
    return build


def other_default(d, *, eps=1e-2, dtype=torch.float32, device=None):  # ships another eps than the interface
    return ScaledNorm(d, eps=eps, dtype=dtype, device=device)


def drops_dtype(d, *, eps=1e-6, dtype=torch.float32, device=None):  # builds float32 weights whatever is asked
    return ScaledNorm(d, eps=eps, device=device)


def no_guard(d, *, eps=1e-6, dtype=torch.float32, device=None):  # builds for eps < 0
    return ScaledNorm(d, eps=abs(eps), dtype=dtype, device=device)
'''

SOFTMAXES = '''
import torch

from mypaper.softmax import tempered_softmax

_FIRST = {}


def memo(logits, *, temperature=1.0):
    return _FIRST.setdefault(tuple(logits.shape), tempered_softmax(logits, temperature=temperature))


def cast(logits, *, temperature=1.0):
    return tempered_softmax(logits.double(), temperature=temperature)


def other_default(logits, *, temperature=2.0):
    return tempered_softmax(logits, temperature=temperature)


def detached(logits, *, temperature=1.0):
    return tempered_softmax(logits, temperature=temperature).detach()


def no_guard(logits, *, temperature=1.0):
    return tempered_softmax(logits, temperature=abs(temperature) or 1.0)
'''

SUBJECTS = '''
from fidelity.mechanisms import Capability
from fidelity.subjects.subject import Subject

from mypaper import norm, softmaxes
from mypaper.softmax import tempered_softmax

BOTH = {"tempered_softmax": Capability(dtypes=("float32", "float64"), devices=("cpu",), backward=("autograd",)),
        "scaled_norm": Capability(dtypes=("float32", "float64"), devices=("cpu",), backward=("autograd",))}


def subject(name, softmax, norm_factory):
    return Subject(name=name, description=name, mechanisms={"tempered_softmax": softmax, "scaled_norm": norm_factory},
                   capabilities=BOTH, unavailable_reason=lambda: None,
                   modules={"tempered_softmax": ("mypaper.softmaxes",), "scaled_norm": ("mypaper.norm",)})


FAITHFUL = subject("faithful", tempered_softmax, norm.factory(norm.ScaledNorm))
MEMO = subject("memo", softmaxes.memo, norm.factory(norm.Memo))
CAST = subject("cast", softmaxes.cast, norm.factory(norm.ScaledNorm))
OTHER_DEFAULT = subject("other_default", softmaxes.other_default, norm.other_default)
DETACHED = subject("detached", softmaxes.detached, norm.factory(norm.DeadGain))
NO_GUARD = subject("no_guard", softmaxes.no_guard, norm.no_guard)
EVAL_PATH = subject("eval_path", tempered_softmax, norm.factory(norm.EvalPath))
ZERO_INIT = subject("zero_init", tempered_softmax, norm.factory(norm.ZeroInit))
DROPS_DTYPE = subject("drops_dtype", tempered_softmax, norm.drops_dtype)
'''

NORM_FIXTURE = '''

X = [[1, 2, 3, 4], [-1, sympy.Rational(1, 2), 2, -3]]
COTANGENT_X = [[1, -1, 2, 0], [0, 3, -1, 1]]


@fixture("mypaper.norm_example", "mypaper.oracle.tempered_softmax", ["mypaper.eq1"])
def _norm_example():
    return {"derivation": ["An example input for the generic gate classes: two rows of four."],
            "inputs": {"x": inp(X)}, "expected": {}, "params": {"d": 4}}


def _norm_loss(x, w, c):
    eps = sympy.Rational(1, 10**6)  # the factory's default, which the interface states
    loss = 0
    for row, crow in zip(x, c):
        scale = 1 / sympy.sqrt(sum(v**2 for v in row) / len(row) + eps)
        loss += sum(ci * xi * scale * wi for ci, xi, wi in zip(crow, row, w))
    return loss


@fixture("mypaper.norm_gradient", "mypaper.oracle.tempered_softmax", ["mypaper.eq1"])
def _norm_gradient():
    xs = sympy.symbols("x0:8")
    ws = sympy.symbols("w0:4")
    loss = _norm_loss([xs[:4], xs[4:]], ws, COTANGENT_X)
    at = {**dict(zip(xs, [v for row in X for v in row])), **dict(zip(ws, [1] * 4))}  # the gain's init: 1
    dx = [sympy.diff(loss, v).subs(at) for v in xs]
    return {"derivation": ["d sum(c y) / d x and / d g of y = x / sqrt(mean(x^2) + 1e-6) g, at g = 1, by sympy.diff."],
            "inputs": {"x": inp(X), "cotangent": inp(COTANGENT_X)},
            "expected": {"d_x": num([dx[:4], dx[4:]]), "d_weight": num([sympy.diff(loss, w).subs(at) for w in ws])},
            "params": {"d": 4}}


@fixture("mypaper.norm_gradient_x_only", "mypaper.oracle.tempered_softmax", ["mypaper.eq1"])
def _norm_gradient_x_only():  # the gain's gradient left out: a gate that compared only d_x would pass it by
    data = _norm_gradient()
    del data["expected"]["d_weight"]
    return data


@fixture("mypaper.softmax_gradient", "mypaper.oracle.tempered_softmax", ["mypaper.eq1"])
def _softmax_gradient():
    return {"derivation": ["d q_1 / d z at T = 2: the cotangent picks q_1."],
            "inputs": {"logits": inp(LOGITS), "cotangent": inp([1, 0, 0])},
            "expected": {"d_logits": num(gradient_of_q1(LOGITS, TEMPERATURE))}, "params": {"temperature": TEMPERATURE}}
'''

GATES = '''
from fidelity.gates.library import GateClassesFor


from fidelity.gates.compare import Tolerance

TOLERANCE = Tolerance(eps_multiple=64)  # a few dozen roundings through exp, sums, a root and a division


class TestSoftmax(GateClassesFor, mechanism="tempered_softmax", example="mypaper.t2",
                  refuses={"temperature": (0.0, -1.0)}, gradient_example="mypaper.softmax_gradient",
                  gradient_tolerance=TOLERANCE):
    """The generic classes on the function."""


class TestNormGainLeftOut(GateClassesFor, mechanism="scaled_norm", example="mypaper.norm_example",
                          gradient_example="mypaper.norm_gradient_x_only", gradient_tolerance=TOLERANCE):
    """An oracle gradient fixture without the gain's: refused, never passed."""


class TestNorm(GateClassesFor, mechanism="scaled_norm", example="mypaper.norm_example", refuses={"eps": (-1.0,)},
               gradient_example="mypaper.norm_gradient", gradient_tolerance=TOLERANCE):
    """The generic classes on the module."""
'''
