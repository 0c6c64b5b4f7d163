"""Gaussian mechanism: classic and analytic calibration.

* Classic (Dwork & Roth 2014, Thm A.1; Thm 3.22): for eps in (0, 1),
  sigma = Delta_2 sqrt(2 ln(1.25 / delta)) / eps gives (eps, delta)-DP. Not valid for eps >= 1
  (refused here).
* Analytic Gaussian mechanism (Balle & Wang 2018, Thm 8 and Alg. 1): f(x) + N(0, sigma^2) is
  (eps, delta)-DP iff, with a = Delta / (2 sigma) and b = eps sigma / Delta,
      Phi(a - b) - e^eps Phi(-a - b) <= delta,
  for any eps > 0; the smallest such sigma is found numerically (dp-accounting's
  ``get_sigma_gaussian`` implements exactly this condition; we check its answer against
  :func:`analytic_gaussian_delta`). LPGNN compares against this mechanism.
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
from scipy import stats

from dpgl.errors import ConfigError, PrivacyError
from dpgl.privacy._validation import as_finite_float, check_generator, check_positive, check_unit
from dpgl.privacy.guarantee import Guarantee, Unit, check_delta, check_epsilon
from dpgl.privacy.randomizer import Randomizer

__all__ = [
    "GaussianMechanism",
    "analytic_gaussian_delta",
    "analytic_gaussian_epsilon",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
]


def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """sigma = Delta sqrt(2 ln(1.25/delta)) / eps (Dwork & Roth 2014, Thm A.1), eps < 1 only."""
    eps = check_epsilon(epsilon)
    dl = check_delta(delta, allow_zero=False)
    sens = check_positive(sensitivity, "sensitivity")
    if eps >= 1.0:
        raise PrivacyError(
            f"the classic Gaussian calibration holds only for epsilon < 1, got {eps:g}; "
            "use calibration='analytic'"
        )
    return sens * math.sqrt(2.0 * math.log(1.25 / dl)) / eps


def analytic_gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """The exact delta of N(0, sigma^2) noise at eps (Balle & Wang 2018, Thm 8)."""
    s = check_positive(sigma, "sigma")
    sens = check_positive(sensitivity, "sensitivity")
    eps = float(epsilon)
    if math.isnan(eps) or eps < 0:
        raise PrivacyError(f"epsilon must be >= 0, got {epsilon!r}")
    a = sens / (2.0 * s)
    b = eps * s / sens
    # Phi(a - b) - e^eps Phi(-a - b), the second term in log space to avoid overflow.
    first = stats.norm.cdf(a - b)
    second = math.exp(eps + stats.norm.logcdf(-a - b))
    return float(max(0.0, first - second))


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest sigma with (eps, delta)-DP (Balle & Wang 2018, Alg. 1), any eps > 0."""
    eps = check_epsilon(epsilon)
    dl = check_delta(delta, allow_zero=False)
    sens = check_positive(sensitivity, "sensitivity")
    return sens * float(dp_accounting.get_sigma_gaussian(eps, dl))


def analytic_gaussian_epsilon(sigma: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest eps such that N(0, sigma^2) noise is (eps, delta)-DP (Balle & Wang 2018)."""
    s = check_positive(sigma, "sigma")
    dl = check_delta(delta, allow_zero=False)
    sens = check_positive(sensitivity, "sensitivity")
    return float(dp_accounting.get_epsilon_gaussian(s / sens, dl))


class GaussianMechanism(Randomizer):
    """x + N(0, sigma^2) with sigma calibrated to (eps, delta) and L2 ``sensitivity``.

    ``calibration`` is ``"analytic"`` (Balle & Wang 2018; default) or ``"classic"``
    (Dwork & Roth, eps < 1 only).
    """

    def __init__(self, epsilon: float, delta: float, sensitivity: float = 1.0, *,
                 calibration: str = "analytic", unit: Unit | str = Unit.NODE_DP,
                 label: str = "Gaussian") -> None:
        self.label = label
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta, allow_zero=False)
        self.sensitivity = check_positive(sensitivity, "sensitivity")
        self.unit = check_unit(unit)
        if calibration == "analytic":
            self.sigma = analytic_gaussian_sigma(self.epsilon, self.delta, self.sensitivity)
        elif calibration == "classic":
            self.sigma = classic_gaussian_sigma(self.epsilon, self.delta, self.sensitivity)
        else:
            raise ConfigError(
                f"unknown Gaussian calibration {calibration!r}; choose one of: analytic, classic"
            )
        self.calibration = calibration

    @classmethod
    def from_sigma(cls, sigma: float, delta: float, sensitivity: float = 1.0, *,
                   unit: Unit | str = Unit.NODE_DP) -> GaussianMechanism:
        """A mechanism with a given sigma; its epsilon is the analytic one at ``delta``."""
        eps = analytic_gaussian_epsilon(sigma, delta, sensitivity)
        if eps <= 0:
            raise PrivacyError(f"sigma={sigma:g} gives epsilon 0 at delta={delta:g}")
        mech = cls.__new__(cls)
        mech.label = "Gaussian"
        mech.epsilon = eps
        mech.delta = check_delta(delta, allow_zero=False)
        mech.sensitivity = check_positive(sensitivity, "sensitivity")
        mech.unit = check_unit(unit)
        mech.sigma = check_positive(sigma, "sigma")
        mech.calibration = "given-sigma"
        return mech

    @property
    def noise_multiplier(self) -> float:
        """sigma / sensitivity (the quantity dp-accounting's GaussianDpEvent takes)."""
        return self.sigma / self.sensitivity

    @property
    def guarantee(self) -> Guarantee:
        """(eps, delta)-DP (Balle & Wang 2018, Thm 8; or Dwork & Roth Thm A.1 for classic)."""
        return Guarantee(self.epsilon, self.delta, self.unit)

    def randomize(self, x: object, rng: np.random.Generator) -> np.ndarray:
        """x + N(0, sigma^2) elementwise."""
        rng = check_generator(rng)
        a = as_finite_float(x)
        return a + rng.normal(0.0, self.sigma, size=a.shape)

    __call__ = randomize

    def __repr__(self) -> str:
        return (f"GaussianMechanism(epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"sigma={self.sigma:.4g}, calibration={self.calibration!r})")
