"""Composition theorems for k-fold (adaptive) composition of DP mechanisms.

* Basic (sequential) composition: epsilons and deltas add (Dwork & Roth 2014, Thm 3.16).
* Advanced composition (Dwork, Rothblum & Vadhan 2010; Dwork & Roth 2014, Thm 3.20):
  k-fold (eps, delta)-DP is (eps', k delta + delta')-DP with
  eps' = sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1).
* Optimal composition (Kairouz, Oh & Viswanath 2015, Thm 3.3; general-eps' form of
  Murtagh & Vadhan 2016, Thm 1.5): k-fold (eps, delta)-DP is
  (eps', 1 - (1 - delta)^k (1 - delta_k(eps')))-DP, where delta_k(eps') is the hockey-stick
  divergence of k-fold eps-randomized response, the worst case among eps-DP mechanisms:

      delta_k(eps') = sum_{l=0}^{k} C(k,l) max(0, e^{(k-l)eps} - e^{eps' + l eps}) / (1+e^eps)^k.

  At eps' = (k - 2i) eps this is KOV's delta_i. The bound is tight, so it is never larger
  than the basic or the advanced bound at the same total delta.

All functions validate their inputs and raise :class:`~dpgl.errors.PrivacyError`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from dpgl.errors import PrivacyError
from dpgl.privacy.guarantee import Guarantee, Unit, check_delta, check_epsilon

__all__ = [
    "advanced_composition",
    "advanced_composition_epsilon",
    "basic_composition",
    "best_composition",
    "kov_delta",
    "optimal_composition",
    "optimal_composition_epsilon",
]


def _check_count(k: int) -> int:
    import numpy as np
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise PrivacyError(f"the number of composed mechanisms must be an integer >= 1, got {k!r}")
    return int(k)


def _cap_delta(delta: float) -> float:
    """Deltas that add up past 1 say nothing; keep them representable (< 1)."""
    return min(delta, math.nextafter(1.0, 0.0))


def basic_composition(guarantees: Iterable[Guarantee]) -> Guarantee:
    """Sequential composition: (sum eps_i, sum delta_i) (Dwork & Roth 2014, Thm 3.16).

    All guarantees must protect the same unit; composing different units is refused.
    """
    gs = list(guarantees)
    if not gs:
        raise PrivacyError("basic_composition needs at least one guarantee")
    units = {g.unit for g in gs}
    if len(units) > 1:
        raise PrivacyError(
            "cannot compose guarantees of different units: "
            + ", ".join(sorted(u.value for u in units))
        )
    unit = gs[0].unit
    if unit is Unit.NONE:
        return Guarantee.none()
    eps = math.fsum(g.epsilon for g in gs) if all(math.isfinite(g.epsilon) for g in gs) \
        else math.inf
    delta = _cap_delta(math.fsum(g.delta for g in gs))
    return Guarantee(eps, delta, unit)


def advanced_composition_epsilon(epsilon: float, k: int, delta_slack: float) -> float:
    """DRV advanced composition: sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1).

    Dwork, Rothblum & Vadhan 2010, Thm III.3; Dwork & Roth 2014, Thm 3.20.
    """
    eps = check_epsilon(epsilon)
    k = _check_count(k)
    slack = check_delta(delta_slack, "delta_slack", allow_zero=False)
    return math.sqrt(2.0 * k * math.log(1.0 / slack)) * eps + k * eps * math.expm1(eps)


def advanced_composition(g: Guarantee, k: int, delta_slack: float) -> Guarantee:
    """k-fold composition of ``g`` by DRV advanced composition: (eps', k delta + delta')."""
    eps = advanced_composition_epsilon(g.epsilon, k, delta_slack)
    return Guarantee(eps, _cap_delta(k * g.delta + delta_slack), g.unit)


def kov_delta(epsilon: float, k: int, total_epsilon: float) -> float:
    """delta_k(eps') of KOV Thm 3.3 (pure part): the exact hockey-stick divergence of k-fold
    eps-randomized response at eps'. Computed stably as a sum over Binomial(k, p) pmfs with
    p = e^eps / (1 + e^eps):  sum_j max(0, P[B = j] - e^{eps'} P[B = k - j])."""
    import numpy as np
    from scipy import special
    eps = check_epsilon(epsilon)
    k = _check_count(k)
    t = float(total_epsilon)
    if math.isnan(t) or t < 0:
        raise PrivacyError(f"total_epsilon must be >= 0, got {total_epsilon!r}")
    j = np.arange(k + 1, dtype=np.float64)
    log_p = -np.logaddexp(0.0, -eps)   # log(e^eps / (1 + e^eps))
    log_q = -np.logaddexp(0.0, eps)    # log(1 / (1 + e^eps))
    log_comb = special.gammaln(k + 1) - special.gammaln(j + 1) - special.gammaln(k - j + 1)
    log_pj = log_comb + j * log_p + (k - j) * log_q          # P[B = j]
    log_pkj = log_comb + (k - j) * log_p + j * log_q         # P[B = k - j]
    # max(0, a - e^t b) = a (1 - e^{t + log b - log a})_+ ; only where a > e^t b.
    diff = t + log_pkj - log_pj
    mask = diff < 0
    terms = np.exp(log_pj[mask]) * -np.expm1(diff[mask])
    return float(min(1.0, max(0.0, math.fsum(terms.tolist()))))


def optimal_composition_epsilon(epsilon: float, k: int, delta_slack: float,
                                *, tol: float = 1e-10) -> float:
    """Smallest eps' with delta_k(eps') <= delta' (KOV 2015 Thm 3.3), by bisection.

    ``delta_slack`` may be 0, which gives k * eps (the pure bound, tight for RR).
    """
    eps = check_epsilon(epsilon)
    k = _check_count(k)
    slack = check_delta(delta_slack, "delta_slack")
    hi = k * eps
    if kov_delta(eps, k, 0.0) <= slack:
        return 0.0
    lo = 0.0
    # delta_k is non-increasing in eps'; delta_k(k eps) = 0.
    while hi - lo > tol * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        if kov_delta(eps, k, mid) <= slack:
            hi = mid
        else:
            lo = mid
    return hi


def optimal_composition(g: Guarantee, k: int, delta_slack: float) -> Guarantee:
    """k-fold composition of ``g`` by the optimal (KOV) bound:
    (eps', 1 - (1 - delta)^k (1 - delta'))."""
    eps = optimal_composition_epsilon(g.epsilon, k, delta_slack)
    total_delta = -math.expm1(k * math.log1p(-g.delta) + math.log1p(-delta_slack))
    return Guarantee(eps, _cap_delta(total_delta), g.unit)


def best_composition(g: Guarantee, k: int, delta_slack: float) -> tuple[Guarantee, str]:
    """The smallest-epsilon of basic / advanced / optimal k-fold composition of ``g`` with
    the given slack; returns the guarantee and the name of the rule that gave it."""
    k = _check_count(k)
    basic = Guarantee(k * g.epsilon, _cap_delta(k * g.delta), g.unit)
    candidates = [(basic, "basic")]
    if delta_slack > 0:
        candidates.append((advanced_composition(g, k, delta_slack), "advanced"))
    candidates.append((optimal_composition(g, k, delta_slack), "optimal"))
    return min(candidates, key=lambda c: (c[0].epsilon, c[0].delta))
