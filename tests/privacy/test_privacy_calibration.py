"""Noise calibration to a target budget."""

from __future__ import annotations

import pytest

from dpgl.errors import ConfigError, PrivacyError
from dpgl.privacy import (
    Accountant,
    Unit,
    advanced_composition_epsilon,
    analytic_gaussian_epsilon,
    gaussian_epsilon,
    gaussian_noise_multiplier,
    optimal_composition_epsilon,
    per_release_epsilon,
)
from dpgl.privacy.calibration import bisect_parameter


def test_calibrate_reference_rdp() -> None:
    sigma = gaussian_noise_multiplier(2.1014, 1e-5, steps=1000, sampling_rate=0.01)
    assert sigma == pytest.approx(1.0, abs=1e-3)
    eps = gaussian_epsilon(sigma, 1e-5, steps=1000, sampling_rate=0.01)
    assert eps <= 2.1014 + 1e-12          # calibration is on the private side


def test_calibrated_run_never_reports_more_than_target() -> None:
    for target in (0.5, 3.0, 8.0):
        sigma = gaussian_noise_multiplier(target, 1e-6, steps=200, sampling_rate=0.05)
        acc = Accountant()
        acc.spend_gaussian("g", noise_multiplier=sigma, steps=200, sampling_rate=0.05)
        got = acc.report(1e-6).totals[Unit.NODE_DP].epsilon
        assert got <= target
        assert got == pytest.approx(target, rel=1e-3)


def test_calibrate_single_release_analytic_vs_rdp() -> None:
    analytic = gaussian_noise_multiplier(1.0, 1e-5, method="analytic")
    assert analytic_gaussian_epsilon(analytic, 1e-5) == pytest.approx(1.0, rel=1e-6)
    rdp = gaussian_noise_multiplier(1.0, 1e-5)
    assert rdp > analytic                 # RDP is loose for a single Gaussian release
    with pytest.raises(ConfigError, match="analytic"):
        gaussian_noise_multiplier(1.0, 1e-5, steps=2, method="analytic")


def test_calibrate_large_epsilon_small_sigma() -> None:
    sigma = gaussian_noise_multiplier(50.0, 1e-5, steps=1)
    assert gaussian_epsilon(sigma, 1e-5) <= 50.0
    assert sigma < 0.5


@pytest.mark.parametrize("composition", ["basic", "advanced", "optimal"])
def test_per_release_epsilon(composition: str) -> None:
    total, k, slack = 4.0, 100, 1e-5
    e0 = per_release_epsilon(total, k, delta_slack=slack, composition=composition)
    if composition == "basic":
        assert e0 == pytest.approx(0.04)
    elif composition == "advanced":
        assert advanced_composition_epsilon(e0, k, slack) <= total
        assert advanced_composition_epsilon(e0, k, slack) == pytest.approx(total, rel=1e-6)
    else:
        assert optimal_composition_epsilon(e0, k, slack) <= total + 1e-9
        assert optimal_composition_epsilon(e0, k, slack) == pytest.approx(total, rel=1e-6)
        assert e0 > 0.04                  # optimal composition allows more per release


def test_bad_calibration_inputs() -> None:
    with pytest.raises(PrivacyError):
        gaussian_noise_multiplier(0.0, 1e-5)
    with pytest.raises(PrivacyError):
        gaussian_noise_multiplier(1.0, 0.0)
    with pytest.raises(ConfigError):
        gaussian_noise_multiplier(1.0, 1e-5, method="magic")
    with pytest.raises(ConfigError):
        gaussian_noise_multiplier(1.0, 1e-5, sampling="bernoulli", sampling_rate=0.1)
    with pytest.raises(PrivacyError):
        per_release_epsilon(1.0, 10, composition="advanced")
    with pytest.raises(ConfigError):
        per_release_epsilon(1.0, 10, composition="magic")


def test_bisect_parameter() -> None:
    x = bisect_parameter(lambda v: v * v, 2.0, 0.0, 10.0, increasing=True)
    assert x == pytest.approx(2 ** 0.5, abs=1e-8) and x * x <= 2.0
    y = bisect_parameter(lambda v: 1 / v, 0.5, 0.1, 10.0, increasing=False)
    assert y == pytest.approx(2.0, abs=1e-8) and 1 / y <= 0.5
    with pytest.raises(PrivacyError):
        bisect_parameter(lambda v: v, -1.0, 0.0, 1.0, increasing=True)
    with pytest.raises(ConfigError):
        bisect_parameter(lambda v: v, 1.0, 1.0, 0.0, increasing=True)
