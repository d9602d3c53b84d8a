"""assert_stateless (S0, A, S1, B, A, S2, and B on a fresh object) is red on each kind of kept state, and green on
what is not the subject's.

Red: a counter on a module, a counter on a function object, a module-level list that grows (each seen in
the snapshot after three calls, though it would change no output until its 500th; the first call's change
included), a cache keyed on the shape (B gets A's result, and B on a fresh object differs) and a warm start
from the previous call (A's second result differs), those two kept in a third party's object, which the
snapshot reads whatever module defines its class; a package object an adapter keeps at module level, reached
through the globals the subject's callable names; a set-up on the first call (a kernel built per dtype and
shape), which is state unless declared. Green: the same set-up declared (and the gate says what it was
told), infrastructure caches that fill on every call (functools' lru_cache, a triton-like JIT), NaN in the
same place.
"""
import functools
import sys
import textwrap
import types

import pytest
import torch

from fidelity.gates import readings
from fidelity.gates.compare import GateFailure
from fidelity.gates.statelessness import KeptStateNote, assert_stateless

IMPL = "fidelity_fake_stateful_impl"
SOURCE = textwrap.dedent('''
    import torch

    _CALLS = []
    _KERNELS = {}
    memo = None  # set by the test: an object of a class defined elsewhere (a third party's)
    jit = None


    def counted(x):
        counted.calls = getattr(counted, "calls", 0) + 1
        return x * (2.0 if counted.calls % 500 else 3.0)


    def logged(x):
        _CALLS.append(x.shape)
        return x * (2.0 if len(_CALLS) < 500 else 3.0)


    def cached_by_shape(x):
        key = (tuple(x.shape), x.dtype)
        if key not in memo.table:
            memo.table[key] = x * 2.0
        return memo.table[key]


    def warm_started(x):
        previous = memo.table.get("previous")
        out = x * 2.0 if previous is None else x * 2.0 + 1e-3 * previous
        memo.table["previous"] = out
        return out


    class Kernel:
        def __init__(self, dtype):
            self.dtype, self.scale = dtype, torch.tensor(2.0, dtype=dtype)

        def __call__(self, x):
            return x * self.scale


    def lazily_built(x):
        key = (x.dtype, tuple(x.shape))
        if key not in _KERNELS:
            _KERNELS[key] = Kernel(x.dtype)  # built on the first call, kept for every later one
        return _KERNELS[key](x)


    def jitted(x):
        return jit(x)


    def logarithm(x):
        return torch.log(x)
''')


class Memo:
    """A third party's object: the snapshot reads it by its type alone."""

    def __init__(self):
        self.table = {}


class ThirdPartyJIT:
    """Like a triton JITFunction: a compile cache that fills as it meets new arguments (its class is
    placed in triton's package below: what a package defines, not where a test writes it, decides)."""

    def __init__(self):
        self.cache = {}

    def __call__(self, x):
        self.cache[tuple(x.reshape(-1).tolist())] = "compiled"
        return x * 2.0


ThirdPartyJIT.__module__ = "triton.runtime.jit"


class Counting(torch.nn.Module):
    """A counter kept on the module, or a buffer updated in forward."""

    def __init__(self, keep: str):
        super().__init__()
        self.keep = keep
        self.w = torch.nn.Parameter(torch.tensor([1.5, -0.5], dtype=torch.float64))
        self.register_buffer("running", torch.zeros(2, dtype=torch.float64))

    def forward(self, x):
        if self.keep == "counter":
            self._calls = getattr(self, "_calls", 0) + 1
            return x * self.w * (1.0 if self._calls < 500 else 1.001)
        with torch.no_grad():
            self.running.mul_(0.9).add_(0.1 * x.mean(0))
        return x * self.w


class LazyModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([1.5, -0.5], dtype=torch.float64))

    def forward(self, x):
        if not hasattr(self, "_table"):
            self._table = torch.arange(x.shape[-1], dtype=x.dtype)  # set up on the first call
        return x * self.w + self._table


@pytest.fixture
def impl(monkeypatch):
    module = types.ModuleType(IMPL)
    exec(compile(SOURCE, f"<{IMPL}>", "exec"), module.__dict__)
    module.memo, module.jit = Memo(), ThirdPartyJIT()
    monkeypatch.setitem(sys.modules, IMPL, module)
    return module


