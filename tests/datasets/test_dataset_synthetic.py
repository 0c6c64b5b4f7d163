"""Synthetic graphs: determinism, sparse generation, and the statistics they promise."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dpgl.datasets import barabasi_albert, csbm, load_dataset
from dpgl.datasets.synthetic import barabasi_albert_edges, triu_pairs
from dpgl.errors import ConfigError


def _simple_undirected(edge_index: torch.Tensor, n: int) -> bool:
    key = edge_index[0] * n + edge_index[1]
    rev = torch.sort(edge_index[1] * n + edge_index[0]).values
    return (
        bool((key[1:] > key[:-1]).all())
        and torch.equal(rev, key)
        and bool((edge_index[0] != edge_index[1]).all())
    )


def _homophily(data) -> float:
    e = data.edge_index
    return float((data.y[e[0]] == data.y[e[1]]).float().mean())


def _nearest_mean_accuracy(x: torch.Tensor, y: torch.Tensor) -> float:
    """Fit class means on even nodes, classify odd nodes by the nearest mean."""
    fit, ev = torch.arange(0, len(y), 2), torch.arange(1, len(y), 2)
    means = torch.stack([x[fit][y[fit] == c].mean(0) for c in range(int(y.max()) + 1)])
    pred = torch.cdist(x[ev], means).argmin(1)
    return float((pred == y[ev]).float().mean())


def test_triu_pairs_enumerates_the_upper_triangle():
    for m in (2, 3, 7, 50, 301):
        i, j = triu_pairs(np.arange(m * (m - 1) // 2), m)
        ri, rj = np.triu_indices(m, 1)
        assert np.array_equal(i, ri) and np.array_equal(j, rj)
    m = 10**6  # float estimate corrected exactly at the extremes
    i, j = triu_pairs(np.array([0, m - 2, m - 1, m * (m - 1) // 2 - 1]), m)
    assert i.tolist() == [0, 0, 1, m - 2] and j.tolist() == [1, m - 1, 2, m - 1]


def test_csbm_is_seeded_and_deterministic():
    a, b, c = csbm(rng=7), csbm(rng=7), csbm(rng=8)
    assert torch.equal(a.edge_index, b.edge_index) and torch.equal(a.x, b.x)
    assert torch.equal(a.y, b.y)
    assert not torch.equal(a.edge_index, c.edge_index)
    d = load_dataset("csbm", seed=7)
    assert torch.equal(d.edge_index, a.edge_index) and d.name == "csbm"


def test_csbm_default_statistics():
    data = csbm(rng=0)
    n = 2000
    assert data.num_nodes == n and tuple(data.x.shape) == (n, 32)
    assert data.x.dtype == torch.float32 and data.y.dtype == torch.int64
    assert torch.bincount(data.y).tolist() == [500] * 4
    assert _simple_undirected(data.edge_index, n)
    avg_degree = data.edge_index.size(1) / n
    assert 4.6 < avg_degree < 5.4  # expected 5 (sd of the mean ~0.07)
    assert 0.77 < _homophily(data) < 0.83  # expected 0.8


def test_csbm_structure_carries_signal_beyond_features():
    # Proxy for "a GCN clearly beats an MLP": nearest-class-mean accuracy on the raw
    # features versus on neighbourhood-averaged features (one propagation step).
    data = csbm(rng=1)
    n = data.num_nodes
    e = data.edge_index
    agg = torch.zeros_like(data.x).index_add_(0, e[0], data.x[e[1]]) + data.x
    agg = agg / (torch.bincount(e[0], minlength=n) + 1).unsqueeze(1)
    raw_acc = _nearest_mean_accuracy(data.x, data.y)
    agg_acc = _nearest_mean_accuracy(agg, data.y)
    assert 0.55 < raw_acc < 0.80
    assert agg_acc > 0.82 and agg_acc - raw_acc > 0.15  # measured 0.658 -> 0.885


def test_csbm_options_and_sparse_scale():
    data = csbm(20000, 5, avg_degree=8, homophily=0.5, num_features=8, rng=3)
    assert data.num_nodes == 20000 and torch.unique(data.y).numel() == 5
    assert 7.7 < data.edge_index.size(1) / 20000 < 8.3
    assert 0.47 < _homophily(data) < 0.53
    d = load_dataset("csbm", seed=1, num_nodes=300, num_classes=3, num_features=5)
    assert d.num_nodes == 300 and d.x.shape[1] == 5
    with pytest.raises(ConfigError, match="homophily"):
        csbm(homophily=1.5, rng=0)
    with pytest.raises(ConfigError, match="num_features"):
        csbm(num_features=2, num_classes=4, rng=0)
    with pytest.raises(ConfigError, match="unknown option"):
        load_dataset("csbm", m=3)
    with pytest.raises(ConfigError, match="seed"):
        load_dataset("csbm", seed=-1)


def test_ba_edge_count_determinism_and_degrees():
    n, m = 20000, 4
    a = barabasi_albert(n, m, rng=5)
    b = load_dataset("ba", seed=5, num_nodes=n, m=m)
    assert torch.equal(a.edge_index, b.edge_index)
    assert _simple_undirected(a.edge_index, n)
    upper = m * (m + 1) // 2 + (n - m - 1) * m
    edges = a.edge_index.size(1) // 2
    assert 0.98 * upper <= edges <= upper  # repeated targets of one node are merged
    deg = torch.bincount(a.edge_index[0], minlength=n)
    assert int(deg.min()) >= 1 and int(deg.max()) > 20 * m  # heavy tail
    # P(deg >= k) ~ k^-2 for preferential attachment: doubling k divides it by about 4.
    ratio = float((deg >= 2 * m).float().mean() / (deg >= 4 * m).float().mean())
    assert 3.0 < ratio < 5.5
    assert tuple(a.x.shape) == (n, 1) and int(a.y.sum()) == 0
    assert not torch.equal(a.edge_index, barabasi_albert(n, m, rng=6).edge_index)


def test_ba_edges_point_to_earlier_nodes():
    rng = np.random.default_rng(0)
    e = barabasi_albert_edges(5000, 3, rng)
    assert (e[1] < e[0]).all()  # no self-loops, targets existed before the new node
    assert e.shape[1] == 6 + (5000 - 4) * 3
    with pytest.raises(ConfigError, match="m"):
        barabasi_albert(5, 5, rng=0)


@pytest.mark.slow
def test_ba_million_nodes():
    data = barabasi_albert(10**6, 5, rng=0)
    assert data.num_nodes == 10**6
    assert data.edge_index.size(1) // 2 > 0.99 * 5 * 10**6
