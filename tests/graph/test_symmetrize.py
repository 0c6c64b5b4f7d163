"""Symmetrization policies for directed reports (dpgl.graph.symmetrize)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dpgl.errors import ConfigError, GraphError
from dpgl.graph.symmetrize import symmetrize, symmetrize_pairs

# reports: 0->1, 1->0 (both), 0->2 (one side), 3->1 (one side)
ROW = np.array([0, 1, 0, 3])
COL = np.array([1, 0, 2, 1])


def test_or_and_directed() -> None:
    a, b = symmetrize_pairs(ROW, COL, 4, "or")
    assert list(zip(a.tolist(), b.tolist(), strict=True)) == [(0, 1), (0, 2), (1, 3)]
    a, b = symmetrize_pairs(ROW, COL, 4, "and")
    assert list(zip(a.tolist(), b.tolist(), strict=True)) == [(0, 1)]
    a, b = symmetrize_pairs(ROW, COL, 4, "directed")
    assert list(zip(a.tolist(), b.tolist(), strict=True)) == [(0, 1), (0, 2), (1, 0), (3, 1)]


def test_symmetrize_edge_index_is_symmetric_and_sorted() -> None:
    ei = torch.tensor(np.stack([ROW, COL]))
    out = symmetrize(ei, 4, "or")
    assert out.dtype == torch.int64 and out.shape == (2, 6)
    pairs = set(map(tuple, out.t().tolist()))
    assert pairs == {(0, 1), (1, 0), (0, 2), (2, 0), (1, 3), (3, 1)}
    assert symmetrize(ei, 4, "and").shape == (2, 2)
    assert symmetrize(ei, 4, "directed").shape == (2, 4)


def test_symmetrize_errors() -> None:
    with pytest.raises(ConfigError, match="symmetrization policy"):
        symmetrize_pairs(ROW, COL, 4, "xor")
    with pytest.raises(GraphError, match="self-loops"):
        symmetrize_pairs(np.array([1]), np.array([1]), 4, "or")
    with pytest.raises(GraphError, match="duplicate"):
        symmetrize_pairs(np.array([0, 0]), np.array([1, 1]), 4, "directed")
    with pytest.raises(GraphError, match="duplicate"):
        symmetrize_pairs(np.array([0, 0, 1]), np.array([1, 1, 0]), 4, "or")
    with pytest.raises(GraphError):
        symmetrize(torch.tensor([[0, 7], [1, 0]]), 4, "or")
