"""Laplace bits (L-DpGCN / LocalLap): noise-sum tail law, candidate sampling, and the top-T
server's exactness (sparse candidates == dense selection)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from _edge_graphs import dense_adjacency, random_graph
from dpgl.errors import ConfigError, PrivacyError
from dpgl.estimators.toptt import estimate_t_dense, simulate_top_t, top_t_dense, top_t_keys
from dpgl.graph.pairs import index_to_pair
from dpgl.mechanisms.lap import (
    LocalLap,
    pair_noise_moments_below,
    pair_noise_survival,
    sample_pair_noise_above,
    sample_pair_noise_between,
)


def mc_pair_noise(b: float, size: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.laplace(0, b, size) + rng.laplace(0, b, size)


@pytest.mark.parametrize("t", [-1.0, 0.0, 0.7, 3.0])
def test_survival_and_moments_match_monte_carlo(t: float) -> None:
    b = 0.5
    z = mc_pair_noise(b, 400_000, 0)
    s = pair_noise_survival(t, b)
    assert abs(np.mean(z > t) - s) < 5 * math.sqrt(s * (1 - s) / z.size)
    mean, var = pair_noise_moments_below(t, b)
    below = z[z <= t]
    assert abs(below.mean() - mean) < 5 * math.sqrt(var / below.size)
    assert abs(below.var() / var - 1) < 0.03


@pytest.mark.parametrize("t", [-0.5, 0.0, 1.5])
def test_conditional_samplers_match_monte_carlo(t: float) -> None:
    b = 0.5
    rng = np.random.default_rng(1)
    ref = mc_pair_noise(b, 600_000, 2)
    above = sample_pair_noise_above(t, b, 20_000, rng)
    assert above.min() > t
    ref_above = np.sort(ref[ref > t])
    for qs in (0.1, 0.5, 0.9):
        assert abs(np.quantile(above, qs) - np.quantile(ref_above, qs)) < 0.05
    between = sample_pair_noise_between(t - 1.0, t, b, 20_000, rng)
    assert between.min() > t - 1.0 and between.max() <= t
    ref_between = ref[(ref > t - 1.0) & (ref <= t)]
    assert abs(between.mean() - ref_between.mean()) < 0.02


def test_budget_and_guarantee() -> None:
    mech = LocalLap(2.0)
    assert mech.eps1 == pytest.approx(0.2) and mech.eps2 == pytest.approx(1.8)
    assert sum(g.epsilon for g in mech.parts().values()) == pytest.approx(2.0)
    full = LocalLap(2.0, variant="ldpgcn")
    assert full.eps1 == 0 and full.eps2 == 2.0 and list(full.parts()) == ["bits"]
    with pytest.raises(ConfigError, match="variant"):
        LocalLap(1.0, variant="lap")
    with pytest.raises(PrivacyError, match="degree_share"):
        LocalLap(1.0, degree_share=1.0)


def test_per_user_report() -> None:
    rng = np.random.default_rng(3)
    mech = LocalLap(40.0, variant="ldpgcn")  # tiny noise
    rep = mech.report(np.array([0, 4]), 6, 2, rng)
    assert rep.values.shape == (6,) and rep.values[2] == 0 and rep.noisy_degree is None
    assert np.allclose(rep.values, [1, 0, 0, 0, 1, 0], atol=0.3)
    assert LocalLap(1.0).report(np.array([1]), 3, 0, rng).noisy_degree is not None


def test_top_t_of_candidates_equals_dense_top_t() -> None:
    """The exactness argument: with >= T scores above a cutoff, the top T of the candidates
    (scores above the cutoff plus anything else) is the top T of the full matrix."""
    rng = np.random.default_rng(4)
    n = 80
    r = rng.laplace(0, 1.0, (n, n))
    np.fill_diagonal(r, 0)
    iu, ju = np.triu_indices(n, 1)
    z = (r + r.T)[iu, ju]
    keys = np.arange(z.size)
    for t in (1, 37, 300):
        dense = set(zip(*map(np.ndarray.tolist, top_t_dense(r, t)), strict=True))
        cutoff = np.sort(z)[-t - 5]  # at least T candidates above it
        cand = z > cutoff
        extra = rng.random(z.size) < 0.01  # arbitrary extra (below-cutoff) candidates
        sel = top_t_keys(keys[cand | extra], z[cand | extra], t)
        assert set(zip(*map(np.ndarray.tolist, index_to_pair(sel, n)), strict=True)) == dense


def dense_lap_top_t(adj: np.ndarray, mech: LocalLap, rng: np.random.Generator) -> set:
    n = adj.shape[0]
    reports = np.stack([mech.report(np.flatnonzero(adj[i]), n, i, rng).values
                        for i in range(n)])
    deg = None
    if mech.eps1 > 0:
        deg = adj.sum(1) + rng.laplace(0, 1 / mech.eps1, n)
    a, b = top_t_dense(reports, estimate_t_dense(reports, deg))
    return set(zip(a.tolist(), b.tolist(), strict=True))


@pytest.mark.parametrize("variant", ["locallap", "ldpgcn"])
def test_sparse_simulation_matches_dense_distribution(variant: str) -> None:
    """Selected true edges and selected non-edges: same means (and T) for the sparse
    candidate simulation and the dense per-user reference."""
    n, reps = 40, 150
    u, v = random_graph(n, 0.1, seed=5)
    adj = dense_adjacency(u, v, n)
    true = set(zip(u.tolist(), v.tolist(), strict=True))
    mech = LocalLap(3.0, variant=variant)
    rng = np.random.default_rng(6)
    stats = {"sparse": [], "dense": []}
    for _ in range(reps):
        a, b, info = simulate_top_t(mech, u, v, n, rng)
        assert info["candidates"] < n * (n - 1) // 2  # the sparse path was used
        sel = set(zip(a.tolist(), b.tolist(), strict=True))
        stats["sparse"].append((len(sel & true), len(sel - true)))
        ref = dense_lap_top_t(adj, mech, rng)
        stats["dense"].append((len(ref & true), len(ref - true)))
    s, d = np.array(stats["sparse"], float), np.array(stats["dense"], float)
    for k in range(2):
        se = math.sqrt(s[:, k].var() / reps + d[:, k].var() / reps)
        assert abs(s[:, k].mean() - d[:, k].mean()) < 5 * se + 0.5


def test_candidates_layering_keeps_everything_above_cutoff() -> None:
    n = 30
    u, v = random_graph(n, 0.2, seed=7)
    cand = LocalLap(1.0).candidates(u, v, n, np.random.default_rng(8))
    cand.ensure(50)
    first = cand.cutoff
    assert cand.above_cutoff() >= 50
    cand.ensure(200)
    assert cand.cutoff < first and cand.above_cutoff() >= 200
    assert np.unique(cand.keys).size == cand.keys.size  # no pair drawn twice
    cand.ensure(10**6)  # more than all pairs: everything becomes a candidate
    assert cand.keys.size == n * (n - 1) // 2
