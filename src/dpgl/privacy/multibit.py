"""LPGNN's multi-bit feature mechanism (Sajadmanesh & Gatica-Perez, CCS 2021, Sec. 4.1).

A user with feature vector x in [alpha, beta]^d:

* Encoder (Alg. 1): sample a set S of m of the d dimensions uniformly without replacement;
  for i in S output x*_i = +1 with probability
      p_i = 1/(e^{eps/m} + 1) + (x_i - alpha)/(beta - alpha) * (e^{eps/m} - 1)/(e^{eps/m} + 1)
  and -1 otherwise; output x*_i = 0 for i not in S. eps-feature-LDP (LPGNN Sec. 4.1): for each
  sampled coordinate p_i / p'_i <= e^{eps/m}, and the m sampled coordinates compose.
* Rectifier (Eq. 4): x'_i = d (beta - alpha) / (2m) * (e^{eps/m} + 1)/(e^{eps/m} - 1) * x*_i
  + (alpha + beta) / 2, an unbiased estimator of x_i.
* Variance (Eq. 5): Var[x'_i] = d/m ((beta - alpha)/2)^2 ((e^{eps/m} + 1)/(e^{eps/m} - 1))^2
  - (x_i - (alpha + beta)/2)^2.
* Optimal sampling parameter (Eq. 6): m* = max(1, min(d, floor(eps / 2.18))); 2.18 is the
  minimiser t of t coth^2(t / 2) (numerically 2.1773), the eps/m that minimises Eq. 5.

Values outside [alpha, beta] are clipped with a :class:`ClippingWarning` (LPGNN Sec. 5
assumes known bounds and clips to them).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import special

from dpgl.errors import ConfigError
from dpgl.privacy._validation import as_finite_float, check_generator, check_unit
from dpgl.privacy.guarantee import Guarantee, Unit, check_epsilon
from dpgl.privacy.randomizer import Randomizer

__all__ = ["ClippingWarning", "MultiBit", "multibit_variance", "optimal_m"]

#: LPGNN Eq. 6 constant: argmin_t t coth^2(t/2) = 2.1773..., rounded as in the paper.
OPTIMAL_M_CONSTANT = 2.18


class ClippingWarning(UserWarning):
    """Input values outside the declared range were clipped into it."""


def optimal_m(epsilon: float, d: int) -> int:
    """m* = max(1, min(d, floor(eps / 2.18))) (LPGNN Eq. 6)."""
    eps = check_epsilon(epsilon)
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ConfigError(f"the feature dimension d must be an integer >= 1, got {d!r}")
    return int(max(1, min(int(d), math.floor(eps / OPTIMAL_M_CONSTANT))))


def _coth_half(eps_m: float) -> float:
    """(e^t + 1) / (e^t - 1) = coth(t / 2), stable for small t."""
    return 1.0 / math.tanh(eps_m / 2.0)


def multibit_variance(x: object, epsilon: float, m: int, d: int,
                      alpha: float | np.ndarray = 0.0, beta: float | np.ndarray = 1.0
                      ) -> np.ndarray:
    """LPGNN Eq. 5: Var[x'_i] of the rectified multi-bit output for input value(s) ``x``."""
    eps = check_epsilon(epsilon)
    xx = as_finite_float(x)
    a, b = np.asarray(alpha, dtype=float), np.asarray(beta, dtype=float)
    c = _coth_half(eps / m)
    return d / m * ((b - a) / 2.0) ** 2 * c**2 - (xx - (a + b) / 2.0) ** 2


class MultiBit(Randomizer):
    """LPGNN multi-bit encoder + rectifier; eps-LDP for one user's whole feature vector.

    ``m`` is an integer in [1, d], ``"best"`` (Eq. 6) or ``"max"`` (m = d, the 1-bit baseline).
    ``alpha``/``beta`` are scalars or per-dimension arrays with alpha < beta.
    """

    def __init__(self, epsilon: float, *, alpha: float | np.ndarray = 0.0,
                 beta: float | np.ndarray = 1.0, m: int | str = "best",
                 unit: Unit | str = Unit.FEATURE_LDP, label: str = "multi-bit") -> None:
        self.label = label
        self.epsilon = check_epsilon(epsilon)
        a = np.asarray(alpha, dtype=float)
        b = np.asarray(beta, dtype=float)
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            raise ConfigError("alpha and beta must be finite")
        if a.ndim > 1 or b.ndim > 1:
            raise ConfigError("alpha and beta must be scalars or 1-d per-dimension arrays")
        if np.any(a >= b):
            raise ConfigError("the feature range needs alpha < beta in every dimension")
        self.alpha, self.beta = a, b
        if isinstance(m, str):
            if m not in ("best", "max"):
                raise ConfigError(f"unknown m {m!r}; give an integer, 'best' or 'max'")
        elif isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
            raise ConfigError(f"m must be an integer >= 1, 'best' or 'max', got {m!r}")
        self.m = m
        self.unit = check_unit(unit)

    @property
    def guarantee(self) -> Guarantee:
        """Pure eps-DP for the whole feature vector (LPGNN Sec. 4.1, privacy of Alg. 1)."""
        return Guarantee.pure(self.epsilon, self.unit)

    def resolve_m(self, d: int) -> int:
        """The number of sampled dimensions for dimension ``d``."""
        if self.m == "best":
            return optimal_m(self.epsilon, d)
        if self.m == "max":
            return int(d)
        if int(self.m) > d:
            raise ConfigError(f"m={self.m} exceeds the feature dimension d={d}")
        return int(self.m)

    def _check_range_shape(self, d: int) -> None:
        for name, v in (("alpha", self.alpha), ("beta", self.beta)):
            if v.ndim == 1 and v.shape[0] != d:
                raise ConfigError(f"{name} has {v.shape[0]} entries but the features have d={d}")

    def _prepare(self, x: object) -> np.ndarray:
        xx = as_finite_float(x, "x")
        if xx.ndim not in (1, 2) or xx.shape[-1] == 0:
            raise ConfigError(
                f"x must be a feature vector (d,) or matrix (n, d), got shape {xx.shape}"
            )
        self._check_range_shape(xx.shape[-1])
        outside = (xx < self.alpha) | (xx > self.beta)
        if np.any(outside):
            warnings.warn(
                f"{int(outside.sum())} feature value(s) outside [alpha, beta] were clipped "
                "(LPGNN Sec. 5)", ClippingWarning, stacklevel=3,
            )
            xx = np.clip(xx, self.alpha, self.beta)
        return xx

    def plus_probability(self, x: object, m: int) -> np.ndarray:
        """p_i = P[x*_i = +1 | i sampled] (LPGNN Alg. 1, line 5)."""
        xx = self._prepare(x)
        t = self.epsilon / m
        frac = (xx - self.alpha) / (self.beta - self.alpha)
        return special.expit(-t) + frac * math.tanh(t / 2.0)

    def randomize(self, x: object, rng: np.random.Generator) -> np.ndarray:
        """The encoder (Alg. 1): int8 array in {-1, 0, +1} of x's shape, m non-zeros per row."""
        rng = check_generator(rng)
        xx = self._prepare(x)
        d = xx.shape[-1]
        m = self.resolve_m(d)
        t = self.epsilon / m
        rows = xx.reshape(-1, d)
        if m == d:
            out = np.where(rng.random(rows.shape) < self._plus(rows, t), 1, -1).astype(np.int8)
            return out.reshape(xx.shape)
        n = rows.shape[0]
        if m == 1:   # one uniform dimension per row
            idx = rng.integers(0, d, size=(n, 1))
        else:        # m distinct dimensions: the m smallest of d uniform keys
            idx = np.argpartition(rng.random(rows.shape), m - 1, axis=1)[:, :m]
        # p_i at the sampled coordinates only (n x m, not n x d): the same per-entry formula
        plus = rng.random((n, m)) < self._plus(np.take_along_axis(rows, idx, axis=1), t, idx)
        out = np.zeros(rows.shape, dtype=np.int8)
        np.put_along_axis(out, idx, np.where(plus, 1, -1).astype(np.int8), axis=1)
        return out.reshape(xx.shape)

    def _plus(self, x: np.ndarray, t: float, idx: np.ndarray | None = None) -> np.ndarray:
        """p_i of Alg. 1 line 5 with t = eps/m for the entries ``x`` (already in range); ``idx``:
        their dimensions when ``x`` holds sampled coordinates, not whole rows."""
        a, b = self.alpha, self.beta
        if idx is not None and a.ndim == 1:
            a, b = a[idx], b[idx]
        return special.expit(-t) + (x - a) / (b - a) * math.tanh(t / 2)

    __call__ = randomize

    def rectify(self, x_star: object) -> np.ndarray:
        """The rectifier (Eq. 4): unbiased estimate of x from the encoded x*.

        x* takes three values, so the estimate is one of scale * v + (alpha + beta) / 2 for
        v in {-1, 0, +1} (per dimension): computed once each and written by value, the same
        floats as the product over the whole matrix without its float64 temporaries."""
        xs = np.asarray(x_star)
        self._check_encoded(xs)
        d = xs.shape[-1]
        m = self.resolve_m(d)
        scale = d * (self.beta - self.alpha) / (2.0 * m) * _coth_half(self.epsilon / m)
        mid = (self.alpha + self.beta) / 2.0
        out = np.empty(xs.shape, dtype=np.float64)
        out[...] = scale * 0.0 + mid
        np.copyto(out, scale * 1.0 + mid, where=xs > 0)
        np.copyto(out, scale * -1.0 + mid, where=xs < 0)
        return out

    def privatize(self, x: object, rng: np.random.Generator) -> np.ndarray:
        """Encoder then rectifier (what the server ends up with)."""
        return self.rectify(self.randomize(x, rng))

    def variance(self, x: object) -> np.ndarray:
        """Eq. 5 evaluated at ``x`` (per entry)."""
        xx = self._prepare(x)
        d = xx.shape[-1]
        return multibit_variance(xx, self.epsilon, self.resolve_m(d), d, self.alpha, self.beta)

    def _check_encoded(self, xs: np.ndarray) -> None:
        if xs.ndim not in (1, 2) or xs.shape[-1] == 0:
            raise ConfigError(f"encoded features must be (d,) or (n, d), got shape {xs.shape}")
        if xs.size and not np.all((xs == -1) | (xs == 0) | (xs == 1)):
            raise ConfigError("encoded features must take values in {-1, 0, +1}")
        self._check_range_shape(xs.shape[-1])

    def log_prob(self, x_star: object, x: object) -> np.ndarray:
        """Exact log P[encoder output = x_star | input x], per row (-inf if impossible)."""
        xs = np.asarray(x_star)
        self._check_encoded(xs)
        xx = self._prepare(x)
        if xs.shape != xx.shape:
            raise ConfigError(f"x_star shape {xs.shape} does not match x shape {xx.shape}")
        d = xx.shape[-1]
        m = self.resolve_m(d)
        p = self.plus_probability(xx, m)
        with np.errstate(divide="ignore"):
            terms = np.where(xs == 1, np.log(p), np.where(xs == -1, np.log1p(-p), 0.0))
        log_choose = special.gammaln(d + 1) - special.gammaln(m + 1) - special.gammaln(d - m + 1)
        total = terms.sum(axis=-1) - log_choose
        nnz = (xs != 0).sum(axis=-1)
        return np.where(nnz == m, total, -np.inf)

    def __repr__(self) -> str:
        return f"MultiBit(epsilon={self.epsilon:g}, m={self.m!r}, unit={self.unit.value!r})"
