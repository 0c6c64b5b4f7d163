"""Laplace mechanisms: continuous Laplace and the discrete Laplace (two-sided geometric).

* Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006; Dwork & Roth 2014, Thm 3.6):
  f(x) + Lap(Delta_1 / eps) is eps-DP when f has L1 sensitivity Delta_1. Sampled with
  NumPy's floating-point sampler; see Mironov (2012) for why textbook floating-point Laplace
  can leak in deployment. ``secure=True`` (with the public clamp ``bound``) releases through
  Mironov's snapping mechanism instead (:mod:`dpgl.privacy.snapping`, docs/secure-mode.md).
  For integers use :class:`DiscreteLaplace`.
* Discrete Laplace / two-sided geometric mechanism (Ghosh, Roughgarden & Sundararajan 2009;
  Canonne, Kamath & Steinke 2020): for an integer query with
  sensitivity Delta, output f(x) + Z with P[Z = z] = (1 - a) / (1 + a) a^|z|,
  a = exp(-eps / Delta); eps-DP. Sampled *exactly* with integer arithmetic only
  (Canonne, Kamath & Steinke 2020, Alg. 1 and Alg. 2), vectorized over arrays: every random
  draw is a uniform integer, so no floating-point rounding can shape the noise.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpgl.errors import ConfigError, PrivacyError
from dpgl.privacy._validation import (
    as_finite_float,
    as_int_array,
    check_generator,
    check_positive,
    check_positive_int,
    check_unit,
)
from dpgl.privacy.guarantee import Guarantee, Unit, check_epsilon
from dpgl.privacy.randomizer import Randomizer
from dpgl.privacy.snapping import SnappingMechanism

__all__ = [
    "DiscreteLaplace",
    "LaplaceMechanism",
    "sample_discrete_laplace",
]

_MAX_DENOMINATOR = 2**20


class LaplaceMechanism(Randomizer):
    """Continuous Laplace mechanism: x + Lap(sensitivity / eps), eps-DP (Dwork & Roth, Thm 3.6).

    ``sensitivity`` is the L1 sensitivity of the released vector under ``unit`` (e.g. 1 for a
    degree under edge-LDP, as in DPRR and Blink).

    ``secure=True`` is for values that leave a user's device: the release is Mironov's
    snapping mechanism (:class:`dpgl.privacy.snapping.SnappingMechanism`), which needs the
    public clamp ``bound`` = B (released values lie in [-B, B], on a grid of spacing
    :attr:`grid`) and, for vectors, ``coordinates`` = k, the number of entries that may differ
    between neighbouring inputs, each by at most sensitivity / k (1: a scalar, or a vector of
    which one entry changes, like LocalLap's bits; a feature vector in [lo, hi]^d: k = d with
    sensitivity d (hi - lo)). :attr:`guarantee` is then the snapping theorem's stated
    epsilon, calibrated to be <= ``epsilon``. The default (``secure=False``) draws exactly as
    before: ``x + rng.laplace(0, sensitivity / eps)``.
    """

    def __init__(self, epsilon: float, sensitivity: float = 1.0,
                 unit: Unit | str = Unit.EDGE_LDP, *, label: str = "Laplace",
                 secure: bool = False, bound: float | None = None,
                 coordinates: int = 1) -> None:
        self.label = label
        self.epsilon = check_epsilon(epsilon)
        self.sensitivity = check_positive(sensitivity, "sensitivity")
        self.unit = check_unit(unit)
        if not isinstance(secure, (bool, np.bool_)):
            raise ConfigError(f"secure must be True or False, got {secure!r}")
        self.secure = bool(secure)
        self._snapping: SnappingMechanism | None = None
        if self.secure:
            if bound is None:
                raise ConfigError("secure=True needs bound=B, the public clamp |value| <= B of "
                                  "the released values (Mironov's snapping mechanism)")
            self._snapping = SnappingMechanism(self.epsilon, self.sensitivity, bound,
                                               coordinates=coordinates)
        elif bound is not None or not (isinstance(coordinates, int) and coordinates == 1):
            raise ConfigError("bound and coordinates are used only with secure=True (the "
                              "snapping mechanism); leave them out otherwise")

    @property
    def snapping(self) -> SnappingMechanism | None:
        """The snapping mechanism that draws in secure mode (None otherwise)."""
        return self._snapping

    @property
    def bound(self) -> float | None:
        """B, the public clamp of the released values (secure mode; None otherwise)."""
        return None if self._snapping is None else self._snapping.bound

    @property
    def coordinates(self) -> int:
        """Entries that may differ between neighbouring inputs (secure mode; 1 otherwise)."""
        return 1 if self._snapping is None else self._snapping.params.coordinates

    @property
    def grid(self) -> float | None:
        """Spacing of the released values in secure mode (None otherwise)."""
        return None if self._snapping is None else self._snapping.grid

    @property
    def scale(self) -> float:
        """b = sensitivity / eps (secure mode: the snapping mechanism's scale, slightly
        larger)."""
        if self._snapping is not None:
            return self._snapping.scale
        return self.sensitivity / self.epsilon

    @property
    def variance(self) -> float:
        """2 b^2. Secure mode: 2 b^2 + grid^2 / 12, the mean squared error of a release
        averaged over the input's offset from the grid (the clamp ignored); for one input
        it varies by a few percent with that offset."""
        if self._snapping is not None:
            return 2.0 * self.scale**2 + self._snapping.grid**2 / 12.0
        return 2.0 * self.scale**2

    @property
    def guarantee(self) -> Guarantee:
        """Pure eps-DP (Dwork & Roth 2014, Thm 3.6); secure mode: the snapping mechanism's
        stated epsilon (Mironov 2012, Sec. 5.2, Thm 1, per changed entry), <= ``epsilon``."""
        if self._snapping is not None:
            return Guarantee.pure(self._snapping.epsilon, self.unit)
        return Guarantee.pure(self.epsilon, self.unit)

    def randomize(self, x: object, rng: np.random.Generator) -> np.ndarray:
        """x + Lap(b), elementwise (secure mode: the snapping mechanism)."""
        rng = check_generator(rng)
        a = as_finite_float(x)
        if self._snapping is not None:
            return self._snapping.randomize(a, rng)
        return a + rng.laplace(0.0, self.scale, size=a.shape)

    __call__ = randomize

    def log_density(self, y: object, x: object) -> np.ndarray:
        """log of the output density at ``y`` given input ``x`` (elementwise)."""
        if self._snapping is not None:
            raise ConfigError("log_density is the continuous Laplace density; secure mode "
                              "releases values on a grid (snapping mechanism)")
        yy, xx = as_finite_float(y, "y"), as_finite_float(x, "x")
        return -np.abs(yy - xx) / self.scale - math.log(2.0 * self.scale)

    def __repr__(self) -> str:
        text = (f"LaplaceMechanism(epsilon={self.epsilon:g}, sensitivity={self.sensitivity:g}, "
                f"unit={self.unit.value!r}")
        if self._snapping is not None:
            text += f", secure=True, bound={self._snapping.bound:g}"
            if self.coordinates != 1:
                text += f", coordinates={self.coordinates}"
        return text + ")"


def _rational_rate(epsilon: float, sensitivity: int) -> Fraction:
    """A rational s/t <= eps/Delta with t <= 2^20 (more noise, never less): the exact sampler
    needs the rate as a fraction of small integers. Values within a relative 1e-12 of the
    requested rate (e.g. 3/10 for the float 0.3) are taken as the rate itself."""
    exact = Fraction(epsilon) / sensitivity
    frac = exact.limit_denominator(_MAX_DENOMINATOR)
    if frac > exact and frac > exact * (1 + Fraction(1, 10**12)):
        frac = Fraction(math.floor(exact * _MAX_DENOMINATOR), _MAX_DENOMINATOR)
    if frac <= 0:
        raise PrivacyError(
            f"epsilon / sensitivity = {float(exact):.3g} is too small for the exact discrete "
            f"Laplace sampler (minimum {1 / _MAX_DENOMINATOR:.3g})"
        )
    return frac


def _bernoulli_exp_neg(num: np.ndarray, den: int, rng: np.random.Generator) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) for integers 0 <= num <= den, vectorized.

    Canonne, Kamath & Steinke 2020, Alg. 1 (gamma in [0, 1]): draw A_K ~ Bernoulli(gamma / K)
    for K = 1, 2, ... until A_K = 0; output 1 iff that K is odd. Bernoulli(n / (den K)) is a
    uniform integer in [0, den K) compared with n.
    """
    num = np.asarray(num, dtype=np.int64)
    k = np.ones(num.shape, dtype=np.int64)
    active = np.ones(num.shape, dtype=bool)
    idx = np.flatnonzero(active)
    flat_num, flat_k = num.reshape(-1), k.reshape(-1)
    while idx.size:
        a = rng.integers(0, den * flat_k[idx]) < flat_num[idx]
        flat_k[idx[a]] += 1
        idx = idx[a]
    return (flat_k % 2 == 1).reshape(num.shape)


