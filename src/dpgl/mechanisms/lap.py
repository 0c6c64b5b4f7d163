"""Laplace noise on every adjacency bit: L-DpGCN (as Blink's baseline) and DPRR's LocalLap.

User i sends a_ij = A_ij + Lap(1 / eps2) for every j != i (the L1 sensitivity of her bit
vector under edge LDP is 1, so this is eps2-edge LDP; Laplace mechanism, Dwork et al. 2006)
and, in the LocalLap variant, a noisy degree d_i + Z, Z discrete Laplace with rate eps1
(sensitivity 1; the exact integer sampler, so the released integer is safe from
floating-point attacks). Each part charges the active accountant when it is drawn:

* ``variant="locallap"`` (DPRR's LocalLap baseline): eps1 = ``degree_share`` * eps
  (1/10 by default), eps2 = eps - eps1; the server keeps T = round(sum_i d~_i / 2) pairs.
* ``variant="ldpgcn"`` (L-DpGCN, the local version of DpGCN / LapGraph as Blink runs it):
  eps2 = eps, no degree; T = round(sum_{i != j} a_ij / 2).

The server (:mod:`dpgl.estimators.toptt`) scores every unordered pair by
Z_ij = a_ij + a_ji = 2 A_ij + L_ij + L_ji and keeps the T highest scores.

Sparse simulation (:class:`LapCandidates`): a user's report is inherently dense (n - 1
reals), but the server only needs the pairs that can be in the top T. Every true edge's score
is drawn (O(|E|)); for the N0 non-edges, whose scores are iid copies of Z = L1 + L2
(L iid Lap(b)), the number above a cutoff t is Binomial(N0, S(t)) with
S(t) = P[Z > t] = (2 + t / b) e^{-t / b} / 4 (t >= 0), their positions are uniform among the
non-edges, and their values follow the conditional tail: Z | Z > t = t + Y with Y ~ Exp(b)
with probability (1 + t / b) / (2 + t / b), else Gamma(2, b). If fewer than T scores exceed
t, the cutoff is lowered to t' and the non-edges in (t', t] are added the same way
(Binomial over the remaining non-edges with probability P[t' < Z <= t | Z <= t]).

Exactness: once at least T scores exceed the cutoff t, the T-th largest score of the full
matrix is >= t, so every pair of the full top T is a candidate and the top T of the
candidates *is* the top T of the full matrix. For the ``ldpgcn`` T (which needs the sum of
all n (n - 1) noisy entries) the sum of the non-candidate scores is drawn from the normal law
with their exact conditional mean and variance (central limit theorem over ~n^2 / 2 iid
terms; exact up to the Berry-Esseen error O(N^{-1/2})); the cutoff is set below a T that is
exceeded with probability < 1e-15, so the candidate set does not depend on that draw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpgl.errors import ConfigError, unknown_name
from dpgl.graph.pairs import num_pairs, pair_to_index, sample_distinct_excluding
from dpgl.mechanisms.neighbor_list import check_neighbor_list, check_num_nodes
from dpgl.mechanisms.rr import _directed_keys, both_directions
from dpgl.privacy import (
    DiscreteLaplace,
    Guarantee,
    LaplaceMechanism,
    Randomizer,
    Unit,
    check_epsilon,
    check_fraction,
    compose_parts,
)

__all__ = [
    "LapCandidates",
    "LapReport",
    "LocalLap",
    "pair_noise_moments_below",
    "pair_noise_survival",
    "sample_pair_noise_above",
    "sample_pair_noise_between",
]

VARIANTS = ("locallap", "ldpgcn")


def pair_noise_survival(t: float, b: float) -> float:
    """P[L1 + L2 > t] for L1, L2 iid Lap(b): (2 + |t|/b) e^{-|t|/b} / 4, mirrored for t < 0."""
    z = abs(t) / b
    s = 0.25 * (2.0 + z) * math.exp(-z)
    return s if t >= 0 else 1.0 - s


def _tail(t: float, b: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """Z | Z > t for t >= 0: t + Exp(b) w.p. (1 + t/b) / (2 + t/b), else t + Gamma(2, b)."""
    z = t / b
    use_exp = rng.random(size) < (1.0 + z) / (2.0 + z)
    y = np.where(use_exp, rng.exponential(b, size), rng.gamma(2.0, b, size))
    return t + y


def sample_pair_noise_above(t: float, b: float, size: int,
                            rng: np.random.Generator) -> np.ndarray:
    """``size`` draws of Z = L1 + L2 conditioned on Z > t (exact)."""
    if size == 0:
        return np.zeros(0)
    if t >= 0:
        return _tail(t, b, size, rng)
    out = np.zeros(0)
    while out.size < size:  # acceptance P[Z > t] >= 1/2 for t < 0
        k = 2 * (size - out.size) + 8
        z = rng.laplace(0, b, k) + rng.laplace(0, b, k)
        out = np.concatenate([out, z[z > t]])
    return out[:size]


def sample_pair_noise_between(lo: float, hi: float, b: float, size: int,
                              rng: np.random.Generator) -> np.ndarray:
    """``size`` draws of Z = L1 + L2 conditioned on lo < Z <= hi (rejection from Z > lo)."""
    out = np.zeros(0)
    while out.size < size:
        need = size - out.size
        acc = max((pair_noise_survival(lo, b) - pair_noise_survival(hi, b))
                  / pair_noise_survival(lo, b), 1e-3)
        z = sample_pair_noise_above(lo, b, int(need / acc * 1.2) + 8, rng)
        out = np.concatenate([out, z[z <= hi]])
    return out[:size]


def _upper_moments(t: float, b: float) -> tuple[float, float]:
    """(E[Z; Z > t], E[Z^2; Z > t]) for t >= 0."""
    z = t / b
    s = pair_noise_survival(t, b)
    w = (1.0 + z) / (2.0 + z)
    ey = w * b + (1 - w) * 2 * b
    ey2 = w * 2 * b * b + (1 - w) * 6 * b * b
    return s * (t + ey), s * (t * t + 2 * t * ey + ey2)


def pair_noise_moments_below(t: float, b: float) -> tuple[float, float]:
    """Mean and variance of Z = L1 + L2 conditioned on Z <= t (E[Z] = 0, E[Z^2] = 4 b^2)."""
    p_below = 1.0 - pair_noise_survival(t, b)
    if p_below <= 0:
        raise ConfigError("cutoff too low: no probability mass below it")
    if t >= 0:
        m1, m2 = _upper_moments(t, b)
        e1, e2 = -m1, 4 * b * b - m2
    else:  # E[Z; Z <= t] = -E[Z; Z >= |t|] by symmetry
        m1, m2 = _upper_moments(-t, b)
        e1, e2 = -m1, m2
    mean = e1 / p_below
    return mean, max(e2 / p_below - mean * mean, 0.0)


@dataclass(frozen=True)
class LapReport:
    """One user's report: noisy bits (length n, own entry 0) and noisy degree (or None)."""

    values: np.ndarray
    noisy_degree: int | None


