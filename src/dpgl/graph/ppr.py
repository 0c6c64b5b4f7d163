"""Personalized PageRank (PPR): approximate PPR by ISTA and exact PPR by power iteration.

Both compute the *lazy* PPR vector of Andersen, Chung & Lang (2006) with teleport
probability ``alpha``, the vector ISTA approximates (Fountoulakis, Roosta-Khorasani, Shun,
Cheng & Mahoney 2019, "Variational perspective on local graph clustering", Eq. 3 and 6):

    p = alpha s + (1 - alpha) W p,   W = (I + A D^-1) / 2          (column vectors)

ISTA solves the l1-regularized problem (Fountoulakis et al. 2019, Eq. 6)

    min_q  1/2 q^T Q q - alpha q^T D^-1/2 s + rho alpha ||D^1/2 q||_1,
    Q = alpha I + (1 - alpha)/2 (I - D^-1/2 A D^-1/2),

by proximal gradient steps of length 1 (Q's eigenvalues lie in (0, 1]) with non-negative
soft-thresholding, and returns p = D^1/2 q. With rho = 0 the minimiser is the exact lazy PPR;
with rho > 0 it is sparse (a *local* vector touching only nodes near the source). It stops when
||D^-1/2 grad||_inf <= (1 + tol) rho alpha, the stopping rule of DPAR's reference code; then
every residual entry is at most (1 + tol) rho alpha d_j, so ||p - p*||_1 <= (1 + tol) rho vol
(p* - p = PPR of the residual / alpha, which is l1-preserving; see docs/node-dp.md).

Graphs are scipy CSR adjacency matrices or ``edge_index`` tensors; work is done source block by
source block on dense length-n vectors (O(n) memory per source, never n x n), and outputs are
sparse (CSR, one row per source).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from dpgl.errors import ConfigError, GraphError

__all__ = ["adjacency", "ista_ppr", "power_iteration_ppr", "ppr_power_iteration_logits"]


def adjacency(edge_index: torch.Tensor | np.ndarray, num_nodes: int, *,
              self_loops: bool = True) -> sp.csr_matrix:
    """Symmetric 0/1 CSR adjacency of an undirected edge list (optionally with self-loops,
    as DPAR's reference code adds, so isolated nodes have degree 1)."""
    ei = edge_index.numpy() if isinstance(edge_index, torch.Tensor) else np.asarray(edge_index)
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise GraphError(f"edge_index must have shape [2, E], got {ei.shape}")
    if ei.size and (ei.min() < 0 or ei.max() >= num_nodes):
        raise GraphError(f"edge_index has node ids outside [0, {num_nodes - 1}]")
    a = sp.csr_matrix((np.ones(ei.shape[1]), (ei[0], ei[1])), shape=(num_nodes, num_nodes))
    a = ((a + a.T) > 0).astype(np.float64)
    if self_loops:
        a = a.tolil()
        a.setdiag(1.0)
    return sp.csr_matrix(a)


def _check(adj: sp.spmatrix, alpha: float, sources: np.ndarray) -> tuple[sp.csr_matrix,
                                                                         np.ndarray, np.ndarray]:
    if not sp.issparse(adj) or adj.shape[0] != adj.shape[1]:
        raise GraphError("adjacency must be a square scipy sparse matrix")
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"alpha must be in (0, 1), got {alpha!r}")
    a = sp.csr_matrix(adj, dtype=np.float64)
    deg = np.asarray(a.sum(axis=1)).ravel()
    if np.any(deg <= 0):
        raise GraphError("every node needs degree > 0 for PPR; add self-loops (adjacency(..., "
                         "self_loops=True))")
    src = np.asarray(sources, dtype=np.int64).ravel()
    if src.size and (src.min() < 0 or src.max() >= a.shape[0]):
        raise GraphError(f"source ids must be in [0, {a.shape[0] - 1}]")
    return a, deg, src


