"""code_swap.swap_in turns an imported module into its patched source in place: every reference
to its functions, wherever it is held, runs the patched code; what it cannot make identical
to a fresh import it refuses (the runner then starts a fresh child)."""
import functools
import importlib
import sys
import textwrap

import pytest
import torch

from fidelity.perturb.code_swap import SwapImpossible, swap_in

ORIGINAL = textwrap.dedent('''
    import functools

    import torch
    from torch.autograd.function import once_differentiable

    SCALE = 2.0


    def logged(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs)
        return wrapper


    def double(x, factor=2.0):
        return x * factor


    @logged
    def triple(x):
        return x * 3.0


    class Scaler(torch.nn.Module):
        def forward(self, x):
            return double(x) + 1.0

        @staticmethod
        def offset():
            return 1.0


    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2.0 * x * g


    class Shifted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.shift = 1.0

        def forward(self, x):
            return x + self.shift


    TABLE = {"double": double}
''')


@pytest.fixture
def module(tmp_path, monkeypatch):
    name = "swaptoy_" + tmp_path.name.replace("-", "_")
    path = tmp_path / f"{name}.py"
    path.write_text(ORIGINAL)
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module(name)
    yield mod, str(path)
    sys.modules.pop(name, None)


def test_every_reference_to_a_function_runs_the_patched_code(module):
    mod, path = module
    held_elsewhere, table, instance = mod.double, mod.TABLE, mod.Scaler()
    swap_in(mod, path, ORIGINAL.replace("return x * factor", "return x * factor + 100.0"))
    x = torch.ones(2)
    assert held_elsewhere(x)[0] == 102.0  # a `from m import double` taken before the swap
    assert table["double"](x)[0] == 102.0  # a table built at import
    assert instance(x)[0] == 103.0         # a method calling it through the module's globals


def test_a_changed_default_reaches_the_function_object_others_hold(module):
    mod, path = module
    held = mod.double
    swap_in(mod, path, ORIGINAL.replace("def double(x, factor=2.0)", "def double(x, factor=20.0)"))
    assert held(torch.ones(1))[0] == 20.0


def test_a_decorated_function_is_swapped_through_its_wrapper(module):
    mod, path = module
    held = mod.triple
    swap_in(mod, path, ORIGINAL.replace("return x * 3.0", "return x * 4.0"))
    assert held(torch.ones(1))[0] == 4.0


def test_an_autograd_backward_under_once_differentiable_is_swapped(module):
    mod, path = module
    function_class = mod.Square
    swap_in(mod, path, ORIGINAL.replace("return 2.0 * x * g", "return 3.0 * x * g"))
    x = torch.tensor([1.5], requires_grad=True)
    function_class.apply(x).sum().backward()
    assert x.grad[0] == 4.5
    assert mod.Square is function_class  # classes keep their identity: isinstance still holds


def test_a_staticmethod_in_a_class_is_swapped(module):
    mod, path = module
    swap_in(mod, path, ORIGINAL.replace("return 1.0\n", "return -1.0\n"))
    assert mod.Scaler.offset() == -1.0


def test_a_class_whose_methods_call_super_is_swapped_and_keeps_its_identity(module):
    """super() puts the class in each method's __class__ cell, which leads back to the class being paired."""
    mod, path = module
    before = mod.Shifted
    swap_in(mod, path, ORIGINAL.replace("self.shift = 1.0", "self.shift = -1.0"))
    shifted = mod.Shifted()
    assert mod.Shifted is before and isinstance(shifted, torch.nn.Module)
    assert shifted(torch.zeros(1))[0] == -1.0


@pytest.mark.parametrize("patched, says", [
    (ORIGINAL.replace("SCALE = 2.0", "SCALE = 3.0"), "the value differs"),
    (ORIGINAL + "\nEXTRA = 1\n", "names only one side has"),
    (ORIGINAL + "\nraise RuntimeError('boom')\n", "fails to execute"),
], ids=["a module constant another module may have copied", "a new name", "a mutant that fails at import"])
def test_what_a_swap_cannot_make_identical_is_refused_and_nothing_is_changed(module, patched, says):
    mod, path = module
    patched = patched.replace("return x * factor", "return x * factor + 100.0")
    with pytest.raises(SwapImpossible, match=says):
        swap_in(mod, path, patched)
    assert mod.double(torch.ones(1))[0] == 2.0  # refused before any code was swapped
    assert mod.SCALE == 2.0
