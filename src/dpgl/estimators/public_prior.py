"""Blink with a public prior (dpgl's own method ``blink-pp``; docs/own-method.md).

Blink (Zhu, Tan & Xiao, CCS 2023, Alg. 2-3) puts a beta-model prior
P[A_ij = 1] = sigmoid(beta_i + beta_j) on every pair and updates it with the two RR bits.
In Blink's setting the server also holds the node features and the training labels; Blink's
prior ignores them. Here the prior's logit gets two covariates computed from that public
data alone:

    logit pi_ij = beta_i + beta_j + theta_K k_ij + theta_H h_ij,

k_ij = 1 when i and j are feature k-nearest neighbours (:func:`dpgl.graph.knn.knn_pairs`) and
h_ij = 1 when they are in the same group (the training label, or a classifier's prediction
from the public features and training labels for the other nodes). The parameters are fitted
by the method of moments on the users' reports (no true edge is read):

* degrees: sum_{j != i} pi_ij = d~_i (the noisy degrees, clipped as in Blink): Blink's
  beta-model equations with the covariates;
* theta_K: sum over k-pairs of pi_ij = T_K, theta_H: sum over same-group pairs = T_H, where
  T = (sum x_ij - 2 f |pairs|) / (2 (1 - 2 f)) is the unbiased estimate of the number of true
  edges among those pairs from the reports x_ij = a_ij + a_ji (E[a_ij] = f + (1 - 2f) A_ij,
  f = 1 / (1 + e^{eps_a})).

The posterior is Blink's Algorithm 3 with this prior:
P_ij = sigmoid(logit pi_ij + 2 eps_a (x_ij - 1)). Graphs: ``hard`` (P > 1/2) and ``hybrid``
(the top floor(||P||_1) pairs weighted by P), both exact and without n x n memory: row sums
with covariates are Blink's sorted-series row sums, once for all nodes and once per group,
plus a sparse correction on the k-pairs; unreported pairs enter only through the enumerated
large-beta-sum pairs (as in Blink) and the k-pairs.

Everything here is a function of the users' Blink reports and of public data: post-processing,
so the estimate carries the reports' edge-LDP guarantee unchanged.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
from scipy import optimize, special

from dpgl.errors import ConfigError, GraphError
from dpgl.estimators.blink import BlinkEstimate, clip_degrees, fit_beta, sigmoid_rowsums
from dpgl.graph.pairs import (
    index_to_pair,
    pair_to_index,
    pairs_with_sum_at_least,
    sort_pairs,
    unique_counts,
)
from dpgl.mechanisms.rr import DirectedReports
from dpgl.privacy import check_epsilon

if TYPE_CHECKING:
    import torch

__all__ = ["PairCovariates", "PublicPriorServer", "public_covariates", "shrink_degrees"]

#: |theta| <= 10: a covariate moves the prior odds by at most e^10 (degenerate moment
#: equations, e.g. on tiny graphs, end at the bound instead of diverging)
_THETA_BOUND = 10.0
#: below this many nodes the row sums are computed densely (cheaper than the series there)
_DENSE_N = 512


def _rs(beta: np.ndarray, shift: float) -> np.ndarray:
    return sigmoid_rowsums(beta, shift, method="dense" if beta.size < _DENSE_N else "adaptive")


@dataclass(frozen=True)
class PairCovariates:
    """Public pair covariates: ``groups[i]`` (an integer per node) and the k-pairs
    (``ku`` < ``kv``, sorted, unique)."""

    groups: np.ndarray
    ku: np.ndarray
    kv: np.ndarray

    def check(self, n: int) -> None:
        g = np.asarray(self.groups)
        if g.shape != (n,) or not np.issubdtype(g.dtype, np.integer):
            raise GraphError(f"groups must be {n} integers")
        ku, kv = np.asarray(self.ku), np.asarray(self.kv)
        if ku.shape != kv.shape or (ku.size and (ku.min() < 0 or kv.max() >= n
                                                 or np.any(ku >= kv))):
            raise GraphError("k-pairs must be pairs u < v of node ids")


#: the last covariates computed in this process, by the digest of their inputs: one grid's
#: blink-pp runs at one seed (every epsilon and configuration) share them, and on Facebook
#: they cost about 95 s of a run (the kNN over 4,714 dimensions and the regression)
_COVARIATE_CACHE: OrderedDict[bytes, PairCovariates] = OrderedDict()
_COVARIATE_CACHE_SIZE = 4


def _digest(*parts: object) -> bytes:
    h = hashlib.blake2b(digest_size=20)
    for p in parts:
        if hasattr(p, "detach"):
            t = p.detach().cpu().contiguous()  # type: ignore[union-attr]
            h.update(f"{t.dtype}{tuple(t.shape)}".encode())
            h.update(t.numpy().tobytes())
        else:
            h.update(repr(p).encode())
        h.update(b"|")
    return h.digest()


def public_covariates(x: torch.Tensor, y: torch.Tensor, train: torch.Tensor, *,
                      knn: int | None, groups: bool = True, epochs: int = 200,
                      lr: float = 0.05, weight_decay: float = 5e-4) -> PairCovariates:
    """Covariates from public data only: groups = the training label on training nodes and
    the prediction of a multinomial logistic regression (fitted on the training nodes'
    features, full batch, zero start: deterministic) elsewhere; k-pairs = feature kNN.
    ``knn=None``: no k-pairs; ``groups=False``: every node its own group (no same-group
    pair), so the covariate drops out of the prior. The result of the same inputs is
    computed once per process (the arrays are read-only)."""
    key = _digest(x, y, train, knn, groups, epochs, lr, weight_decay)
    if key in _COVARIATE_CACHE:
        _COVARIATE_CACHE.move_to_end(key)
        return _COVARIATE_CACHE[key]
    cov = _public_covariates(x, y, train, knn=knn, groups=groups, epochs=epochs, lr=lr,
                             weight_decay=weight_decay)
    for a in (cov.groups, cov.ku, cov.kv):
        a.flags.writeable = False
    _COVARIATE_CACHE[key] = cov
    while len(_COVARIATE_CACHE) > _COVARIATE_CACHE_SIZE:
        _COVARIATE_CACHE.popitem(last=False)
    return cov


def _public_covariates(x: torch.Tensor, y: torch.Tensor, train: torch.Tensor, *,
                       knn: int | None, groups: bool, epochs: int, lr: float,
                       weight_decay: float) -> PairCovariates:
    import torch

    from dpgl.graph.knn import knn_pairs
    n = int(x.size(0))
    if knn is None:
        ku = kv = np.zeros(0, np.int64)
    else:
        ku, kv = knn_pairs(x, knn)
    if not groups:
        return PairCovariates(np.arange(n, dtype=np.int64), ku, kv)
    xf = x.detach().to(torch.float32)
    xf = xf / xf.norm(dim=1, keepdim=True).clamp_min(1e-12)
    yl = y.detach().long()
    tr = train.detach().long()
    c = int(yl[tr].max()) + 1 if tr.numel() else 1
    w = torch.zeros(xf.size(1), c, requires_grad=True)
    b = torch.zeros(c, requires_grad=True)
    opt = torch.optim.Adam([w, b], lr=lr, weight_decay=weight_decay)
    for _ in range(epochs):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(xf[tr] @ w + b, yl[tr])
        loss.backward()
        opt.step()
    with torch.no_grad():
        group = (xf @ w + b).argmax(dim=1)
    group[tr] = yl[tr]
    return PairCovariates(group.numpy().astype(np.int64), ku, kv)


def shrink_degrees(noisy: object, noise_var: float) -> np.ndarray:
    """Linear (best linear unbiased) shrinkage of noisy degrees toward their mean:
    d^ = mu + s^2 / (s^2 + v) (d~ - mu), with mu the mean of d~, v the noise variance and s^2
    = var(d~) - v the degrees' own variance estimated from the reports (>= 0). Blink clips
    each noisy degree at 1 instead, which at small eps_d inflates the total degree (clipped
    Laplace noise has a positive mean) and with it the prior's base rate."""
    d = np.asarray(noisy, dtype=np.float64)
    if not noise_var >= 0:
        raise ConfigError(f"noise_var must be >= 0, got {noise_var}")
    mu = float(d.mean())
    s2 = max(float(d.var()) - noise_var, 0.0)
    return mu + (s2 / (s2 + noise_var) if s2 + noise_var > 0 else 1.0) * (d - mu)


