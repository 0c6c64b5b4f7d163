"""One-run privacy auditing (Steinke, Nasr & Jagielski, "Privacy Auditing with One (1)
Training Run", NeurIPS 2023): an empirical lower bound on epsilon from a *single* run of a
mechanism on a data set with m randomly included canaries.

Set-up (the assumptions the bound needs, all of which the caller must guarantee):

* there are m canaries; canary i is included independently with probability **exactly 1/2**
  (S_i = +1 included, -1 excluded), independently of everything else the mechanism sees;
* the claimed guarantee is (eps, delta)-DP for **add/remove** neighbours, where one
  canary is one protected unit (adding or removing canary i is one neighbouring step);
* the auditor's guesses T_i in {-1, 0, +1} are a function of the mechanism's output (and of
  public information, e.g. the canaries themselves) only. In particular the rule that turns
  scores into guesses, here how many to guess (k), is **fixed before the truth is seen**.
  Trying several fixed rules and keeping the best is allowed only with a correction: the
  helpers here split beta evenly over the rules tried (Bonferroni).

With r = #{i: T_i != 0} guesses of which W are correct, q = e^eps / (1 + e^eps) and
f(v) = P[Binomial(r, q) >= v], the paper's Theorem 3.3 (its approximate-DP form) gives

    P[W >= v] <= f(v) + 2 m delta * max_{1 <= i <= v} (f(v - i) - f(v)) / i.

:func:`p_value` is the right side (at most 1). An (eps, delta)-DP mechanism is also
(eps', delta)-DP for every eps' >= eps, so ``p_value`` takes the infimum over eps' >= eps
(:func:`raw_tail_bound` is the formula itself): that makes it non-decreasing in eps, and
:func:`epsilon_lower_bound` finds by bisection the largest eps with p_value <= beta (every
claim below it is rejected at level beta); 0 when even eps = 0 is not rejected.

The bound is far from tight for Gaussian-like mechanisms: even with every guess right it
cannot exceed the value for W = r (e.g. 3.49 for r = 100 at 95%), and the Gaussian
mechanism's one-run bound stays well below its true epsilon (the paper's Fig. 2). A lower
bound below the claim is consistent with the claim; it does not prove it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from dpgl.errors import ConfigError

__all__ = [
    "GuessResult",
    "Guesses",
    "best_guess_bound",
    "epsilon_lower_bound",
    "make_guesses",
    "p_value",
    "raw_tail_bound",
]

#: the largest epsilon the search considers (beyond it a Binomial(r, q) is a point mass for
#: any r this module sees; a lower bound at the cap means "at least this large")
EPS_CAP = 60.0
_GRID = np.concatenate([np.linspace(0.0, 10.0, 201)[1:], np.linspace(10.0, EPS_CAP, 101)[1:]])


def _check_counts(m: int, r: int, v: int) -> tuple[int, int, int]:
    for name, x in (("m", m), ("r", r), ("v", v)):
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            raise ConfigError(f"{name} must be an integer, got {x!r}")
    m, r, v = int(m), int(r), int(v)
    if m < 1:
        raise ConfigError(f"need m >= 1 canaries, got m={m}")
    if not 0 <= r <= m:
        raise ConfigError(f"need 0 <= r <= m guesses, got r={r}, m={m}")
    if not 0 <= v <= r:
        raise ConfigError(f"need 0 <= v <= r correct guesses, got v={v}, r={r}")
    return m, r, v


def _check_delta(delta: float) -> float:
    try:
        d = float(delta)
    except (TypeError, ValueError):
        raise ConfigError(f"delta must be a number in [0, 1), got {delta!r}") from None
    if not 0.0 <= d < 1.0 or math.isnan(d):
        raise ConfigError(f"delta must be in [0, 1), got {delta!r}")
    return d


def _check_eps(eps: float) -> float:
    try:
        e = float(eps)
    except (TypeError, ValueError):
        raise ConfigError(f"epsilon must be a number >= 0, got {eps!r}") from None
    if not e >= 0.0:  # also refuses NaN
        raise ConfigError(f"epsilon must be >= 0, got {eps!r}")
    return e


def _check_confidence(confidence: float) -> float:
    try:
        c = float(confidence)
    except (TypeError, ValueError):
        raise ConfigError(f"confidence must be a number in (0, 1), got {confidence!r}") \
            from None
    if not 0.0 < c < 1.0:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence!r}")
    return c


def _raw_many(m: int, r: int, v: int, eps: np.ndarray, delta: float) -> np.ndarray:
    """The paper's tail bound at every epsilon of ``eps`` (vectorized)."""
    e = np.atleast_1d(np.asarray(eps, dtype=np.float64))
    if v == 0:
        return np.ones(e.size)
    q = special.expit(e)[:, None]  # e^eps / (1 + e^eps), stable for large eps
    # f(u) = P[Bin(r, q) >= u] = sf(u - 1), for u = 0 .. v
    f = stats.binom.sf(np.arange(-1, v)[None, :], r, q)
    fv = f[:, v]
    if delta == 0.0:
        return np.minimum(1.0, fv)
    i = np.arange(1, v + 1)
    extra = np.max((f[:, v - i] - fv[:, None]) / i[None, :], axis=1)
    return np.minimum(1.0, fv + 2.0 * m * delta * extra)


