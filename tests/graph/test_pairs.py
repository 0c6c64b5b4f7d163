"""Pair indexing and sparse Bernoulli sampling (dpgl.graph.pairs)."""

from __future__ import annotations

import numpy as np
import pytest

from dpgl.errors import ConfigError, GraphError
from dpgl.graph.pairs import (
    bernoulli_positions,
    bernoulli_rows,
    count_pairs_with_sum_at_least,
    index_to_ordered_pair,
    index_to_pair,
    num_ordered_pairs,
    num_pairs,
    ordered_pair_to_index,
    pair_to_index,
    pairs_with_sum_at_least,
    sample_distinct,
    sample_distinct_excluding,
    sort_pairs,
    undirected_counts,
    unique_counts,
)


@pytest.mark.parametrize("n", [2, 3, 7, 50])
def test_upper_triangle_index_matches_triu_order(n: int) -> None:
    iu, ju = np.triu_indices(n, 1)
    k = pair_to_index(iu, ju, n)
    assert np.array_equal(k, np.arange(num_pairs(n)))
    i, j = index_to_pair(k, n)
    assert np.array_equal(i, iu) and np.array_equal(j, ju)


@pytest.mark.parametrize("n", [2, 5, 31])
def test_ordered_index_matches_row_major_without_diagonal(n: int) -> None:
    oi, oj = np.nonzero(~np.eye(n, dtype=bool))
    k = ordered_pair_to_index(oi, oj, n)
    assert np.array_equal(k, np.arange(num_ordered_pairs(n)))
    i, j = index_to_ordered_pair(k, n)
    assert np.array_equal(i, oi) and np.array_equal(j, oj)


