"""Noise calibration to a target privacy budget.

* :func:`gaussian_noise_multiplier`: the smallest Gaussian noise multiplier such that ``steps``
  (optionally subsampled) Gaussian releases are (eps, delta)-DP under the *same* dp-accounting
  accountant the :class:`~dpgl.privacy.Accountant` reports with (so a calibrated run never
  reports more than its target). Uses dp-accounting's ``calibrate_dp_mechanism`` (Brent's
  method, returns a value on the private side) inside a bracket found by doubling/halving.
  ``method="analytic"`` (one un-sampled release only) uses the exact analytic Gaussian
  calibration (Balle & Wang 2018).
* :func:`per_release_epsilon`: the largest per-release eps_0 such that k releases compose
  (basic / advanced / optimal) to at most a target (eps, delta) (bisection), e.g. DPAR's
  budget split over M private PPR vectors.
* :func:`bisect_parameter`: generic monotone bisection used for the above.
"""

from __future__ import annotations

from collections.abc import Callable

import dp_accounting

from dpgl.errors import ConfigError, PrivacyError
from dpgl.privacy._validation import check_positive_int
from dpgl.privacy.composition import (
    advanced_composition_epsilon,
    optimal_composition_epsilon,
)
from dpgl.privacy.dp_events import (
    SAMPLINGS,
    GaussianSpend,
    gaussian_dp_event,
    make_dp_accountant,
)
from dpgl.privacy.gaussian import analytic_gaussian_sigma
from dpgl.privacy.guarantee import check_delta, check_epsilon, check_fraction

__all__ = [
    "bisect_parameter",
    "gaussian_epsilon",
    "gaussian_noise_multiplier",
    "per_release_epsilon",
]


def bisect_parameter(fn: Callable[[float], float], target: float, lo: float, hi: float, *,
                     increasing: bool, tol: float = 1e-9, max_iter: int = 200) -> float:
    """Bisection for a monotone ``fn``: the boundary x with fn(x) <= target on the returned
    side (the largest feasible x if ``increasing``, else the smallest)."""
    if not lo < hi:
        raise ConfigError(f"bisection needs lo < hi, got [{lo}, {hi}]")

    def ok(x: float) -> bool:
        return fn(x) <= target

    good, bad = (lo, hi) if increasing else (hi, lo)
    if not ok(good):
        raise PrivacyError("no parameter in the search interval meets the target")
    if ok(bad):
        return bad
    for _ in range(max_iter):
        if abs(bad - good) <= tol * max(1.0, abs(good)):
            break
        mid = 0.5 * (good + bad)
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good


def gaussian_epsilon(noise_multiplier: float, delta: float, *, steps: int = 1,
                     sampling_rate: float = 1.0, sampling: str = "poisson",
                     method: str = "rdp") -> float:
    """epsilon at ``delta`` of ``steps`` Gaussian releases (dp-accounting RDP or PLD)."""
    spend = _spend(noise_multiplier, steps, sampling_rate, sampling)
    acc = make_dp_accountant(method, spend.relation)
    acc.compose(gaussian_dp_event(spend))
    return float(acc.get_epsilon(check_delta(delta, allow_zero=False)))


def _spend(sigma: float, steps: int, rate: float, sampling: str) -> GaussianSpend:
    if sampling not in SAMPLINGS:
        raise ConfigError(f"unknown sampling {sampling!r}; choose one of: {', '.join(SAMPLINGS)}")
    return GaussianSpend(float(sigma), check_positive_int(steps, "steps"),
                         check_fraction(rate, "sampling_rate", low_open=True), sampling)


def gaussian_noise_multiplier(target_epsilon: float, target_delta: float, *, steps: int = 1,
                              sampling_rate: float = 1.0, sampling: str = "poisson",
                              method: str = "rdp", tol: float = 1e-5) -> float:
    """Smallest noise multiplier (sigma / sensitivity) meeting (eps, delta) after ``steps``.

    ``method``: "rdp" or "pld" (dp-accounting, as the Accountant reports) or "analytic"
    (Balle & Wang 2018; a single un-sampled release only).
    """
    eps = check_epsilon(target_epsilon, "target_epsilon")
    delta = check_delta(target_delta, "target_delta", allow_zero=False)
    probe = _spend(1.0, steps, sampling_rate, sampling)
    if method == "analytic":
        if probe.steps != 1 or probe.subsampled:
            raise ConfigError("analytic calibration covers one un-sampled Gaussian release; "
                              "use method='rdp' or 'pld'")
        return analytic_gaussian_sigma(eps, delta)
    make_dp_accountant(method, None)  # validates the method name

    def make_event(sigma: float) -> dp_accounting.DpEvent:
        return gaussian_dp_event(GaussianSpend(sigma, probe.steps, probe.sampling_rate,
                                               probe.sampling))

    def fresh() -> dp_accounting.PrivacyAccountant:
        return make_dp_accountant(method, probe.relation)

    def eps_at(sigma: float) -> float:
        return float(fresh().compose(make_event(sigma)).get_epsilon(delta))

    # Bracket [lo, hi] with eps(lo) > target >= eps(hi); epsilon decreases in sigma.
    hi = 1.0
    while eps_at(hi) > eps:
        hi *= 2.0
        if hi > 1e6:
            raise PrivacyError("no noise multiplier up to 1e6 meets the target")
    lo = hi / 2.0
    while eps_at(lo) <= eps:
        hi, lo = lo, lo / 2.0
        if lo < 1e-3:
            return hi
    return float(dp_accounting.calibrate_dp_mechanism(
        fresh, make_event, eps, delta,
        bracket_interval=dp_accounting.ExplicitBracketInterval(lo, hi), tol=tol,
    ))


def per_release_epsilon(total_epsilon: float, k: int, *, delta_slack: float = 0.0,
                        composition: str = "optimal") -> float:
    """Largest eps_0 such that k eps_0-DP releases compose to <= ``total_epsilon``
    (with ``delta_slack`` for advanced/optimal composition; total delta = delta_slack)."""
    total = check_epsilon(total_epsilon, "total_epsilon")
    k = check_positive_int(k, "k")
    slack = check_delta(delta_slack, "delta_slack")
    if composition == "basic":
        return total / k
    if composition == "advanced":
        if slack <= 0:
            raise PrivacyError("advanced composition needs delta_slack in (0, 1)")

        def fn(e: float) -> float:
            return advanced_composition_epsilon(e, k, slack)
    elif composition == "optimal":
        def fn(e: float) -> float:
            return optimal_composition_epsilon(e, k, slack)
    else:
        raise ConfigError(f"unknown composition {composition!r}; choose one of: "
                          "advanced, basic, optimal")
    # eps_0 <= total always (one release alone costs eps_0); search [total/k * 1e-6, total].
    hi = total
    lo = total / k * 1e-6
    return bisect_parameter(fn, total, lo, hi, increasing=True, tol=1e-10)
