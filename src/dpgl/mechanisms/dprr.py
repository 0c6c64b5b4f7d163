"""DPRR: degree-preserving randomized response (Hidano & Murakami, "Degree-Preserving
Randomized Response for Graph Neural Networks under Local Differential Privacy", 2022).

User i:

1. noisy degree d~_i = d_i + Lap(1 / eps1)  (degree has sensitivity 1 under edge LDP);
2. Warner's RR with eps2 on every one of her n - 1 bits (keep probability p);
3. keeps every reported 1 independently with probability (edge sampling, Eq. 6)
   q_i = d~_i / (d~_i (2p - 1) + (n - 1)(1 - p)),
   projected to [0, 1] (and q_i = 0 when d~_i <= 0). The denominator is the expected number
   of 1s after RR for a user of degree d~_i, so the expected number of kept 1s is ~d_i.

Only the sampled list is sent; the sampling is post-processing of (d~_i, RR output), so the
report is (eps1 + eps2)-edge LDP by sequential composition.

Budget allocation (Eq. 8): eps1 = max(sqrt(8 / (n_max - 1)), (1 - alpha) eps),
eps2 = eps - eps1, alpha = 0.9 by default; ``allocation="split"`` uses
eps1 = (1 - alpha) eps. ``n_max`` is the largest number of nodes of a graph (DPRR targets
graph classification); for a single graph it is its node count.

Whole-graph simulation: for user i a non-neighbor is reported with probability
(1 - p) q_i and a neighbor with probability p q_i, independently, so the report of all users
is a row-wise Bernoulli process with rates (1 - p) q_i (sampled by geometric gaps,
:func:`dpgl.graph.pairs.bernoulli_rows`, dropping the hits on true neighbors) plus an
independent coin per true (directed) edge. Cost O(|E| + output + n), never O(n^2), even when
eps2 is small (the RR output would be dense, the sampled one is not).

Non-private users (DPRR's setting where a fraction of users publish their true lists) are
a boolean ``private_mask`` of the simulation: masked-out users send their true list.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpgl.errors import ConfigError, GraphError, PrivacyError, unknown_name
from dpgl.graph.pairs import bernoulli_rows, ordered_pair_to_index, sort_pairs
from dpgl.mechanisms.neighbor_list import (
    check_csr_rows,
    check_neighbor_list,
    check_num_nodes,
    check_population,
)
from dpgl.mechanisms.rr import DirectedReports, _directed_keys, both_directions, flip_bits
from dpgl.privacy import (
    Guarantee,
    LaplaceMechanism,
    RandomizedResponse,
    Randomizer,
    Unit,
    check_epsilon,
    check_fraction,
    compose_parts,
)
from dpgl.privacy.randomizer import record_nonprivate

__all__ = [
    "DPRR",
    "DPRRReport",
    "dprr_budget",
    "dprr_sampling_probability",
    "draw_private_mask",
]

ALLOCATIONS = ("eq8", "split")


def dprr_budget(epsilon: float, *, alpha: float = 0.9, n_max: int | None = None,
                allocation: str = "eq8") -> tuple[float, float]:
    """(eps1, eps2) of DPRR: eps1 for the degree, eps2 for RR (Eq. 8 or a plain split).

    ``"eq8"``: eps1 = max(sqrt(8 / (n_max - 1)), (1 - alpha) eps); ``"split"``:
    eps1 = (1 - alpha) eps. Raises :class:`PrivacyError` when eps1 >= eps (no budget left
    for RR).
    """
    eps = check_epsilon(epsilon)
    alpha = check_fraction(alpha, "alpha", low_open=True, high_open=True)
    if allocation not in ALLOCATIONS:
        raise unknown_name("DPRR budget allocation", allocation, ALLOCATIONS)
    eps1 = (1.0 - alpha) * eps
    if allocation == "eq8":
        if n_max is None or isinstance(n_max, bool) or int(n_max) != n_max or n_max < 2:
            raise ConfigError(f"DPRR Eq. 8 needs n_max, an integer >= 2, got {n_max!r}")
        eps1 = max(math.sqrt(8.0 / (int(n_max) - 1)), eps1)
    if eps1 >= eps:
        raise PrivacyError(f"DPRR degree budget eps1={eps1:.4g} >= eps={eps:.4g}: nothing left "
                           "for randomized response; increase eps or n_max, or use "
                           "allocation='split'")
    return eps1, eps - eps1


def dprr_sampling_probability(noisy_degree: object, num_nodes: int,
                              keep_probability: float) -> np.ndarray:
    """DPRR Eq. 6: q = d~ / (d~ (2p - 1) + (n - 1)(1 - p)) projected to [0, 1].

    A noisy degree <= 0 gives q = 0 (it is clipped to 0 before the formula, which also keeps
    the denominator positive for p > 1/2).
    """
    d = np.maximum(np.asarray(noisy_degree, dtype=np.float64), 0.0)
    p = float(keep_probability)
    denom = d * (2.0 * p - 1.0) + (num_nodes - 1) * (1.0 - p)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(denom > 0, d / denom, 1.0)
    return np.clip(q, 0.0, 1.0)


def draw_private_mask(num_nodes: int, non_private_fraction: float,
                      rng: np.random.Generator) -> np.ndarray:
    """A uniformly random mask with round(non_private_fraction * n) non-private users (False)."""
    n = check_num_nodes(num_nodes)
    frac = check_fraction(non_private_fraction, "non_private_fraction")
    mask = np.ones(n, dtype=bool)
    k = round(frac * n)
    if k:
        mask[rng.choice(n, size=k, replace=False)] = False
    return mask


@dataclass(frozen=True)
class DPRRReport:
    """One user's DPRR output: the sampled noisy neighbor list and her noisy degree (the
    degree stays on the device in DPRR; it is returned for analysis)."""

    neighbors: np.ndarray
    noisy_degree: float


class DPRR(Randomizer):
    """DPRR with total budget ``epsilon`` split into eps1 (degree) + eps2 (RR).

    ``n_max`` is needed for the Eq. 8 allocation; when it is ``None`` the node count of the
    graph being randomized is used (:meth:`budget`). ``secure=True`` draws the noisy degree
    with Mironov's snapping mechanism (docs/secure-mode.md). The two parts are randomizers
    (:meth:`randomizers`): the Laplace degree and the bit-level RR, each charging the active
    accountant when its noise is drawn; the guarantee is their composition.
    """

    def __init__(self, epsilon: float, *, n_max: int | None = None, alpha: float = 0.9,
                 allocation: str = "eq8", secure: bool = False) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.secure = bool(secure)
        self.alpha = check_fraction(alpha, "alpha", low_open=True, high_open=True)
        if allocation not in ALLOCATIONS:
            raise unknown_name("DPRR budget allocation", allocation, ALLOCATIONS)
        self.allocation = allocation
        self.n_max = n_max
        self.label = "neighbor lists: DPRR"
        if n_max is not None or allocation == "split":
            dprr_budget(self.epsilon, alpha=self.alpha, n_max=n_max, allocation=allocation)

    def budget(self, num_nodes: int | None = None) -> tuple[float, float]:
        """(eps1, eps2) for a graph with ``num_nodes`` nodes (``n_max`` wins when set)."""
        n_max = self.n_max if self.n_max is not None else num_nodes
        return dprr_budget(self.epsilon, alpha=self.alpha, n_max=n_max,
                           allocation=self.allocation)

    def randomizers(self, num_nodes: int | None = None
                    ) -> tuple[LaplaceMechanism, RandomizedResponse]:
        """The two parts for lists of ``num_nodes`` users: (Laplace degree, bit-level RR)."""
        eps1, eps2 = self.budget(num_nodes)
        # secure: the degree noise (on the device; it sets the sampling probability) is drawn
        # by Mironov's snapping mechanism, clamped to [-B, B] with B = n + 50 / eps1
        bound = (float(num_nodes or self.n_max or 1) + 50.0 / eps1) if self.secure else None
        return (LaplaceMechanism(eps1, 1.0, Unit.EDGE_LDP, label="Laplace degree (eps1)",
                                 secure=self.secure, bound=bound),
                RandomizedResponse(eps2, Unit.EDGE_LDP,
                                   label="RR + edge sampling (eps2)"))

    def parts(self, num_nodes: int | None = None) -> dict[str, Guarantee]:  # type: ignore[override]
        """The two composed parts: ``{"degree": eps1, "rr": eps2}``."""
        degree, rr = self.randomizers(num_nodes)
        return {"degree": degree.guarantee, "rr": rr.guarantee}

    def guarantee_for(self, num_nodes: int | None = None) -> Guarantee:
        """eps1 + eps2 (Laplace degree + RR, sequential composition) for ``num_nodes``."""
        return compose_parts(self.parts(num_nodes), Unit.EDGE_LDP)

    @property
    def guarantee(self) -> Guarantee:
        """eps-edge LDP = eps1 (Laplace degree) + eps2 (RR), sequential composition. Without
        ``n_max`` (Eq. 8 then splits per graph size) the parts are known only per graph, but
        eps1 + eps2 = eps for every size (:func:`dprr_budget`); draws charge the parts."""
        if self.n_max is not None or self.allocation == "split":
            return self.guarantee_for(None)
        return Guarantee(self.epsilon, 0.0, Unit.EDGE_LDP)

    def report(self, neighbors: object, num_nodes: int, index: int,
               rng: np.random.Generator) -> DPRRReport:
        """What user ``index`` runs: noisy degree, RR with eps2, edge sampling with q_i."""
        n = check_num_nodes(num_nodes)
        nb = check_neighbor_list(neighbors, n, index)
        degree_mech, rr = self.randomizers(n)
        noisy = float(degree_mech.randomize(np.array(float(nb.size)), rng))
        degree_mech.charge()
        pos = nb - (nb > index)
        flipped = flip_bits(pos, n - 1, rr.flip_probability, rng)
        rr.charge()
        q = float(dprr_sampling_probability(noisy, n, rr.keep_probability))
        kept = flipped[rng.random(flipped.size) < q]
        return DPRRReport(kept + (kept >= index), noisy)

    def simulate_lists(self, src: np.ndarray, dst: np.ndarray, num_nodes: int,
                       rng: np.random.Generator, private_mask: np.ndarray | None = None
                       ) -> tuple[DirectedReports, np.ndarray]:
        """All users' DPRR reports for the directed true lists (user ``src[k]`` has neighbor
        ``dst[k]``).

        Returns the directed reports and the noisy degrees (true degrees for users with
        ``private_mask[i] == False``, who send their true neighbor list; recorded as
        non-private).
        """
        n = check_num_nodes(num_nodes)
        degree_mech, rr = self.randomizers(n)
        p = rr.keep_probability
        if private_mask is None:
            private = np.ones(n, dtype=bool)
        else:
            private = np.asarray(private_mask)
            if private.dtype != bool or private.shape != (n,):
                raise ConfigError(f"private_mask must be a boolean array of shape ({n},)")
        true_keys = _directed_keys(src, dst, n)
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        degree = np.bincount(src, minlength=n).astype(np.float64)
        noisy = degree_mech.randomize(degree, rng)
        degree_mech.charge()
        noisy = np.where(private, noisy, degree)
        q = np.where(private, dprr_sampling_probability(noisy, n, p), 0.0)
        # Non-neighbors: Bernoulli((1 - p) q_i) over the n - 1 bit positions of row i.
        rows, pos = bernoulli_rows(rr.flip_probability * q,
                                   np.full(n, n - 1, dtype=np.int64), rng, sort=False)
        rr.charge()
        cols = pos + (pos >= rows)
        keys = ordered_pair_to_index(rows, cols, n)
        if true_keys.size and keys.size:
            idx = np.minimum(np.searchsorted(true_keys, keys), true_keys.size - 1)
            is_edge = true_keys[idx] == keys
            rows, cols = rows[~is_edge], cols[~is_edge]
        # Neighbors: kept with probability p q_i (private) or 1 (non-private).
        keep_prob = np.where(private, p * q, 1.0)[src]
        kept = rng.random(src.size) < keep_prob
        if not private.all():
            record_nonprivate("non-private users' neighbor lists",
                              "the non-private users of DPRR's customized setting send "
                              "their true lists: they have no privacy",
                              Unit.EDGE_LDP)
        user, neighbor, _ = sort_pairs(np.concatenate([rows, src[kept]]),
                                       np.concatenate([cols, dst[kept]]), n)
        return DirectedReports(user, neighbor, n), noisy

    def simulate_rows(self, indptr: np.ndarray, indices: np.ndarray, first: int,
                      num_users: int, rng: np.random.Generator
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The reports of a block of users ``first, first + 1, ...`` from their neighbor lists
        in CSR form (row r of ``indptr``/``indices`` is user ``first + r``; ids sorted and
        unique within a row), among ``num_users`` users in all (public: it sets eps1 by
        Eq. 8 and the RR length n - 1).

        The sharded simulation's unit (:mod:`dpgl.distributed`): it reads only the block's own
        lists, so each report depends on its user's list and ``rng`` alone, and it charges the
        two parts like :meth:`simulate_lists`. Cost O(block's edges + output + rows); up to
        2^31 - 1 users (the pair index of :mod:`dpgl.graph.pairs` is not used). Returns
        ``(user, neighbor, noisy_degree)``: the reports sorted by (user, neighbor) and the
        block's noisy degrees.
        """
        n = check_population(num_users)
        indptr = np.asarray(indptr, dtype=np.int64)
        indices = np.asarray(indices, dtype=np.int64)
        rows_n = indptr.size - 1
        if isinstance(first, bool) or not isinstance(first, (int, np.integer)) \
                or first < 0 or first + rows_n > n:
            raise GraphError(f"a block of {rows_n} users starting at {first!r} does not fit "
                             f"in {n} users")
        if rows_n * n >= 2**62:
            raise GraphError(f"a block of {rows_n} users among {n} is too large for int64 "
                             "report keys; use smaller blocks")
        local = check_csr_rows(indptr, indices, int(first), n)
        degree_mech, rr = self.randomizers(n)
        p = rr.keep_probability
        noisy = degree_mech.randomize(np.diff(indptr).astype(np.float64), rng)
        degree_mech.charge()
        q = dprr_sampling_probability(noisy, n, p)
        # Non-neighbors: Bernoulli((1 - p) q_i) over the n - 1 bit positions of row i.
        rows, pos = bernoulli_rows(rr.flip_probability * q,
                                   np.full(rows_n, n - 1, dtype=np.int64), rng, sort=False)
        rr.charge()
        users = rows + int(first)
        cols = pos + (pos >= users)
        keys = rows * n + cols
        true_keys = local * n + indices    # sorted: rows in order, ids sorted within a row
        if true_keys.size and keys.size:
            idx = np.minimum(np.searchsorted(true_keys, keys), true_keys.size - 1)
            keys = keys[true_keys[idx] != keys]
        # Neighbors: kept with probability p q_i.
        kept = rng.random(indices.size) < (p * q)[local]
        out = np.sort(np.concatenate([keys, true_keys[kept]]))
        return out // n + int(first), out % n, noisy

    def simulate(self, u: np.ndarray, v: np.ndarray, num_nodes: int, rng: np.random.Generator,
                 private_mask: np.ndarray | None = None) -> tuple[DirectedReports, np.ndarray]:
        """All users' DPRR reports for the undirected graph (u, v), u < v (see
        :meth:`simulate_lists`)."""
        return self.simulate_lists(*both_directions(u, v), num_nodes, rng, private_mask)

    def _repr_args(self) -> dict[str, object]:
        return {"epsilon": self.epsilon, "n_max": self.n_max, "alpha": self.alpha,
                "allocation": self.allocation}
