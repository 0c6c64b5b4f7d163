"""Private hyper-parameter selection: release the best of a *random* number K of runs of a
private base mechanism Q (Papernot & Steinke, "Hyperparameter Tuning with Renyi Differential
Privacy", ICLR 2022, "PS22"; Liu & Talwar, "Private Selection from Private Candidates",
STOC 2019, "LT19").

Each run draws a candidate uniformly from a finite set and runs Q with it; Q's output
includes its score, and only the best-scoring run is released. Q is the uniform mixture over
the candidates, so its RDP curve is bounded by the pointwise maximum of the candidates' curves
(exp((lambda - 1) D_lambda) is jointly convex). K is drawn from

* :class:`TruncatedNegativeBinomial` (eta > -1, gamma in (0, 1)), K >= 1:
  P[K = k] = (1 - gamma)^k / (gamma^-eta - 1) * prod_{l=0}^{k-1} (l + eta) / (l + 1)
  (eta = 0, the logarithmic distribution: (1 - gamma)^k / (k log(1/gamma)); eta = 1, the
  geometric: gamma (1 - gamma)^(k-1)); E[K] = eta (1 - gamma) / (gamma (1 - gamma^eta)),
  and (1 - gamma) / (gamma log(1/gamma)) for eta = 0. PS22 Thm 2: if Q is
  (lambda, eps(lambda))-RDP at every order, the selection is (lambda, eps'(lambda))-RDP with

      eps'(lambda) = eps(lambda) + (1 + eta) min_lh [(1 - 1/lh) eps(lh) + log(1/gamma) / lh]
                     + log(E[K]) / (lambda - 1),

  the minimum over the auxiliary orders lh of :data:`~dpgl.privacy.multiterm.ORDERS`. Pure DP
  (lambda, lh -> infinity; PS22 Cor. 3): Q eps-DP gives (2 + eta) eps-DP, for the geometric
  distribution the 3 eps of LT19 (Thm 3.4).
* :class:`PoissonRepetitions` (mu >= 1), K >= 0 (K = 0 releases nothing). PS22 Thm 6: if Q is
  (lambda, eps(lambda))-RDP and (eps_hat, delta_hat)-DP with e^eps_hat <= 1 + 1/(lambda - 1),
  the selection is (lambda, eps(lambda) + mu delta_hat + log(mu) / (lambda - 1))-RDP; we take
  eps_hat = log(1 + 1/(lambda - 1)) and delta_hat from Q's curve (dp-accounting's
  RDP-to-DP conversion, Canonne, Kamath & Steinke 2020, Prop. 12).

Both bounds are then made nondecreasing in lambda (D_lambda is: eps'(lambda) <= eps'(l') for
l' >= lambda). :class:`PrivateSelection` is the object that draws K and the candidates and
charges the active accountant once, with the curve of the whole selection (the K base runs
are not charged separately: the bound covers them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpgl.errors import ConfigError, PrivacyError
from dpgl.privacy._validation import check_generator, check_positive_int, check_unit
from dpgl.privacy.guarantee import Guarantee, Unit, check_epsilon
from dpgl.privacy.multiterm import ORDERS, rdp_to_epsilon
from dpgl.privacy.rdp import check_curve, pure_rdp

__all__ = ["PoissonRepetitions", "PrivateSelection", "TruncatedNegativeBinomial",
           "selection_rdp"]


def _monotone(curve: np.ndarray) -> np.ndarray:
    """eps'(lambda) <- min over orders >= lambda (RDP is nondecreasing in the order)."""
    return np.minimum.accumulate(curve[::-1])[::-1]


