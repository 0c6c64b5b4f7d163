"""Finding 2 of issue #11: GAP's random top-D degree bounding does not have the node-level
sensitivity GAP states. dpgl states bounded-degree node-DP instead: no bounding step, the
graph must keep every degree <= D, and the sensitivity sqrt(D + D^2) per hop is proved and
checked here on the worst-case pairs; DP-SAGE's 1 + D changed examples likewise."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dpgl.central.aggregation import AggregationPerturbation, ap_sensitivity, check_degree_bound
from dpgl.errors import ConfigError
from dpgl.methods.sage_ndp import neighbourhoods


def _old_bound_degree(ei: np.ndarray, n: int, d: int, prio: np.ndarray) -> np.ndarray:
    """GAP's bounding before the fix: every node keeps its d lowest-priority out-edges."""
    keep = np.zeros(ei.shape[1], dtype=bool)
    for u in range(n):
        idx = np.flatnonzero(ei[0] == u)
        keep[idx[np.argsort(prio[idx])[:d]]] = True
    return ei[:, keep]


def _sums(x: torch.Tensor, ei: np.ndarray) -> np.ndarray:
    """One noise-free hop of the aggregation (sum over in-neighbours of unit rows)."""
    pma = AggregationPerturbation(1, None, 10**6)
    return pma.perturb(x, torch.from_numpy(ei), np.random.default_rng(0), check_bound=False,
                       normalize=False)[1].numpy()


def _issue_example() -> tuple[np.ndarray, int]:
    """50 nodes point to both v (id 0) and w (id 1)."""
    src = np.repeat(np.arange(2, 52), 2)
    dst = np.tile([0, 1], 50)
    return np.stack([src, dst]), 52


def test_the_old_bounding_changes_rows_beyond_its_claimed_sensitivity() -> None:
    """Negative control (the code before the fix), D = 1: removing v frees the slots of its
    in-neighbours, about 25 new unit vectors enter w's row, against a claimed sqrt(D) = 1."""
    ei, n = _issue_example()
    x = torch.zeros(n, 2)
    x[:, 0] = 1.0
    prio = np.random.default_rng(0).random(ei.shape[1])
    with_v = _old_bound_degree(ei, n, 1, prio)
    keep = ei[1] != 0
    without_v = _old_bound_degree(ei[:, keep], n, 1, prio[keep])
    diff = np.linalg.norm(_sums(x, with_v)[1] - _sums(x, without_v)[1])
    assert diff > 10 * math.sqrt(1)


def test_the_issue_graph_breaks_the_promise_and_is_refused() -> None:
    ei, n = _issue_example()
    with pytest.raises(ConfigError, match="above max_degree=1"):
        check_degree_bound(torch.from_numpy(ei), n, 1)
    with pytest.raises(ConfigError, match="above max_degree"):
        AggregationPerturbation(1, 1.0, 1).perturb(torch.ones(n, 2), torch.from_numpy(ei),
                                                   np.random.default_rng(0))


def _random_bounded_graph(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """A random directed graph with every in- and out-degree <= d."""
    edges = set()
    out_deg, in_deg = np.zeros(n, int), np.zeros(n, int)
    for _ in range(n * d * 3):
        u, v = rng.integers(n, size=2)
        if u != v and (u, v) not in edges and out_deg[u] < d and in_deg[v] < d:
            edges.add((u, v))
            out_deg[u] += 1
            in_deg[v] += 1
    return np.array(sorted(edges)).T if edges else np.zeros((2, 0), int)


@pytest.mark.parametrize("d", [1, 2, 4])
def test_removing_any_node_moves_the_hop_by_at_most_sqrt_d_plus_d2(d: int) -> None:
    """Within the promise, for every node w of random bounded graphs and of the worst case
    (w's D in-neighbours and D out-neighbours all aligned), the l2 change of the whole hop
    output when w is removed (her row becomes the empty sum) is <= sqrt(D + D^2), attained
    on the worst case."""
    rng = np.random.default_rng(d)
    bound = ap_sensitivity(d)
    worst = 0.0
    for _ in range(20):
        n = 12
        ei = _random_bounded_graph(rng, n, d)
        x = torch.from_numpy(rng.standard_normal((n, 3))).float()
        full = _sums(x, ei)
        for w in range(n):
            keep = (ei[0] != w) & (ei[1] != w)
            x_w = x.clone()
            x_w[w] = 0.0
            diff = np.linalg.norm(full - _sums(x_w, ei[:, keep]))
            assert diff <= bound + 1e-6
            worst = max(worst, diff)
    # the worst case of the proof attains the bound
    n = 1 + 2 * d
    src = np.r_[np.arange(1, d + 1), np.zeros(d, int)]
    dst = np.r_[np.zeros(d, int), np.arange(d + 1, n)]
    x = torch.zeros(n, 3)
    x[:, 0] = 1.0
    x_w = x.clone()
    x_w[0] = 0.0
    diff = np.linalg.norm(_sums(x, np.stack([src, dst])) - _sums(x_w, np.zeros((2, 0), int)))
    assert diff == pytest.approx(bound, rel=1e-6)
    assert worst <= bound + 1e-6


@pytest.mark.parametrize("d", [1, 3])
def test_sage_examples_changed_by_a_node_are_at_most_one_plus_d(d: int) -> None:
    """DP-SAGE within the promise: removing w changes w's own example and the examples of
    its <= D out-neighbours only (each example holds all in-neighbours, no sampling)."""
    rng = np.random.default_rng(10 + d)
    for _ in range(10):
        n = 14
        ei = torch.from_numpy(_random_bounded_graph(rng, n, d))
        x = torch.from_numpy(rng.standard_normal((n, 2))).float()
        nb, mask = neighbourhoods(x, ei, n, d)
        for w in range(n):
            keep = (ei[0] != w) & (ei[1] != w)
            x_w = x.clone()
            x_w[w] = 0.0                      # absent: its features are gone
            nb2, mask2 = neighbourhoods(x_w, ei[:, keep], n, d)
            agg, agg2 = (nb * mask[..., None]).sum(1), (nb2 * mask2[..., None]).sum(1)
            changed = {int(v) for v in torch.nonzero((agg - agg2).abs().sum(1) > 0)}
            changed.add(w)
            assert len(changed) <= 1 + d
