"""Node-pair indexing and sparse sampling over huge pair ranges.

A graph on ``n`` nodes has ``n (n - 1) / 2`` unordered pairs and ``n (n - 1)`` ordered pairs
(no self pairs). Randomized response touches every pair, but its *output* is sparse when eps
is large, so the edge-LDP simulations draw only the pairs that flip: a Bernoulli(p) process
over a pair range is sampled by geometric gaps (the gap to the next success of independent
Bernoulli(p) trials is Geometric(p)), which costs O(number of successes) instead of O(range).

Linear indices (all int64; exact for ``n`` up to 10^7, where the largest index is ~5e13):

* upper triangle, row-major: pair (i, j), i < j, has index
  ``k = i n - i (i + 1) / 2 + (j - i - 1)``;
* ordered pairs, row-major without the diagonal: (i, j), i != j, has index
  ``k = i (n - 1) + j - [j > i]``.
"""

from __future__ import annotations

import math

import numpy as np

from dpgl.errors import ConfigError, GraphError

__all__ = [
    "bernoulli_positions",
    "bernoulli_rows",
    "count_pairs_with_sum_at_least",
    "index_to_ordered_pair",
    "index_to_pair",
    "num_ordered_pairs",
    "num_pairs",
    "ordered_pair_to_index",
    "pair_to_index",
    "pairs_with_sum_at_least",
    "repeat_into",
    "sample_distinct",
    "sample_distinct_excluding",
    "sort_pairs",
    "split_sorted_keys",
    "undirected_counts",
    "unique_counts",
]

MAX_NODES = 10**7


