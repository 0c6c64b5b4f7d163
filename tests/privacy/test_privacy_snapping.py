"""Secure mode: Mironov's snapping mechanism (dpgl.privacy.snapping) and
LaplaceMechanism(secure=True). Grid and clamp, noise moments against the exact law of the
snapped Laplace, stated epsilon, the full-precision uniform and the correctly rounded log,
determinism, bad input, the unchanged default path and a statistical audit."""

from __future__ import annotations

import decimal
import math

import numpy as np
import pytest

from dpgl.errors import ConfigError, PrivacyError
from dpgl.privacy.audit import epsilon_lower_bound
from dpgl.privacy.guarantee import Guarantee, Unit
from dpgl.privacy.laplace import LaplaceMechanism
from dpgl.privacy.snapping import (
    SnappingMechanism,
    calibrate_snapping,
    log_correctly_rounded,
    snap,
    snapping_epsilon,
    uniform_double,
)
from dpgl.rng import make_rng


def _laplace_cdf(t: np.ndarray, b: float) -> np.ndarray:
    return np.where(t < 0, 0.5 * np.exp(np.minimum(t, 0) / b), 1 - 0.5 * np.exp(-np.abs(t) / b))


def _snapped_law(x: float, scale: float, grid: float) -> tuple[np.ndarray, np.ndarray]:
    """Support and probabilities of grid * round((x + Lap(scale)) / grid), no clamp binding."""
    k = np.arange(-int(60 * scale / grid) - 2, int(60 * scale / grid) + 3)
    upper = _laplace_cdf((k + 0.5) * grid - x, scale)
    lower = _laplace_cdf((k - 0.5) * grid - x, scale)
    return k * grid, upper - lower


# ----------------------------------------------------------------------------- grid and clamp


@pytest.mark.parametrize(("eps", "sens", "bound", "coords"),
                         [(1.0, 1.0, 10.0, 1), (0.5, 2.0, 50.0, 1), (2.0, 0.5, 3.0, 1),
                          (1.0, 3.0, 40.0, 1), (2.0, 2.0, 5.0, 4)])
def test_outputs_are_grid_multiples_within_bound(eps: float, sens: float, bound: float,
                                                 coords: int) -> None:
    mech = LaplaceMechanism(eps, sens, secure=True, bound=bound, coordinates=coords)
    x = np.linspace(-3 * bound, 3 * bound, 20_001)
    y = mech.randomize(x, make_rng(0))
    grid = mech.grid
    assert grid is not None and y.shape == x.shape and y.dtype == np.float64
    assert np.all(np.abs(y) <= bound)
    assert np.array_equal(y / grid, np.round(y / grid))
    # Lambda is the smallest power of 2 >= lambda (in units of sensitivity per entry)
    unit = sens / coords
    lam_unit, grid_unit = mech.scale / unit, grid / unit
    assert math.frexp(grid_unit)[0] == 0.5 and lam_unit <= grid_unit < 2 * lam_unit
    assert mech.scale >= sens / eps
    # inputs far beyond the bound are clamped before the noise: both ends are reached
    assert y[:100].mean() < -bound / 2 and y[-100:].mean() > bound / 2


def test_snap_core_is_mironovs_mechanism() -> None:
    y = snap(np.array([0.0, 0.3, 5.0, -100.0]).repeat(2000), 1.5, 8.0, make_rng(1))
    assert np.all(np.abs(y) <= 8.0) and np.array_equal(y / 2.0, np.round(y / 2.0))
    assert snapping_epsilon(1.5, 8.0) == pytest.approx((1 + 8 * 2.0**-49) / 1.5, rel=1e-15)
    assert snapping_epsilon(1.5, 8.0) >= (1 + 8 * 2.0**-49) / 1.5
    for scale, bound in [(2.0, 2.0), (2.0, 1.0), (1.0, 2.0**46)]:
        with pytest.raises(PrivacyError, match="scale < bound < 2\\^46"):
            snapping_epsilon(scale, bound)


