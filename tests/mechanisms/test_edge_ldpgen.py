"""LDPGen: degree vectors, guarantee split, k-means, block Chung-Lu generation."""

from __future__ import annotations

import numpy as np
import pytest

from _edge_graphs import dense_adjacency, random_graph
from dpgl.errors import ConfigError
from dpgl.estimators.ldpgen import (
    blink_authors_graph,
    choose_k1,
    chung_lu_blocks,
    kmeans,
    ldpgen_simulate,
)
from dpgl.mechanisms.ldpgen import LDPGenClient, degree_vectors


def test_degree_vectors_match_dense_counts() -> None:
    n, k = 30, 3
    u, v = random_graph(n, 0.2, seed=0)
    part = np.random.default_rng(1).integers(0, k, n)
    adj = dense_adjacency(u, v, n)
    ref = np.stack([adj[:, part == g].sum(1) for g in range(k)], axis=1)
    assert np.array_equal(degree_vectors(u, v, n, part, k), ref)
    client = LDPGenClient(2.0)
    rep = client.report(np.flatnonzero(adj[4]), n, 4, part, k, 1, np.random.default_rng(2))
    assert rep.shape == (k,)
    assert sum(g.epsilon for g in client.parts().values()) == pytest.approx(2.0)
    with pytest.raises(ConfigError, match="partition"):
        client.simulate(u, v, n, np.full(n, 5), k, 1, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="phase"):
        client.simulate(u, v, n, part, k, 3, np.random.default_rng(0))


def test_laplace_noise_scale_per_phase() -> None:
    n, k = 2000, 2
    u, v = random_graph(n, 0.002, seed=3)
    part = np.zeros(n, dtype=np.int64)
    part[n // 2:] = 1
    client = LDPGenClient(1.0, phase1_share=0.25)
    true = degree_vectors(u, v, n, part, k)
    noise = client.simulate(u, v, n, part, k, 1, np.random.default_rng(4)) - true
    assert noise.std() == pytest.approx(np.sqrt(2) / 0.25, rel=0.05)


def test_kmeans_separates_clusters() -> None:
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.normal(0, 0.1, (100, 2)), rng.normal(5, 0.1, (80, 2))])
    labels = kmeans(x, 2, rng)
    assert len(set(labels[:100])) == 1 and len(set(labels[100:])) == 1
    assert labels[0] != labels[150]


def test_chung_lu_blocks_expected_degrees() -> None:
    rng = np.random.default_rng(6)
    n, k = 3000, 2
    labels = (np.arange(n) >= 1000).astype(np.int64)
    w = np.zeros((n, k))
    w[:, 0] = np.where(labels == 0, 6.0, 1.0)  # towards cluster 0
    w[:, 1] = np.where(labels == 0, 2.0, 4.0)  # towards cluster 1
    degs = []
    for _ in range(5):
        a, b = chung_lu_blocks(w, labels, k, rng)
        assert np.all(a < b)
        degs.append(np.bincount(np.concatenate([a, b]), minlength=n))
    deg = np.mean(degs, axis=0)
    assert deg[:1000].mean() == pytest.approx(8.0, rel=0.05)
    assert deg[1000:].mean() == pytest.approx(5.0, rel=0.05)


def test_choose_k1_and_pipeline() -> None:
    assert 2 <= choose_k1(np.full(100, 10.0), 0.5, 100, max_k1=8) <= 8
    n = 200
    u, v = random_graph(n, 0.05, seed=7)
    a, b, info = ldpgen_simulate(u, v, n, LDPGenClient(4.0), np.random.default_rng(8), k1=3)
    assert info["k1"] == 3 and a.size > 0 and np.all(a < b)


def _authors_case() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Two groups of phase-2 reports (integers, so rounding changes nothing); inside each
    group half the users report 4x the degree of the other half."""
    n = 400
    group = (np.arange(n) >= 160).astype(np.int64)  # |A| = 160, |B| = 240
    heavy = np.arange(n) % 2 == 0
    delta1 = np.zeros((n, 2))
    delta1[group == 0] = [12.0, 1.0]
    delta1[(group == 0) & heavy] = [48.0, 4.0]
    delta1[group == 1] = [1.0, 8.0]
    delta1[(group == 1) & heavy] = [4.0, 32.0]
    return delta1, group, heavy, np.bincount(group)


def test_blink_authors_graph_reproduces_their_edge_probability(monkeypatch) -> None:
    """p_uv = d_u[b] (S_b / |b|) / (S_b + T_ab) for u in a, v in b (Blink_GNN e55cb7b,
    src/ldpgen/server.py:55-76), one Bernoulli per ordered pair, edge u -> v: a user's
    out-degree follows her own report, her in-degree does not. (Their second k-means is
    replaced by the groups themselves, so that the formula is checked alone.)"""
    import dpgl.estimators.ldpgen as est

    delta1, group, heavy, size = _authors_case()
    monkeypatch.setattr(est, "kmeans", lambda x, k, rng: group.copy())
    n = group.size
    total = delta1.sum(0)  # S_b
    block = np.stack([delta1[group == a].sum(0) for a in (0, 1)])  # T_ab
    p = delta1 * ((total / size)[None, :] / (total[None, :] + block))[group]  # p[u, b]
    expected_out = (p * (size[None, :] - (group[:, None] == [0, 1]))).sum(1)
    # in-degree of v in b: sum over u != v of p[u, b]
    expected_in = p[:, group].sum(0) - p[np.arange(n), group]
    rng = np.random.default_rng(11)
    outs, ins = [], []
    for _ in range(30):
        src, dst = blink_authors_graph(delta1, group, 2, rng)
        assert np.all(src != dst)
        keys = src * n + dst
        assert np.unique(keys).size == keys.size
        outs.append(np.bincount(src, minlength=n))
        ins.append(np.bincount(dst, minlength=n))
    out, inn = np.mean(outs, 0), np.mean(ins, 0)
    for mask in (heavy & (group == 0), ~heavy & (group == 0), heavy & (group == 1),
                 ~heavy & (group == 1)):
        assert out[mask].mean() == pytest.approx(expected_out[mask].mean(), rel=0.03)
        assert inn[mask].mean() == pytest.approx(expected_in[mask].mean(), rel=0.03)
    # the defect: heavy and light users of a cluster get the same in-degree (4x apart out)
    for g in (0, 1):
        assert out[heavy & (group == g)].mean() > 3 * out[~heavy & (group == g)].mean()
        assert inn[heavy & (group == g)].mean() == pytest.approx(
            inn[~heavy & (group == g)].mean(), rel=0.05)
    # directed: one direction only for almost every generated pair
    src, dst = blink_authors_graph(delta1, group, 2, np.random.default_rng(12))
    both = np.isin(src * n + dst, dst * n + src).mean()
    assert both < 0.2


def test_ldpgen_generator_option() -> None:
    n = 300
    u, v = random_graph(n, 0.03, seed=13)
    client = LDPGenClient(4.0)
    a, b, info = ldpgen_simulate(u, v, n, client, np.random.default_rng(14))
    assert info["generator"] == "chung-lu" and np.all(a < b)
    a, b, info = ldpgen_simulate(u, v, n, client, np.random.default_rng(14),
                                 generator="blink-authors-bug")
    assert info["generator"] == "blink-authors-bug" and np.any(a > b) and np.any(a < b)
    assert 1 <= info["k1"] <= n
    assert choose_k1(np.full(100, 1.0), 4.0, 100, min_k1=1) == 1  # the authors' floor
    with pytest.raises(ConfigError, match="generator"):
        ldpgen_simulate(u, v, n, client, np.random.default_rng(0), generator="bter")
