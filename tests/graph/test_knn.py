"""Feature kNN pairs and the public kNN graph (blink-pp's ``public_graph``)."""

import numpy as np
import pytest
import torch

from dpgl.errors import ConfigError
from dpgl.graph import knn
from dpgl.graph.knn import knn_edge_index, knn_pairs


def _dense_knn(x: np.ndarray, k: int) -> set[tuple[int, int]]:
    z = x / np.linalg.norm(x, axis=1, keepdims=True)
    sim = z @ z.T
    np.fill_diagonal(sim, -np.inf)
    pairs = set()
    for i, row in enumerate(sim):
        for j in np.argsort(-row, kind="stable")[:k]:
            pairs.add((min(i, int(j)), max(i, int(j))))
    return pairs


def test_knn_pairs_match_a_dense_computation_and_the_edge_index_has_both_directions() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 5)).astype(np.float32)
    u, v = knn_pairs(torch.from_numpy(x), 3)
    assert set(zip(u.tolist(), v.tolist(), strict=True)) == _dense_knn(x, 3)
    ei = knn_edge_index(torch.from_numpy(x), 3)
    assert ei.shape == (2, 2 * len(u))
    got = set(zip(ei[0].tolist(), ei[1].tolist(), strict=True))
    pairs = list(zip(u.tolist(), v.tolist(), strict=True))
    assert got == set(pairs) | {(b, a) for a, b in pairs}
    order = np.lexsort((ei[0].numpy(), ei[1].numpy()))
    assert np.array_equal(order, np.arange(ei.size(1)))  # sorted by (target, source)


def test_knn_edge_index_is_cached_per_features_and_k() -> None:
    x = torch.from_numpy(np.random.default_rng(1).normal(size=(30, 4)).astype(np.float32))
    knn._CACHE.clear()
    a = knn_edge_index(x, 2)
    assert knn_edge_index(x.clone(), 2) is a and len(knn._CACHE) == 1
    assert knn_edge_index(x, 3) is not a and len(knn._CACHE) == 2
    y = x.clone()
    y[0, 0] += 1.0
    assert knn_edge_index(y, 2) is not a


@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_bad_k(k: object) -> None:
    with pytest.raises(ConfigError, match="knn must be an integer >= 1"):
        knn_edge_index(torch.ones(4, 2), k)  # type: ignore[arg-type]