def _geometric_exp_neg1(n: int, rng: np.random.Generator) -> np.ndarray:
    """Exact count V of successes of Bernoulli(exp(-1)) before the first failure."""
    v = np.zeros(n, dtype=np.int64)
    idx = np.arange(n)
    while idx.size:
        a = _bernoulli_exp_neg(np.ones(idx.size, dtype=np.int64), 1, rng)
        v[idx[a]] += 1
        idx = idx[a]
    return v


def sample_discrete_laplace(size: int | tuple[int, ...], s: int, t: int,
                            rng: np.random.Generator) -> np.ndarray:
    """Exact samples Z with P[Z = z] proportional to exp(-|z| s / t) (scale t / s).

    Canonne, Kamath & Steinke 2020, Alg. 2, vectorized with rejection on the pending entries:
    U ~ Uniform{0..t-1}; accept with Bernoulli(exp(-U/t)); V ~ Geometric (Bernoulli(exp(-1))
    successes); X = U + t V; Y = floor(X / s); B ~ Bernoulli(1/2); reject (B = 1, Y = 0);
    return (1 - 2B) Y. Uses only uniform integers.
    """
    rng = check_generator(rng)
    s = check_positive_int(s, "s")
    t = check_positive_int(t, "t")
    shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    n = int(np.prod(shape, dtype=np.int64))
    out = np.zeros(n, dtype=np.int64)
    pending = np.arange(n)
    while pending.size:
        u = rng.integers(0, t, size=pending.size)
        d = _bernoulli_exp_neg(u, t, rng)
        cand, u = pending[d], u[d]
        v = _geometric_exp_neg1(cand.size, rng)
        y = (u + t * v) // s
        b = rng.integers(0, 2, size=cand.size)
        ok = ~((b == 1) & (y == 0))
        out[cand[ok]] = ((1 - 2 * b) * y)[ok]
        done = np.zeros(pending.size, dtype=bool)
        done[np.flatnonzero(d)[ok]] = True
        pending = pending[~done]
    return out.reshape(shape)