def _x(seed):
    return torch.randn(2, 2, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _red(fn, *, modules=()):
    """The GateFailure of A = fn(x_a), B = fn(x_b) under the helper."""
    xa, xb = _x(1), _x(2)
    with pytest.raises(GateFailure) as failure:
        assert_stateless(lambda: fn(xa), lambda: fn(xb), what="subject", modules=modules, implementation=[IMPL])
    return failure.value


@pytest.mark.parametrize("keep,path", [("counter", "state module._calls: (absent) -> int 1 -> int 2 -> int 3"),
                                       ("buffer", "state module.running: float64[2] cpu [0, 0] #")])
def test_a_counter_or_a_buffer_kept_on_a_module_is_named_in_the_state(keep, path):
    module = Counting(keep)
    failure = _red(module, modules={"module": module})
    assert path in str(failure) and failure.reading == 1


def test_a_counter_on_a_function_object_is_named_in_the_state_from_before_the_first_call(impl):
    failure = _red(impl.counted)
    assert f"state {IMPL}:counted.calls: (absent) -> int 1 -> int 2 -> int 3" in str(failure) and failure.reading == 1


def test_a_module_level_list_that_grows_is_named_entry_by_entry(impl):
    failure = _red(impl.logged)
    message = str(failure)
    assert f"state {IMPL}:_CALLS: list of 0 -> list of 1 -> list of 2 -> list of 3" in message
    assert f"state {IMPL}:_CALLS[0]: (absent) -> Size torch.Size([2, 2])" in message
    assert f"state {IMPL}:_CALLS[2]: (absent) -> Size" in message and failure.reading == 4


def test_a_cache_keyed_on_the_shape_gives_b_the_result_of_a_and_is_read_in_a_third_partys_object(impl):
    failure = _red(impl.cached_by_shape)
    message = str(failure)
    assert "B (other inputs) returned A's results bit for bit" in message
    assert f"state {IMPL}:memo.table: dict of 0 -> dict of 1" in message
    assert f"state {IMPL}:memo.table[<tuple>]: (absent) -> float64[2, 2]" in message and failure.reading == 3


def test_b_on_a_used_object_is_compared_with_b_on_a_fresh_one(impl):
    xa, xb = _x(1), _x(2)
    fresh = Memo()

    def b_on_fresh():  # the same function over a memo nothing has filled
        used, impl.memo = impl.memo, fresh
        try:
            return impl.cached_by_shape(xb)
        finally:
            impl.memo = used
    with pytest.raises(GateFailure) as failure:
        assert_stateless(lambda: impl.cached_by_shape(xa), lambda: impl.cached_by_shape(xb), what="memo",
                         implementation=[IMPL], fresh_other=b_on_fresh)
    assert "B on the used object, not B on a fresh one: output (float64[2, 2] cpu): 4 of 4 elements differ" \
        in str(failure.value)


def test_a_warm_start_from_the_previous_call_changes_the_second_result_of_a(impl):
    failure = _red(impl.warm_started)
    assert "output (float64[2, 2] cpu): 4 of 4 elements differ, first at (0, 0)" in str(failure)
    assert f"state {IMPL}:memo.table['previous']: (absent) -> float64[2, 2]" in str(failure)
    assert failure.reading == 3


class Projection:
    """A package's object with an iteration counter it never resets (its class defined outside the
    implementation modules named)."""

    def __init__(self):
        self.iterations = 0

    def __call__(self, x):
        self.iterations += 20
        return x * (2.0 if self.iterations < 1000 else 3.0)


def test_a_package_object_an_adapter_keeps_at_module_level_is_read_through_the_callables_globals(monkeypatch):
    adapter = types.ModuleType("fidelity_fake_adapter")
    exec("def project(x):\n    return _PROJECTION(x)\n", adapter.__dict__)
    adapter._PROJECTION = Projection()
    monkeypatch.setitem(sys.modules, adapter.__name__, adapter)
    xa, xb = _x(1), _x(2)
    with pytest.raises(GateFailure) as failure:
        assert_stateless(lambda: adapter.project(xa), lambda: adapter.project(xb), what="adapter",
                         objects={"project": adapter.project})
    assert "state project.<global _PROJECTION>.iterations: int 0 -> int 20 -> int 40 -> int 60" in str(failure.value)


@pytest.mark.parametrize("how", ["function", "module"])
def test_a_set_up_on_the_first_call_is_state_unless_declared(impl, how):
    fn = LazyModule() if how == "module" else impl.lazily_built
    modules = {"lazy": fn} if how == "module" else {}
    xa, xb = _x(1), _x(2)
    with pytest.raises(GateFailure) as failure:
        assert_stateless(lambda: fn(xa), lambda: fn(xb), what="lazy", modules=modules, implementation=[IMPL])
    told = "state lazy._table: (absent) -> float64[2] cpu" if how == "module" else \
        f"state {IMPL}:_KERNELS: dict of 0 -> dict of 1"
    assert told in str(failure.value)
    kept = (("lazy._table" if how == "module" else f"{IMPL}:_KERNELS", "built on the first call per dtype and shape"),)
    fn = LazyModule() if how == "module" else impl.lazily_built  # set up afresh: nothing built yet
    modules = {"lazy": fn} if how == "module" else {}
    impl._KERNELS.clear()
    with pytest.warns(KeptStateNote, match=r"declared kept state: .* \(built on the first call per dtype and shape\): "
                                           r"\d entr(y|ies) changed, not counted"):
        assert assert_stateless(lambda: fn(xa), lambda: fn(xb), what="lazy", modules=modules, implementation=[IMPL],
                                kept=kept) == 0


def test_what_a_declaration_covered_is_said_not_kept_as_a_reading_that_runs_must_repeat(impl):
    # A declared set-up changes on a process's first call and not after (a compile cache cold, then warm): the
    # count is history, not the subject's behaviour, and a reading the clean runs compare would make the gate flaky.
    xa, xb = _x(1), _x(2)
    kept = ((f"{IMPL}:_KERNELS", "built on the first call per dtype and shape"),)
    impl._KERNELS.clear()
    seen = []
    for expected in (r"5 entries changed, not counted", r"did not change in these calls"):
        readings.reset()
        with pytest.warns(KeptStateNote, match=expected):
            assert_stateless(lambda: impl.lazily_built(xa), lambda: impl.lazily_built(xb), what="lazy",
                             implementation=[IMPL], kept=kept)
        seen.append(readings.current())
    assert seen[0] == seen[1] == {"reading": 0.0}


def test_a_declared_kept_state_that_never_changes_is_said(impl):
    xa, xb = _x(1), _x(2)
    with pytest.warns(KeptStateNote, match=r"'rng:numpy' \(a sampler\): did not change in these calls"):
        assert assert_stateless(lambda: impl.logarithm(xa.abs()), lambda: impl.logarithm(xb.abs()), what="told",
                                implementation=[IMPL], kept=(("rng:numpy", "a sampler"),)) == 0


def test_a_declaration_does_not_cover_what_it_does_not_name(impl):
    xa, xb = _x(1), _x(2)
    with pytest.raises(GateFailure, match=r"counted.calls: \(absent\) -> int 1 -> int 2 -> int 3 \[declared kept state: "
                                          r"'\*._kernels' \(x\): did not change") as failure:
        assert_stateless(lambda: impl.counted(xa), lambda: impl.counted(xb), what="subject", implementation=[IMPL],
                         kept=(("*._kernels", "x"),))
    assert failure.value.reading == 1


def test_infrastructure_caches_that_fill_on_every_call_are_not_state(impl):
    xa, xb = _x(1), _x(2)
    assert assert_stateless(lambda: impl.jitted(xa), lambda: impl.jitted(xb), what="jit", implementation=[IMPL]) == 0
    assert len(impl.jit.cache) == 2  # it did fill: A's arguments, then B's
    cached = functools.lru_cache(maxsize=None)(lambda key: torch.tensor(2.0, dtype=torch.float64))
    impl.jit = lambda x: x * cached(tuple(x.shape))
    assert assert_stateless(lambda: impl.jitted(xa), lambda: impl.jitted(xb), what="lru", implementation=[IMPL]) == 0
    assert cached.cache_info().currsize == 1


def test_nan_in_the_same_place_is_equal_and_nan_that_moves_is_not(impl):
    xa, xb = torch.tensor([-1.0, 2.0]), torch.tensor([3.0, -4.0])
    assert assert_stateless(lambda: impl.logarithm(xa), lambda: impl.logarithm(xb), what="nan",
                            implementation=[IMPL]) == 0
    flips = iter([xa, xa.flip(0)])
    with pytest.raises(GateFailure, match=r"2 of 2 elements differ, first at \(0,\): nan then 0.69"):
        assert_stateless(lambda: impl.logarithm(next(flips)), lambda: impl.logarithm(xb), what="nan moves")