# ----------------------------------------------------------------------------- noise scale


@pytest.mark.parametrize("x", [0.0, 0.3])
def test_noise_moments_match_the_exact_snapped_laplace(x: float) -> None:
    mech = LaplaceMechanism(1.0, 1.0, secure=True, bound=1000.0)
    n = 200_000
    y = mech.randomize(np.full(n, x), make_rng(7))
    values, probs = _snapped_law(x, mech.scale, mech.grid)
    mean = float(probs @ values)
    var = float(probs @ (values - mean) ** 2)
    m4 = float(probs @ (values - mean) ** 4)
    assert abs(float(y.mean()) - mean) < 5 * math.sqrt(var / n)
    assert abs(float(y.var()) - var) < 5 * math.sqrt((m4 - var * var) / n)
    assert mech.variance == pytest.approx(var, rel=0.06)


def test_variance_is_the_mse_averaged_over_grid_offsets() -> None:
    mech = LaplaceMechanism(1.0, 1.0, secure=True, bound=1000.0)
    grid = mech.grid
    assert grid is not None
    mse = []
    for x in np.linspace(0.0, grid, 400, endpoint=False):
        values, probs = _snapped_law(float(x), mech.scale, grid)
        mse.append(float(probs @ (values - x) ** 2))
    assert mech.variance == pytest.approx(float(np.mean(mse)), rel=1e-3)


def test_vector_release_with_several_changed_entries() -> None:
    """A feature-style vector: d = 4 entries in [0, 1], L1 sensitivity 4, all may change."""
    mech = LaplaceMechanism(2.0, 4.0, Unit.FEATURE_LDP, secure=True, bound=20.0,
                            coordinates=4)
    assert mech.guarantee.epsilon <= 2.0 and mech.guarantee.unit is Unit.FEATURE_LDP
    assert mech.scale == pytest.approx(2.0, rel=1e-9)  # per entry: 1 / (eps / 4)
    assert mech.grid == 4.0  # per entry: lambda = 2 (just above), Lambda = 4
    y = mech.randomize(np.full((50_000, 4), 0.5), make_rng(2))
    values, probs = _snapped_law(0.5, mech.scale, mech.grid)
    mean = float(probs @ values)
    var = float(probs @ (values - mean) ** 2)
    assert abs(float(y.mean()) - mean) < 5 * math.sqrt(var / y.size)
    assert abs(float(y.var()) / var - 1) < 0.03


# ----------------------------------------------------------------------------- epsilon


@pytest.mark.parametrize(("eps", "sens", "bound", "coords"),
                         [(1.0, 1.0, 10.0, 1), (0.3, 1.0, 100.0, 1), (3.0, 0.7, 25.0, 1),
                          (0.9, 1.0, 1e4, 1), (2.0, 6.0, 500.0, 3), (0.1, 1.0, 1e3, 1)])
def test_stated_epsilon_is_at_most_requested_and_close(eps: float, sens: float, bound: float,
                                                       coords: int) -> None:
    p = calibrate_snapping(eps, sens, bound, coordinates=coords)
    assert p.epsilon <= eps
    assert p.epsilon >= eps * (1 - 1e-9)  # moderate bounds cost (almost) nothing
    # the stated value is Mironov's bound per entry, k entries composed
    per_entry = snapping_epsilon(p.scale_unit, p.mech_bound)
    assert p.epsilon == pytest.approx(coords * per_entry, rel=1e-15)
    assert p.scale_unit < p.mech_bound < 2.0**46 * p.scale_unit
    mech = LaplaceMechanism(eps, sens, secure=True, bound=bound, coordinates=coords)
    assert mech.guarantee == Guarantee.pure(p.epsilon, Unit.EDGE_LDP)
    assert mech.parts() == {"Laplace": mech.guarantee}


