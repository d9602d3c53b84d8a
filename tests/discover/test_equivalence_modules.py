"""Module classes are probed too: a mutant in a constructor, its defaults, an init or a forward is
decided by building the module on both sides (one seed, float64), calling it twice, and comparing
outputs, gradients (inputs and every parameter) and the state right after construction."""
import textwrap
from pathlib import Path

import pytest

from fidelity import project
from fidelity.discover import equivalence
from fidelity.discover import operators as ops

TOY = textwrap.dedent('''
    import torch
    from torch import nn


    class Gated(nn.Module):
        """y = 2x * weight / rms(2x) + beta * tanh(gate * x); beta starts at zero, so gate is hidden at init."""

        def __init__(self, d: int, eps: float = 1e-2):
            super().__init__()
            self._eps = eps  # private: only the output can show it
            self.weight = nn.Parameter(torch.ones(d))
            self.beta = nn.Parameter(torch.zeros(d))
            self.gate = nn.Parameter(torch.empty(d))
            nn.init.zeros_(self.gate)
            self._calls = 0

        def forward(self, x):
            self._calls = 1
            scaled = x * 2
            inv = torch.rsqrt(scaled.pow(2).mean(dim=-1, keepdim=True) + self._eps)
            return (scaled * inv * self.weight + self.beta * torch.tanh(self.gate * x)) * self._calls
''')

CONFIGURED = textwrap.dedent('''
    from dataclasses import dataclass

    import torch
    from torch import nn


    @dataclass(frozen=True)
    class Cfg:
        d: int = 3
        scale: float = 2.0


    class Scaled(nn.Module):
        def __init__(self, cfg: Cfg):
            super().__init__()
            self.cfg = cfg
            self.weight = nn.Parameter(torch.linspace(0.5, 1.5, cfg.d))

        def forward(self, x):
            return torch.tanh(x * self.weight) * self.cfg.scale
''')


BRANCHED = textwrap.dedent('''
    import torch
    from torch import nn


    class Picky(nn.Module):
        def __init__(self, d: int, scale=None):
            super().__init__()
            if scale is not None:
                self._scale = scale
                if scale < 0:
                    raise ValueError("scale must be >= 0")
            self.weight = nn.Parameter(torch.ones(d))

        def forward(self, x):
            return x * self.weight
''')


def _write(tmp_path, source, name="toyeqmods_layers"):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return name, str(path)


def _decide(tmp_path, source, find, replace, name="toyeqmods_layers"):
    """decide() for the mutant that replaces `find` (one occurrence) with `replace`, on find's lines."""
    assert source.count(find) == 1, find
    module, path = _write(tmp_path, source, name)
    start = source.index(find)
    first = source.count("\n", 0, start) + 1
    last = first + find.count("\n")
    return equivalence.decide(module, path, source, source.replace(find, replace), (first, last))


def test_a_mutated_constructor_default_that_changes_the_output_is_a_blind_spot_naming_the_class(tmp_path):
    result = _decide(tmp_path, TOY, "eps: float = 1e-2", "eps: float = 1e-1")
    assert result["verdict"] == "blind_spot", result
    witness = result["witness"]
    assert witness["input"].startswith("Gated(defaults;"), witness  # the default, left at its default
    assert witness["differs_at"].startswith("call 1:") and witness["difference"] > 1e-9, witness  # the forward


def test_a_default_is_reached_by_the_calls_that_leave_it_out_and_only_by_those(tmp_path):
    # the default's value is made at import: a call reaches it when it leaves the argument at its default
    result = _decide(tmp_path, TOY, "eps: float = 1e-2", "eps: float = 0.01")
    assert result["verdict"] == "equivalent", result
    assert any(i.startswith("Gated(defaults;") for i in result["inputs"])
    assert not any(i.startswith("Gated(eps=") for i in result["inputs"])  # eps given: its default never used


def test_a_mutated_init_hidden_at_init_by_the_forward_is_a_blind_spot(tmp_path):
    # beta = 0 at init: the output does not depend on gate, but gate's value and beta's gradient do
    result = _decide(tmp_path, TOY, "nn.init.zeros_(self.gate)", "nn.init.ones_(self.gate)")
    assert result["verdict"] == "blind_spot", result
    differs_at = result["witness"]["differs_at"]
    assert "output" not in differs_at and ("gate" in differs_at or "beta" in differs_at), differs_at