def _check_n(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise GraphError(f"number of nodes must be a non-negative integer, got {n!r}")
    if n > MAX_NODES:
        raise GraphError(f"number of nodes must be at most {MAX_NODES} for int64 pair indices, "
                         f"got {n}")
    return int(n)


def num_pairs(n: int) -> int:
    """Number of unordered pairs {i, j}, i != j: n (n - 1) / 2."""
    n = _check_n(n)
    return n * (n - 1) // 2


def num_ordered_pairs(n: int) -> int:
    """Number of ordered pairs (i, j), i != j: n (n - 1)."""
    n = _check_n(n)
    return n * (n - 1)


def _row_start(i: np.ndarray, n: int) -> np.ndarray:
    """Linear index of (i, i + 1) in the upper triangle."""
    return i * n - (i * (i + 1)) // 2


def pair_to_index(i: object, j: object, n: int) -> np.ndarray:
    """Upper-triangle linear index of pairs (i, j) with 0 <= i < j < n (vectorized)."""
    n = _check_n(n)
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    if i.size and (np.any(i < 0) or np.any(j >= n) or np.any(i >= j)):
        raise GraphError(f"pair_to_index needs 0 <= i < j < {n}")
    return _row_start(i, n) + (j - i - 1)


def _is_sorted(k: np.ndarray) -> bool:
    """Whether a 1-D array is non-decreasing (one vectorized pass)."""
    return k.ndim == 1 and bool(np.all(k[1:] >= k[:-1]))


def repeat_into(out: np.ndarray, values: np.ndarray, counts: np.ndarray,
                step: int = 0) -> np.ndarray:
    """Write ``np.repeat(values, counts) + step * np.arange(out.size)`` into the int64 array
    ``out`` (``counts.sum() == out.size``) without a temporary of that size: ``out`` is filled
    with the increments (``step`` inside a run, the jump between runs at each run start) and
    summed in place. Exact integer arithmetic; returns ``out``."""
    if out.size == 0:
        return out
    nz = np.flatnonzero(counts)
    starts = (np.cumsum(counts) - counts)[nz]
    out.fill(step)
    out[starts] = np.diff(np.asarray(values, dtype=np.int64)[nz], prepend=0) + step
    out[0] -= step
    np.cumsum(out, out=out)
    return out


def _sorted_index_to_pair(k: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`index_to_pair` for sorted in-range indices: the row of every index comes from
    searching the n row starts in ``k`` (O(n log |k|)) and repeating the row ids, with no
    per-index square root and no per-index search (exact integer arithmetic)."""
    rows = np.arange(n, dtype=np.int64)
    starts = _row_start(rows, n)
    counts = np.diff(np.searchsorted(k, starts, side="left"), append=k.size)
    i = np.repeat(rows, counts)
    j = repeat_into(np.empty(k.size, dtype=np.int64), starts - rows - 1, counts)
    np.subtract(k, j, out=j)  # j = k - start(i) + i + 1
    return i, j


def index_to_pair(k: object, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`pair_to_index`: (i, j) with i < j for upper-triangle indices ``k``.

    Sorted 1-D input with at least ``n`` indices (the usual case: sampled or deduplicated
    keys) takes an exact search-free path; any other input is decoded per index.
    """
    n = _check_n(n)
    k = np.asarray(k, dtype=np.int64)
    total = n * (n - 1) // 2
    if k.size >= max(n, 1) and _is_sorted(k):
        if k[0] < 0 or k[-1] >= total:
            raise GraphError(f"pair index out of range [0, {total})")
        return _sorted_index_to_pair(k, n)
    if k.size and (np.any(k < 0) or np.any(k >= total)):
        raise GraphError(f"pair index out of range [0, {total})")
    # Row i is the largest i with start(i) <= k; start(i) = i (2n - i - 1) / 2.
    m = 2.0 * n - 1.0
    disc = np.maximum(m * m - 8.0 * k.astype(np.float64), 0.0)
    i = np.floor((m - np.sqrt(disc)) / 2.0).astype(np.int64)
    i = np.clip(i, 0, max(n - 2, 0))
    # Float rounding can put i off by one: correct in both directions.
    for _ in range(2):
        i = np.where(_row_start(i + 1, n) <= k, i + 1, i)
        i = np.where(_row_start(i, n) > k, i - 1, i)
    j = k - _row_start(i, n) + i + 1
    return i, j


def ordered_pair_to_index(i: object, j: object, n: int) -> np.ndarray:
    """Linear index of ordered pairs (i, j), i != j, row-major without the diagonal."""
    n = _check_n(n)
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    if i.size and (np.any(i < 0) or np.any(i >= n) or np.any(j < 0) or np.any(j >= n)
                   or np.any(i == j)):
        raise GraphError(f"ordered_pair_to_index needs 0 <= i, j < {n} and i != j")
    return i * (n - 1) + j - (j > i)


def index_to_ordered_pair(k: object, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`ordered_pair_to_index`."""
    n = _check_n(n)
    k = np.asarray(k, dtype=np.int64)
    total = n * (n - 1)
    if k.size and (np.any(k < 0) or np.any(k >= total)):
        raise GraphError(f"ordered pair index out of range [0, {total})")
    i = k // (n - 1) if n > 1 else k
    j = i * (n - 1)  # in place from here: three index arrays at most, not five
    np.subtract(k, j, out=j)
    j += j >= i
    return i, j


def sort_pairs(rows: np.ndarray, cols: np.ndarray, n: int,
               values: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Sort pairs by (row, col) through the int64 key row * n + col (faster than lexsort).

    Returns the sorted rows and cols, and ``values`` permuted alike (or None).
    """
    keys = np.asarray(rows, dtype=np.int64) * int(n) + np.asarray(cols, dtype=np.int64)
    if values is None:
        keys = np.sort(keys)
        return (*split_sorted_keys(keys, int(n)), None)
    order = np.argsort(keys)
    keys = keys[order]
    return (*split_sorted_keys(keys, int(n)), np.asarray(values)[order])


def split_sorted_keys(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(keys // n, keys % n)`` for sorted int64 keys. With non-negative keys and at most
    ``keys.size`` rows, the rows come from searching the row boundaries r n in ``keys`` and
    repeating the row ids (no per-key division); otherwise by division. Same result."""
    if keys.size == 0 or keys[0] < 0 or n <= 0:
        return keys // n, keys % n
    num_rows = int(keys[-1]) // n + 1
    if num_rows > keys.size:
        return keys // n, keys % n
    ids = np.arange(num_rows, dtype=np.int64)
    counts = np.diff(np.searchsorted(keys, ids * n, side="left"), append=keys.size)
    r = np.repeat(ids, counts)
    return r, keys - r * n


def unique_counts(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique values and their counts, by one sort (``np.unique`` in NumPy 2.4 takes a
    hash-based path that was ~25x slower on 10^7 random int64 keys here)."""
    s = np.sort(np.asarray(keys, dtype=np.int64))
    if s.size == 0:
        return s, np.zeros(0, np.int64)
    start = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
    counts = np.diff(np.concatenate((start, [s.size])))
    return s[start], counts


def undirected_counts(user: np.ndarray, neighbor: np.ndarray, n: int, *,
                      chunk: int = 1 << 22) -> tuple[np.ndarray, np.ndarray]:
    """The unordered pairs of directed entries (``user[k]`` reported ``neighbor[k]``; no
    self pairs, no repeated ordered pair): sorted upper-triangle keys and how often each pair
    was reported (int8, 1 or 2), as :func:`unique_counts` of ``pair_to_index(min, max)``
    gives them, in ~10 bytes an entry all told (one int64 key array, sorted and compacted in
    place, and two byte arrays) instead of ~40."""
    n = _check_n(n)
    total = int(np.asarray(user).size)
    keys = np.empty(total, dtype=np.int64)
    for s in range(0, total, chunk):
        a, b = user[s:s + chunk], neighbor[s:s + chunk]
        keys[s:s + chunk] = pair_to_index(np.minimum(a, b), np.maximum(a, b), n)
    keys.sort()
    if total == 0:
        return keys, np.zeros(0, np.int8)
    # first[k]: keys[k] differs from keys[k - 1] (the pair's first report)
    first = np.empty(total, dtype=bool)
    first[0] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    if total > 2 and not bool(np.all(first[1:] | first[:-1])):
        raise GraphError("reports contain duplicate pairs")
    counts = np.full(total, 2, dtype=np.int8)
    counts[:-1] -= first[1:]
    counts[-1] = 1
    # keep the first entry of every pair, compacting both arrays in place a chunk at a time
    # (the write position never passes the read position)
    kept = 0
    for s in range(0, total, chunk):
        m = first[s:s + chunk]
        part_k, part_c = keys[s:s + chunk][m], counts[s:s + chunk][m]
        keys[kept:kept + part_k.size] = part_k
        counts[kept:kept + part_k.size] = part_c
        kept += part_k.size
    del first, part_k, part_c, m
    keys.resize(kept, refcheck=False)  # shrinks the buffers: no copy, no views left
    counts.resize(kept, refcheck=False)
    return keys, counts


def _check_generator(rng: object) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ConfigError(f"rng must be a numpy.random.Generator (see dpgl.rng.make_rng), "
                          f"got {type(rng).__name__}")
    return rng


def _geometric_failures(rng: np.random.Generator, inv_lambda: np.ndarray | float, size: int,
                        cap: np.ndarray | float) -> np.ndarray:
    """Geometric numbers of failures before a success, as float64 capped at ``cap``.

    ``floor(E / lambda)`` with E ~ Exp(1) and lambda = -log(1 - p) is exactly Geometric(p)
    (P[floor(E / lambda) >= k] = e^(-k lambda) = (1 - p)^k); it is ~4x faster than
    ``Generator.geometric``. Capping keeps sums small and changes nothing below the cap.
    """
    e = rng.standard_exponential(size)
    e *= inv_lambda
    np.floor(e, out=e)
    np.minimum(e, cap, out=e)
    return e


def _inv_lambda(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(p >= 1.0, 0.0, -1.0 / np.log1p(-np.minimum(p, 1.0)))


def bernoulli_rows(rates: object, lengths: object, rng: np.random.Generator, *,
                   sort: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the successes of independent Bernoulli trials, row by row.

    Row ``r`` has ``lengths[r]`` trials with success probability ``rates[r]``. Returns
    ``(rows, cols)`` (int64) listing every success, sorted by row then column unless
    ``sort=False`` (then sorted within each rate class only).

    Exact and O(successes + rows): rows are grouped into classes whose rates lie within a
    factor of 2; each class is one concatenated range sampled at the class's largest rate
    with geometric gaps (:func:`bernoulli_positions`), then every success is kept with
    probability rate / class_max >= 1/2 (thinning an iid Bernoulli(a) process with
    independent Bernoulli(r / a) coins gives an iid Bernoulli(r) process).
    """
    rng = _check_generator(rng)
    rates = np.asarray(rates, dtype=np.float64).ravel()
    lengths = np.asarray(lengths, dtype=np.int64).ravel()
    if rates.shape != lengths.shape:
        raise ConfigError("rates and lengths must have the same length")
    if rates.size and (np.any(~np.isfinite(rates)) or np.any(rates < 0) or np.any(rates > 1)):
        raise ConfigError("Bernoulli rates must lie in [0, 1]")
    if lengths.size and np.any(lengths < 0):
        raise ConfigError("row lengths must be >= 0")
    active = np.flatnonzero((rates > 0) & (lengths > 0))
    if active.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    classes = np.floor(np.log2(rates[active])).astype(np.int64)
    out_rows: list[np.ndarray] = []
    out_cols: list[np.ndarray] = []
    for c in np.unique(classes):
        rows_c = active[classes == c]
        rate_c = rates[rows_c]
        len_c = lengths[rows_c]
        top = float(rate_c.max())
        ends = np.cumsum(len_c)
        g = bernoulli_positions(int(ends[-1]), top, rng)
        if np.all(len_c == len_c[0]):
            ridx = g // len_c[0]
        else:
            ridx = np.searchsorted(ends, g, side="right")
        cols = g - (ends[ridx] - len_c[ridx])
        rows = rows_c[ridx]
        if np.any(rate_c < top):
            keep = rng.random(g.size) * top < rate_c[ridx]
            rows, cols = rows[keep], cols[keep]
        out_rows.append(rows)
        out_cols.append(cols)
    rows = np.concatenate(out_rows)
    cols = np.concatenate(out_cols)
    if sort and len(out_rows) > 1:
        rows, cols, _ = sort_pairs(rows, cols, max(int(lengths.max()), 1))
    return rows, cols


def bernoulli_positions(total: int, p: float, rng: np.random.Generator, *,
                        chunk: int = 1 << 23) -> np.ndarray:
    """Sorted positions in ``[0, total)`` of the successes of ``total`` Bernoulli(p) trials.

    Geometric gaps drawn in chunks of ``chunk`` (exact; O(number of successes)).
    """
    rng = _check_generator(rng)
    total = int(total)
    p = float(p)
    if total < 0:
        raise ConfigError(f"total must be >= 0, got {total}")
    if not (0.0 <= p <= 1.0):
        raise ConfigError(f"Bernoulli rate must lie in [0, 1], got {p}")
    if total == 0 or p == 0.0:
        return np.zeros(0, np.int64)
    inv = float(_inv_lambda(np.array([p]))[0])
    # One output buffer sized for the expected successes plus 6 standard deviations (grown in
    # the rare case it is short) and one reused buffer for the exponential draws: the draws
    # and the positions are those of independent chunks concatenated, without the copies.
    mean_all = total * p
    out = np.empty(min(total + 1, math.ceil(mean_all + 6.0 * math.sqrt(mean_all) + 16.0)),
                   dtype=np.int64)
    draws: np.ndarray | None = None
    filled = 0
    next_pos = 0  # first position not yet decided
    while next_pos < total:
        remaining = total - next_pos
        mean = remaining * p
        size = int(min(chunk, max(16, math.ceil(mean + 3.0 * math.sqrt(mean) + 3.0))))
        size = min(size, remaining + 1)
        # Geometric gaps floor(E / lambda) + 1 (see _geometric_failures), in few passes.
        if draws is None or draws.size < size:
            draws = np.empty(size)
        e = draws[:size]
        rng.standard_exponential(out=e)
        e *= inv
        if inv * 64.0 > remaining:  # rare huge gaps: cap them so int64 sums cannot overflow
            np.minimum(e, float(remaining), out=e)
        if out.size < filled + size:
            grown = np.empty(max(filled + size, out.size + out.size // 4), dtype=np.int64)
            grown[:filled] = out[:filled]
            out = grown
        pos = out[filled:filled + size]
        np.copyto(pos, e, casting="unsafe")  # truncation == floor for e >= 0
        pos += 1
        np.cumsum(pos, out=pos)
        pos += next_pos - 1
        stop = int(np.searchsorted(pos, total, side="left"))
        filled += stop
        if stop < size:
            break
        next_pos = int(pos[-1]) + 1
    return out[:filled]


def sample_distinct(total: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` distinct positions drawn uniformly from ``[0, total)``, returned sorted.

    Uses NumPy's sampler without replacement (Floyd's algorithm with a hash set when
    ``k`` is small relative to ``total``), so the cost is O(k log k) for a huge ``total``.
    """
    rng = _check_generator(rng)
    total, k = int(total), int(k)
    if k < 0 or k > total:
        raise ConfigError(f"cannot draw {k} distinct positions from {total}")
    if k == 0:
        return np.zeros(0, np.int64)
    if k > total // 2 and total > 50_000_000:
        raise ConfigError(f"drawing {k} of {total} positions is a dense output; refusing")
    return np.sort(rng.choice(total, size=k, replace=False).astype(np.int64))


def sample_distinct_excluding(total: int, k: int, excluded: np.ndarray,
                              rng: np.random.Generator) -> np.ndarray:
    """``k`` distinct positions uniform over ``[0, total)`` minus the sorted unique ``excluded``.

    Draws ranks among the allowed positions and maps rank r to the r-th allowed position:
    ``r + #{s : excluded[s] - s <= r}``.
    """
    excluded = np.asarray(excluded, dtype=np.int64)
    ranks = sample_distinct(int(total) - excluded.size, k, rng)
    shifted = excluded - np.arange(excluded.size, dtype=np.int64)
    return ranks + np.searchsorted(shifted, ranks, side="right")


def count_pairs_with_sum_at_least(values: np.ndarray, threshold: float, *,
                                  sorted_values: np.ndarray | None = None) -> int:
    """Number of unordered pairs i < j with ``values[i] + values[j] >= threshold``.

    Up to floating-point rounding for sums equal to the threshold. O(n log n) by sorting:
    for each position a in sorted order, the partners b > a form a suffix of the sorted
    array.
    """
    vs = np.sort(values) if sorted_values is None else sorted_values
    n = vs.size
    if n < 2:
        return 0
    lo = np.searchsorted(vs, threshold - vs, side="left")
    lo = np.maximum(lo, np.arange(1, n + 1))
    return int(np.sum(n - lo))


def pairs_with_sum_at_least(values: np.ndarray, threshold: float, *,
                            max_pairs: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """All unordered pairs (i, j), i < j, with ``values[i] + values[j] >= threshold``.

    Cost O(n log n + output). The comparison is the floating-point ``values[i] + values[j]
    >= threshold`` itself: candidates are found with a small slack and then filtered exactly.
    Raises :class:`ConfigError` if there are more than ``max_pairs`` candidates.
    """
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    vs = values[order]
    n = vs.size
    if n < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    slack = 1e-12 * (abs(threshold) + float(np.max(np.abs(vs)))) if np.isfinite(threshold) \
        else 0.0
    lo = np.searchsorted(vs, (threshold - slack) - vs, side="left")
    lo = np.maximum(lo, np.arange(1, n + 1))
    counts = (n - lo).astype(np.int64)
    total = int(counts.sum())
    if max_pairs is not None and total > max_pairs:
        raise ConfigError(f"{total} pairs pass the threshold, more than max_pairs={max_pairs}")
    a = np.repeat(np.arange(n, dtype=np.int64), counts)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    b = np.repeat(lo.astype(np.int64), counts) + offsets
    i, j = order[a], order[b]
    exact = values[i] + values[j] >= threshold
    i, j = i[exact], j[exact]
    return np.minimum(i, j), np.maximum(i, j)