def test_large_bound_costs_noise_not_epsilon() -> None:
    p = calibrate_snapping(1.0, 1.0, 1e12)
    assert p.epsilon <= 1.0
    assert p.scale == pytest.approx(1 + 1e12 * 2.0**-49, rel=1e-5)  # lambda absorbs 2^-49 B
    with pytest.raises(PrivacyError, match="2\\^46"):
        calibrate_snapping(1.0, 1.0, 1e15)


def test_small_bound_raises_the_theorem_bound_internally() -> None:
    """B / Delta < 2 lambda: the theorem runs with the larger clamp 2 / eps (which keeps
    lambda < B), the released values still lie in [-B, B]."""
    p = calibrate_snapping(0.3, 1.0, 4.0)  # lambda ~ 3.33, grid 4
    assert p.mech_bound == 8.0 and p.input_bound < 2 / 0.3 < p.mech_bound  # 2/eps, on grid
    assert p.scale_unit < p.mech_bound and p.epsilon <= 0.3 and p.grid == 4.0
    y = SnappingMechanism(0.3, 1.0, 4.0).randomize(np.ones(1000), make_rng(3))
    assert set(np.unique(y)) <= {-4.0, 0.0, 4.0}


# ----------------------------------------------------------------------------- U* and LN


def test_uniform_double_has_full_precision_and_geometric_exponent() -> None:
    u = uniform_double(400_000, make_rng(11))
    assert np.all((u > 0) & (u < 1))
    n = u.size
    for k in (1, 2, 5, 10):
        frac = float(np.mean(u < 2.0**-k))
        assert abs(frac - 2.0**-k) < 5 * math.sqrt(2.0**-k / n)
    small = u[u < 2.0**-8]
    # rng.random() gives multiples of 2^-53 only; U* fills the low bits of small values too
    assert np.mean(small * 2.0**53 != np.round(small * 2.0**53)) > 0.99
    # the 52 significand bits are uniform: the last one is a fair coin
    mant = np.frexp(u)[0] * 2.0**53
    assert abs(float(np.mean(mant % 2)) - 0.5) < 0.01
    assert uniform_double((3, 2), make_rng(0)).shape == (3, 2)


def test_log_is_correctly_rounded() -> None:
    ctx = decimal.Context(prec=80)
    u = np.concatenate([uniform_double(3000, make_rng(5)),
                        1 - np.ldexp(np.arange(1.0, 200.0), -53),
                        np.ldexp(1.0, -np.arange(1, 1075)),
                        np.nextafter(0.5, np.array([0.0, 1.0]))])
    ref = np.array([float(ctx.ln(decimal.Decimal(float(v)))) for v in u])
    assert np.array_equal(log_correctly_rounded(u), ref)
    with pytest.raises(ConfigError):
        log_correctly_rounded(np.array([0.5, 0.0]))


# ----------------------------------------------------------------------------- determinism


def test_deterministic_given_a_seed() -> None:
    mech = LaplaceMechanism(0.8, 1.0, secure=True, bound=12.0)
    x = np.linspace(-5, 5, 1001)
    a = mech.randomize(x, make_rng(42))
    assert np.array_equal(a, mech.randomize(x, make_rng(42)))
    assert not np.array_equal(a, mech.randomize(x, make_rng(43)))
    assert np.array_equal(uniform_double(50, make_rng(1)), uniform_double(50, make_rng(1)))


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(("kwargs", "error", "pattern"), [
    ({"secure": True}, ConfigError, "bound"),
    ({"bound": 5.0}, ConfigError, "secure=True"),
    ({"coordinates": 3}, ConfigError, "secure=True"),
    ({"secure": "yes", "bound": 5.0}, ConfigError, "secure"),
    ({"secure": True, "bound": 0.0}, PrivacyError, "bound"),
    ({"secure": True, "bound": -3.0}, PrivacyError, "bound"),
    ({"secure": True, "bound": float("inf")}, PrivacyError, "bound"),
    ({"secure": True, "bound": float("nan")}, PrivacyError, "bound"),
    ({"secure": True, "bound": "ten"}, PrivacyError, "bound"),
    ({"secure": True, "bound": 1.0}, PrivacyError, "grid"),
    ({"secure": True, "bound": 1e20}, PrivacyError, "2\\^46"),
    ({"secure": True, "bound": 5.0, "coordinates": 0}, PrivacyError, "coordinates"),
])
def test_bad_secure_input(kwargs: dict[str, object], error: type, pattern: str) -> None:
    with pytest.raises(error, match=pattern) as info:
        LaplaceMechanism(1.0, 1.0, **kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)


