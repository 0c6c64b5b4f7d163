"""Data poisoning of noisy neighbor lists and the degree-threshold defense (DPRR paper,
Hidano & Murakami, Sec. 6: Poison(omega1, omega2) and Defense(theta)).

**Attack (Eq. 16, as implemented here).** A fraction beta of the users of a *training*
graph are controlled by the attacker and send a crafted list instead of their noisy one:
each bit j != i is 1 independently with probability omega1 if A_ij = 1 and omega2 if
A_ij = 0. Poison(1, 1) is the all-ones list, Poison(0.5, 0.5) a uniformly random list. The
paper's text was not available here; this reading reproduces both named special cases but
the general (omega1, omega2) semantics is an assumption (see docs/graph-ldp.md).

**Defense (Eq. 17 / Prop. 6, derived).** An honest user's reported list (Warner RR with
eps2, optionally followed by DPRR's edge sampling, which only removes 1s) has independent
bits with P[1] <= p = e^eps2 / (1 + e^eps2) each, so its number of 1s K is stochastically
dominated by Binomial(n - 1, p), mean mu = (n - 1) p. The multiplicative Chernoff bound
P[K >= (1 + delta) mu] <= exp(-delta^2 mu / (2 + delta)) equals theta at

    delta = (L + sqrt(L^2 + 8 mu L)) / (2 mu),   L = ln(1 / theta),

so with tau = (1 + delta) mu = mu + (L + sqrt(L^2 + 8 mu L)) / 2 the server flags every
user with K >= tau and drops her list; an honest user is flagged with probability
<= theta (false-positive rate <= theta). For n = 100, eps2 = 0.9, theta = 0.05 this gives
tau = 92.47, the paper's worked example (tau ~= 92.5), which is how the formula was
identified; it is otherwise unverified against the paper's text.

Lists are handled as directed reports (user, reported neighbor), sorted by (user, neighbor),
as :class:`dpgl.mechanisms.rr.DirectedReports`.
"""

from __future__ import annotations

import math

import numpy as np

from dpgl.errors import ConfigError
from dpgl.graph.pairs import bernoulli_rows, ordered_pair_to_index, sort_pairs
from dpgl.mechanisms.neighbor_list import check_num_nodes
from dpgl.mechanisms.rr import DirectedReports
from dpgl.privacy import RandomizedResponse, check_epsilon, check_fraction

__all__ = [
    "POISON_PRESETS",
    "apply_defense",
    "defense_threshold",
    "draw_poisoned_users",
    "flag_high_degree",
    "poison_lists",
    "poison_reports",
]

#: Named attacks: (omega1, omega2).
POISON_PRESETS: dict[str, tuple[float, float]] = {"all-ones": (1.0, 1.0),
                                                  "random": (0.5, 0.5)}


def draw_poisoned_users(num_nodes: int, fraction: float, rng: np.random.Generator
                        ) -> np.ndarray:
    """round(fraction * n) distinct users chosen uniformly (sorted int64 ids)."""
    n = check_num_nodes(num_nodes)
    beta = check_fraction(fraction, "poison fraction")
    k = round(beta * n)
    if k == 0:
        return np.zeros(0, np.int64)
    return np.sort(rng.choice(n, size=k, replace=False)).astype(np.int64)


def poison_lists(users: np.ndarray, u: np.ndarray, v: np.ndarray, num_nodes: int,
                 omega1: float, omega2: float, rng: np.random.Generator
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Crafted lists of ``users`` (Eq. 16 as read here): bit j is 1 w.p. omega1 if A_ij = 1,
    omega2 otherwise. ``(u, v)`` are the true undirected pairs (u < v). Returns directed
    pairs (user, neighbor) sorted. O(|E| + output)."""
    n = check_num_nodes(num_nodes)
    w1 = check_fraction(omega1, "omega1")
    w2 = check_fraction(omega2, "omega2")
    users = np.asarray(users, dtype=np.int64)
    if users.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # Non-neighbor bits: Bernoulli(omega2) over each chosen user's n - 1 positions.
    r, pos = bernoulli_rows(np.full(users.size, w2), np.full(users.size, n - 1), rng,
                            sort=False)
    rows = users[r]
    cols = pos + (pos >= rows)
    src = np.concatenate([u, v]).astype(np.int64)
    dst = np.concatenate([v, u]).astype(np.int64)
    chosen = np.isin(src, users)
    src, dst = src[chosen], dst[chosen]
    if src.size and rows.size:  # drop the omega2 hits that fell on true neighbors
        true_keys = np.sort(ordered_pair_to_index(src, dst, n))
        keys = ordered_pair_to_index(rows, cols, n)
        idx = np.minimum(np.searchsorted(true_keys, keys), true_keys.size - 1)
        hit = true_keys[idx] == keys
        rows, cols = rows[~hit], cols[~hit]
    kept = rng.random(src.size) < w1
    out_u, out_v, _ = sort_pairs(np.concatenate([rows, src[kept]]),
                                 np.concatenate([cols, dst[kept]]), n)
    return out_u, out_v


def poison_reports(reports: DirectedReports, users: np.ndarray, u: np.ndarray, v: np.ndarray,
                   omega1: float, omega2: float, rng: np.random.Generator) -> DirectedReports:
    """``reports`` with the lists of ``users`` replaced by Poison(omega1, omega2) lists; every
    other user's list is unchanged."""
    n = reports.num_nodes
    users = np.asarray(users, dtype=np.int64)
    if users.size and (users.min() < 0 or users.max() >= n):
        raise ConfigError(f"poisoned users must be ids in [0, {n - 1}]")
    keep = ~np.isin(reports.user, users)
    pu, pv = poison_lists(users, u, v, n, omega1, omega2, rng)
    row, col, _ = sort_pairs(np.concatenate([reports.user[keep], pu]),
                             np.concatenate([reports.neighbor[keep], pv]), n)
    return DirectedReports(row, col, n)


def defense_threshold(num_nodes: int, eps2: float, theta: float) -> float:
    """tau of Defense(theta) (Eq. 17 as derived in the module docstring):
    mu + (L + sqrt(L^2 + 8 mu L)) / 2, mu = (n - 1) e^eps2 / (1 + e^eps2), L = ln(1/theta)."""
    n = check_num_nodes(num_nodes)
    e2 = check_epsilon(eps2, "eps2")
    th = check_fraction(theta, "theta", low_open=True, high_open=True)
    mu = (n - 1) * RandomizedResponse(e2).keep_probability
    big_l = math.log(1.0 / th)
    return mu + 0.5 * (big_l + math.sqrt(big_l * big_l + 8.0 * mu * big_l))


def flag_high_degree(reports: DirectedReports, tau: float) -> np.ndarray:
    """Boolean mask of users whose reported list has >= tau ones."""
    counts = np.bincount(reports.user, minlength=reports.num_nodes)
    return counts >= tau


def apply_defense(reports: DirectedReports, eps2: float, theta: float
                  ) -> tuple[DirectedReports, np.ndarray]:
    """Defense(theta): drop the lists of the users flagged by :func:`flag_high_degree` with
    tau = :func:`defense_threshold`. Returns the filtered reports and the flag mask."""
    tau = defense_threshold(reports.num_nodes, eps2, theta)
    flagged = flag_high_degree(reports, tau)
    keep = ~flagged[reports.user]
    return DirectedReports(reports.user[keep], reports.neighbor[keep], reports.num_nodes), flagged