def test_an_equivalent_rewrite_in_forward_is_equivalent_on_probes_that_ran_it(tmp_path):
    result = _decide(tmp_path, TOY, "scaled = x * 2", "scaled = x + x")
    assert result["verdict"] == "equivalent", result
    assert result["inputs"] and all(i.startswith("Gated(") for i in result["inputs"])
    assert result["max_difference"] <= 1e-9


def test_an_equivalent_rewrite_in_the_constructor_is_reached_by_construction(tmp_path):
    result = _decide(tmp_path, TOY, "nn.Parameter(torch.ones(d))", "nn.Parameter(torch.full((d,), 1.0))")
    assert result["verdict"] == "equivalent", result  # not undecided: building the module ran the line


def test_a_guard_removed_in_a_branch_no_probe_takes_is_undecided_not_reached_by_the_code_after_it(tmp_path):
    # the mutant is two lines shorter: its line 11 is `pass`, and the original's line 12 now holds the
    # `self.weight = ...` every construction runs, which must not count as running the mutated code
    guard = 'if scale < 0:\n                raise ValueError("scale must be >= 0")'
    result = _decide(tmp_path, BRANCHED, guard, "pass", name="toyeqmods_branched")
    assert result["verdict"] == "undecided", result


def test_state_kept_between_calls_is_behaviour(tmp_path):
    # the first call is unchanged (0 + 1 = 1); the second is not (1 + 1 = 2)
    result = _decide(tmp_path, TOY, "self._calls = 1", "self._calls = self._calls + 1")
    assert result["verdict"] == "blind_spot", result
    assert result["witness"]["differs_at"].startswith("call 2"), result["witness"]


def test_a_dataclass_config_is_built_with_its_defaults_and_its_mutated_default_shows(tmp_path):
    result = _decide(tmp_path, CONFIGURED, "scale: float = 2.0", "scale: float = 2.5", name="toyeqmods_configured")
    assert result["verdict"] == "blind_spot", result
    assert result["witness"]["input"].startswith("Scaled(defaults;"), result["witness"]
    same = _decide(tmp_path, CONFIGURED, "torch.tanh(x * self.weight)", "torch.tanh(self.weight * x)",
                   name="toyeqmods_configured")
    assert same["verdict"] == "equivalent", same


def test_a_toy_module_outside_every_subject_still_gets_its_probes(tmp_path):
    module, path = _write(tmp_path, TOY)
    probes = equivalence.probes_for(module, equivalence.load(module, path, TOY))
    assert [p.entry for p in probes] == ["Gated"]
    assert "defaults" in probes[0].variants and "eps=0.5" in probes[0].variants


MHC = "fidelity.impl.torch.mhc"


@pytest.fixture
def mhc_source():
    """This repository's project is the current one (its subjects document MhcResidual's factory and
    forward): another test module may leave a toy project current; conftest restores the state after."""
    from fidelity.impl.torch import mhc

    project.load(Path(__file__).resolve().parents[2]).activate()
    with open(mhc.__file__) as f:
        return mhc.__file__, f.read()


def test_the_reference_mhc_a_mutated_default_forward_uses_is_a_blind_spot(mhc_source):
    path, source = mhc_source
    # t_max: the Sinkhorn steps forward runs for H_res (mhc.eq8)
    [mutant] = [m for m in ops.generate(source, ["parameter_default"]).mutants
                if m.function == "MhcResidual.__init__" and m.description == "t_max=20 -> t_max=19"]
    result = equivalence.decide(MHC, path, source, mutant.source, (mutant.line, mutant.end_line))
    assert result["verdict"] == "blind_spot", result
    assert result["witness"]["input"].startswith("MhcResidual(defaults;"), result["witness"]


def test_the_reference_mhc_probe_runs_forward_on_the_original(mhc_source):
    path, source = mhc_source
    # an unchanged forward line is reached and equal everywhere: the probe ran it, in both layouts
    result = equivalence.decide(MHC, path, source, source, (136, 137))
    assert result["verdict"] == "equivalent", result
    assert any("layout='sliced'" in i for i in result["inputs"]) and any("defaults" in i for i in result["inputs"])