def test_bad_draw_input() -> None:
    mech = LaplaceMechanism(1.0, secure=True, bound=10.0)
    with pytest.raises(ConfigError, match="Generator"):
        mech.randomize(np.zeros(3), 0)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="finite"):
        mech.randomize(np.array([1.0, np.nan]), make_rng(0))
    with pytest.raises(ConfigError, match="grid"):
        mech.log_density(0.0, 0.0)
    with pytest.raises(PrivacyError, match="epsilon"):
        LaplaceMechanism(0.0, secure=True, bound=10.0)


# ----------------------------------------------------------------------------- default path


def test_default_path_is_unchanged() -> None:
    mech = LaplaceMechanism(0.7, 2.0)
    x = np.linspace(-3, 3, 500).reshape(50, 10)
    expected = x + make_rng(5).laplace(0.0, 2.0 / 0.7, size=x.shape)
    assert np.array_equal(mech.randomize(x, make_rng(5)), expected)
    assert mech.scale == 2.0 / 0.7 and mech.variance == 2 * (2.0 / 0.7) ** 2
    assert mech.guarantee == Guarantee.pure(0.7, Unit.EDGE_LDP)
    assert not mech.secure and mech.bound is None and mech.grid is None
    assert repr(mech) == "LaplaceMechanism(epsilon=0.7, sensitivity=2, unit='edge-LDP')"
    secure = LaplaceMechanism(0.7, 2.0, secure=True, bound=30.0)
    assert repr(secure) == ("LaplaceMechanism(epsilon=0.7, sensitivity=2, unit='edge-LDP', "
                            "secure=True, bound=30)")
    assert "coordinates=2" in repr(LaplaceMechanism(0.7, 2.0, secure=True, bound=30.0,
                                                    coordinates=2))


# ----------------------------------------------------------------------------- audit


def test_statistical_audit_passes_and_is_tight() -> None:
    """Inputs 0 vs Delta, events y >= t on the grid: the empirical lower bound on epsilon stays
    below the stated epsilon, and (the events y >= Lambda, 2 Lambda have likelihood ratio
    exactly e^(Delta / lambda)) comes close to it, so a claim of eps / 2 would fail."""
    eps, sens = 1.0, 1.0
    mech = LaplaceMechanism(eps, sens, secure=True, bound=20.0)
    stated = mech.guarantee.epsilon
    grid = mech.grid
    assert grid is not None
    n = 200_000
    rng0, rng1 = make_rng(2024).spawn(2)
    y0 = mech.randomize(np.zeros(n), rng0)
    y1 = mech.randomize(np.full(n, sens), rng1)
    thresholds = (grid, 2 * grid, 3 * grid)
    alpha = 0.05 / (2 * 2 * len(thresholds))  # Bonferroni: events x directions, two-sided CP
    best = 0.0
    for t in thresholds:
        c0, c1 = int(np.sum(y0 >= t)), int(np.sum(y1 >= t))
        best = max(best, epsilon_lower_bound(c1, c0, n, 0.0, alpha),
                   epsilon_lower_bound(c0, c1, n, 0.0, alpha))
    assert best <= stated
    assert best > 0.9 * stated
