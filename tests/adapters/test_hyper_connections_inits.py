"""The hyper-connections adapter follows the adapter rule for inits (issue 51, point 5): an init the
package does not offer is NotRun, and nothing is written into the package's parameters. The package's
own init (mHC scales and HC dynamic scales at 1e-2) is driven when asked for by value."""
import pytest
import torch

pytest.importorskip("hyper_connections")

from fidelity.adapters.hyper_connections import SUBJECT  # noqa: E402
from fidelity.subjects.subject import NotRun  # noqa: E402

MHC, HC = SUBJECT.mechanisms["mhc_residual"], SUBJECT.mechanisms["hyper_connection"]


@pytest.mark.parametrize("build, keyword", [
    (lambda: MHC(4, 8, static_init=10.0), "static_init=10.0"),
    (lambda: MHC(4, 8, static_init=1.0), "static_init=1.0"),
    (lambda: MHC(4, 8, alpha_init=0.5), "alpha_init=0.5"),
    (lambda: HC(4, 8, 0, scale_init=0.5), "scale_init=0.5"),
], ids=["mhc-static-10", "mhc-static-1", "mhc-alpha", "hc-scale"])
def test_an_init_the_package_does_not_offer_is_not_run(build, keyword):
    with pytest.raises(NotRun, match=f"{keyword} is not an option of"):
        build()


def test_the_packages_own_scale_init_asked_by_value_is_its_own_init_untouched():
    asked, own = MHC(4, 8, alpha_init=0.01), MHC(4, 8)
    for name in ("b_pre", "b_res", "b_post", "alpha_pre", "alpha_post", "alpha_res"):
        assert torch.equal(getattr(asked, name), getattr(own, name)), name
    hc_asked, hc_own = HC(4, 8, 1, scale_init=0.01), HC(4, 8, 1)
    for name in ("alpha_scale", "beta_scale", "static_alpha", "static_beta"):
        assert torch.equal(getattr(hc_asked, name), getattr(hc_own, name)), name
