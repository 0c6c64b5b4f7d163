"""Primitive mechanisms: guarantees as data, sampling laws (rates, moments, unbiasedness,
LPGNN Eq. 5 variance), determinism, and the exact discrete Laplace sampler's distribution."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpgl.privacy import (
    DiscreteLaplace,
    GaussianMechanism,
    Guarantee,
    GumbelTopK,
    KRandomizedResponse,
    LaplaceMechanism,
    MultiBit,
    OneBit,
    RandomizedResponse,
    Unit,
    analytic_gaussian_delta,
    analytic_gaussian_epsilon,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    multibit_variance,
    one_bit_estimate,
    one_bit_probability,
    optimal_m,
    sample_discrete_laplace,
)
from dpgl.privacy.multibit import _coth_half
from dpgl.rng import make_rng


def within(est: float, expected: float, se: float, k: float = 5.0) -> bool:
    return abs(est - expected) <= k * se


# ----------------------------------------------------------------------------- RR


def test_rr_probabilities_and_guarantee() -> None:
    rr = RandomizedResponse(math.log(3.0))
    assert rr.keep_probability == pytest.approx(0.75)
    assert rr.flip_probability == pytest.approx(0.25)
    assert rr.guarantee == Guarantee(math.log(3.0), 0.0, Unit.EDGE_LDP)
    assert RandomizedResponse(1.0, unit="relationship-DP").guarantee.unit is Unit.RELATIONSHIP_DP


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_rr_flip_rate(eps: float) -> None:
    rr = RandomizedResponse(eps)
    n = 1_000_000
    bits = np.zeros(n, dtype=np.uint8)
    bits[: n // 2] = 1
    out = rr.randomize(bits, make_rng(1))
    assert out.dtype == np.uint8 and out.shape == bits.shape
    p = rr.flip_probability
    rate = float(np.mean(out != bits))
    assert within(rate, p, math.sqrt(p * (1 - p) / n))
    # flips are symmetric: the rate is the same for 0s and 1s
    r1 = float(np.mean(out[: n // 2] == 0))
    assert within(r1, p, math.sqrt(p * (1 - p) / (n // 2)))


def test_rr_deterministic_given_seed() -> None:
    rr = RandomizedResponse(1.0)
    bits = np.random.default_rng(0).integers(0, 2, 1000).astype(bool)
    a = rr(bits, make_rng(5))
    b = rr(bits, make_rng(5))
    c = rr(bits, make_rng(6))
    assert a.dtype == bool
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_krr_rates() -> None:
    k, eps = 5, 1.5
    rr = KRandomizedResponse(eps, k)
    assert rr.keep_probability + (k - 1) * rr.other_probability == pytest.approx(1.0)
    assert rr.keep_probability / rr.other_probability == pytest.approx(math.exp(eps))
    n = 500_000
    out = rr.randomize(np.full(n, 2), make_rng(2))
    freq = np.bincount(out, minlength=k) / n
    for j in range(k):
        p = rr.keep_probability if j == 2 else rr.other_probability
        assert within(freq[j], p, math.sqrt(p * (1 - p) / n))


# ----------------------------------------------------------------------------- Laplace


def test_laplace_moments() -> None:
    mech = LaplaceMechanism(0.5, sensitivity=2.0)
    assert mech.scale == 4.0 and mech.variance == 32.0
    assert mech.guarantee == Guarantee.pure(0.5, Unit.EDGE_LDP)
    n = 400_000
    y = mech.randomize(np.full(n, 3.0), make_rng(3))
    b = mech.scale
    assert within(float(y.mean()), 3.0, math.sqrt(2) * b / math.sqrt(n))
    assert within(float(y.var()), 2 * b * b, b * b * math.sqrt(20 / n))
    # the density integrates to one and has the right ratio at a shift of the sensitivity
    grid = np.linspace(-60, 60, 200_001)
    dens = np.exp(mech.log_density(grid, np.zeros_like(grid)))
    assert np.trapezoid(dens, grid) == pytest.approx(1.0, abs=1e-4)
    ratio = mech.log_density(5.0, 0.0) - mech.log_density(5.0, 2.0)
    assert abs(float(ratio)) == pytest.approx(0.5)


def test_discrete_laplace_rational_rate() -> None:
    from fractions import Fraction

    assert DiscreteLaplace(0.5).rate == Fraction(1, 2)
    assert DiscreteLaplace(0.3).rate == Fraction(3, 10)
    assert DiscreteLaplace(1.0, sensitivity=3).rate == Fraction(1, 3)
    odd = DiscreteLaplace(math.pi / 7)       # no small-denominator representation
    assert odd.effective_epsilon <= math.pi / 7
    assert odd.effective_epsilon == pytest.approx(math.pi / 7, rel=1e-5)


@pytest.mark.parametrize("eps", [0.3, 1.0, 4.0])
def test_discrete_laplace_sampler_matches_pmf(eps: float) -> None:
    dl = DiscreteLaplace(eps)
    n = 300_000
    z = dl.sample_noise(n, make_rng(4))
    assert z.dtype == np.int64
    lim = int(np.ceil(6 / float(dl.rate))) + 1
    edges = np.arange(-lim, lim + 1)
    observed = np.array([np.sum(z < -lim + 1)] + [np.sum(z == v) for v in edges[1:-1]]
                        + [np.sum(z > lim - 1)], dtype=float)
    probs = np.exp(dl.log_pmf(edges[1:-1]))
    expected_p = np.concatenate([[dl.tail_ge(lim)], probs, [dl.tail_ge(lim)]])
    assert expected_p.sum() == pytest.approx(1.0, abs=1e-9)
    keep = expected_p * n >= 5
    obs = np.concatenate([observed[keep], [observed[~keep].sum()]])
    exp = np.concatenate([expected_p[keep], [expected_p[~keep].sum()]]) * n
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    assert stats.chisquare(obs, exp).pvalue > 1e-4
    assert within(float(z.var()), dl.variance, dl.variance * math.sqrt(20 / n) + 1e-3)
    assert within(float(z.mean()), 0.0, math.sqrt(dl.variance / n))


def test_discrete_laplace_randomize_and_direct_sampler() -> None:
    dl = DiscreteLaplace(2.0, sensitivity=1)
    x = np.array([[0, 3], [7, 1]])
    y = dl.randomize(x, make_rng(9))
    assert y.shape == x.shape and y.dtype == np.int64
    assert np.array_equal(y, dl.randomize(x, make_rng(9)))
    z = sample_discrete_laplace((3, 4), 1, 2, make_rng(1))
    assert z.shape == (3, 4)


# ----------------------------------------------------------------------------- Gaussian


def test_classic_gaussian_formula() -> None:
    sigma = classic_gaussian_sigma(0.5, 1e-5, sensitivity=2.0)
    assert sigma == pytest.approx(2.0 * math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.5)


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-5), (0.9, 1e-6), (1.0, 1e-5), (8.0, 1e-3)])
def test_analytic_gaussian_is_exact_and_tighter(eps: float, delta: float) -> None:
    sigma = analytic_gaussian_sigma(eps, delta, sensitivity=1.5)
    # Balle & Wang Thm 8 condition holds with equality at the calibrated sigma
    assert analytic_gaussian_delta(sigma, eps, 1.5) == pytest.approx(delta, rel=1e-6)
    assert analytic_gaussian_delta(sigma * 0.99, eps, 1.5) > delta
    assert analytic_gaussian_epsilon(sigma, delta, 1.5) == pytest.approx(eps, rel=1e-6)
    if eps < 1:
        assert sigma < classic_gaussian_sigma(eps, delta, 1.5)


def test_gaussian_mechanism_moments_and_guarantee() -> None:
    mech = GaussianMechanism(1.0, 1e-5, sensitivity=2.0)
    assert mech.guarantee == Guarantee(1.0, 1e-5, Unit.NODE_DP)
    assert mech.noise_multiplier == pytest.approx(mech.sigma / 2.0)
    n = 400_000
    y = mech.randomize(np.zeros(n), make_rng(6))
    s = mech.sigma
    assert within(float(y.mean()), 0.0, s / math.sqrt(n))
    assert within(float(y.var()), s * s, s * s * math.sqrt(2 / n))
    classic = GaussianMechanism(0.5, 1e-5, calibration="classic")
    assert classic.sigma == pytest.approx(classic_gaussian_sigma(0.5, 1e-5))
    back = GaussianMechanism.from_sigma(mech.sigma, 1e-5, 2.0)
    assert back.epsilon == pytest.approx(1.0, rel=1e-6)


# ----------------------------------------------------------------------------- Gumbel


def test_gumbel_topk_api() -> None:
    mech = GumbelTopK(3, 1.5, sensitivity=0.1)
    assert mech.epsilon_per_selection == pytest.approx(0.5)
    assert mech.scale == pytest.approx(2 * 0.1 / 0.5)
    assert GumbelTopK(3, 1.5, sensitivity=0.1, monotone=True).scale == pytest.approx(0.2)
    assert mech.guarantee == Guarantee.pure(1.5, Unit.NODE_DP)
    scores = np.random.default_rng(0).normal(size=(50, 20))
    sel = mech.select(scores, make_rng(1))
    assert sel.shape == (50, 3)
    assert all(len(set(r)) == 3 for r in sel.tolist())
    # with tiny noise relative to the gaps the top-3 are the true top-3, in order
    strong = GumbelTopK(3, 1e4, sensitivity=1e-3)
    exact = strong.select(scores, make_rng(1))
    assert np.array_equal(exact, np.argsort(-scores, axis=1)[:, :3])
    assert GumbelTopK.from_per_selection(3, 0.5).epsilon == pytest.approx(1.5)


def test_gumbel_approx_guarantee_is_not_worse() -> None:
    mech = GumbelTopK(50, 5.0)
    approx = mech.approx_guarantee(1e-6)
    assert approx.delta == pytest.approx(1e-6)
    assert approx.epsilon < 5.0
    best = mech.approx_guarantee(1e-6, composition="best")
    assert best.epsilon <= approx.epsilon + 1e-9


# ----------------------------------------------------------------------------- multi-bit


def test_optimal_m_eq6() -> None:
    assert optimal_m(1.0, 100) == 1
    assert optimal_m(2.18, 100) == 1
    assert optimal_m(4.36, 100) == 2
    assert optimal_m(10.0, 100) == 4
    assert optimal_m(100.0, 3) == 3


def test_optimal_m_minimises_eq5() -> None:
    """Eq. 6 picks (up to flooring) the m minimising the Eq. 5 variance term."""
    d = 50
    for eps in (3.0, 7.0, 12.0, 30.0):
        var = [multibit_variance(0.5, eps, m, d)[()] for m in range(1, d + 1)]
        best = int(np.argmin(var)) + 1
        assert abs(optimal_m(eps, d) - best) <= 1


@pytest.mark.parametrize("eps,m", [(1.0, 1), (3.0, 2), (6.0, 3)])
def test_multibit_rectifier_unbiased_with_eq5_variance(eps: float, m: int) -> None:
    alpha, beta = -1.0, 3.0
    x = np.array([-1.0, 0.0, 1.7, 3.0])
    mech = MultiBit(eps, alpha=alpha, beta=beta, m=m)
    n = 200_000
    xs = mech.randomize(np.broadcast_to(x, (n, 4)), make_rng(8))
    assert xs.dtype == np.int8
    assert np.all((xs != 0).sum(axis=1) == m)
    est = mech.rectify(xs)
    var = multibit_variance(x, eps, m, 4, alpha, beta)
    assert np.allclose(var, mech.variance(x))
    for i in range(4):
        assert within(float(est[:, i].mean()), x[i], math.sqrt(var[i] / n))
        # sd of the sample variance <= sqrt(mu4 / n) <= spread * sd / sqrt(n)
        spread = np.max(np.abs(est[:, i] - x[i]))
        assert within(float(est[:, i].var()), var[i], spread * math.sqrt(var[i] / n))


def test_multibit_plus_probability_formula() -> None:
    eps, m = 2.0, 2
    mech = MultiBit(eps, alpha=0.0, beta=2.0, m=m)
    e = math.exp(eps / m)
    x = np.array([0.0, 0.5, 2.0])
    expected = 1 / (e + 1) + (x / 2.0) * (e - 1) / (e + 1)
    assert np.allclose(mech.plus_probability(x, m), expected)
    # Eq. 4 constants
    xs = np.array([1, 0, -1], dtype=np.int8)
    scale = 3 * 2.0 / (2 * m) * (e + 1) / (e - 1)
    mech3 = MultiBit(eps, alpha=0.0, beta=2.0, m=m)
    assert np.allclose(mech3.rectify(xs), scale * xs + 1.0)


def test_multibit_per_dimension_range() -> None:
    alpha = np.array([0.0, -1.0])
    beta = np.array([1.0, 1.0])
    mech = MultiBit(4.0, alpha=alpha, beta=beta, m=2)
    est = mech.privatize(np.broadcast_to([0.25, 0.5], (100_000, 2)), make_rng(3))
    assert abs(est[:, 0].mean() - 0.25) < 0.05 and abs(est[:, 1].mean() - 0.5) < 0.1


@pytest.mark.parametrize("m", [1, 3, 7])
@pytest.mark.parametrize("per_dimension", [False, True])
def test_multibit_matches_the_full_matrix_formulas_bit_for_bit(m: int, per_dimension: bool) -> None:
    """The encoder computes p_i at the sampled coordinates only and the rectifier writes its
    three values by value: both must give exactly the floats (and draws) of Alg. 1 and Eq. 4
    evaluated over the whole matrix, the same code path stored runs used."""
    d = 7
    alpha = np.linspace(-1.0, 0.5, d) if per_dimension else np.asarray(-0.5)
    beta = alpha + np.linspace(0.7, 2.0, d) if per_dimension else np.asarray(1.5)
    x = make_rng(5).uniform(-1.0, 2.5, size=(300, d)).clip(alpha, beta)
    mech = MultiBit(2.5, alpha=alpha, beta=beta, m=m)
    got = mech.randomize(x, make_rng(6))
    # reference: p over the whole matrix, then the same draws in the same order
    rng, t = make_rng(6), 2.5 / m
    p = 1 / (1 + math.exp(t)) + (x - alpha) / (beta - alpha) * math.tanh(t / 2)
    if m == d:
        ref = np.where(rng.random(x.shape) < p, 1, -1).astype(np.int8)
    else:
        idx = (rng.integers(0, d, size=(300, 1)) if m == 1
               else np.argpartition(rng.random(x.shape), m - 1, axis=1)[:, :m])
        plus = rng.random((300, m)) < np.take_along_axis(p, idx, axis=1)
        ref = np.zeros(x.shape, dtype=np.int8)
        np.put_along_axis(ref, idx, np.where(plus, 1, -1).astype(np.int8), axis=1)
    np.testing.assert_array_equal(got, ref)
    assert got.dtype == np.int8 and got.shape == x.shape
    assert {-1, 0, 1} >= set(np.unique(got)) and ((got > 0).any() and (got < 0).any())
    one = mech.randomize(x[0], make_rng(6))  # one user's vector in, one report out
    assert one.shape == (d,) and one.dtype == np.int8 and np.count_nonzero(one) == m
    e = math.exp(2.5 / m)
    scale = d * (beta - alpha) / (2.0 * m) * _coth_half(2.5 / m)  # Eq. 4, as stored runs had it
    assert np.allclose(scale, d * (beta - alpha) / (2.0 * m) * (e + 1) / (e - 1), rtol=1e-14)
    assert np.array_equal(mech.rectify(got), scale * got.astype(np.float64) + (alpha + beta) / 2)
    assert np.array_equal(mech.rectify(got[0]), mech.rectify(got)[0])


def test_one_bit_matches_ding_et_al() -> None:
    eps, d = 3.0, 3
    mech = OneBit(eps)
    assert mech.resolve_m(d) == d
    x = np.array([0.1, 0.5, 0.9])
    p = one_bit_probability(x, eps / d)
    assert np.allclose(p, mech.plus_probability(x, d))
    # Ding et al.'s estimator equals the rectifier with m = d
    for bit in (0, 1):
        xs = np.full(d, 1 if bit else -1, dtype=np.int8)
        assert np.allclose(mech.rectify(xs), one_bit_estimate(bit, eps / d))
    n = 200_000
    est = mech.privatize(np.broadcast_to(x, (n, d)), make_rng(12))
    var = multibit_variance(x, eps, d, d)
    for i in range(d):
        assert within(float(est[:, i].mean()), x[i], math.sqrt(var[i] / n))
    assert mech.guarantee == Guarantee.pure(eps, Unit.FEATURE_LDP)
