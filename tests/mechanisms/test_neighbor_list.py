"""Validation of neighbor lists and edge lists (bad input -> one-line GraphError)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dpgl.errors import GraphError
from dpgl.mechanisms.neighbor_list import (
    check_neighbor_list,
    edge_index_from_pairs,
    neighbor_csr,
    undirected_pairs,
)


def test_valid_neighbor_list() -> None:
    out = check_neighbor_list([0, 2, 5], 6, index=1)
    assert out.dtype == np.int64 and out.tolist() == [0, 2, 5]
    assert check_neighbor_list([], 6, index=0).size == 0


@pytest.mark.parametrize(
    ("neighbors", "match"),
    [
        ([0, 1, 3], "self-loop"),
        ([0, 6], r"lie in \[0, 5\]"),
        ([-1, 2], r"lie in \[0, 5\]"),
        ([3, 2], "sorted"),
        ([2, 2], "duplicate"),
        ([0.5, 2.0], "integer"),
        ([[0, 2]], "one-dimensional"),
    ],
)
def test_bad_neighbor_lists(neighbors: list, match: str) -> None:
    with pytest.raises(GraphError, match=match):
        check_neighbor_list(neighbors, 6, index=1)


def test_bad_num_nodes_and_index() -> None:
    with pytest.raises(GraphError):
        check_neighbor_list([0], 0)
    with pytest.raises(GraphError, match="user index"):
        check_neighbor_list([0], 6, index=6)


def test_undirected_pairs_and_errors() -> None:
    ei = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    u, v = undirected_pairs(ei, 3)
    assert u.tolist() == [0, 1] and v.tolist() == [1, 2]
    with pytest.raises(GraphError, match="not symmetric"):
        undirected_pairs(torch.tensor([[0, 1], [1, 2]]), 3)
    with pytest.raises(GraphError, match="not symmetric"):
        undirected_pairs(torch.tensor([[0, 1, 0], [1, 0, 2]]), 3)
    with pytest.raises(GraphError, match="self-loops"):
        undirected_pairs(torch.tensor([[0, 1, 1], [1, 0, 1]]), 3)
    with pytest.raises(GraphError, match="duplicate"):
        undirected_pairs(torch.tensor([[0, 1, 0, 1], [1, 0, 1, 0]]), 3)
    with pytest.raises(GraphError, match="outside"):
        undirected_pairs(torch.tensor([[0, 3], [3, 0]]), 3)
    with pytest.raises(GraphError, match="integer"):
        undirected_pairs(torch.tensor([[0.0, 1.0], [1.0, 0.0]]), 3)
    with pytest.raises(GraphError, match="shape"):
        undirected_pairs(torch.tensor([0, 1]), 3)


def test_conversions() -> None:
    u, v = np.array([0, 1]), np.array([2, 2])
    indptr, indices = neighbor_csr(u, v, 3)
    assert indptr.tolist() == [0, 1, 2, 4] and indices.tolist() == [2, 2, 0, 1]
    ei, w = edge_index_from_pairs(u, v, np.array([0.25, 0.5]))
    assert ei.dtype == torch.int64 and w is not None and w.dtype == torch.float32
    assert ei.t().tolist() == [[0, 2], [1, 2], [2, 0], [2, 1]]
    assert w.tolist() == [0.25, 0.5, 0.25, 0.5]