def test_int64_safe_for_ten_million_nodes() -> None:
    n = 10**7
    total = num_pairs(n)
    assert total == 49_999_995_000_000
    rng = np.random.default_rng(0)
    k = np.concatenate([[0, 1, total - 1, total - 2, total // 2],
                        rng.integers(0, total, 10_000)])
    i, j = index_to_pair(k, n)
    assert np.all(i < j) and np.all(j < n)
    assert np.array_equal(pair_to_index(i, j, n), k)
    assert (int(i[2]), int(j[2])) == (n - 2, n - 1)
    ko = rng.integers(0, num_ordered_pairs(n), 10_000)
    assert np.array_equal(ordered_pair_to_index(*index_to_ordered_pair(ko, n), n), ko)


def test_index_errors() -> None:
    with pytest.raises(GraphError):
        pair_to_index([3], [2], 5)
    with pytest.raises(GraphError):
        index_to_pair([10], 5)
    with pytest.raises(GraphError):
        ordered_pair_to_index([1], [1], 5)
    with pytest.raises(GraphError):
        num_pairs(10**8)


def test_bernoulli_positions_edge_cases_and_determinism() -> None:
    rng = np.random.default_rng(1)
    assert bernoulli_positions(100, 0.0, rng).size == 0
    assert np.array_equal(bernoulli_positions(17, 1.0, rng), np.arange(17))
    a = bernoulli_positions(10**12, 1e-7, np.random.default_rng(5))
    b = bernoulli_positions(10**12, 1e-7, np.random.default_rng(5))
    assert np.array_equal(a, b)
    assert np.all(np.diff(a) > 0) and a[-1] < 10**12
    assert abs(a.size - 1e5) < 5 * np.sqrt(1e5)
    with pytest.raises(ConfigError):
        bernoulli_positions(10, 1.5, rng)


def test_bernoulli_positions_are_iid_bernoulli() -> None:
    """Per-position frequency p and pairwise independence, over many small runs."""
    rng = np.random.default_rng(2)
    total, p, reps = 12, 0.3, 4000
    hits = np.zeros((reps, total), dtype=bool)
    for r in range(reps):
        hits[r, bernoulli_positions(total, p, rng, chunk=4)] = True
    freq = hits.mean(axis=0)
    sd = np.sqrt(p * (1 - p) / reps)
    assert np.all(np.abs(freq - p) < 5 * sd)
    joint = (hits[:, 0] & hits[:, 1]).mean()
    assert abs(joint - p * p) < 5 * np.sqrt(p * p / reps)
    last_two = (hits[:, -1] & hits[:, -2]).mean()
    assert abs(last_two - p * p) < 5 * np.sqrt(p * p / reps)


def test_bernoulli_rows_rates_and_order() -> None:
    rng = np.random.default_rng(3)
    rates = np.array([0.0, 0.02, 0.05, 0.3, 0.7, 1.0, 0.5])
    lengths = np.array([100, 5000, 4000, 300, 200, 9, 0])
    reps = 40
    counts = np.zeros(rates.size)
    for _ in range(reps):
        rows, cols = bernoulli_rows(rates, lengths, rng)
        key = rows * 10_000 + cols
        assert np.all(np.diff(key) > 0)  # sorted by (row, col), no repeats
        assert np.all(cols < lengths[rows])
        counts += np.bincount(rows, minlength=rates.size)
    expected = reps * rates * lengths
    sd = np.sqrt(reps * lengths * rates * (1 - rates))
    assert np.all(np.abs(counts - expected) <= 5 * sd + 1e-9)
    assert counts[5] == reps * 9 and counts[0] == 0


def test_sample_distinct_and_excluding() -> None:
    rng = np.random.default_rng(4)
    s = sample_distinct(10**13, 1000, rng)
    assert s.size == 1000 and np.all(np.diff(s) > 0)
    excluded = np.array([0, 1, 2, 5, 9], dtype=np.int64)
    freq = np.zeros(10)
    for _ in range(2000):
        x = sample_distinct_excluding(10, 3, excluded, rng)
        assert x.size == 3 and np.unique(x).size == 3
        freq[x] += 1
    assert np.all(freq[excluded] == 0)
    allowed = np.setdiff1d(np.arange(10), excluded)
    # each allowed position is chosen with probability 3/5
    assert np.all(np.abs(freq[allowed] / 2000 - 0.6) < 0.05)
    with pytest.raises(ConfigError):
        sample_distinct(5, 6, rng)


def test_pairs_with_sum_at_least_matches_brute_force() -> None:
    rng = np.random.default_rng(6)
    vals = np.round(rng.normal(size=40), 1)  # ties on purpose
    for thr in (-1.0, 0.0, 0.3, 2.5):
        iu, ju = np.triu_indices(40, 1)
        brute = {(a, b) for a, b in zip(iu, ju, strict=True) if vals[a] + vals[b] >= thr}
        i, j = pairs_with_sum_at_least(vals, thr)
        assert set(zip(i.tolist(), j.tolist(), strict=True)) == brute
        assert abs(count_pairs_with_sum_at_least(vals, thr) - len(brute)) <= 10  # ties
    smooth = rng.normal(size=60)
    for thr in (-0.5, 0.7):
        brute = int(np.sum(np.triu(smooth[:, None] + smooth[None, :] >= thr, 1)))
        assert count_pairs_with_sum_at_least(smooth, thr) == brute
    with pytest.raises(ConfigError):
        pairs_with_sum_at_least(vals, -10.0, max_pairs=5)


@pytest.mark.parametrize("chunk", [3, 1 << 22])
def test_undirected_counts_matches_unique_counts_of_the_unordered_keys(chunk: int) -> None:
    n = 40
    rng = np.random.default_rng(3)
    keys = np.sort(rng.choice(n * (n - 1), size=700, replace=False))
    user, neighbor = index_to_ordered_pair(keys, n)
    got_keys, got_counts = undirected_counts(user, neighbor, n, chunk=chunk)
    want_keys, want_counts = unique_counts(
        pair_to_index(np.minimum(user, neighbor), np.maximum(user, neighbor), n))
    assert got_counts.dtype == np.int8 and set(got_counts.tolist()) == {1, 2}
    np.testing.assert_array_equal(got_keys, want_keys)
    np.testing.assert_array_equal(got_counts, want_counts)
    empty = np.zeros(0, np.int64)
    assert undirected_counts(empty, empty, n)[0].size == 0
    with pytest.raises(GraphError, match="duplicate"):  # (0, 1) reported three times
        undirected_counts(np.array([0, 1, 0]), np.array([1, 0, 1]), n)


def test_unique_counts_and_sort_pairs() -> None:
    vals, counts = unique_counts(np.array([5, 1, 5, 3, 5, 1]))
    assert vals.tolist() == [1, 3, 5] and counts.tolist() == [2, 1, 3]
    assert unique_counts(np.zeros(0, np.int64))[0].size == 0
    r, c, w = sort_pairs(np.array([2, 0, 2, 1]), np.array([0, 3, 1, 1]), 4,
                         np.array([0.1, 0.2, 0.3, 0.4]))
    assert r.tolist() == [0, 1, 2, 2] and c.tolist() == [3, 1, 0, 1]
    assert w is not None and w.tolist() == [0.2, 0.4, 0.1, 0.3]