@dataclass(frozen=True)
class TruncatedNegativeBinomial:
    """K ~ D_{eta, gamma} of PS22 (Sec. 3.2): eta = 0 logarithmic, eta = 1 geometric."""

    eta: float
    gamma: float

    def __post_init__(self) -> None:
        eta, gamma = float(self.eta), float(self.gamma)
        if not math.isfinite(eta) or eta <= -1:
            raise PrivacyError(f"eta must be a finite number > -1, got {self.eta!r}")
        if not 0 < gamma < 1:
            raise PrivacyError(f"gamma must be in (0, 1), got {self.gamma!r}")
        object.__setattr__(self, "eta", eta)
        object.__setattr__(self, "gamma", gamma)

    @classmethod
    def with_mean(cls, eta: float, mean: float) -> TruncatedNegativeBinomial:
        """The distribution with E[K] = ``mean`` (> 1): gamma by bisection, E[K] decreasing in
        gamma; the returned gamma's E[K] is at least ``mean`` (to 1e-9 relative) and is the
        E[K] its charge uses."""
        m = float(mean)
        if not math.isfinite(m) or m <= 1:
            raise PrivacyError(f"the mean number of runs must be a finite number > 1, got "
                               f"{mean!r}")
        if float(eta) == 1.0:
            return cls(1.0, 1.0 / m)
        lo, hi = 1e-300, 1.0 - 1e-15
        for _ in range(200):
            mid = (lo + hi) / 2
            if cls(eta, mid).mean < m:
                hi = mid
            else:
                lo = mid
        return cls(eta, lo)

    @property
    def mean(self) -> float:
        """E[K] (PS22 Sec. 3.2)."""
        g, eta = self.gamma, self.eta
        if eta == 0:
            return (1 - g) / (g * math.log(1 / g))
        return eta * (1 - g) / (g * -math.expm1(eta * math.log(g)))

    def pmf(self, k: int) -> float:
        """P[K = k] (0 for k < 1)."""
        if k < 1:
            return 0.0
        g, eta = self.gamma, self.eta
        p = (1 - g) / math.log(1 / g) if eta == 0 else (1 - g) * eta / math.expm1(-eta *
                                                                                  math.log(g))
        for ell in range(1, k):
            p *= (1 - g) * (ell + eta) / (ell + 1)
        return p

    def pgf(self, t: float) -> float:
        """E[t^K] for t in [0, 1]: ((1 - (1-gamma) t)^-eta - 1) / (gamma^-eta - 1), and
        log(1 - (1-gamma) t) / log(gamma) for eta = 0. P[best of K <= o] = pgf(P[Q <= o])."""
        g, eta = self.gamma, self.eta
        base = (1 - t) + g * t  # 1 - (1 - gamma) t, exact at t = 1
        if eta == 0:
            return math.log(base) / math.log(g)
        return math.expm1(-eta * math.log(base)) / math.expm1(-eta * math.log(g))

    def sample(self, rng: np.random.Generator) -> int:
        """One draw of K (inverse CDF from one uniform; P[K = k+1] / P[K = k] =
        (1 - gamma)(k + eta) / (k + 1))."""
        u = check_generator(rng).random()
        k, p = 1, self.pmf(1)
        cdf = p
        while cdf < u and p > 1e-18 * cdf:
            p *= (1 - self.gamma) * (k + self.eta) / (k + 1)
            k += 1
            cdf += p
        return k

    def rdp(self, base: np.ndarray) -> np.ndarray:
        """PS22 Thm 2: the selection's RDP curve from the base curve ``base`` over ORDERS."""
        eps = check_curve(base, "the base mechanism's RDP curve")
        aux = (1 + self.eta) * float(np.min((1 - 1 / ORDERS) * eps
                                            + math.log(1 / self.gamma) / ORDERS))
        return _monotone(eps + aux + math.log(self.mean) / (ORDERS - 1))

    def pure_epsilon(self, epsilon: float) -> float:
        """PS22 Cor. 3 (Thm 2 as lambda, lh -> infinity): Q eps-DP => (2 + eta) eps-DP; for
        the geometric distribution (eta = 1) LT19's 3 eps (Thm 3.4)."""
        return (2 + self.eta) * check_epsilon(epsilon)

    def __str__(self) -> str:
        name = {0.0: "logarithmic", 1.0: "geometric"}.get(self.eta, "truncated negative "
                                                          "binomial")
        return f"{name} (eta={self.eta:g}, gamma={self.gamma:.4g}, E[K]={self.mean:.4g})"


