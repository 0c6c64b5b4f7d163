"""Bad input gives clear one-line DpglError subclasses, or documented behaviour (clipping)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgl.errors import ConfigError, DpglError, PrivacyError
from dpgl.privacy import (
    ClippingWarning,
    DegreeRRSampling,
    DiscreteLaplace,
    GaussianMechanism,
    GumbelTopK,
    KRandomizedResponse,
    LaplaceMechanism,
    MultiBit,
    OneBit,
    RandomizedResponse,
    optimal_m,
)
from dpgl.rng import make_rng

BAD_EPS = [0.0, -1.0, float("nan"), float("inf"), "abc", None]

CONSTRUCTORS = {
    "rr": lambda e: RandomizedResponse(e),
    "krr": lambda e: KRandomizedResponse(e, 3),
    "laplace": lambda e: LaplaceMechanism(e),
    "discrete-laplace": lambda e: DiscreteLaplace(e),
    "gaussian": lambda e: GaussianMechanism(e, 1e-5),
    "gumbel": lambda e: GumbelTopK(2, e),
    "multibit": lambda e: MultiBit(e),
    "one-bit": lambda e: OneBit(e),
    "dprr": lambda e: DegreeRRSampling(e, 1.0, np.ones(4)),
}


@pytest.mark.parametrize("name", list(CONSTRUCTORS))
@pytest.mark.parametrize("eps", BAD_EPS)
def test_bad_epsilon(name: str, eps: object) -> None:
    with pytest.raises(PrivacyError) as info:
        CONSTRUCTORS[name](eps)
    assert "\n" not in str(info.value) and "epsilon" in str(info.value)


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_bad_delta(delta: float) -> None:
    with pytest.raises(PrivacyError, match="delta"):
        GaussianMechanism(1.0, delta)


@pytest.mark.parametrize("bad", [0.0, -2.0, float("inf"), float("nan")])
def test_bad_sensitivity(bad: float) -> None:
    with pytest.raises(PrivacyError, match="sensitivity"):
        LaplaceMechanism(1.0, bad)
    with pytest.raises(PrivacyError, match="sensitivity"):
        GaussianMechanism(1.0, 1e-5, bad)
    with pytest.raises(PrivacyError, match="sensitivity"):
        GumbelTopK(2, 1.0, sensitivity=bad)


def test_discrete_laplace_needs_integer_sensitivity_and_input() -> None:
    with pytest.raises(PrivacyError):
        DiscreteLaplace(1.0, 1.5)  # type: ignore[arg-type]
    with pytest.raises(PrivacyError, match="too small"):
        DiscreteLaplace(1e-9)
    with pytest.raises(ConfigError, match="integers"):
        DiscreteLaplace(1.0).randomize(np.array([0.5]), make_rng(0))


def test_classic_gaussian_refuses_large_epsilon() -> None:
    with pytest.raises(PrivacyError, match="epsilon < 1"):
        GaussianMechanism(1.0, 1e-5, calibration="classic")
    with pytest.raises(ConfigError, match="calibration"):
        GaussianMechanism(0.5, 1e-5, calibration="magic")


def test_rr_input_checks() -> None:
    rr = RandomizedResponse(1.0)
    with pytest.raises(ConfigError, match="bits"):
        rr.randomize(np.array([0, 2, 1]), make_rng(0))
    with pytest.raises(ConfigError, match="bits"):
        rr.randomize(np.array(["a"]), make_rng(0))
    with pytest.raises(ConfigError, match="shape"):
        rr.log_prob(np.array([0, 1]), np.array([0, 1, 1]))
    with pytest.raises(ConfigError, match="Generator"):
        rr.randomize(np.array([0, 1]), 42)  # type: ignore[arg-type]


def test_krr_input_checks() -> None:
    with pytest.raises(ConfigError, match="k >= 2"):
        KRandomizedResponse(1.0, 1)
    with pytest.raises(PrivacyError):
        KRandomizedResponse(1.0, 2.5)  # type: ignore[arg-type]
    rr = KRandomizedResponse(1.0, 3)
    with pytest.raises(ConfigError, match=r"\[0, 2\]"):
        rr.randomize(np.array([0, 3]), make_rng(0))
    with pytest.raises(ConfigError, match=r"\[0, 2\]"):
        rr.randomize(np.array([-1]), make_rng(0))


def test_nonfinite_values_refused() -> None:
    with pytest.raises(ConfigError, match="finite"):
        LaplaceMechanism(1.0).randomize(np.array([1.0, np.nan]), make_rng(0))
    with pytest.raises(ConfigError, match="finite"):
        GaussianMechanism(1.0, 1e-5).randomize(np.array([np.inf]), make_rng(0))
    with pytest.raises(ConfigError, match="finite"):
        MultiBit(1.0).randomize(np.array([[0.5, np.nan]]), make_rng(0))


def test_multibit_clips_out_of_range_with_warning() -> None:
    mech = MultiBit(2.0, alpha=0.0, beta=1.0, m=2)
    x = np.array([[-0.5, 0.5, 1.7]])
    with pytest.warns(ClippingWarning, match="2 feature value"):
        out = mech.randomize(x, make_rng(0))
    assert set(np.unique(out)).issubset({-1, 0, 1})
    with pytest.warns(ClippingWarning):
        p = mech.plus_probability(x, 2)
    assert np.allclose(p, mech.plus_probability(np.array([[0.0, 0.5, 1.0]]), 2))
    # clipped values behave exactly as the range ends
    with pytest.warns(ClippingWarning):
        lp = mech.log_prob(np.array([1, 0, -1]), np.array([2.0, 0.5, -3.0]))
    assert lp == pytest.approx(mech.log_prob(np.array([1, 0, -1]), np.array([1.0, 0.5, 0.0])))


def test_multibit_shape_and_parameter_checks() -> None:
    with pytest.raises(ConfigError, match="alpha < beta"):
        MultiBit(1.0, alpha=1.0, beta=1.0)
    with pytest.raises(ConfigError, match="alpha < beta"):
        MultiBit(1.0, alpha=np.array([0.0, 2.0]), beta=np.array([1.0, 1.0]))
    with pytest.raises(ConfigError, match="m"):
        MultiBit(1.0, m=0)
    with pytest.raises(ConfigError, match="m"):
        MultiBit(1.0, m="some")
    mech = MultiBit(1.0, m=4)
    with pytest.raises(ConfigError, match="exceeds"):
        mech.randomize(np.zeros((2, 3)), make_rng(0))
    with pytest.raises(ConfigError, match="entries"):
        MultiBit(1.0, alpha=np.zeros(2), beta=np.ones(2)).randomize(np.zeros((1, 3)),
                                                                     make_rng(0))
    with pytest.raises(ConfigError, match="shape"):
        MultiBit(1.0).randomize(np.zeros((2, 2, 2)), make_rng(0))
    with pytest.raises(ConfigError, match=r"\{-1, 0, \+1\}"):
        MultiBit(1.0).rectify(np.array([2, 0]))
    with pytest.raises(ConfigError, match="does not match"):
        MultiBit(1.0, m=1).log_prob(np.array([1, 0]), np.array([0.5, 0.5, 0.5]))
    with pytest.raises(ConfigError, match="dimension"):
        optimal_m(1.0, 0)


def test_gumbel_checks() -> None:
    with pytest.raises(ConfigError, match="cannot select"):
        GumbelTopK(5, 1.0).select(np.zeros(3), make_rng(0))
    with pytest.raises(ConfigError, match="distinct"):
        GumbelTopK(2, 1.0).log_prob([1, 1], np.zeros(3))
    with pytest.raises(ConfigError, match="composition"):
        GumbelTopK(2, 1.0).approx_guarantee(1e-5, composition="advanced-ish")
    with pytest.raises(PrivacyError):
        GumbelTopK(0, 1.0)


def test_dprr_checks() -> None:
    with pytest.raises(ConfigError, match=r"values in \[0, 1\]"):
        DegreeRRSampling(1.0, 1.0, np.array([0.5, 1.5, 0.2])).randomize(
            np.array([1, 0]), make_rng(0))
    with pytest.raises(ConfigError, match="3 probabilities"):
        DegreeRRSampling(1.0, 1.0, np.ones(5)).randomize(np.array([1, 0]), make_rng(0))
    with pytest.raises(ConfigError):
        DegreeRRSampling(1.0, 1.0, 0.5)  # type: ignore[arg-type]


def test_errors_are_dpgl_errors() -> None:
    """Every refusal above is a DpglError, so the CLI prints one line without a traceback."""
    for exc in (PrivacyError, ConfigError):
        assert issubclass(exc, DpglError)
    assert math.isfinite(RandomizedResponse(1.0).epsilon)
