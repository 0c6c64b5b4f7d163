import numpy as np
import pytest
import torch

from dpgl.errors import GraphError
from dpgl.graph.propagation import gcn_normalized_scipy, mean_normalized_scipy


def _random_graph(n: int = 12, p: float = 0.3, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    rng = np.random.default_rng(seed)
    a = np.triu(rng.random((n, n)) < p, 1)
    a = a | a.T
    src, dst = np.nonzero(a)
    w = rng.random(src.size).astype(np.float32) + 0.1
    return torch.tensor(np.stack([src, dst])), torch.from_numpy(w)


def _dense(edge_index: torch.Tensor, n: int, w: torch.Tensor | None) -> np.ndarray:
    a = np.zeros((n, n), dtype=np.float64)
    vals = np.ones(edge_index.size(1)) if w is None else w.numpy()
    for (s, d), v in zip(edge_index.t().tolist(), vals, strict=True):
        a[d, s] += v
    return a


@pytest.mark.parametrize("weighted", [False, True])
def test_gcn_normalized_matches_dense_formula(weighted: bool) -> None:
    ei, w = _random_graph()
    w = w if weighted else None
    a = _dense(ei, 12, w) + np.eye(12)
    d = a.sum(1)
    expected = a / np.sqrt(np.outer(d, d))
    got = gcn_normalized_scipy(ei, 12, w).toarray()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_mean_normalized_is_weighted_row_mean() -> None:
    ei, w = _random_graph(seed=3)
    a = _dense(ei, 12, w)
    deg = a.sum(1, keepdims=True)
    expected = np.divide(a, deg, out=np.zeros_like(a), where=deg > 0)
    got = mean_normalized_scipy(ei, 12, w).toarray()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_isolated_node_gets_only_self_loop() -> None:
    ei = torch.tensor([[0, 1], [1, 0]])
    m = gcn_normalized_scipy(ei, 3).toarray()
    assert m[2, 2] == pytest.approx(1.0)
    assert m[2, :2].sum() == 0
    assert mean_normalized_scipy(ei, 3).toarray()[2].sum() == 0


@pytest.mark.parametrize(
    "ei, msg",
    [
        (torch.tensor([[0, 5], [1, 0]]), "outside"),
        (torch.tensor([[0, -1], [1, 0]]), "outside"),
        (torch.tensor([0, 1, 2]), r"\[2, E\]"),
        (torch.tensor([[0.0, 1.0], [1.0, 0.0]]), "integer"),
    ],
)
def test_bad_edge_index_is_a_clear_error(ei: torch.Tensor, msg: str) -> None:
    with pytest.raises(GraphError, match=msg):
        gcn_normalized_scipy(ei, 3)


def test_weight_length_mismatch() -> None:
    with pytest.raises(GraphError, match="edge_weight"):
        gcn_normalized_scipy(torch.tensor([[0, 1], [1, 0]]), 2, torch.ones(3))
