"""A plain `pip install fidelity` renders the ledger with its plots: matplotlib is a dependency, not an extra.

The README promises a self-contained ledger "with plots"; a user who installs the package and runs
`fidelity report` must not read "plots unavailable". Read from the installed package's own metadata,
so it holds for the wheel a user gets, not only for this checkout's pyproject.toml.
"""
from importlib.metadata import requires

from packaging.requirements import Requirement


def test_matplotlib_is_required_by_a_plain_install_not_only_by_an_extra():
    plain = [Requirement(line) for line in requires("fidelity") or ()]
    plain = [r.name for r in plain if r.marker is None or "extra" not in str(r.marker)]
    assert "matplotlib" in plain, f"a plain install of fidelity requires {sorted(plain)}: no matplotlib, so " \
                                  "`fidelity report` draws no plot (move it from [dev] into [project].dependencies)"
