"""Node / inductive / graph splits: disjoint, covering, ratios, stratification, seeding."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from dpgl.errors import ConfigError
from dpgl.graph.splits import (
    NodeSplit,
    blink_fixed_split,
    graph_split,
    inductive_split,
    random_node_split,
    sklearn_shuffle_split,
)


def _labels(n: int, sizes: list[int]) -> torch.Tensor:
    y = torch.cat([torch.full((s,), c) for c, s in enumerate(sizes)])
    assert y.numel() == n
    return y[torch.from_numpy(np.random.default_rng(123).permutation(n))]


def _disjoint(*parts: torch.Tensor) -> bool:
    cat = torch.cat(parts)
    return cat.numel() == torch.unique(cat).numel()


def test_random_node_split_ratios_cover_and_disjoint():
    s = random_node_split(1000, rng=0)
    assert isinstance(s, NodeSplit)
    assert (s.train.numel(), s.val.numel(), s.test.numel()) == (500, 250, 250)
    assert _disjoint(s.train, s.val, s.test)
    assert torch.equal(torch.sort(torch.cat([s.train, s.val, s.test])).values, torch.arange(1000))
    for idx in (s.train, s.val, s.test):
        assert idx.dtype == torch.int64 and bool((idx[1:] > idx[:-1]).all())
    tr, va, te = s.masks(1000)
    assert tr.dtype == torch.bool and int(tr.sum()) == 500 and not bool((tr & va).any())
    assert bool((tr | va | te).all())
    with pytest.raises(ConfigError):
        s.masks(10)


def test_partial_ratios_and_rounding():
    s = random_node_split(101, 0.1, 0.1, 0.2, rng=1)
    assert (s.train.numel(), s.val.numel(), s.test.numel()) == (10, 10, 20)
    s = random_node_split(7, 0.5, 0.25, 0.25, rng=1)  # sums to 1: everything is used
    assert s.train.numel() + s.val.numel() + s.test.numel() == 7


def test_seeding_is_deterministic_and_accepts_generators():
    a = random_node_split(500, rng=3)
    b = random_node_split(500, rng=np.random.default_rng(3))
    c = random_node_split(500, rng=4)
    assert torch.equal(a.train, b.train) and torch.equal(a.test, b.test)
    assert not torch.equal(a.train, c.train)


def test_stratified_node_split_keeps_class_proportions():
    y = _labels(1000, [600, 300, 100])
    data = Data(y=y, num_nodes=1000)
    s = random_node_split(data, 0.5, 0.25, 0.25, rng=0, stratify=True)
    assert torch.bincount(y[s.train]).tolist() == [300, 150, 50]
    assert torch.bincount(y[s.val]).tolist() == [150, 75, 25]
    assert torch.bincount(y[s.test]).tolist() == [150, 75, 25]
    assert _disjoint(s.train, s.val, s.test)
    with pytest.raises(ConfigError, match="labels"):
        random_node_split(1000, rng=0, stratify=True)
    with pytest.raises(ConfigError, match="labels"):
        random_node_split(1000, rng=0, stratify=True, labels=y[:10])


def test_label_rate_draws_labelled_nodes_from_the_train_part():
    y = _labels(1000, [500, 300, 200])
    full = random_node_split(1000, rng=5, labels=y)
    s = random_node_split(1000, rng=5, labels=y, label_rate=0.1)
    assert s.train.numel() == 100 and s.unlabeled.numel() == 400
    assert torch.equal(s.val, full.val) and torch.equal(s.test, full.test)
    merged = torch.sort(torch.cat([s.train, s.unlabeled])).values
    assert torch.equal(merged, full.train)
    st = random_node_split(1000, rng=5, labels=y, stratify=True, label_rate=0.1)
    assert torch.bincount(y[st.train]).tolist() == [50, 30, 20]
    with pytest.raises(ConfigError, match="exceeds the train ratio"):
        random_node_split(1000, 0.5, 0.25, 0.25, rng=0, label_rate=0.6)


@pytest.mark.parametrize(
    ("ratios", "match"),
    [
        ((0.6, 0.3, 0.3), "sum to at most 1"),
        ((-0.1, 0.5, 0.5), "in \\[0, 1\\]"),
        ((float("nan"), 0.2, 0.2), "in \\[0, 1\\]"),
        (("a", 0.2, 0.2), "number"),
    ],
)
def test_ratio_validation(ratios, match):
    with pytest.raises(ConfigError, match=match):
        random_node_split(100, *ratios, rng=0)


def test_inductive_split_removes_cross_edges():
    n = 200
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, n, 2000), rng.integers(0, n, 2000)
    keep = src != dst
    ei = torch.from_numpy(np.stack([np.r_[src[keep], dst[keep]], np.r_[dst[keep], src[keep]]]))
    ei = torch.unique(ei, dim=1)
    data = Data(
        x=torch.arange(n, dtype=torch.float32).unsqueeze(1),
        y=torch.arange(n) % 3,
        edge_index=ei,
        num_nodes=n,
    )
    snap = data.edge_index.clone()
    train_g, test_g, train_ids, test_ids = inductive_split(data, 0.8, rng=1)
    assert torch.equal(data.edge_index, snap) and data.num_nodes == n  # input untouched
    assert train_ids.numel() == 160 and test_ids.numel() == 40
    assert _disjoint(train_ids, test_ids)
    assert train_g.num_nodes == 160 and test_g.num_nodes == 40
    # node attributes follow the nodes
    assert torch.equal(train_g.x[:, 0].long(), train_ids) and torch.equal(test_g.y, test_ids % 3)
    # every kept edge is an original edge inside one part; cross edges are gone
    is_train = torch.zeros(n, dtype=torch.bool)
    is_train[train_ids] = True
    inside = is_train[ei[0]] == is_train[ei[1]]
    assert train_g.edge_index.size(1) + test_g.edge_index.size(1) == int(inside.sum())
    mapped = train_ids[train_g.edge_index]
    orig = set(map(tuple, ei.t().tolist()))
    assert all(tuple(e) in orig for e in mapped.t().tolist())
    with pytest.raises(ConfigError):
        inductive_split(data, 1.5, rng=0)


def test_graph_split_stratified():
    y = _labels(1000, [700, 300])
    tr, va, te = graph_split(y, 0.75, 0.10, 0.15, rng=2)
    assert (tr.numel(), va.numel(), te.numel()) == (750, 100, 150)
    assert torch.bincount(y[te]).tolist() == [105, 45]
    assert _disjoint(tr, va, te)
    tr2, _, _ = graph_split(y.numpy(), 0.65, 0.15, 0.20, rng=2, stratify=False)
    assert tr2.numel() == 650
    a = graph_split(y, rng=9)
    b = graph_split(y, rng=9)
    assert all(torch.equal(p, q) for p, q in zip(a, b, strict=True))


def test_sklearn_shuffle_split_reproduces_sklearns_documented_example() -> None:
    """sklearn's train_test_split docstring: X = np.arange(10).reshape((5, 2)),
    train_test_split(X, y, test_size=0.33, random_state=42) gives the training rows 2, 0, 3
    and the test rows 1, 4 (in that order)."""
    train, test = sklearn_shuffle_split(np.arange(5), 0.33, 42)
    assert train.tolist() == [2, 0, 3] and test.tolist() == [1, 4]
    rows = np.arange(10).reshape(5, 2)  # items are permuted, not their positions' values
    train_rows, test_rows = sklearn_shuffle_split(rows, 0.33, 42)
    assert train_rows.tolist() == [[4, 5], [0, 1], [6, 7]]
    assert test_rows.tolist() == [[2, 3], [8, 9]]


def test_blink_fixed_split_is_one_fixed_50_25_25_split() -> None:
    s = blink_fixed_split(11)  # test part ceil(11/2) = 6 -> split again 3 / 3
    assert (s.train.numel(), s.val.numel(), s.test.numel()) == (5, 3, 3)
    assert _disjoint(s.train, s.val, s.test)
    assert torch.equal(torch.sort(torch.cat([s.train, s.val, s.test])).values,
                       torch.arange(11))
    again = blink_fixed_split(11)
    assert all(torch.equal(a, b) for a, b in zip((s.train, s.val, s.test),
                                                 (again.train, again.val, again.test),
                                                 strict=True))
    for idx in (s.train, s.val, s.test):
        assert idx.dtype == torch.int64 and bool((idx[1:] > idx[:-1]).all())
    # the second split permutes the first one's test part in its (permuted) order
    train, val_test = sklearn_shuffle_split(np.arange(11), 0.5, 42)
    val, test = sklearn_shuffle_split(val_test, 0.5, 42)
    assert s.test.tolist() == sorted(test.tolist()) and s.val.tolist() == sorted(val.tolist())
    assert s.train.tolist() == sorted(train.tolist())
    assert s.test.tolist() != sorted(sklearn_shuffle_split(np.sort(val_test), 0.5, 42)[1])
    with pytest.raises(ConfigError, match="node count"):
        blink_fixed_split(-1)