class LocalLap(Randomizer):
    """Laplace noise on every bit (+ a noisy degree for ``variant="locallap"``).

    Parts (randomizers that charge when they draw): :attr:`bits` (Laplace, eps2, L1
    sensitivity 1) and, for ``locallap``, :attr:`degree` (discrete Laplace, eps1).
    ``secure=True`` releases the device's bits (:meth:`report`) through Mironov's snapping
    mechanism (docs/secure-mode.md); the whole-graph simulation draws the ideal distribution.
    """

    def __init__(self, epsilon: float, *, variant: str = "locallap",
                 degree_share: float = 0.1, secure: bool = False) -> None:
        self.epsilon = check_epsilon(epsilon)
        if variant not in VARIANTS:
            raise unknown_name("Laplace-bits variant", variant, VARIANTS)
        self.variant = variant
        if variant == "locallap":
            self.degree_share = check_fraction(degree_share, "degree_share",
                                                  low_open=True, high_open=True)
        else:
            self.degree_share = 0.0
        self.label = f"neighbor lists: {variant}"
        eps2 = self.epsilon - self.degree_share * self.epsilon
        # secure: the device's real-valued bits are released through Mironov's snapping
        # mechanism, clamped to the public [-B, B] with B = 1 + 50 / eps2 (the clamp binds
        # with probability < e^-50 per bit)
        self.bits = LaplaceMechanism(eps2, 1.0, Unit.EDGE_LDP, label="Laplace bits (eps2)",
                                     secure=secure,
                                     bound=(1.0 + 50.0 / eps2) if secure else None)
        self.degree: DiscreteLaplace | None = None
        if variant == "locallap":
            self.degree = DiscreteLaplace(self.degree_share * self.epsilon, 1, Unit.EDGE_LDP,
                                          label="noisy degree (eps1)")

    @property
    def eps1(self) -> float:
        """Budget of the noisy degree (0 for ``ldpgcn``)."""
        return 0.0 if self.degree is None else self.degree.epsilon

    @property
    def eps2(self) -> float:
        """Budget of the noisy bits."""
        return self.bits.epsilon

    @property
    def scale(self) -> float:
        """Laplace scale b = 1 / eps2 of each bit (the scale the draws use)."""
        return self.bits.scale

    def parts(self) -> dict[str, Guarantee]:
        out = {"bits": self.bits.guarantee}
        if self.degree is not None:
            out["degree"] = self.degree.guarantee
        return out

    @property
    def guarantee(self) -> Guarantee:
        """eps-edge LDP (eps2 for the bits + eps1 for the degree, sequential composition)."""
        return compose_parts(self.parts(), Unit.EDGE_LDP)

    def report(self, neighbors: object, num_nodes: int, index: int,
               rng: np.random.Generator) -> LapReport:
        """What user ``index`` sends (dense: n reals)."""
        n = check_num_nodes(num_nodes)
        nb = check_neighbor_list(neighbors, n, index)
        truth = np.zeros(n)
        truth[nb] = 1.0
        values = self.bits.randomize(truth, rng)
        self.bits.charge()
        values[index] = 0.0
        degree = None
        if self.degree is not None:
            degree = int(self.degree.randomize(np.array(nb.size), rng))
            self.degree.charge()
        return LapReport(values, degree)

    def candidates(self, u: np.ndarray, v: np.ndarray, num_nodes: int,
                   rng: np.random.Generator) -> LapCandidates:
        """Sparse simulation of all users' reports for the undirected graph (u, v)."""
        return self.candidates_lists(*both_directions(u, v), num_nodes, rng)

    def candidates_lists(self, src: np.ndarray, dst: np.ndarray, num_nodes: int,
                         rng: np.random.Generator) -> LapCandidates:
        """Sparse simulation of all users' reports for their directed true lists (user
        ``src[k]`` has neighbor ``dst[k]``): pair (i, j) gets A_ij + A_ji + two Laplace draws."""
        n = check_num_nodes(num_nodes)
        _directed_keys(src, dst, n)
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        a, b = np.minimum(src, dst), np.maximum(src, dst)
        keys, mult = np.unique(pair_to_index(a, b, n), return_counts=True)
        degree = np.bincount(src, minlength=n)
        return LapCandidates(self, keys, mult.astype(np.float64), degree, n, rng)

    def _repr_args(self) -> dict[str, object]:
        out: dict[str, object] = {"epsilon": self.epsilon, "variant": self.variant}
        if self.degree is not None:
            out["degree_share"] = self.degree_share
        return out