class DiscreteLaplace(Randomizer):
    """Discrete Laplace (two-sided geometric) mechanism for integer queries: eps-DP.

    Output x + Z, P[Z = z] = (1 - a) / (1 + a) a^|z| with a = exp(-eps / Delta), where Delta is
    the integer sensitivity (1 for a degree under edge-LDP). Sampled exactly (CKS 2020, Alg. 2).
    The rate is represented as a fraction s/t <= eps/Delta with t <= 2^20
    (``effective_epsilon`` <= ``epsilon``; equal for any eps given with <= 6 decimals).
    """

    def __init__(self, epsilon: float, sensitivity: int = 1,
                 unit: Unit | str = Unit.EDGE_LDP, *, label: str = "discrete Laplace") -> None:
        self.label = label
        self.epsilon = check_epsilon(epsilon)
        self.sensitivity = check_positive_int(sensitivity, "sensitivity")
        self.unit = check_unit(unit)
        self._rate = _rational_rate(self.epsilon, self.sensitivity)

    @property
    def rate(self) -> Fraction:
        """s / t: P[Z = z] proportional to exp(-rate |z|)."""
        return self._rate

    @property
    def effective_epsilon(self) -> float:
        """The epsilon the sampler actually achieves: rate * sensitivity (<= epsilon)."""
        return float(self._rate * self.sensitivity)

    @property
    def alpha(self) -> float:
        """a = exp(-rate)."""
        return math.exp(-float(self._rate))

    @property
    def variance(self) -> float:
        """Var[Z] = 2 a / (1 - a)^2."""
        a = self.alpha
        return 2.0 * a / (1.0 - a) ** 2

    @property
    def guarantee(self) -> Guarantee:
        """Pure eps-DP for the rate actually sampled with: P[y | x] / P[y | x'] =
        a^(|y-x| - |y-x'|) <= e^(rate Delta) = e^effective_epsilon (Ghosh et al. 2009)."""
        return Guarantee.pure(self.effective_epsilon, self.unit)

    def sample_noise(self, size: int | tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        """Exact discrete Laplace noise of the given shape (int64)."""
        return sample_discrete_laplace(size, self._rate.numerator, self._rate.denominator, rng)

    def randomize(self, x: object, rng: np.random.Generator) -> np.ndarray:
        """x + Z elementwise for integer ``x`` (int64 out)."""
        v = as_int_array(x, "x")
        return v + self.sample_noise(v.shape, rng)

    __call__ = randomize

    def log_pmf(self, z: object) -> np.ndarray:
        """log P[Z = z] of the noise (elementwise, exact up to float rounding)."""
        zz = as_int_array(z, "z")
        r = float(self._rate)
        log_norm = math.log(-math.expm1(-r)) - math.log1p(math.exp(-r))
        return log_norm - r * np.abs(zz)

    def log_prob(self, output: object, inputs: object) -> np.ndarray:
        """log P(output | input) elementwise."""
        y, x = as_int_array(output, "output"), as_int_array(inputs, "inputs")
        if y.shape != x.shape and y.ndim and x.ndim:
            raise ConfigError(f"output shape {y.shape} does not match input shape {x.shape}")
        return self.log_pmf(y - x)

    def tail_ge(self, t: int) -> float:
        """P[Z >= t] (equals P[Z <= -t] by symmetry): a^t / (1 + a) for t >= 1."""
        t = int(t)
        a = self.alpha
        if t <= 0:
            return 1.0 - self.tail_ge(-t + 1)
        return a**t / (1.0 + a)

    def __repr__(self) -> str:
        return (f"DiscreteLaplace(epsilon={self.epsilon:g}, sensitivity={self.sensitivity}, "
                f"unit={self.unit.value!r})")
