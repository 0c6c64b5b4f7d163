"""Exact epsilon checks: enumerate neighbouring inputs and all outputs on small domains,
compute exact output probabilities and assert max |log ratio| <= epsilon (+ float tolerance).

Where the mechanism's bound is tight we also assert the maximum reaches epsilon, so a check
that silently compared nothing would fail.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpgl.privacy import (
    DegreeRRSampling,
    DiscreteLaplace,
    GumbelTopK,
    KRandomizedResponse,
    MultiBit,
    OneBit,
    RandomizedResponse,
)

TOL = 1e-9


def max_log_ratio(logp: np.ndarray) -> float:
    """logp[input, output]; max over outputs of (max - min over inputs), skipping outputs that
    are impossible under every input. An output possible under one input but not another is
    an infinite ratio."""
    finite = np.isfinite(logp)
    worst = 0.0
    for j in range(logp.shape[1]):
        col = logp[:, j]
        if not finite[:, j].any():
            continue
        if not finite[:, j].all():
            return math.inf
        worst = max(worst, float(col.max() - col.min()))
    return worst


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0, 10.0])
def test_rr_exact(eps: float) -> None:
    rr = RandomizedResponse(eps)
    logp = np.array([[rr.log_prob(y, x) for y in (0, 1)] for x in (0, 1)], dtype=float)
    assert np.allclose(np.exp(logp).sum(axis=1), 1.0)
    assert max_log_ratio(logp) == pytest.approx(eps, abs=TOL)


@pytest.mark.parametrize("k", [2, 3, 5])
@pytest.mark.parametrize("eps", [0.5, 2.0, 6.0])
def test_krr_exact(k: int, eps: float) -> None:
    rr = KRandomizedResponse(eps, k)
    logp = np.array([[rr.log_prob(y, x) for y in range(k)] for x in range(k)], dtype=float)
    assert np.allclose(np.exp(logp).sum(axis=1), 1.0)
    assert np.allclose(np.exp(logp), np.array([rr.output_distribution(x) for x in range(k)]))
    # every pair of inputs is a neighbouring pair for a label
    assert max_log_ratio(logp) == pytest.approx(eps, abs=TOL)


@pytest.mark.parametrize("eps", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("sensitivity", [1, 2])
def test_discrete_laplace_exact(eps: float, sensitivity: int) -> None:
    dl = DiscreteLaplace(eps, sensitivity)
    assert dl.effective_epsilon == pytest.approx(eps, rel=1e-12)
    outputs = np.arange(-60, 61)
    worst = 0.0
    for x in range(0, 6):
        for x2 in range(x - sensitivity, x + sensitivity + 1):
            lp = dl.log_prob(outputs, np.full(outputs.shape, x))
            lp2 = dl.log_prob(outputs, np.full(outputs.shape, x2))
            worst = max(worst, float(np.max(np.abs(lp - lp2))))
    assert worst <= eps + TOL
    assert worst == pytest.approx(eps, abs=1e-9)
    # pmf over a window plus the closed-form tails sums to one
    z = np.arange(-20, 21)
    total = np.exp(dl.log_pmf(z)).sum() + 2 * dl.tail_ge(21)
    assert total == pytest.approx(1.0, abs=1e-12)


def _feature_grid(d: int, alpha: float, beta: float) -> np.ndarray:
    vals = np.array([alpha, alpha + 0.3 * (beta - alpha), (alpha + beta) / 2, beta])
    return np.array(list(itertools.product(vals, repeat=d)))


def _encoded_outputs(d: int) -> np.ndarray:
    return np.array(list(itertools.product((-1, 0, 1), repeat=d)), dtype=np.int8)


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("eps", [0.5, 2.0, 8.0])
@pytest.mark.parametrize("alpha,beta", [(0.0, 1.0), (-1.0, 2.0)])
def test_multibit_exact(d: int, eps: float, alpha: float, beta: float) -> None:
    inputs = _feature_grid(d, alpha, beta)
    outputs = _encoded_outputs(d)
    for m in range(1, d + 1):
        mech = MultiBit(eps, alpha=alpha, beta=beta, m=m)
        logp = np.stack(
            [mech.log_prob(np.broadcast_to(y, inputs.shape), inputs) for y in outputs], axis=1
        )
        assert np.allclose(np.exp(logp).sum(axis=1), 1.0)
        worst = max_log_ratio(logp)
        assert worst <= eps + TOL
        assert worst == pytest.approx(eps, abs=1e-9)   # alpha-vector vs beta-vector


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("eps", [0.5, 3.0])
def test_one_bit_exact(d: int, eps: float) -> None:
    mech = OneBit(eps)
    inputs = _feature_grid(d, 0.0, 1.0)
    outputs = np.array(list(itertools.product((-1, 1), repeat=d)), dtype=np.int8)
    logp = np.stack(
        [mech.log_prob(np.broadcast_to(y, inputs.shape), inputs) for y in outputs], axis=1
    )
    assert np.allclose(np.exp(logp).sum(axis=1), 1.0)
    assert max_log_ratio(logp) == pytest.approx(eps, abs=1e-9)


def _gumbel_worst(mech: GumbelTopK, items: int, monotone: bool) -> float:
    rng = np.random.default_rng(3)
    bases = [np.zeros(items), np.arange(items, dtype=float),
             rng.normal(0, 2, size=items), rng.normal(0, 2, size=items)]
    steps = (0.0, 1.0) if monotone else (-1.0, -0.5, 0.0, 1.0)
    moves = [np.array(v) * mech.sensitivity for v in itertools.product(steps, repeat=items)]
    if monotone:
        moves += [-v for v in moves]
    worst = 0.0
    for u in bases:
        sel, base_lp = mech.output_distribution(u)
        assert np.exp(base_lp).sum() == pytest.approx(1.0, abs=1e-12)
        # the vectorized enumeration agrees with the step-by-step log_prob
        for i in (0, len(sel) // 2, len(sel) - 1):
            assert base_lp[i] == pytest.approx(mech.log_prob(sel[i], u), abs=1e-12)
        for mv in moves:
            sel2, lp = mech.output_distribution(u + mv)
            assert np.array_equal(sel, sel2)
            worst = max(worst, float(np.max(np.abs(lp - base_lp))))
    return worst


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_gumbel_topk_exact(k: int, eps: float) -> None:
    mech = GumbelTopK(k, eps, sensitivity=0.7)
    worst = _gumbel_worst(mech, 4, monotone=False)
    assert worst <= eps + TOL
    assert worst >= 0.5 * eps   # the check is not vacuous


@pytest.mark.parametrize("k", [1, 2])
def test_gumbel_topk_monotone_exact(k: int) -> None:
    eps = 1.0
    mech = GumbelTopK(k, eps, sensitivity=1.0, monotone=True)
    worst = _gumbel_worst(mech, 4, monotone=True)
    assert worst <= eps + TOL
    assert worst >= 0.5 * eps


def test_gumbel_one_shot_equals_peeling() -> None:
    """Sampling by one-shot Gumbel noise matches the exact peeling (Plackett-Luce) law."""
    mech = GumbelTopK(2, 2.0)
    u = np.array([0.0, 1.0, 2.0, 0.5])
    n = 200_000
    sel = mech.select(np.broadcast_to(u, (n, 4)), np.random.default_rng(11))
    selections = list(itertools.permutations(range(4), 2))
    codes = sel[:, 0] * 4 + sel[:, 1]
    counts = np.bincount(codes, minlength=16)
    for s in selections:
        p = math.exp(mech.log_prob(s, u))
        se = math.sqrt(p * (1 - p) / n)
        assert abs(counts[s[0] * 4 + s[1]] / n - p) < 5 * se
    assert counts.sum() == n


def _dprr_q_functions(n: int) -> list:
    rng = np.random.default_rng(n)
    return [
        lambda deg, length: np.clip((deg + 1.0) / (length + 1.0), 0, 1),   # increasing
        np.ones(n + 1),                                                      # no sampling
        rng.uniform(0, 1, size=n + 1),                                       # arbitrary
        np.where(np.arange(n + 1) >= n // 2, 1.0, 0.0),                      # step, with 0s
    ]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("eps1,eps2", [(0.5, 0.5), (1.0, 2.0), (0.2, 3.0)])
def test_dprr_composition_exact(n: int, eps1: float, eps2: float) -> None:
    lists = np.array(list(itertools.product((0, 1), repeat=n)), dtype=bool)
    for q in _dprr_q_functions(n):
        mech = DegreeRRSampling(eps1, eps2, q)
        assert mech.guarantee.epsilon == pytest.approx(eps1 + eps2)
        logp = np.array([[mech.log_prob(y, a) for y in lists] for a in lists])
        assert np.allclose(np.exp(logp).sum(axis=1), 1.0)
        worst = 0.0
        for i, a in enumerate(lists):
            for j in range(n):           # neighbours: flip one bit of the list
                b = a.copy()
                b[j] = ~b[j]
                i2 = int(np.flatnonzero((lists == b).all(axis=1))[0])
                both = np.isfinite(logp[i]) & np.isfinite(logp[i2])
                # an output possible under one list must be possible under its neighbour
                assert np.array_equal(np.isfinite(logp[i]), np.isfinite(logp[i2]))
                if both.any():
                    worst = max(worst, float(np.max(np.abs(logp[i][both] - logp[i2][both]))))
        assert worst <= eps1 + eps2 + TOL


def test_exact_check_catches_sampling_on_true_degree() -> None:
    """Negative control: sampling with q(true degree) instead of q(noisy degree) is a real
    bug (the degree is then released without noise); the exact check must flag it."""
    n, eps2 = 3, 1.0
    rr = RandomizedResponse(eps2)
    q = np.array([0.2, 0.4, 0.8, 1.0])
    lists = np.array(list(itertools.product((0, 1), repeat=n)), dtype=bool)

    def log_prob(y: np.ndarray, a: np.ndarray) -> float:
        p1 = q[int(a.sum())] * np.where(a, rr.keep_probability, rr.flip_probability)
        return float(np.sum(np.where(y, np.log(p1), np.log1p(-p1))))

    logp = np.array([[log_prob(y, a) for y in lists] for a in lists])
    a, b = lists[0], lists[1]            # differ in the last bit
    worst = float(np.max(np.abs(logp[0] - logp[1])))
    assert (a != b).sum() == 1
    assert worst > 0.5 + eps2            # exceeds any eps1 + eps2 claim with eps1 <= 0.5