class LapCandidates:
    """The pair scores Z_ij = a_ij + a_ji that can matter for a top-T server, sampled lazily.

    Holds every pair with a true entry (score A_ij + A_ji + noise) and every pair without one
    whose score is above the current ``cutoff``. Creating it draws every user's report (the
    lazily sampled non-edge scores are the same reports, revealed as the cutoff moves), so it
    charges the mechanism's parts once.
    """

    def __init__(self, mechanism: LocalLap, edge_keys: np.ndarray, multiplicity: np.ndarray,
                 degree: np.ndarray, num_nodes: int, rng: np.random.Generator) -> None:
        n = check_num_nodes(num_nodes)
        self.mechanism = mechanism
        self.num_nodes = n
        self.rng = rng
        b = mechanism.scale
        self.b = b
        self.total_pairs = num_pairs(n)
        self.edge_keys = np.asarray(edge_keys, dtype=np.int64)
        m = self.edge_keys.size
        self.edge_values = np.asarray(multiplicity, dtype=np.float64) \
            + rng.laplace(0, b, m) + rng.laplace(0, b, m)
        mechanism.bits.charge()
        self.num_zero = self.total_pairs - m
        self.zero_keys = np.zeros(0, np.int64)
        self.zero_values = np.zeros(0)
        self.cutoff = math.inf
        self.noisy_degrees: np.ndarray | None = None
        if mechanism.degree is not None:
            noisy = mechanism.degree.randomize(np.asarray(degree, dtype=np.int64), rng)
            mechanism.degree.charge()
            self.noisy_degrees = noisy.astype(np.float64)

    @property
    def keys(self) -> np.ndarray:
        """Upper-triangle indices of all candidates (edges first, then non-edges)."""
        return np.concatenate([self.edge_keys, self.zero_keys])

    @property
    def values(self) -> np.ndarray:
        return np.concatenate([self.edge_values, self.zero_values])

    def above_cutoff(self) -> int:
        """Number of candidate scores > cutoff (all non-edge candidates are)."""
        return int(np.sum(self.edge_values > self.cutoff)) + self.zero_keys.size

    def _solve_cutoff(self, count: float, pool: int, upper: float) -> float:
        """A cutoff t < upper with pool * P[t < Z <= upper | Z <= upper] ~= count."""
        s_up = pair_noise_survival(upper, self.b) if math.isfinite(upper) else 0.0
        target = min(count / max(pool, 1), 1.0)
        lo, hi = -60.0 * self.b, upper if math.isfinite(upper) else 800.0 * self.b
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            frac = (pair_noise_survival(mid, self.b) - s_up) / (1.0 - s_up)
            if frac >= target:
                lo = mid
            else:
                hi = mid
        return lo

    def lower_cutoff(self, new_cutoff: float) -> None:
        """Add every non-edge whose score lies in (new_cutoff, cutoff] (exact layer)."""
        if new_cutoff >= self.cutoff:
            return
        pool = self.num_zero - self.zero_keys.size
        s_old = pair_noise_survival(self.cutoff, self.b) if math.isfinite(self.cutoff) else 0.0
        s_new = pair_noise_survival(new_cutoff, self.b)
        prob = min(max((s_new - s_old) / (1.0 - s_old), 0.0), 1.0)
        k = int(self.rng.binomial(pool, prob)) if pool > 0 else 0
        if math.isfinite(self.cutoff):
            vals = sample_pair_noise_between(new_cutoff, self.cutoff, self.b, k, self.rng)
        else:
            vals = sample_pair_noise_above(new_cutoff, self.b, k, self.rng)
        # edges and earlier candidates are disjoint and duplicate-free by construction
        taken = np.sort(np.concatenate([self.edge_keys, self.zero_keys]))
        keys = sample_distinct_excluding(self.total_pairs, k, taken, self.rng)
        self.zero_keys = np.concatenate([self.zero_keys, keys])
        self.zero_values = np.concatenate([self.zero_values, vals])
        self.cutoff = new_cutoff

    def ensure(self, count: int) -> None:
        """Lower the cutoff until at least ``count`` scores exceed it."""
        count = min(int(count), self.total_pairs)
        while self.above_cutoff() < count:
            have = self.above_cutoff()
            deficit = count - have
            want = deficit + 5.0 * math.sqrt(deficit) + 10.0
            pool = self.num_zero - self.zero_keys.size
            if pool == 0:  # every non-edge is a candidate already: nothing is left out
                self.cutoff = -math.inf
                break
            self.lower_cutoff(self._solve_cutoff(want, pool, self.cutoff))

    def noisy_total(self) -> float:
        """Sum of all n (n - 1) noisy entries = sum of all pair scores (for L-DpGCN's T).

        Candidates exactly; the remaining non-edges (scores <= cutoff) by the normal law with
        their exact conditional mean and variance.
        """
        rest = self.num_zero - self.zero_keys.size
        total = float(self.edge_values.sum() + self.zero_values.sum())
        if rest > 0:
            if math.isfinite(self.cutoff):
                mean, var = pair_noise_moments_below(self.cutoff, self.b)
            else:
                mean, var = 0.0, 4.0 * self.b * self.b
            total += float(self.rng.normal(rest * mean, math.sqrt(rest * var)))
        return total

    def t_upper_bound(self) -> int:
        """A T exceeded with probability < 1e-15 (8 standard deviations of sum / 2)."""
        if self.noisy_degrees is not None:
            return 0
        m = self.edge_keys.size
        return math.ceil(m + 8.0 * self.b * math.sqrt(self.total_pairs) + 1.0)
