"""Blink server side: beta-model prior from noisy degrees, Bayesian posterior per pair, and
the Hard / Soft / Hybrid graph estimates (Zhu, Tan & Xiao, CCS 2023, Algorithms 2 and 3).

Notation: user i reported the bit a_ij (RR with eps_a) and the degree d~_i (Laplace with
eps_d); x_ij = a_ij + a_ji in {0, 1, 2}.

* Degrees are clipped to [1, n - 2] (otherwise the beta-model MLE does not exist).
* Prior (Algorithm 2): beta model P[A_ij = 1] = sigmoid(beta_i + beta_j), beta the MLE for
  degrees d~, i.e. the fixed point of Chatterjee, Diaconis & Sly (2011)
  phi_i(beta) = log d_i - log sum_{j != i} 1 / (e^{-beta_j} + e^{beta_i}).
  Since 1 / (e^{-beta_j} + e^{beta_i}) = e^{-beta_i} sigmoid(beta_i + beta_j), the fixed
  point is exactly the moment equation sum_{j != i} sigmoid(beta_i + beta_j) = d_i, and
  phi(beta) = beta + log d - log S(beta) with S_i the row sums. We iterate the *damped* map
  beta <- beta + damping (log d - log S(beta)) (damping 1/2 by default) to a tolerance: same
  fixed point. The undamped map of the paper converges slowly on sparse graphs: there
  S_i ~ e^{beta_i} A with A = sum_j e^{beta_j}, one undamped step maps A to about 2m / A, so
  the overall scale has an eigenvalue close to -1 (measured on a 3000-node power-law graph:
  165 undamped iterations vs 61 damped to reach 1e-10).
* Posterior (Algorithm 3): with flip probability f = 1 / (1 + e^{eps_a}) the likelihood ratio
  P[x | edge] / P[x | no edge] is f^2 / (1 - f)^2 = e^{-2 eps_a} for x = 0, 1 for x = 1 and
  e^{2 eps_a} for x = 2, so P_ij = sigmoid(beta_i + beta_j + 2 eps_a (x_ij - 1)).
* Hard: pairs with P_ij > 1/2 (unweighted). Hybrid: the top floor(||P||_1) entries of the
  (symmetric, zero-diagonal) matrix P, weighted by P (ties at the threshold kept, as in
  Blink's ``>=``). Soft: every P_ij as a weight (dense by definition).

No n x n memory (the argument):

* Row sums S_i(beta) = sum_{j != i} sigmoid(beta_i + beta_j + c) for all i in O(K n log n):
  sort beta; for each i the partners split into three ranges of the sorted order: u =
  beta_i + beta_j + c <= -T (a prefix), u >= T (a suffix), |u| < T (a band, enumerated).
  On the prefix sigmoid(u) = sum_{k >= 1} (-1)^{k+1} e^{k u}, and sum_j e^{k u} =
  e^{k (beta_i + c)} * prefix_sum(e^{k beta_j}); on the suffix use 1 - sigmoid(-u). The
  alternating series truncated after K terms errs by at most e^{-(K+1) T} per pair, and K is
  chosen so that (n - 1) e^{-(K+1) T} <= ``tol`` (1e-12). The band holds the pairs with
  prior in (sigmoid(-T), sigmoid(T)) — hub-hub pairs, few on a sparse graph. This is the
  default at every size: it agrees with the dense O(n^2) sums to ~1e-15 relative (the
  beta fits agree to ~1e-14 on Cora, and the Hard / Hybrid edge sets are identical) and is
  ~50x faster on Cora; the dense sums remain the reference (``method="dense"``) and are used
  by ``"auto"`` only when the band holds most pairs (a dense graph: both are O(n^2) then).
* ||P||_1 = sum over reported pairs of (P - P0) + sum over all pairs of P0, with
  P0 = sigmoid(beta_i + beta_j - 2 eps_a) the posterior of an unreported pair: the second sum
  is (1/2) sum_i S_i with shift c = -2 eps_a.
* Unreported pairs (x = 0) can enter Hard only if beta_i + beta_j > 2 eps_a, and enter Hybrid
  or Soft only if beta_i + beta_j >= logit(threshold) + 2 eps_a: the pairs with a large
  beta-sum are enumerated from the sorted betas in O(n log n + output); every other
  unreported pair is provably below the threshold. So Hard and Hybrid are exact.
* Soft beyond ``exact_max_n`` nodes keeps the pairs with P >= floor, the floor chosen so that
  the dropped mass is at most ``mass_tol * ||P||_1``: the dropped unreported mass is bounded by
  e^{-2 eps_a} sum_{beta_i + beta_j < c} e^{beta_i} e^{beta_j} (sigmoid(x) <= e^x; prefix
  sums over the sorted betas), and the exact dropped mass (||P||_1 minus the kept mass) is
  reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from scipy import special

from dpgl.errors import ConfigError, GraphError, unknown_name
from dpgl.graph.pairs import (
    count_pairs_with_sum_at_least,
    index_to_pair,
    pair_to_index,
    pairs_with_sum_at_least,
    sort_pairs,
    undirected_counts,
)
from dpgl.mechanisms.neighbor_list import check_num_nodes, edge_index_from_pairs
from dpgl.mechanisms.rr import DirectedReports
from dpgl.privacy import check_epsilon

__all__ = [
    "BetaFit",
    "BlinkEstimate",
    "BlinkServer",
    "clip_degrees",
    "dense_posterior",
    "fit_beta",
    "posterior",
    "sigmoid_rowsums",
]

VARIANTS = ("hard", "soft", "hybrid")
_CHUNK = 1 << 22
#: ``method="auto"`` computes row sums densely only when the band (the pairs the series path
#: enumerates one by one) holds more than this share of the n^2 ordered pairs: then both are
#: O(n^2) and the dense blocks are the cheaper (measured crossover ~0.4 at n = 3000)
_DENSE_BAND_SHARE = 0.4
#: a series term costs about this many exact band pairs per row (measured: an exp, a
#: prefix log-sum and a gather over n entries, against an expit and a bincount per pair)
_TERM_COST = 8.0


def clip_degrees(noisy_degrees: object, num_nodes: int) -> np.ndarray:
    """Project noisy degrees to [1, n - 2] (Blink; the beta-model MLE needs 0 < d < n - 1)."""
    n = check_num_nodes(num_nodes)
    if n < 3:
        raise GraphError("Blink needs at least 3 nodes")
    d = np.asarray(noisy_degrees, dtype=np.float64)
    if d.shape != (n,) or not np.all(np.isfinite(d)):
        raise GraphError(f"noisy degrees must be {n} finite numbers")
    return np.clip(d, 1.0, n - 2.0)


def posterior(beta_i: np.ndarray, beta_j: np.ndarray, x: np.ndarray | int,
              eps_a: float) -> np.ndarray:
    """Blink Algorithm 3: P[A_ij = 1 | x_ij] = sigmoid(beta_i + beta_j + 2 eps_a (x_ij - 1))."""
    return special.expit(beta_i + beta_j + 2.0 * eps_a * (np.asarray(x) - 1.0))


def _rowsums_dense(b: np.ndarray, shift: float) -> np.ndarray:
    n = b.size
    out = np.empty(n)
    step = max(1, _CHUNK // max(n, 1))
    for s in range(0, n, step):
        blk = special.expit(b[s:s + step, None] + b[None, :] + shift)
        out[s:s + step] = blk.sum(axis=1) - special.expit(2.0 * b[s:s + step] + shift)
    return out


def _prefix_logsum(x: np.ndarray) -> np.ndarray:
    """log of [0, cumsum(exp(x))] computed stably (length len(x) + 1, first entry -inf)."""
    top = x.max()
    w = np.exp(x - top)
    with np.errstate(divide="ignore"):
        return np.concatenate(([-np.inf], np.log(np.cumsum(w)) + top))


def _band_limits(bs: np.ndarray, v: np.ndarray, band: float) -> tuple[np.ndarray, np.ndarray]:
    """Per sorted row i, the columns [lo_i, hi_i) with |v_i + bs_j| < band."""
    lo = np.searchsorted(bs, -band - v, side="right")
    return lo, np.maximum(np.searchsorted(bs, band - v, side="left"), lo)


def _n_terms(n: int, tol: float, band: float) -> int:
    """Series terms so that the truncation error per row is at most ``tol``: n e^-(K band)."""
    return max(1, math.ceil(math.log(max(n, 2) / tol) / band))


def _rowsums_series(b: np.ndarray, shift: float, tol: float, band: float,
                    dense_share: float | None = None, *, narrow: bool = False) -> np.ndarray:
    n = b.size
    order = np.argsort(b, kind="stable")
    bs = b[order]
    v = bs + shift
    lo, hi = _band_limits(bs, v, band)
    if dense_share is not None and float(np.sum(hi - lo)) > dense_share * float(n) * n:
        if not narrow:
            return _rowsums_dense(b, shift)  # the band is most pairs: dense blocks are cheaper
        # narrow the band instead: fewer exact pairs, more series terms (each O(n)); the
        # cheapest of the narrower bands and the dense blocks, by pairs and terms counted
        best = (float(n) * n, None, lo, hi)
        for nb in (band / 2, band / 4, band / 8, band / 16, band / 32):
            nlo, nhi = _band_limits(bs, v, nb)
            cost = float(np.sum(nhi - nlo)) + _TERM_COST * n * _n_terms(n, tol, nb)
            if cost < best[0]:
                best = (cost, nb, nlo, nhi)
        if best[1] is None:
            return _rowsums_dense(b, shift)
        _, band, lo, hi = best
    n_terms = _n_terms(n, tol, band)
    total = (n - hi).astype(np.float64)
    has_lo = lo > 0
    has_hi = hi < n
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        for k in range(1, n_terms + 1):
            sign = 1.0 if k % 2 else -1.0
            # Prefix: sum_{j < lo_i} e^{k (v_i + bs_j)}, as exp(k v_i + log prefix sum).
            if has_lo.any():
                # log-domain accumulate when entries could underflow relative to the max
                lp = _prefix_logsum(k * bs) if k * (v.max() + bs[-1]) < 600 else \
                    np.concatenate(([-np.inf], np.logaddexp.accumulate(k * bs)))
                term = np.where(has_lo, np.exp(k * v + lp[lo]), 0.0)
                total += sign * term
            # Suffix: sum_{j >= hi_i} e^{-k (v_i + bs_j)}.
            if has_hi.any():
                rev = -k * bs[::-1]  # ls[m] = log sum over the m largest betas
                ls = _prefix_logsum(rev) if -k * (v.min() + bs[0]) < 600 else \
                    np.concatenate(([-np.inf], np.logaddexp.accumulate(rev)))
                term = np.where(has_hi, np.exp(-k * v + ls[n - hi]), 0.0)
                total -= sign * term
    counts = (hi - lo).astype(np.int64)
    if counts.sum():
        ends = np.cumsum(counts)
        start = 0
        while start < n:
            # rows [start, stop) hold at most _CHUNK band pairs (at least one row)
            base = ends[start - 1] if start else 0
            stop = max(int(np.searchsorted(ends, base + _CHUNK, side="right")), start + 1)
            stop = min(stop, n)
            c = counts[start:stop]
            if c.sum():
                rows = np.repeat(np.arange(start, stop), c)
                offs = np.arange(rows.size) - np.repeat(np.cumsum(c) - c, c)
                cols = lo[rows] + offs
                vals = special.expit(v[rows] + bs[cols])
                total[start:stop] += np.bincount(rows - start, weights=vals,
                                                 minlength=stop - start)
            start = stop
    total -= special.expit(v + bs)  # the j = i term was counted in one of the ranges
    out = np.empty(n)
    out[order] = total
    return out


def sigmoid_rowsums(beta: object, shift: float = 0.0, *, method: str = "auto",
                    tol: float = 1e-12, band: float = 2.0) -> np.ndarray:
    """S_i = sum_{j != i} sigmoid(beta_i + beta_j + shift) for every i, without n x n memory.

    ``method``: ``"dense"`` (row chunks, O(n^2) time; the reference), ``"series"`` (sorted
    prefix sums of the alternating series, O(K n log n + band pairs), truncation error <=
    ``tol`` per row, as accurate as the dense sums: both agree to ~1e-15 relative), or
    ``"auto"`` (the default: series at every size; dense only when the band holds over 40% of
    the pairs, i.e. a dense graph, where both are O(n^2) and the dense blocks are faster), or
    ``"adaptive"`` (as auto, but where auto would take the dense blocks it first narrows the
    band, down to band / 32, and takes whichever of those and the dense blocks costs least:
    a shift that puts most pairs near 0 then costs O(K n) instead of O(n^2); the same
    truncation bound; blink-pp's moment fit, whose root search tries such shifts).
    """
    b = np.asarray(beta, dtype=np.float64)
    if b.ndim != 1 or not np.all(np.isfinite(b)):
        raise ConfigError("beta must be a 1-D array of finite numbers")
    if method not in ("auto", "adaptive", "dense", "series"):
        raise unknown_name("row-sum method", method, ("auto", "adaptive", "dense", "series"))
    if b.size < 2:
        return np.zeros(b.size)
    if method == "dense":
        return _rowsums_dense(b, float(shift))
    return _rowsums_series(b, float(shift), tol, band,
                           _DENSE_BAND_SHARE if method in ("auto", "adaptive") else None,
                           narrow=method == "adaptive")


@dataclass(frozen=True)
class BetaFit:
    """The beta-model MLE: ``beta``, iterations used, final max |log d - log S|."""

    beta: np.ndarray
    iterations: int
    residual: float
    converged: bool


def fit_beta(degrees: object, *, damping: float = 0.5, tol: float = 1e-10,
             max_iter: int = 5000, method: str = "auto") -> BetaFit:
    """Beta-model MLE for degrees in (0, n - 1) (Blink Algorithm 2; Chatterjee, Diaconis &
    Sly 2011) by the damped fixed-point iteration beta <- beta + damping (log d - log S).

    Starts from the Chung-Lu guess beta_i = log d_i - log(sum d) / 2. Stops when
    max_i |log d_i - log S_i(beta)| <= ``tol`` or after ``max_iter`` iterations (then
    ``converged`` is False: the MLE may not exist for some degree sequences).
    """
    d = np.asarray(degrees, dtype=np.float64)
    n = d.size
    if n < 3 or d.ndim != 1 or not np.all(np.isfinite(d)) or np.any(d <= 0) \
            or np.any(d >= n - 1):
        raise GraphError("fit_beta needs >= 3 finite degrees in (0, n - 1); clip them first")
    if not 0 < damping <= 1:
        raise ConfigError(f"damping must be in (0, 1], got {damping}")
    log_d = np.log(d)
    beta = log_d - 0.5 * math.log(d.sum())
    residual = math.inf
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - the count is returned
        r = log_d - np.log(sigmoid_rowsums(beta, 0.0, method=method))
        residual = float(np.max(np.abs(r)))
        if residual <= tol:
            break
        beta = beta + damping * r
    return BetaFit(beta, it, residual, residual <= tol)


def dense_posterior(reports: DirectedReports, beta: np.ndarray, eps_a: float) -> np.ndarray:
    """Reference: the full n x n posterior matrix (zero diagonal). Dense — tests and tiny
    graphs only (refuses n > 3000)."""
    n = reports.num_nodes
    if n > 3000:
        raise ConfigError("dense_posterior is a test reference; refusing n > 3000")
    a = np.zeros((n, n))
    a[reports.user, reports.neighbor] = 1.0
    x = a + a.T
    p = posterior(beta[:, None], beta[None, :], x, eps_a)
    np.fill_diagonal(p, 0.0)
    return p


@dataclass
class BlinkEstimate:
    """An estimated graph as undirected pairs (u < v) with optional weights, plus info; or,
    for Blink-Soft beyond its pair limit, as the dense matrix of every posterior (``dense``,
    float32 [n, n], symmetric, zero diagonal; ``u`` and ``v`` empty)."""

    u: np.ndarray
    v: np.ndarray
    weight: np.ndarray | None
    num_nodes: int
    info: dict[str, Any] = field(default_factory=dict)
    dense: torch.Tensor | None = None

    def edge_index(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """PyG (edge_index int64 [2, 2E], edge_weight float32 [2E] or None)."""
        if self.dense is not None:
            raise ConfigError("this estimate is a dense matrix (Blink-Soft beyond its pair "
                              "limit), not an edge list: read .dense")
        return edge_index_from_pairs(self.u, self.v, self.weight)


class BlinkServer:
    """Blink's server for RR reports with ``eps_a`` and noisy degrees.

    ``fit`` computes the prior; :meth:`hard`, :meth:`hybrid`, :meth:`soft` build graphs.
    """

    def __init__(self, eps_a: float, *, tol: float = 1e-10, max_iter: int = 5000,
                 damping: float = 0.5, method: str = "auto") -> None:
        self.eps_a = check_epsilon(eps_a, "eps_a")
        self.tol, self.max_iter, self.damping, self.method = tol, max_iter, damping, method

    def fit(self, reports: DirectedReports, noisy_degrees: object,
            beta: np.ndarray | None = None) -> BlinkServer:
        """Clip degrees, fit the beta model (unless ``beta`` is given) and tabulate the
        reported pairs with x = a_ij + a_ji."""
        keys, counts = undirected_counts(reports.user, reports.neighbor, reports.num_nodes)
        return self.fit_pairs(keys, counts, noisy_degrees, reports.num_nodes, beta)

    def fit_pairs(self, keys: np.ndarray, counts: np.ndarray, noisy_degrees: object,
                  num_nodes: int, beta: np.ndarray | None = None) -> BlinkServer:
        """:meth:`fit` from the reported pairs as :func:`dpgl.graph.pairs.undirected_counts`
        tabulates them (sorted upper-triangle ``keys``, ``counts`` x_ij in {1, 2}; kept, not
        copied), so that a caller can drop the reports before the posteriors are built: at a
        small eps_a most pairs are reported (Facebook at eps_a = 0.1: 1.8e8 pairs)."""
        n = check_num_nodes(num_nodes)
        keys, counts = np.asarray(keys), np.asarray(counts)
        if keys.dtype != np.int64 or keys.ndim != 1 or counts.shape != keys.shape \
                or not np.issubdtype(counts.dtype, np.integer):
            raise GraphError("reported pairs need int64 keys and integer counts of one length")
        if keys.size and (keys[0] < 0 or keys[-1] >= n * (n - 1) // 2
                          or not bool(np.all(keys[1:] > keys[:-1]))
                          or counts.min() < 1 or counts.max() > 2):
            raise GraphError("reported pairs need sorted distinct pair keys in range and "
                             "counts 1 or 2")
        self.num_nodes = n
        self.degrees = clip_degrees(noisy_degrees, n)
        if beta is None:
            fit = fit_beta(self.degrees, damping=self.damping, tol=self.tol,
                           max_iter=self.max_iter, method=self.method)
        else:
            beta = np.asarray(beta, dtype=np.float64)
            fit = BetaFit(beta, 0, math.nan, True)
        self.beta_fit = fit
        self.beta = fit.beta
        self.rep_keys = keys
        self.rep_x = counts  # 1 or 2 reports of the pair
        # the pairs as int32 node ids (check_num_nodes: n <= 10^7), and their posteriors, a
        # chunk at a time
        self.rep_u = np.empty(keys.size, dtype=np.int32)
        self.rep_v = np.empty(keys.size, dtype=np.int32)
        self.rep_p = np.empty(keys.size, dtype=np.float64)
        for s in range(0, keys.size, _CHUNK):
            i, j = index_to_pair(keys[s:s + _CHUNK], n)
            self.rep_u[s:s + _CHUNK], self.rep_v[s:s + _CHUNK] = i, j
            self.rep_p[s:s + _CHUNK] = posterior(self.beta[i], self.beta[j],
                                                 counts[s:s + _CHUNK], self.eps_a)
        return self

    # -- helpers -------------------------------------------------------------------------
    def _unreported_at_least(self, c: float, max_pairs: int | None
                             ) -> tuple[np.ndarray, np.ndarray]:
        """Unreported pairs (x = 0) with beta_i + beta_j >= c (enumerated, O(n log n + out))."""
        i, j = pairs_with_sum_at_least(self.beta, c, max_pairs=max_pairs)
        if i.size == 0 or self.rep_keys.size == 0:
            return i, j
        keys = pair_to_index(i, j, self.num_nodes)
        pos = np.minimum(np.searchsorted(self.rep_keys, keys), self.rep_keys.size - 1)
        fresh = self.rep_keys[pos] != keys
        return i[fresh], j[fresh]

    def total_mass(self) -> float:
        """||P||_1 over unordered pairs i < j (half the sum of the symmetric matrix)."""
        shift = -2.0 * self.eps_a
        all_p0 = 0.5 * float(sigmoid_rowsums(self.beta, shift, method=self.method).sum())
        gain = np.empty_like(self.rep_p)  # P - P0 of the reported pairs, a chunk at a time
        for s in range(0, gain.size, _CHUNK):
            p0 = posterior(self.beta[self.rep_u[s:s + _CHUNK]],
                           self.beta[self.rep_v[s:s + _CHUNK]], 0, self.eps_a)
            np.subtract(self.rep_p[s:s + _CHUNK], p0, out=gain[s:s + _CHUNK])
        return all_p0 + float(np.sum(gain))

    def _estimate(self, u: np.ndarray, v: np.ndarray, w: np.ndarray | None,
                  **info: Any) -> BlinkEstimate:
        info.update(beta_iterations=self.beta_fit.iterations,
                    beta_residual=self.beta_fit.residual,
                    beta_converged=self.beta_fit.converged)
        u, v, w = sort_pairs(u, v, self.num_nodes, w)
        return BlinkEstimate(u, v, w, self.num_nodes, info)

    # -- variants ------------------------------------------------------------------------
    def hard(self, *, max_pairs: int | None = 100_000_000) -> BlinkEstimate:
        """Blink-Hard: pairs with posterior > 1/2, unweighted (exact, no n x n)."""
        keep = self.rep_p > 0.5
        u, v = self.rep_u[keep], self.rep_v[keep]
        # Unreported pairs have P0 > 1/2 iff beta_i + beta_j > 2 eps_a.
        i, j = self._unreported_at_least(2.0 * self.eps_a, max_pairs)
        if i.size:
            ok = posterior(self.beta[i], self.beta[j], 0, self.eps_a) > 0.5
            u, v = np.concatenate([u, i[ok]]), np.concatenate([v, j[ok]])
            extra = int(ok.sum())
        else:
            extra = 0
        return self._estimate(u, v, None, unreported_kept=extra)

    def hybrid(self, *, max_pairs: int | None = 100_000_000) -> BlinkEstimate:
        """Blink-Hybrid: the top floor(||P||_1) entries of P (ordered, as in Blink), weighted.

        Each unordered pair is two equal entries, so the threshold t is the ceil(k / 2)-th
        largest unordered posterior; all pairs with P >= t are kept.
        """
        mass = self.total_mass()
        k_ordered = math.floor(2.0 * mass)
        k2 = (k_ordered + 1) // 2
        n = self.num_nodes
        if k2 <= 0:
            e = np.zeros(0, np.int64)
            return self._estimate(e, e, np.zeros(0), total_mass=mass, k=k_ordered)
        k2 = min(k2, n * (n - 1) // 2)
        bs = np.sort(self.beta)
        # A beta-sum cutoff c with at least k2 pairs of P >= sigmoid(c - 2 eps_a): every pair
        # with beta-sum >= c qualifies (P >= P0), and so do the k2 best reported pairs.
        lo_c, hi_c = 2.0 * bs[0] - 1.0, 2.0 * bs[-1]
        if count_pairs_with_sum_at_least(self.beta, lo_c, sorted_values=bs) < k2:
            lo_c = -np.inf
        else:
            for _ in range(100):
                mid = 0.5 * (lo_c + hi_c)
                if count_pairs_with_sum_at_least(self.beta, mid, sorted_values=bs) >= k2:
                    lo_c = mid
                else:
                    hi_c = mid
        c = lo_c
        if self.rep_p.size >= k2:
            r = np.partition(self.rep_p, self.rep_p.size - k2)[self.rep_p.size - k2]
            c = max(c, float(special.logit(r)) + 2.0 * self.eps_a)
        while True:
            floor_v = float(special.expit(c - 2.0 * self.eps_a)) if np.isfinite(c) else 0.0
            i, j = self._unreported_at_least(c - 1e-9 if np.isfinite(c) else -np.inf,
                                             max_pairs)
            p0 = posterior(self.beta[i], self.beta[j], 0, self.eps_a)
            vals = np.concatenate([self.rep_p, p0])
            if vals.size < k2:
                raise ConfigError("hybrid: not enough candidate pairs (internal error)")
            t = np.partition(vals, vals.size - k2)[vals.size - k2]
            if t >= floor_v:
                break
            c -= 1.0  # not provably exact yet: widen the candidate set
        keep_r = self.rep_p >= t
        keep_u = p0 >= t
        u = np.concatenate([self.rep_u[keep_r], i[keep_u]])
        v = np.concatenate([self.rep_v[keep_r], j[keep_u]])
        w = np.concatenate([self.rep_p[keep_r], p0[keep_u]])
        return self._estimate(u, v, w, total_mass=mass, k=k_ordered, threshold=float(t),
                              unreported_kept=int(keep_u.sum()))

    def dense_posteriors(self, *, block_rows: int = 1024) -> torch.Tensor:
        """Every posterior P_ij (Algorithm 3) as a float32 [n, n] matrix, symmetric, zero
        diagonal: the unreported pairs' sigmoid(beta_i + beta_j - 2 eps_a) a block of rows at
        a time (float64, then float32), then the reported pairs' posteriors. Dense by nature:
        4 n^2 bytes (Facebook: 2 GB)."""
        n = self.num_nodes
        out = torch.empty((n, n), dtype=torch.float32)
        for r0 in range(0, n, block_rows):
            r1 = min(r0 + block_rows, n)
            block = posterior(self.beta[r0:r1, None], self.beta[None, :], 0, self.eps_a)
            out[r0:r1] = torch.from_numpy(block.astype(np.float32))
        for s in range(0, self.rep_u.size, _CHUNK):
            u = torch.from_numpy(self.rep_u[s:s + _CHUNK].astype(np.int64))
            v = torch.from_numpy(self.rep_v[s:s + _CHUNK].astype(np.int64))
            p = torch.from_numpy(self.rep_p[s:s + _CHUNK].astype(np.float32))
            out[u, v] = p
            out[v, u] = p
        out.fill_diagonal_(0.0)
        return out

    def soft(self, *, exact_max_n: int = 3000, mass_tol: float = 1e-3,
             max_pairs: int = 50_000_000, dense_max_n: int = 0) -> BlinkEstimate:
        """Blink-Soft: every posterior as an edge weight.

        Dense by definition: exact (all n (n - 1) / 2 pairs) when n <= ``exact_max_n``.
        Beyond, keeps the pairs with P >= floor where the floor guarantees a dropped mass
        <= ``mass_tol`` * ||P||_1; ``info["dropped_mass"]`` is the exact dropped mass. If that
        needs more than ``max_pairs`` pairs: the exact dense matrix
        (:meth:`dense_posteriors`, ``BlinkEstimate.dense``) when n <= ``dense_max_n``, an
        error otherwise (default ``dense_max_n=0``: never dense; a caller that trains on it
        opts in, :class:`dpgl.nn.dense_graph.DenseGraph`).
        """
        n = self.num_nodes
        if not 0 < mass_tol < 1:
            raise ConfigError(f"mass_tol must be in (0, 1), got {mass_tol}")
        if n <= exact_max_n:
            i, j = np.triu_indices(n, 1)
            x = np.zeros(i.size)
            x[self.rep_keys] = self.rep_x  # upper-triangle row-major order == pair index
            p = posterior(self.beta[i], self.beta[j], x, self.eps_a)
            return self._estimate(i.astype(np.int64), j.astype(np.int64), p,
                                  dropped_mass=0.0, exact=True)
        mass = self.total_mass()
        budget = mass_tol * mass
        bs = np.sort(self.beta)
        ebs = np.exp(bs)
        prefix = np.concatenate(([0.0], np.cumsum(ebs)))
        scale = math.exp(-2.0 * self.eps_a)
        a_idx = np.arange(n)

        def dropped_bound(c: float) -> float:
            # unreported part: e^{-2 eps_a} sum_{a < b, bs_a + bs_b < c} e^{bs_a} e^{bs_b}
            hi = np.searchsorted(bs, c - bs, side="left")
            hi = np.maximum(hi, a_idx + 1)
            unrep = scale * float(np.sum(ebs * (prefix[hi] - prefix[a_idx + 1])))
            floor_v = special.expit(c - 2.0 * self.eps_a)
            rep = float(self.rep_p[self.rep_p < floor_v].sum())
            return unrep + rep

        lo_c, hi_c = 2.0 * bs[0] - 1.0, 2.0 * bs[-1] + 1.0
        if dropped_bound(hi_c) <= budget:
            lo_c = hi_c
        else:
            for _ in range(100):
                mid = 0.5 * (lo_c + hi_c)
                if dropped_bound(mid) <= budget:
                    lo_c = mid
                else:
                    hi_c = mid
        c = lo_c
        if count_pairs_with_sum_at_least(self.beta, c, sorted_values=bs) > max_pairs:
            if n <= dense_max_n:
                e = np.zeros(0, np.int64)
                est = self._estimate(e, e, None, total_mass=mass, dropped_mass=0.0,
                                     exact=True, dense=True)
                est.dense = self.dense_posteriors()
                return est
            raise ConfigError(f"soft: bounding the dropped mass by {mass_tol:g} * ||P||_1 needs "
                              f"more than max_pairs={max_pairs} pairs; use hybrid, raise "
                              f"max_pairs, or allow the dense matrix (dense_max_n >= {n})")
        floor_v = float(special.expit(c - 2.0 * self.eps_a))
        i, j = self._unreported_at_least(c, None)
        p0 = posterior(self.beta[i], self.beta[j], 0, self.eps_a)
        keep_u = p0 >= floor_v
        keep_r = self.rep_p >= floor_v
        u = np.concatenate([self.rep_u[keep_r], i[keep_u]])
        v = np.concatenate([self.rep_v[keep_r], j[keep_u]])
        w = np.concatenate([self.rep_p[keep_r], p0[keep_u]])
        dropped = max(mass - float(w.sum()), 0.0)
        return self._estimate(u, v, w, total_mass=mass, floor=floor_v,
                              dropped_mass=dropped, dropped_bound=dropped_bound(c),
                              exact=False)
