"""Secure mode of the device randomizers that release (or draw) real-valued Laplace noise:
LocalLap's bits, the Laplace feature mechanism and DPRR's degree use Mironov's snapping
mechanism, whose stated epsilon is what they charge (<= the request)."""

from __future__ import annotations

import numpy as np
import pytest

from dpgl.errors import ConfigError
from dpgl.mechanisms.dprr import DPRR
from dpgl.mechanisms.features import FeatureRandomizer
from dpgl.mechanisms.lap import LocalLap
from dpgl.privacy import Accountant, Unit


def test_locallap_secure_bits_are_snapped_and_charged() -> None:
    mech = LocalLap(2.0, secure=True)
    acc = Accountant()
    with acc.active():
        rep = mech.report(np.array([1, 3]), 6, 0, np.random.default_rng(0))
    grid = mech.bits.grid
    assert grid is not None and mech.bits.secure
    assert np.allclose(rep.values / grid, np.round(rep.values / grid))
    assert abs(rep.values).max() <= mech.bits.bound
    total = acc.report().total(Unit.EDGE_LDP)
    assert total is not None and total.epsilon <= 2.0 + 1e-12
    assert LocalLap(2.0).bits.secure is False


def test_feature_laplace_secure_and_gaussian_refused() -> None:
    rand = FeatureRandomizer(1.0, 4, "laplace", secure=True)
    est, _ = rand.privatize(np.full((3, 4), 0.5), np.random.default_rng(1))
    grid = rand._impl.grid
    assert np.allclose(est / grid, np.round(est / grid))
    assert rand.guarantee.epsilon <= 1.0 + 1e-12
    with pytest.raises(ConfigError, match="Gaussian"):
        FeatureRandomizer(1.0, 4, "gaussian", secure=True)


def test_dprr_secure_degree() -> None:
    mech = DPRR(1.0, n_max=100, secure=True)
    degree, _rr = mech.randomizers(10)
    assert degree.secure and degree.bound >= 10
    assert mech.guarantee_for(10).epsilon <= 1.0 + 1e-12
    rep = mech.report(np.array([1, 2, 3]), 10, 0, np.random.default_rng(2))
    assert rep.noisy_degree % degree.grid == pytest.approx(0.0, abs=1e-9)
