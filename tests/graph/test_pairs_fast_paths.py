"""The search-free fast paths of the pair utilities give exactly what the per-element code gave
(issue #13 item 7): decoding of sorted pair indices, row splitting of sorted keys, repeating
into a buffer, the chunked Bernoulli sampler's buffers, both directions of sorted pairs and
the sorted XOR. Each is compared with the code it replaced (tests/_speed_reference.py)."""

from __future__ import annotations

import numpy as np
import pytest

from _speed_reference import (
    reference_bernoulli_positions,
    reference_both_directions,
    reference_pair_decode,
    reference_xor,
)
from dpgl.errors import GraphError
from dpgl.graph.pairs import (
    bernoulli_positions,
    index_to_pair,
    num_pairs,
    pair_to_index,
    repeat_into,
    split_sorted_keys,
)
from dpgl.mechanisms.neighbor_list import edge_index_from_pairs, neighbor_csr
from dpgl.mechanisms.rr import xor_sorted


def sorted_pairs(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    keys = np.unique(rng.integers(0, num_pairs(n), m))
    return index_to_pair(keys, n)


# --------------------------------------------------------------------------- decoding


@pytest.mark.parametrize("n", [2, 3, 4, 17, 300, 5000])
def test_sorted_index_decoding_equals_per_index_decoding(n: int) -> None:
    rng = np.random.default_rng(n)
    total = num_pairs(n)
    for size in (n, 3 * n, min(total, 20 * n)):
        keys = np.sort(rng.integers(0, total, size))
        keys[0], keys[-1] = 0, total - 1  # first and last pair, repeated keys allowed
        keys.sort()
        i, j = index_to_pair(keys, n)  # sorted, size >= n: the fast path
        ri, rj = reference_pair_decode(keys, n)
        assert np.array_equal(i, ri) and np.array_equal(j, rj)
        perm = rng.permutation(keys.size)
        ui, uj = index_to_pair(keys[perm], n)  # unsorted: the per-index path
        assert np.array_equal(ui, ri[perm]) and np.array_equal(uj, rj[perm])
        assert np.array_equal(pair_to_index(i, j, n), keys)
    if n >= 3:
        iu, ju = np.triu_indices(n, 1)
        i, j = index_to_pair(np.arange(total), n)
        assert np.array_equal(i, iu) and np.array_equal(j, ju)


def test_sorted_index_decoding_range_errors() -> None:
    n = 10
    with pytest.raises(GraphError, match="out of range"):
        index_to_pair(np.arange(num_pairs(n) - 5, num_pairs(n) + 6), n)
    with pytest.raises(GraphError, match="out of range"):
        index_to_pair(np.arange(-1, 20), n)


def test_split_sorted_keys_equals_division() -> None:
    rng = np.random.default_rng(1)
    for n, size, hi in ((7, 100, 49), (1000, 50, 10**6), (3, 0, 9), (50, 5000, 2500)):
        keys = np.sort(rng.integers(0, hi, size))
        r, c = split_sorted_keys(keys, n)
        assert np.array_equal(r, keys // n) and np.array_equal(c, keys % n)
    keys = np.array([-7, -1, 3, 12])  # negative keys: division path
    r, c = split_sorted_keys(keys, 5)
    assert np.array_equal(r, keys // 5) and np.array_equal(c, keys % 5)


@pytest.mark.parametrize("step", [0, 1, 3])
def test_repeat_into_equals_repeat_plus_arange(step: int) -> None:
    rng = np.random.default_rng(step)
    for _ in range(50):
        counts = rng.integers(0, 4, rng.integers(1, 12)) * rng.integers(0, 2, 1)
        values = rng.integers(-50, 50, counts.size)
        ref = np.repeat(values, counts) + step * np.arange(counts.sum())
        got = repeat_into(np.empty(int(counts.sum()), np.int64), values, counts, step)
        assert np.array_equal(got, ref)


# --------------------------------------------------------------------------- sampling


@pytest.mark.parametrize(("total", "p"), [(10, 0.5), (5, 1.0), (1000, 0.001), (10**6, 0.3),
                                          (10**7, 1e-6), (5 * 10**13, 1e-12),
                                          (10**5, 0.0), (100, 1e-9), (0, 0.5)])
@pytest.mark.parametrize("chunk", [1 << 23, 1000, 17])
def test_bernoulli_positions_same_draws_as_before(total: int, p: float, chunk: int) -> None:
    """The buffered sampler returns the same positions for the same seed and leaves the
    generator in the same state as the per-chunk arrays did."""
    if total > 10**6 and chunk < 1000:
        pytest.skip("too many chunks")
    a, b = np.random.default_rng(7), np.random.default_rng(7)
    got = bernoulli_positions(total, p, a, chunk=chunk)
    ref = reference_bernoulli_positions(total, p, b, chunk=chunk)
    assert got.dtype == np.int64 and np.array_equal(got, ref)
    assert a.random() == b.random()


def test_bernoulli_positions_buffer_growth() -> None:
    """Many chunks whose positions overshoot the first estimate (the buffer grows)."""
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    got = bernoulli_positions(200_000, 0.9, a, chunk=64)
    assert np.array_equal(got, reference_bernoulli_positions(200_000, 0.9, b, chunk=64))


def test_xor_sorted_equals_set_symmetric_difference() -> None:
    rng = np.random.default_rng(0)
    for _ in range(2000):
        hi = int(rng.integers(1, 60))
        a = np.unique(rng.integers(0, hi, rng.integers(0, 30))).astype(np.int64)
        b = np.unique(rng.integers(0, hi, rng.integers(0, 30))).astype(np.int64)
        got = xor_sorted(a, b)
        assert got.dtype == np.int64 and np.array_equal(got, reference_xor(a, b))


# --------------------------------------------------------------------------- both directions


@pytest.mark.parametrize(("n", "m"), [(2, 1), (5, 4), (60, 300), (2000, 50_000),
                                      (70_000, 3000)])
@pytest.mark.parametrize("weighted", [False, True])
def test_edge_index_of_sorted_pairs_equals_sorting(n: int, m: int, weighted: bool) -> None:
    u, v = sorted_pairs(n, m, seed=n + m)
    w = np.random.default_rng(1).random(u.size) if weighted else None
    ei, ew = edge_index_from_pairs(u, v, w)  # sorted input: no sort of the 2E entries
    ref, rw = reference_both_directions(u, v, w)
    assert np.array_equal(ei.numpy(), ref)
    if weighted:
        assert np.array_equal(ew.numpy(), rw.astype(np.float32))
    else:
        assert ew is None
    # unsorted input (the sorting path) gives the same
    perm = np.random.default_rng(2).permutation(u.size)
    ei2, ew2 = edge_index_from_pairs(u[perm], v[perm], None if w is None else w[perm])
    assert np.array_equal(ei2.numpy(), ref)
    if weighted:
        assert np.array_equal(ew2.numpy(), ew.numpy())
    indptr, cols = neighbor_csr(u, v, max(n, int(v.max()) + 1))
    assert np.array_equal(cols, ref[1])
    assert np.array_equal(np.diff(indptr), np.bincount(ref[0], minlength=indptr.size - 1))


def test_edge_index_of_pairs_empty_and_duplicates() -> None:
    ei, ew = edge_index_from_pairs(np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert ei.shape == (2, 0) and ew is None
    u, v = np.array([0, 0, 1]), np.array([1, 1, 2])  # a repeated pair: the sorting path
    ref, _ = reference_both_directions(u, v, None)
    assert np.array_equal(edge_index_from_pairs(u, v)[0].numpy(), ref)
