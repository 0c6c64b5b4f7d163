"""DPAR's differentially private approximate PPR (Zhang et al., WWW 2024, Sec. 4.1).

* :class:`DPAPPRExponential` (DP-APPR-EM, Alg. 1): clip every APPR entry into [0, C2], pick
  the top-K entries with one-shot Gumbel noise (the peeling exponential mechanism, Durfee &
  Rogers 2019; :class:`dpgl.privacy.GumbelTopK`), and release as values either 1/K (option I)
  or the clipped values plus Laplace(K C2 / eps_v) noise (option II).
* :class:`DPAPPRGaussian` (DP-APPR-GM, Alg. 3): clip the APPR vector to l2 norm C1, add
  N(0, sigma^2) to every entry, keep the K largest noisy entries (post-processing).
* :func:`clip_columns_l1` (Alg. 2, line 3): scale every column of the released matrix to l1
  norm <= tau, and :func:`cap_column_occurrences`, which bounds how many rows use one node
  (post-processing; it fixes the number of DP-SGD examples one node can touch).

Neighbouring relation (node-level DP, ``Unit.NODE_DP``): graphs differ in one node with its
features and all its edges; node ids are a public universe. Every vector has one entry per
*universe* id, present or not (an absent node scores 0), so the set of candidates never
depends on which nodes are present, and an absent source's vector is all zeros. Per-entry
clipping makes every APPR entry lie in [0, C2], so *any* change of the graph moves each score
by at most C2: l_inf sensitivity C2, which is what the Gumbel top-K guarantee needs. For GM,
both vectors lie in the l2 ball of radius C1, so their distance is at most 2 C1 (the paper
uses C1, which two orthogonal vectors exceed; since APPR vectors are non-negative,
||a - b||^2 = ||a||^2 + ||b||^2 - 2 a.b <= 2 C1^2, so the sensitivity is sqrt(2) C1, which
we use; see docs/node-dp.md). Both release methods charge the active
accountant for the rows they release: every row may depend on the removed node, so M rows
compose M-fold (optimal composition for EM, a self-composed Gaussian event for GM).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import scipy.sparse as sp

from dpgl.errors import ConfigError, PrivacyError
from dpgl.privacy import (
    Guarantee,
    GumbelTopK,
    LaplaceMechanism,
    Randomizer,
    Unit,
    check_delta,
    check_epsilon,
    compose_parts,
    current_accountant,
)

__all__ = [
    "DPAPPRExponential",
    "DPAPPRGaussian",
    "cap_column_occurrences",
    "clip_columns_l1",
    "topk_nonprivate",
]


def _rows(appr: sp.spmatrix | np.ndarray) -> sp.csr_matrix:
    mat = sp.csr_matrix(appr, dtype=np.float64)
    if mat.nnz and mat.data.min() < 0:
        raise ConfigError("APPR vectors must be non-negative")
    return mat


def _assemble(idx: np.ndarray, val: np.ndarray, n: int) -> sp.csr_matrix:
    m, k = idx.shape
    rows = np.repeat(np.arange(m), k)
    out = sp.csr_matrix((val.ravel(), (rows, idx.ravel())), shape=(m, n))
    out.eliminate_zeros()
    return out


def topk_nonprivate(appr: sp.spmatrix | np.ndarray, k: int) -> sp.csr_matrix:
    """The K largest entries of every row, values kept (non-private DPAR; PPRGo's top-k)."""
    mat = _rows(appr)
    n = mat.shape[1]
    if k < 1 or k > n:
        raise ConfigError(f"k must be in [1, {n}], got {k}")
    dense = mat.toarray()
    idx = np.argpartition(-dense, k - 1, axis=1)[:, :k]
    val = np.take_along_axis(dense, idx, axis=1)
    return _assemble(idx, val, n)


class DPAPPRExponential(Randomizer):
    """DP-APPR-EM for one APPR vector per row: ``epsilon`` is the pure node-level budget of
    one vector. Option I (``values="uniform"``): all of it selects K indices (eps/K per peeling
    step, Gumbel scale 2 C2 K / eps); option II (``values="laplace"``): a ``value_share`` of it
    releases the K clipped values with Laplace(K C2 / eps_v) noise (L1 sensitivity K C2).
    :meth:`release` charges the M rows it releases, composed by KOV optimal composition with
    ``delta_slack``."""

    def __init__(self, k: int, epsilon: float, *, clip: float = 1e-3,
                 values: Literal["uniform", "laplace"] = "uniform",
                 value_share: float = 0.5, delta_slack: float = 0.0,
                 unit: Unit = Unit.NODE_DP) -> None:
        eps = check_epsilon(epsilon)
        if values not in ("uniform", "laplace"):
            raise ConfigError(f"values must be 'uniform' or 'laplace', got {values!r}")
        if not 0.0 < value_share < 1.0:
            raise ConfigError(f"value_share must be in (0, 1), got {value_share!r}")
        if not clip > 0:
            raise ConfigError(f"clip (C2) must be > 0, got {clip!r}")
        self.k = int(k)
        self.clip = float(clip)
        self.values = values
        self.unit = unit
        self.delta_slack = check_delta(delta_slack, "delta_slack")
        self.label = "DP-APPR-EM"
        eps_select = eps if values == "uniform" else (1 - value_share) * eps
        self.selector = GumbelTopK(self.k, eps_select, sensitivity=self.clip, unit=unit,
                                   label="DP-APPR-EM: Gumbel top-K")
        self.value_mech = None if values == "uniform" else LaplaceMechanism(
            value_share * eps, sensitivity=self.k * self.clip, unit=unit,
            label="DP-APPR-EM: Laplace values")

    def parts(self) -> dict[str, Guarantee]:
        out = {"top-K": self.selector.guarantee}
        if self.value_mech is not None:
            out["values"] = self.value_mech.guarantee
        return out

    @property
    def guarantee(self) -> Guarantee:
        """Pure eps-node-DP for one vector: the K peeling steps + optional Laplace values,
        basic composition of the parts as drawn (DPAR Thm 1)."""
        return compose_parts(self.parts(), self.unit)

    @property
    def epsilon(self) -> float:
        return self.guarantee.epsilon

    def release(self, appr: sp.spmatrix | np.ndarray, rng: np.random.Generator
                ) -> sp.csr_matrix:
        """Private top-K of every row (one APPR vector per row, one column per universe id) as
        a sparse matrix; charges the rows released."""
        mat = _rows(appr)
        n = mat.shape[1]
        scores = np.minimum(mat.toarray(), self.clip)        # per-entry clipping to [0, C2]
        idx = self.selector.select(scores, rng)              # (rows, K)
        if self.value_mech is None:
            val = np.full(idx.shape, 1.0 / self.k)
        else:
            picked = np.take_along_axis(scores, idx, axis=1)
            val = np.maximum(self.value_mech.randomize(picked, rng), 0.0)  # post-processing
        self.charge(count=mat.shape[0], composition="optimal", delta_slack=self.delta_slack,
                    name="DP-APPR-EM (private top-K per source)")
        return _assemble(idx, val, n)

    def _repr_args(self) -> dict[str, object]:
        return {"k": self.k, "epsilon": self.epsilon, "clip": self.clip, "values": self.values}


class DPAPPRGaussian(Randomizer):
    """DP-APPR-GM: l2 clipping to C1, Gaussian noise of std ``sigma`` on every entry, top-K of
    the noisy vector (values: the noisy values, floored at 0). Node-level l2 sensitivity of one
    vector: sqrt(2) C1 (:attr:`sensitivity`; two non-negative vectors in the C1-ball are at most
    that far apart); noise multiplier sigma / (sqrt(2) C1). :meth:`release` charges a Gaussian
    event with one step per released row."""

    def __init__(self, k: int, sigma: float, *, clip: float = 1e-2,
                 unit: Unit = Unit.NODE_DP) -> None:
        if not sigma > 0 or not clip > 0:
            raise ConfigError("sigma and clip (C1) must be > 0")
        self.k = int(k)
        self.sigma = float(sigma)
        self.clip = float(clip)
        self.unit = unit
        self.label = "DP-APPR-GM"

    @property
    def sensitivity(self) -> float:
        """sqrt(2) C1: for non-negative a, b with ||a||, ||b|| <= C1, a.b >= 0 gives
        ||a - b||^2 <= ||a||^2 + ||b||^2 <= 2 C1^2 (attained by orthogonal vectors)."""
        return math.sqrt(2.0) * self.clip

    @property
    def noise_multiplier(self) -> float:
        return self.sigma / self.sensitivity

    @property
    def guarantee(self) -> Guarantee:
        """A Gaussian event: its epsilon exists at a target delta only (the run's report)."""
        raise PrivacyError("DP-APPR-GM is a Gaussian event: its epsilon depends on the target "
                           "delta (see the run's privacy report)")

    def charge(self, *, count: int = 1, **_: object) -> None:  # type: ignore[override]
        acc = current_accountant()
        if acc is not None:
            acc.spend_gaussian("DP-APPR-GM (private top-K per source)",
                               noise_multiplier=self.noise_multiplier, steps=count,
                               unit=self.unit,
                               sensitivity_note="l2 clip C1 of a non-negative vector: "
                                                "sensitivity sqrt(2) C1 per vector")

    def release(self, appr: sp.spmatrix | np.ndarray, rng: np.random.Generator
                ) -> sp.csr_matrix:
        mat = _rows(appr)
        n = mat.shape[1]
        if self.k > n:
            raise ConfigError(f"cannot select k={self.k} of {n} entries")
        dense = mat.toarray()
        norms = np.linalg.norm(dense, axis=1, keepdims=True)
        dense = dense * np.minimum(1.0, self.clip / np.maximum(norms, 1e-300))
        noisy = dense + rng.normal(0.0, self.sigma, size=dense.shape)
        idx = np.argpartition(-noisy, self.k - 1, axis=1)[:, : self.k]
        val = np.maximum(np.take_along_axis(noisy, idx, axis=1), 0.0)
        self.charge(count=mat.shape[0])
        return _assemble(idx, val, n)

    def _repr_args(self) -> dict[str, object]:
        return {"k": self.k, "sigma": self.sigma, "clip": self.clip}


def clip_columns_l1(mat: sp.spmatrix, tau: float = 1.0,
                    mode: Literal["clip", "normalize"] = "clip") -> sp.csr_matrix:
    """Column-wise l1 clipping (DPAR Alg. 2, line 3): scale column j by min(1, tau/||col||_1)
    (``mode="normalize"``: by tau/||col||_1, what DPAR's reference code does). Post-processing."""
    if not tau > 0:
        raise ConfigError(f"tau must be > 0, got {tau!r}")
    if mode not in ("clip", "normalize"):
        raise ConfigError(f"mode must be 'clip' or 'normalize', got {mode!r}")
    m = sp.csc_matrix(mat, dtype=np.float64)
    norms = np.asarray(abs(m).sum(axis=0)).ravel()
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(norms > 0, tau / norms, 1.0)
    if mode == "clip":
        scale = np.minimum(scale, 1.0)
    return sp.csr_matrix(m @ sp.diags(scale))


def cap_column_occurrences(mat: sp.spmatrix, max_other: int) -> sp.csr_matrix:
    """Keep, in every column j, the diagonal entry (j, j) and at most ``max_other`` other
    entries (the first rows in order); drop the rest. Afterwards one node appears in at most
    1 + ``max_other`` rows, which bounds its number of DP-SGD terms. Post-processing of the
    released matrix (rows index the same node ids as columns)."""
    if max_other < 0:
        raise ConfigError(f"max_other must be >= 0, got {max_other}")
    coo = sp.coo_matrix(mat)
    order = np.lexsort((coo.row, coo.col))
    r, c, v = coo.row[order], coo.col[order], coo.data[order]
    off = r != c
    keep = ~off
    if off.any():
        oc = c[off]
        # rank of each off-diagonal entry within its column (rows ascending)
        first = np.r_[0, np.flatnonzero(np.diff(oc)) + 1]
        starts = np.repeat(first, np.diff(np.r_[first, oc.size]))
        rank = np.arange(oc.size) - starts
        keep_off = np.zeros(off.sum(), dtype=bool)
        keep_off[rank < max_other] = True
        keep[np.flatnonzero(off)] = keep_off
    out = sp.csr_matrix((v[keep], (r[keep], c[keep])), shape=mat.shape)
    return out


def max_column_occurrences(mat: sp.spmatrix) -> int:
    """max over columns j of #{i != j : mat[i, j] != 0}."""
    coo = sp.coo_matrix(mat)
    off = (coo.row != coo.col) & (coo.data != 0)
    if not off.any():
        return 0
    return int(np.bincount(coo.col[off], minlength=mat.shape[1]).max())