def _in_sorted(keys: np.ndarray, table: np.ndarray) -> np.ndarray:
    if table.size == 0 or keys.size == 0:
        return np.zeros(keys.size, dtype=bool)
    pos = np.minimum(np.searchsorted(table, keys), table.size - 1)
    return table[pos] == keys


def _edges_estimate(count_x: float, pairs: int, f: float) -> float:
    """Unbiased number of true edges among ``pairs`` pairs whose report bits sum to
    ``count_x`` (each bit is 1 w.p. f + (1 - 2f) A), kept inside (0, pairs)."""
    t = (count_x - 2.0 * f * pairs) / (2.0 * (1.0 - 2.0 * f))
    return float(min(max(t, 0.5), max(pairs - 0.5, 0.5)))


class PublicPriorServer:
    """The server of ``blink-pp``: fit (beta, theta_K, theta_H), then posteriors and graphs."""

    def __init__(self, eps_a: float, *, tol: float = 1e-8, max_iter: int = 500,
                 damping: float = 0.5) -> None:
        self.eps_a = check_epsilon(eps_a, "eps_a")
        if not 0 < damping <= 1:
            raise ConfigError(f"damping must be in (0, 1], got {damping}")
        self.tol, self.max_iter, self.damping = tol, max_iter, damping

    # -- the prior -----------------------------------------------------------------------
    def _rowsums(self, beta: np.ndarray, th_k: float, th_h: float, shift: float = 0.0
                 ) -> np.ndarray:
        """S_i = sum_{j != i} sigmoid(logit pi_ij + shift) for every i."""
        s = _rs(beta, shift)
        if th_h != 0.0:
            for m in self.members:
                b = beta[m]
                s[m] += _rs(b, shift + th_h) - _rs(b, shift)
        if self.ku.size and th_k != 0.0:
            base = beta[self.ku] + beta[self.kv] + shift + th_h * self.k_same
            c = special.expit(base + th_k) - special.expit(base)
            n = beta.size
            s += np.bincount(self.ku, c, n) + np.bincount(self.kv, c, n)
        return s

    def _k_mass(self, beta: np.ndarray, th_k: float, th_h: float) -> float:
        return float(special.expit(beta[self.ku] + beta[self.kv] + th_k
                                   + th_h * self.k_same).sum())

    def _h_mass(self, beta: np.ndarray, th_k: float, th_h: float) -> float:
        tot = 0.5 * sum(float(_rs(beta[m], th_h).sum()) for m in self.members)
        s = self.k_same.astype(bool)
        base = beta[self.ku[s]] + beta[self.kv[s]] + th_h
        return tot + float((special.expit(base + th_k) - special.expit(base)).sum())

    def _k_gap(self, beta: np.ndarray, th_k: float, *, th_h: float) -> float:
        return self._k_mass(beta, th_k, th_h) - self.target_k

    def _h_gap(self, beta: np.ndarray, th_k: float, th_h: float) -> float:
        return self._h_mass(beta, th_k, th_h) - self.target_h

    @staticmethod
    def _root(f, lo: float = -_THETA_BOUND, hi: float = _THETA_BOUND) -> float:
        seen: dict[float, float] = {}

        def g(t: float) -> float:  # brentq evaluates the bounds again: reuse them
            t = float(t)
            if t not in seen:
                seen[t] = f(t)
            return seen[t]

        flo, fhi = g(lo), g(hi)
        if flo >= 0:
            return lo
        if fhi <= 0:
            return hi
        return float(optimize.brentq(g, lo, hi, xtol=1e-8))

    def fit(self, reports: DirectedReports, noisy_degrees: object,
            covariates: PairCovariates, *, degree_noise_var: float = 0.0
            ) -> PublicPriorServer:
        """Fit the prior to the reports: RR bits, noisy degrees (whose noise variance, a
        public number, ``degree_noise_var`` sets the shrinkage; 0: used as they are) and the
        public covariates."""
        n = reports.num_nodes
        covariates.check(n)
        self.num_nodes = n
        self.f = 1.0 / (1.0 + math.exp(self.eps_a))
        d = clip_degrees(shrink_degrees(noisy_degrees, degree_noise_var), n)
        g = np.asarray(covariates.groups, dtype=np.int64)
        self.groups = g
        _, inv = np.unique(g, return_inverse=True)
        order = np.argsort(inv, kind="stable")
        bounds = np.flatnonzero(np.diff(inv[order])) + 1
        self.members = [m for m in np.split(order, bounds) if m.size >= 2]
        self.ku = np.asarray(covariates.ku, dtype=np.int64)
        self.kv = np.asarray(covariates.kv, dtype=np.int64)
        self.k_same = (g[self.ku] == g[self.kv]).astype(np.float64)
        self.k_keys = pair_to_index(self.ku, self.kv, n)
        # the reported pairs, x = a_ij + a_ji
        u = np.minimum(reports.user, reports.neighbor)
        v = np.maximum(reports.user, reports.neighbor)
        keys, counts = unique_counts(pair_to_index(u, v, n))
        if counts.size and counts.max() > 2:
            raise GraphError("reports contain duplicate pairs")
        self.rep_keys = keys
        self.rep_u, self.rep_v = index_to_pair(keys, n)
        self.rep_x = counts.astype(np.float64)
        self.rep_k = _in_sorted(keys, self.k_keys).astype(np.float64)
        self.rep_h = (g[self.rep_u] == g[self.rep_v]).astype(np.float64)
        # moment targets from the reports
        k_x = float(self.rep_x[self.rep_k > 0].sum())
        h_x = float(self.rep_x[self.rep_h > 0].sum())
        h_pairs = int(sum(m.size * (m.size - 1) // 2 for m in self.members))
        self.target_k = _edges_estimate(k_x, int(self.ku.size), self.f)
        self.target_h = _edges_estimate(h_x, h_pairs, self.f)
        beta = fit_beta(d).beta
        th_k = th_h = 0.0
        log_d = np.log(d)
        residual = math.inf
        it = 0
        for it in range(1, self.max_iter + 1):  # noqa: B007 - the count is reported
            if self.ku.size:
                th_k = self._root(partial(self._k_gap, beta, th_h=th_h))
            if self.members:
                th_h = self._root(partial(self._h_gap, beta, th_k))
            r = log_d - np.log(self._rowsums(beta, th_k, th_h))
            residual = float(np.max(np.abs(r)))
            if residual <= self.tol:
                break
            beta = beta + self.damping * r
        self.beta, self.theta_k, self.theta_h = beta, th_k, th_h
        self.iterations, self.residual = it, residual
        self.converged = residual <= self.tol
        self.rep_p = self._posterior(self.rep_u, self.rep_v, self.rep_x, self.rep_k, self.rep_h)
        return self

    # -- the posterior -------------------------------------------------------------------
    def _prior_logit(self, i: np.ndarray, j: np.ndarray, k: np.ndarray, h: np.ndarray
                     ) -> np.ndarray:
        return self.beta[i] + self.beta[j] + self.theta_k * k + self.theta_h * h

    def _posterior(self, i: np.ndarray, j: np.ndarray, x: np.ndarray | float, k: np.ndarray,
                   h: np.ndarray) -> np.ndarray:
        """Blink Alg. 3 with the public prior: sigmoid(logit pi + 2 eps_a (x - 1))."""
        return special.expit(self._prior_logit(i, j, k, h)
                             + 2.0 * self.eps_a * (np.asarray(x) - 1.0))

    def _unreported(self, c: float, max_pairs: int | None) -> tuple[np.ndarray, np.ndarray,
                                                                    np.ndarray]:
        """Every unreported pair with prior logit >= c, plus possibly others (candidates):
        (i, j, posterior at x = 0). The k-pairs are always included."""
        lo = c - max(self.theta_h, 0.0)
        i, j = pairs_with_sum_at_least(self.beta, lo, max_pairs=max_pairs)
        keys = np.union1d(pair_to_index(i, j, self.num_nodes), self.k_keys)
        keys = keys[~_in_sorted(keys, self.rep_keys)]
        i, j = index_to_pair(keys, self.num_nodes)
        k = _in_sorted(keys, self.k_keys).astype(np.float64)
        h = (self.groups[i] == self.groups[j]).astype(np.float64)
        return i, j, self._posterior(i, j, 0.0, k, h)

    def total_mass(self) -> float:
        """||P||_1 over unordered pairs: all pairs at x = 0, plus the reported pairs' excess."""
        all_p0 = 0.5 * float(self._rowsums(self.beta, self.theta_k, self.theta_h,
                                           -2.0 * self.eps_a).sum())
        rep_p0 = self._posterior(self.rep_u, self.rep_v, 0.0, self.rep_k, self.rep_h)
        return all_p0 + float(np.sum(self.rep_p - rep_p0))

    def _estimate(self, u: np.ndarray, v: np.ndarray, w: np.ndarray | None,
                  **info: object) -> BlinkEstimate:
        info.update(theta_knn=self.theta_k, theta_group=self.theta_h,
                    target_knn_edges=self.target_k, target_group_edges=self.target_h,
                    fit_iterations=self.iterations, fit_residual=self.residual,
                    fit_converged=self.converged)
        u, v, w = sort_pairs(u, v, self.num_nodes, w)
        return BlinkEstimate(u, v, w, self.num_nodes, dict(info))

    def hard(self, *, max_pairs: int | None = 100_000_000) -> BlinkEstimate:
        """Pairs with posterior > 1/2 (unweighted)."""
        keep = self.rep_p > 0.5
        i, j, p0 = self._unreported(2.0 * self.eps_a, max_pairs)
        ok = p0 > 0.5
        return self._estimate(np.concatenate([self.rep_u[keep], i[ok]]),
                              np.concatenate([self.rep_v[keep], j[ok]]), None,
                              unreported_kept=int(ok.sum()))

    def hybrid(self, *, max_pairs: int | None = 100_000_000) -> BlinkEstimate:
        """The top floor(||P||_1) ordered entries of P (ceil of half as unordered pairs),
        weighted by P; ties at the threshold kept (Blink's Hybrid with this prior)."""
        mass = self.total_mass()
        k_ordered = math.floor(2.0 * mass)
        k2 = min((k_ordered + 1) // 2, self.num_nodes * (self.num_nodes - 1) // 2)
        if k2 <= 0:
            e = np.zeros(0, np.int64)
            return self._estimate(e, e, np.zeros(0), total_mass=mass, k=k_ordered)
        if self.rep_p.size >= k2:
            r = np.partition(self.rep_p, self.rep_p.size - k2)[self.rep_p.size - k2]
            c = float(special.logit(min(max(r, 1e-300), 1 - 1e-16))) + 2.0 * self.eps_a
        else:
            c = 2.0 * float(self.beta.max())
        while True:
            # every unreported pair outside the candidates has P0 < sigmoid(c - 2 eps_a)
            floor_v = float(special.expit(c - 2.0 * self.eps_a))
            i, j, p0 = self._unreported(c, max_pairs)
            vals = np.concatenate([self.rep_p, p0])
            if vals.size >= k2:
                t = np.partition(vals, vals.size - k2)[vals.size - k2]
                if t >= floor_v:
                    break
            c -= 1.0
        keep_r = self.rep_p >= t
        keep_u = p0 >= t
        return self._estimate(np.concatenate([self.rep_u[keep_r], i[keep_u]]),
                              np.concatenate([self.rep_v[keep_r], j[keep_u]]),
                              np.concatenate([self.rep_p[keep_r], p0[keep_u]]),
                              total_mass=mass, k=k_ordered, threshold=float(t),
                              unreported_kept=int(keep_u.sum()))

    def soft(self, *, floor: float = 1e-2, max_pairs: int | None = 100_000_000
             ) -> BlinkEstimate:
        """Every pair with posterior >= ``floor``, weighted by its posterior (Blink-Soft with
        this prior, minus the pairs below the floor; their mass is reported)."""
        if not 0 < floor < 1:
            raise ConfigError(f"floor must be in (0, 1), got {floor}")
        keep_r = self.rep_p >= floor
        i, j, p0 = self._unreported(float(special.logit(floor)) + 2.0 * self.eps_a, max_pairs)
        keep_u = p0 >= floor
        w = np.concatenate([self.rep_p[keep_r], p0[keep_u]])
        mass = self.total_mass()
        return self._estimate(np.concatenate([self.rep_u[keep_r], i[keep_u]]),
                              np.concatenate([self.rep_v[keep_r], j[keep_u]]), w,
                              total_mass=mass, floor=floor,
                              dropped_mass=max(mass - float(w.sum()), 0.0),
                              unreported_kept=int(keep_u.sum()))