@dataclass(frozen=True)
class PoissonRepetitions:
    """K ~ Poisson(mu) (PS22 Sec. 3.3); K = 0 releases nothing."""

    mu: float

    def __post_init__(self) -> None:
        mu = float(self.mu)
        if not math.isfinite(mu) or mu < 1:
            # log(mu) / (lambda - 1) -> -inf as lambda -> 1 for mu < 1: the bound needs mu >= 1
            # (as dp-accounting's RepeatAndSelectDpEvent); an exact test shows mu = 0.5 fails
            raise PrivacyError(f"mu must be a finite number >= 1, got {self.mu!r}")
        object.__setattr__(self, "mu", mu)

    @property
    def mean(self) -> float:
        return self.mu

    def pmf(self, k: int) -> float:
        return 0.0 if k < 0 else math.exp(-self.mu + k * math.log(self.mu) - math.lgamma(k + 1))

    def pgf(self, t: float) -> float:
        """E[t^K] = exp(mu (t - 1)); the best of K is below o with probability pgf(P[Q <= o])
        (K = 0, nothing released, counts as below every output)."""
        return math.exp(self.mu * (t - 1))

    def sample(self, rng: np.random.Generator) -> int:
        return int(check_generator(rng).poisson(self.mu))

    def rdp(self, base: np.ndarray) -> np.ndarray:
        """PS22 Thm 6 with eps_hat = log(1 + 1/(lambda - 1)) and delta_hat from ``base``."""
        from dp_accounting.rdp.rdp_privacy_accountant import compute_delta

        eps = check_curve(base, "the base mechanism's RDP curve")
        out = np.empty(ORDERS.size)
        for i, lam in enumerate(ORDERS):
            delta_hat, _ = compute_delta(ORDERS, eps, math.log1p(1 / (lam - 1)))
            out[i] = eps[i] + self.mu * delta_hat + math.log(self.mu) / (lam - 1)
        return _monotone(np.maximum(out, 0.0))

    def __str__(self) -> str:
        return f"Poisson (mu={self.mu:g})"


Repetitions = TruncatedNegativeBinomial | PoissonRepetitions


def selection_rdp(repetitions: Repetitions, base_curves: Sequence[np.ndarray] | np.ndarray
                  ) -> np.ndarray:
    """The selection's RDP curve: PS22 Thm 2 or Thm 6 on the pointwise maximum of the
    candidates' curves (one curve: every candidate's)."""
    curves = np.atleast_2d(np.asarray(base_curves, dtype=float))
    return repetitions.rdp(np.max([check_curve(c, "a candidate's RDP curve") for c in curves],
                                  axis=0))


