"""DPRR: budget allocation (Eq. 8), sampling probability (Eq. 6), exact per-user LDP, sparse
simulation vs a dense reference, degree preservation, non-private users."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from _edge_graphs import binomial_ok, dense_adjacency, random_graph
from dpgl.errors import ConfigError, PrivacyError
from dpgl.mechanisms.dprr import DPRR, dprr_budget, dprr_sampling_probability, draw_private_mask
from dpgl.privacy import RandomizedResponse


def test_budget_eq8_values() -> None:
    eps1, eps2 = dprr_budget(1.0, n_max=101)  # sqrt(8/100) = 0.2828 > 0.1
    assert eps1 == pytest.approx(math.sqrt(0.08)) and eps2 == pytest.approx(1 - math.sqrt(0.08))
    eps1, eps2 = dprr_budget(4.0, n_max=101)  # (1 - 0.9) 4 = 0.4 > 0.2828
    assert (eps1, eps2) == pytest.approx((0.4, 3.6))
    eps1, _ = dprr_budget(2.0, alpha=0.5, allocation="split")
    assert eps1 == pytest.approx(1.0)
    mech = DPRR(3.0, n_max=1000)
    parts = mech.parts()
    assert parts["degree"].epsilon + parts["rr"].epsilon == pytest.approx(3.0)
    assert mech.guarantee.epsilon == 3.0


def test_budget_errors() -> None:
    with pytest.raises(PrivacyError, match="eps1"):
        dprr_budget(0.2, n_max=11)  # sqrt(8/10) = 0.89 >= 0.2
    with pytest.raises(ConfigError, match="n_max"):
        dprr_budget(1.0)
    for bad in (0.0, 1.0, -0.1, float("nan")):
        with pytest.raises(PrivacyError, match="alpha"):
            DPRR(1.0, n_max=100, alpha=bad)
    with pytest.raises(ConfigError, match="allocation"):
        DPRR(1.0, allocation="eq9")
    with pytest.raises(PrivacyError):
        DPRR(0.0, n_max=100)


def test_sampling_probability_eq6() -> None:
    p = RandomizedResponse(2.0).keep_probability
    n = 101
    q = dprr_sampling_probability(np.array([-3.0, 0.0, 10.0, 50.0, 80.0]), n, p)
    assert q[0] == 0 and q[1] == 0
    assert q[2] == pytest.approx(10 / (10 * p + 90 * (1 - p)))
    assert q[3] == 1.0 and q[4] == 1.0  # d~ >= (n - 1) / 2 gives q >= 1


def dprr_law(bits: tuple[int, ...], n: int, eps1: float, eps2: float) -> dict:
    """Exact law of the sampled report: integrate over the Laplace degree (Gauss-Legendre on
    the smooth pieces, closed form on the tails where q is 0 or 1)."""
    p = RandomizedResponse(eps2).keep_probability
    d = sum(bits)
    b = 1.0 / eps1
    cdf = lambda t: 0.5 * math.exp((t - d) / b) if t < d else 1 - 0.5 * math.exp(-(t - d) / b)  # noqa: E731
    top = (n - 1) / 2.0
    nodes, weights = np.polynomial.legendre.leggauss(80)
    pieces = sorted({0.0, top, *([float(d)] if 0 < d < top else [])})
    grid, wts = [], []
    for lo, hi in itertools.pairwise(pieces):
        t = 0.5 * (hi - lo) * nodes + 0.5 * (hi + lo)
        grid.append(t)
        wts.append(0.5 * (hi - lo) * weights * np.exp(-np.abs(t - d) / b) / (2 * b))
    t, w = np.concatenate(grid), np.concatenate(wts)
    q = dprr_sampling_probability(t, n, p)
    law = {}
    for y in itertools.product((0, 1), repeat=len(bits)):
        r1 = np.ones_like(q)  # q in (0, 1) part
        r_full = 1.0  # q = 1 tail
        for xj, yj in zip(bits, y, strict=True):
            on = p if xj else 1 - p
            r1 = r1 * (q * on if yj else 1 - q * on)
            r_full *= on if yj else 1 - on
        mass = float(np.sum(w * r1)) + (1 - cdf(top)) * r_full
        if not any(y):
            mass += cdf(0.0)  # q = 0: nothing is reported
        law[y] = mass
    return law


def test_exact_edge_ldp_small_n() -> None:
    n, eps = 5, 2.0
    eps1, eps2 = dprr_budget(eps, alpha=0.7, allocation="split")
    worst = 0.0
    for x in itertools.product((0, 1), repeat=n - 1):
        law = dprr_law(x, n, eps1, eps2)
        assert sum(law.values()) == pytest.approx(1.0, abs=1e-9)
        for flip in range(n - 1):
            x2 = list(x)
            x2[flip] ^= 1
            law2 = dprr_law(tuple(x2), n, eps1, eps2)
            worst = max(worst, max(abs(math.log(law[y] / law2[y])) for y in law))
    assert worst <= eps + 1e-9
    assert worst > eps2  # the degree part does leak: the bound is not vacuous


def test_per_user_report_follows_exact_law() -> None:
    n, index = 4, 0
    mech = DPRR(1.5, alpha=0.6, allocation="split")
    eps1, eps2 = mech.budget(n)
    law = dprr_law((1, 1, 0), n, eps1, eps2)
    rng = np.random.default_rng(0)
    reps = 5000
    counts = dict.fromkeys(law, 0)
    for _ in range(reps):
        rep = mech.report(np.array([1, 2]), n, index, rng)
        counts[tuple(int(j in rep.neighbors) for j in (1, 2, 3))] += 1
    for y, prob in law.items():
        assert binomial_ok(counts[y], reps, prob)


def dense_dprr(adj: np.ndarray, mech: DPRR, rng: np.random.Generator) -> np.ndarray:
    """Reference: per user noisy degree, RR on the dense row, then edge sampling."""
    n = adj.shape[0]
    eps1, eps2 = mech.budget(n)
    p = RandomizedResponse(eps2).keep_probability
    noisy = adj.sum(1) + rng.laplace(0, 1 / eps1, n)
    q = dprr_sampling_probability(noisy, n, p)
    rr = adj ^ (rng.random((n, n)) < 1 - p)
    out = rr & (rng.random((n, n)) < q[:, None])
    np.fill_diagonal(out, False)
    return out


def test_simulation_matches_dense_reference() -> None:
    n, reps = 60, 200
    u, v = random_graph(n, 0.08, seed=1)
    adj = dense_adjacency(u, v, n)
    off = ~np.eye(n, dtype=bool)
    mech = DPRR(2.0, n_max=n)
    rng = np.random.default_rng(2)
    res = {"sparse": np.zeros(3), "dense": np.zeros(3)}
    for _ in range(reps):
        rep, noisy = mech.simulate(u, v, n, rng)
        assert noisy.shape == (n,)
        got = np.zeros((n, n), dtype=bool)
        got[rep.user, rep.neighbor] = True
        assert got.sum() == len(rep)  # no duplicates
        for name, m in (("sparse", got), ("dense", dense_dprr(adj, mech, rng))):
            res[name] += [np.sum(m & adj), np.sum(m & ~adj & off), np.sum(m)]
    s, d = res["sparse"], res["dense"]
    # same rates of kept edges and of added non-edges (two-sample, within 5 sd)
    for k in range(3):
        sd = math.sqrt(s[k] + d[k])
        assert abs(s[k] - d[k]) < 5 * sd + 1


def expected_report_count(degrees: np.ndarray, n: int, mech: DPRR) -> float:
    """E[number of reported pairs] = sum_i E_{d~}[q(d~) (d_i p + (n - 1 - d_i)(1 - p))]."""
    eps1, eps2 = mech.budget(n)
    p = RandomizedResponse(eps2).keep_probability
    b = 1 / eps1
    z = np.linspace(-60 * b, 60 * b, 240_001)
    dens = np.exp(-np.abs(z) / b) / (2 * b)
    total = 0.0
    for d, count in zip(*np.unique(degrees, return_counts=True), strict=True):
        q = dprr_sampling_probability(d + z, n, p)
        total += count * np.trapezoid(q * dens, z) * (d * p + (n - 1 - d) * (1 - p))
    return float(total)


def test_degree_nearly_unbiased_when_sparse() -> None:
    """The reported edge count matches its exact expectation, which is within a few percent
    of the true count for d << n (the small bias comes from the concavity of q and the
    clipping of q to [0, 1])."""
    n, reps = 2000, 20
    u, v = random_graph(n, 0.004, seed=3)  # average degree ~8 << n
    mech = DPRR(6.0, n_max=n)
    rng = np.random.default_rng(4)
    sizes = [len(mech.simulate(u, v, n, rng)[0]) for _ in range(reps)]
    degrees = np.bincount(np.concatenate([u, v]), minlength=n)
    expected = expected_report_count(degrees, n, mech)
    true = 2 * u.size
    assert abs(expected / true - 1) < 0.03
    sd_mean = math.sqrt(n * 2 * (1 / mech.budget(n)[0]) ** 2 + expected) / math.sqrt(reps)
    assert abs(np.mean(sizes) - expected) < 5 * sd_mean


def test_nonprivate_users_send_true_lists() -> None:
    n = 50
    u, v = random_graph(n, 0.1, seed=5)
    adj = dense_adjacency(u, v, n)
    rng = np.random.default_rng(6)
    mask = draw_private_mask(n, 0.3, rng)
    assert (~mask).sum() == 15
    rep, noisy = DPRR(1.0, n_max=n).simulate(u, v, n, rng, private_mask=mask)
    got = np.zeros((n, n), dtype=bool)
    got[rep.user, rep.neighbor] = True
    assert np.array_equal(got[~mask], adj[~mask])
    assert np.array_equal(noisy[~mask], adj[~mask].sum(1))
    with pytest.raises(ConfigError, match="private_mask"):
        DPRR(1.0, n_max=n).simulate(u, v, n, rng, private_mask=np.ones(3, bool))
