"""Top-T server for Laplace-noised adjacency bits (L-DpGCN as run by Blink, CCS 2023; DPRR's
LocalLap baseline).

The server scores every unordered pair by Z_ij = a_ij + a_ji (both users' noisy bits) and
keeps the T pairs with the largest scores as an unweighted undirected graph, with T the
estimated number of edges:

* LocalLap: T = round(sum_i d~_i / 2) from the separately privatized degrees;
* L-DpGCN: T = round(sum_{i != j} a_ij / 2) (Blink's ``round(priv_adj.sum() / 2)``).

T is clipped to [0, n (n - 1) / 2]. The sparse path works on the candidates of
:class:`dpgl.mechanisms.lap.LapCandidates` and is exact (see there); :func:`top_t_dense` is
the dense reference used by the tests.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpgl.errors import ConfigError
from dpgl.graph.pairs import index_to_pair, num_pairs
from dpgl.mechanisms.lap import LapCandidates, LocalLap
from dpgl.mechanisms.neighbor_list import check_num_nodes

__all__ = ["simulate_top_t", "top_t_dense", "top_t_keys", "top_t_reports"]


def top_t_keys(keys: np.ndarray, values: np.ndarray, t: int) -> np.ndarray:
    """The keys of the ``t`` largest values (ties have probability 0 for continuous noise;
    broken by position), sorted."""
    t = int(t)
    if t <= 0:
        return np.zeros(0, np.int64)
    if t > values.size:
        raise ConfigError(f"top-T needs {t} candidates, only {values.size} given")
    if t == values.size:
        return np.sort(keys)
    idx = np.argpartition(-values, t - 1)[:t]
    return np.sort(keys[idx])


def _clip_t(value: float, n: int) -> int:
    return int(min(max(round(value), 0), num_pairs(n)))


def top_t_dense(reports: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
    """Reference: top-T pairs (u < v) of Z = R + R^T over the upper triangle of the dense
    n x n report matrix R (row i = user i's noisy bits). Tests only."""
    r = np.asarray(reports, dtype=np.float64)
    n = r.shape[0]
    if r.shape != (n, n) or n > 3000:
        raise ConfigError("top_t_dense needs a square matrix with n <= 3000")
    iu, ju = np.triu_indices(n, 1)
    z = (r + r.T)[iu, ju]
    keys = top_t_keys(np.arange(z.size, dtype=np.int64), z, _clip_t(t, n))
    return index_to_pair(keys, n)


def top_t_reports(reports: np.ndarray, noisy_degrees: np.ndarray | None, *,
                  block: int = 256) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The top-T server on collected reports: the rows of ``reports`` (n x n, row i = user
    i's noisy bits) scored pairwise by Z_ij = R_ij + R_ji, T from the noisy degrees (LocalLap)
    or from the reports' sum (L-DpGCN). Dense by nature (every user sends n values); the
    pair scores are streamed by row blocks, so the working memory beyond R is
    O(block n + T). Same selection as :func:`top_t_dense`."""
    r = np.asarray(reports, dtype=np.float64)
    n = r.shape[0]
    if r.ndim != 2 or r.shape != (n, n):
        raise ConfigError(f"top-T needs an n x n report matrix, got shape {r.shape}")
    t = estimate_t_dense(r, noisy_degrees)
    best_k = np.zeros(0, np.int64)
    best_z = np.zeros(0, np.float64)
    for start in range(0, n, block):
        stop = min(start + block, n)
        z = r[start:stop] + r[:, start:stop].T              # rows start..stop-1, all columns
        ii, jj = np.nonzero(np.arange(start, stop)[:, None] < np.arange(n)[None, :])
        keys = (ii + start).astype(np.int64) * n + jj
        vals = z[ii, jj]
        best_k = np.concatenate([best_k, keys])
        best_z = np.concatenate([best_z, vals])
        if best_z.size > 2 * max(t, 1):
            idx = np.argpartition(-best_z, t - 1)[:t] if t > 0 else np.zeros(0, np.int64)
            best_k, best_z = best_k[idx], best_z[idx]
    chosen = top_t_keys(best_k, best_z, t)
    a, b = chosen // n, chosen % n
    return a, b, {"T": t, "candidates": int(n * (n - 1) // 2)}


def estimate_t_dense(reports: np.ndarray, noisy_degrees: np.ndarray | None) -> int:
    """T from dense reports: round(sum d~ / 2) if degrees are given, else round(sum R / 2)."""
    n = reports.shape[0]
    total = np.sum(noisy_degrees) if noisy_degrees is not None else np.sum(reports)
    return _clip_t(float(total) / 2.0, n)


def simulate_top_t(mechanism: LocalLap, u: np.ndarray, v: np.ndarray, num_nodes: int,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Users' Laplace reports + the top-T server, without the dense reports.

    Returns the selected pairs (a < b) and info (T, number of candidates, cutoff).
    """
    n = check_num_nodes(num_nodes)
    cand: LapCandidates = mechanism.candidates(u, v, n, rng)
    if cand.noisy_degrees is not None:
        t = _clip_t(float(cand.noisy_degrees.sum()) / 2.0, n)
        cand.ensure(t)
    else:
        cand.ensure(cand.t_upper_bound())
        t = _clip_t(cand.noisy_total() / 2.0, n)
        cand.ensure(t)  # only if T exceeded its 8-sigma bound (probability < 1e-15)
    keys = top_t_keys(cand.keys, cand.values, t)
    a, b = index_to_pair(keys, n)
    info = {"T": t, "candidates": int(cand.keys.size), "cutoff": float(cand.cutoff)}
    return a, b, info