class PrivateSelection:
    """Best of K runs, K random (PS22): draws K and the K candidates, and charges the active
    accountant once, under ``unit``, with the bound of the whole selection.

    The base mechanism is stated either by its RDP curve over ORDERS (``base_curve``: one for
    every candidate, or one per candidate) or, for a pure-DP base, by ``base_epsilon``. The
    charge is an RDP part (PS22 Thm 2 / Thm 6, :meth:`curve`) or, for a pure base and a
    truncated negative binomial K, the pure (2 + eta) eps (PS22 Cor. 3 / LT19 Thm 3.4).
    """

    label = "hyper-parameter selection"

    def __init__(self, repetitions: Repetitions, candidates: int, *,
                 base_curve: Sequence[np.ndarray] | np.ndarray | None = None,
                 base_epsilon: float | None = None, unit: Unit | str) -> None:
        if not isinstance(repetitions, (TruncatedNegativeBinomial, PoissonRepetitions)):
            raise ConfigError("repetitions must be a TruncatedNegativeBinomial or a "
                              f"PoissonRepetitions, got {type(repetitions).__name__}")
        self.repetitions = repetitions
        self.candidates = check_positive_int(candidates, "candidates")
        self.unit = check_unit(unit)
        if self.unit is Unit.NONE:
            raise PrivacyError("a private selection protects some unit; Unit.NONE is not one")
        if (base_curve is None) == (base_epsilon is None):
            raise ConfigError("give the base mechanism's base_curve or its base_epsilon "
                              "(exactly one)")
        self.base_epsilon = None if base_epsilon is None else check_epsilon(base_epsilon)
        if base_curve is not None:
            curves = np.atleast_2d(np.asarray(base_curve, dtype=float))
            if curves.shape[0] not in (1, self.candidates):
                raise ConfigError(f"base_curve holds {curves.shape[0]} curves for "
                                  f"{self.candidates} candidates; give one, or one per "
                                  "candidate")
            self.base_curves = np.array([check_curve(c, "a candidate's RDP curve")
                                         for c in curves])
        else:
            assert self.base_epsilon is not None
            self.base_curves = pure_rdp(self.base_epsilon)[None, :]

    @property
    def curve(self) -> np.ndarray:
        """The RDP curve of the whole selection (PS22 Thm 2 / Thm 6)."""
        return selection_rdp(self.repetitions, self.base_curves)

    @property
    def guarantee(self) -> Guarantee | None:
        """The pure-DP guarantee (PS22 Cor. 3 / LT19 Thm 3.4) of a pure base with a truncated
        negative binomial K; None when the selection is stated by its RDP :attr:`curve`."""
        if self.base_epsilon is None or not isinstance(self.repetitions,
                                                        TruncatedNegativeBinomial):
            return None
        return Guarantee(self.repetitions.pure_epsilon(self.base_epsilon), 0.0, self.unit)

    def epsilon(self, delta: float) -> float:
        """epsilon at ``delta`` of what the selection charges."""
        g = self.guarantee
        return g.epsilon if g is not None else rdp_to_epsilon(self.curve, delta)

    def charge(self, accountant: Any = None) -> None:
        """Record the whole selection once in ``accountant`` (default: the active one)."""
        from dpgl.privacy.accountant import current_accountant
        acc = accountant if accountant is not None else current_accountant()
        if acc is None:
            return
        g = self.guarantee
        if g is not None:
            acc.spend(self.label, g, mechanism=repr(self))
        else:
            acc.spend_rdp(self.label, self.curve, unit=self.unit, mechanism=repr(self),
                          details=f"best of K runs, K {self.repetitions}, {self.candidates} "
                          "candidates (Papernot & Steinke 2022)")

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        """K, then the candidate of each of the K runs (uniform, with replacement); charges
        the active accountant when it draws. Returns the candidates' indices (K of them)."""
        check_generator(rng)
        k = self.repetitions.sample(rng)
        runs = rng.integers(0, self.candidates, size=k)
        self.charge()
        return runs

    @staticmethod
    def best(scores: Sequence[float]) -> int | None:
        """The position of the best (largest) score, the first on ties; None for no run
        (a Poisson K = 0)."""
        s = np.asarray(scores, dtype=float)
        if s.size == 0:
            return None
        if np.isnan(s).any():
            raise ConfigError("a run's score is NaN; scores must be numbers")
        return int(np.argmax(s))

    def run(self, base: Callable[[int, np.random.Generator], tuple[float, Any]],
            rng: np.random.Generator) -> tuple[int, Any] | None:
        """The whole selection: draws (and charges), runs ``base(candidate, rng)`` -> (score,
        output) for each of the K runs in a scratch accountant, checks that each run charged
        no more than its candidate's declared curve, and returns (candidate, output) of the
        best run (None when K = 0). A run that charges more is refused
        (:class:`PrivacyError`): the declared curve is what the selection was charged for."""
        from dpgl.privacy.accountant import Accountant
        runs = self.draw(rng)
        results = []
        for j, child in zip(runs, rng.spawn(len(runs)), strict=True):
            scratch = Accountant()
            with scratch.active():
                score, output = base(int(j), child)
            if len(scratch) and set(scratch.units) != {self.unit}:
                raise PrivacyError(f"a base run charged {[u.value for u in scratch.units]}; "
                                   f"the selection protects {self.unit.value} only")
            if len(scratch):
                spent = scratch.rdp_curve(self.unit)
                declared = self.base_curves[min(int(j), self.base_curves.shape[0] - 1)]
                if np.any(spent > declared * (1 + 1e-9) + 1e-12):
                    raise PrivacyError(f"candidate {int(j)} charged more than its declared RDP "
                                       "curve; declare the curve its runs spend")
            results.append((float(score), output))
        best = self.best([s for s, _ in results])
        return None if best is None else (int(runs[best]), results[best][1])

    def __repr__(self) -> str:
        base = (f"base_epsilon={self.base_epsilon:g}" if self.base_epsilon is not None
                else f"base_curve=<{self.base_curves.shape[0]} curve(s)>")
        return (f"PrivateSelection(repetitions={self.repetitions!r}, "
                f"candidates={self.candidates}, {base}, unit={self.unit.value!r})")