def raw_tail_bound(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """min(1, f(v) + 2 m delta max_i (f(v - i) - f(v)) / i): the paper's bound on P[W >= v]
    for an (eps, delta)-DP mechanism with m canaries and r guesses."""
    m, r, v = _check_counts(m, r, v)
    return float(_raw_many(m, r, v, np.array([_check_eps(eps)]), _check_delta(delta))[0])


def p_value(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """p-value of the claim "(eps, delta)-DP" after v of r guesses were right (m canaries):
    the infimum of :func:`raw_tail_bound` over eps' >= eps (each is a valid tail bound for
    a mechanism the claim covers; the infimum is taken over eps and the grid points above
    it, which can only make it larger than the exact infimum). Non-decreasing in eps; small
    values reject the claim."""
    m, r, v = _check_counts(m, r, v)
    e, d = _check_eps(eps), _check_delta(delta)
    return float(np.min(_raw_many(m, r, v, np.concatenate([[e], _GRID[e < _GRID]]), d)))


def epsilon_lower_bound(m: int, r: int, v: int, delta: float, confidence: float = 0.95
                        ) -> float:
    """The largest eps whose (eps, delta)-DP claim is rejected at level beta = 1 - confidence
    after v of r guesses were right with m canaries (0 if none is; :data:`EPS_CAP` if all up to
    the cap are). With probability >= confidence over the canaries' coins and the mechanism,
    an (eps, delta)-DP mechanism yields a bound <= eps."""
    m, r, v = _check_counts(m, r, v)
    d = _check_delta(delta)
    beta = 1.0 - _check_confidence(confidence)
    if v == 0:
        return 0.0
    # p_value(eps) <= beta iff the tail bound is <= beta at some eps' >= eps: the bound is
    # the last grid point where it is (refined by bisection up to the next grid point)
    grid = np.concatenate([[0.0], _GRID])
    ok = np.flatnonzero(_raw_many(m, r, v, grid, d) <= beta)
    if ok.size == 0:
        return 0.0
    last = int(ok[-1])
    if last == grid.size - 1:
        return EPS_CAP
    lo, hi = float(grid[last]), float(grid[last + 1])
    while hi - lo > 1e-7:
        mid = 0.5 * (lo + hi)
        if _raw_many(m, r, v, np.array([mid]), d)[0] <= beta:
            lo = mid
        else:
            hi = mid
    return lo


# --------------------------------------------------------------------------- guessing


@dataclass(frozen=True)
class Guesses:
    """Guesses T in {-1, 0, +1} from scores: +1 for the ``k_plus`` highest, -1 for the
    ``k_minus`` lowest, 0 (abstain) for the rest."""

    guesses: np.ndarray
    k_plus: int
    k_minus: int

    @property
    def r(self) -> int:
        return int(np.count_nonzero(self.guesses))


def make_guesses(scores: np.ndarray, k_plus: int, k_minus: int) -> Guesses:
    """+1 for the ``k_plus`` highest scores, -1 for the ``k_minus`` lowest, 0 otherwise
    (ties broken by index, a rule fixed in advance). A high score means "included"."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or s.size == 0:
        raise ConfigError("scores must be a non-empty 1-d array")
    if np.isnan(s).any():
        raise ConfigError("scores must not contain NaN")
    m = s.size
    for name, k in (("k_plus", k_plus), ("k_minus", k_minus)):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise ConfigError(f"{name} must be a non-negative integer, got {k!r}")
    if k_plus + k_minus > m:
        raise ConfigError(f"k_plus + k_minus = {k_plus + k_minus} exceeds the {m} canaries")
    order = np.argsort(-s, kind="stable")  # highest first
    g = np.zeros(m, dtype=np.int8)
    g[order[:k_plus]] = 1
    if k_minus:
        g[order[m - k_minus:]] = -1
    return Guesses(g, int(k_plus), int(k_minus))


@dataclass(frozen=True)
class GuessResult:
    """The best of several fixed guessing rules, each evaluated at beta / (number of rules)."""

    epsilon_lower_bound: float
    k_plus: int
    k_minus: int
    r: int
    correct: int
    m: int
    confidence_per_rule: float
    per_rule: list[dict[str, float]]


def best_guess_bound(scores: np.ndarray, truth: np.ndarray,
                     ks: Sequence[tuple[int, int]], delta: float,
                     confidence: float = 0.95) -> GuessResult:
    """Evaluate the fixed guessing rules ``ks`` ((k_plus, k_minus) pairs, chosen before the
    run) against ``truth`` (S in {-1, +1}) and keep the largest lower bound, each rule at
    confidence 1 - beta / len(ks) (Bonferroni: the reported bound holds at ``confidence``)."""
    s = np.asarray(scores, dtype=np.float64)
    t = np.asarray(truth)
    if t.shape != s.shape or not np.isin(t, (-1, 1)).all():
        raise ConfigError("truth must hold one -1/+1 entry per score")
    if not ks:
        raise ConfigError("need at least one (k_plus, k_minus) rule")
    conf = _check_confidence(confidence)
    per_conf = 1.0 - (1.0 - conf) / len(ks)
    m = s.size
    best: GuessResult | None = None
    rows: list[dict[str, float]] = []
    for kp, km in ks:
        g = make_guesses(s, int(kp), int(km))
        r = g.r
        v = int(np.count_nonzero((g.guesses != 0) & (g.guesses == t)))
        lb = epsilon_lower_bound(m, r, v, delta, per_conf) if r else 0.0
        rows.append({"k_plus": int(kp), "k_minus": int(km), "r": r, "correct": v,
                     "epsilon_lower_bound": lb})
        if best is None or lb > best.epsilon_lower_bound:
            best = GuessResult(lb, int(kp), int(km), r, v, m, per_conf, rows)
    assert best is not None
    return GuessResult(best.epsilon_lower_bound, best.k_plus, best.k_minus, best.r,
                       best.correct, m, per_conf, rows)
