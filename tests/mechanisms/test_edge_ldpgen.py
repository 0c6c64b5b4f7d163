"""LDPGen: degree vectors, guarantee split, k-means, block Chung-Lu generation."""

from __future__ import annotations

import numpy as np
import pytest

from _edge_graphs import dense_adjacency, random_graph
from dpgl.errors import ConfigError
from dpgl.estimators.ldpgen import choose_k1, chung_lu_blocks, kmeans, ldpgen_simulate
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