def power_iteration_ppr(adj: sp.spmatrix, sources: np.ndarray | list[int], alpha: float, *,
                        tol: float = 1e-12, max_iter: int = 10_000) -> np.ndarray:
    """Exact lazy PPR vectors by power iteration, one *row* per source (dense; for tests and
    small graphs): iterate P <- alpha S + (1 - alpha) P W^T to ``tol`` in l1 per row."""
    a, deg, src = _check(adj, alpha, np.asarray(sources))
    n = a.shape[0]
    s = np.zeros((src.size, n))
    s[np.arange(src.size), src] = 1.0
    p = s.copy()
    for _ in range(max_iter):
        # (W p)^T = 1/2 (p + (p / deg) A^T); A symmetric
        walk = 0.5 * (p + (a @ (p / deg).T).T)
        new = alpha * s + (1.0 - alpha) * walk
        if np.abs(new - p).sum(axis=1).max(initial=0.0) <= tol:
            return new
        p = new
    return p


def ista_ppr(adj: sp.spmatrix, sources: np.ndarray | list[int], alpha: float = 0.25, *,
             rho: float = 1e-4, tol: float = 1e-4, max_iter: int = 10_000,
             block: int = 256) -> sp.csr_matrix:
    """Approximate lazy PPR by ISTA (Fountoulakis et al. 2019, Alg. 2 with step 1), one sparse
    row per source. ``rho`` is the l1 weight (sparsity), ``tol`` the relative slack of the
    stopping rule (DPAR's ``eps``). Sources are processed ``block`` at a time."""
    a, deg, src = _check(adj, alpha, np.asarray(sources))
    if rho < 0 or tol < 0:
        raise ConfigError("rho and tol must be >= 0")
    n = a.shape[0]
    dsq = np.sqrt(deg)
    dinv_sq = 1.0 / dsq
    # B = D^-1/2 A D^-1/2 (symmetric)
    b = sp.diags(dinv_sq) @ a @ sp.diags(dinv_sq)
    b = sp.csr_matrix(b)
    thresh = rho * alpha * dsq                      # prox threshold per coordinate
    rows: list[sp.csr_matrix] = []
    for start in range(0, src.size, block):
        chunk = src[start:start + block]
        m = chunk.size
        lin = np.zeros((n, m))                      # alpha D^-1/2 s, one column per source
        lin[chunk, np.arange(m)] = alpha * dinv_sq[chunk]
        q = np.zeros((n, m))
        stop = (1.0 + tol) * rho * alpha
        for _ in range(max_iter):
            # grad = Q q - lin, Q q = ((1 + alpha)/2) q - (1 - alpha)/2 B q
            grad = 0.5 * (1.0 + alpha) * q - 0.5 * (1.0 - alpha) * (b @ q) - lin
            if np.max(np.abs(grad * dinv_sq[:, None]), initial=0.0) <= stop:
                break
            q = np.maximum(q - grad - thresh[:, None], 0.0)
        p = (q * dsq[:, None]).T
        p[p < 1e-300] = 0.0
        rows.append(sp.csr_matrix(p))
    if not rows:
        return sp.csr_matrix((0, n))
    return sp.csr_matrix(sp.vstack(rows))


def ppr_power_iteration_logits(adj: sp.spmatrix, local: np.ndarray | torch.Tensor,
                               alpha: float = 0.25, steps: int = 2) -> torch.Tensor:
    """DPAR inference (Eq. 4, after PPRGo, Bojchevski et al. 2020): ``steps`` power-iteration
    steps Z <- (1 - alpha) D^-1 A Z + alpha H from the local logits H (row-normalized
    adjacency with self-loops, DPAR's ``ppr_normalization='row'``)."""
    a = sp.csr_matrix(adj, dtype=np.float64)
    deg = np.asarray(a.sum(axis=1)).ravel()
    h = local.detach().cpu().numpy() if isinstance(local, torch.Tensor) else np.asarray(local)
    h = h.astype(np.float64)
    if h.shape[0] != a.shape[0]:
        raise ConfigError(f"{h.shape[0]} logit rows for a graph of {a.shape[0]} nodes")
    scale = (1.0 - alpha) / np.maximum(deg, 1e-12)
    z = h.copy()
    for _ in range(int(steps)):
        z = scale[:, None] * (a @ z) + alpha * h
    return torch.from_numpy(z.astype(np.float32))
