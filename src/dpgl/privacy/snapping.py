"""Mironov's snapping mechanism: real-valued Laplace noise safe from the floating-point attack.

The attack (Mironov, "On Significance of the Least Significant Bits for Differential Privacy",
CCS 2012, Sec. 3-4): textbook Laplace sampling ``x + b * ln(U)`` with a floating-point U
reaches only a sparse, input-dependent set of doubles, so the low-order bits of one released
value often rule out every input but the true one, whatever epsilon says.

The fix is the snapping mechanism (Mironov 2012, Sec. 5.2):

    f~(D) = clamp_B( round_Lambda( clamp_B(f(D)) (+) S (x) lambda (x) LN(U*) ) )

where clamp_B clips to [-B, B]; U* is uniform on the doubles of (0, 1), each double drawn
with probability proportional to its ulp (a uniform 52-bit significand and a geometrically
distributed exponent); S is a uniform sign; LN is the natural logarithm, correctly rounded;
(+) and (x) are IEEE double-precision operations (round to nearest); Lambda is the smallest
power of 2 >= lambda and round_Lambda rounds to the nearest multiple of Lambda.

**Theorem** (Mironov 2012, Sec. 5.2, Theorem 1). For a query f of sensitivity 1 the snapping
mechanism with parameters lambda and B satisfies (1/lambda + 2^-49 B / lambda)-differential
privacy when lambda < B < 2^46 lambda.

What this module implements, step by step:

* :func:`uniform_double` draws U* exactly as the theorem requires: one 64-bit integer gives
  the 52 significand bits (and the sign bit S), a stream of further random bits gives the
  exponent (k - 1 leading zero bits before the first one: P[k] = 2^-k; the subnormal range,
  reached with probability 2^-1022, is uniform over the positive subnormals). Randomness comes
  only from ``rng.integers(0, 2**64, dtype=uint64)``, never from ``rng.random()``.
* :func:`log_correctly_rounded` is LN: ln in extended precision (``numpy.longdouble``, 64-bit
  significand on x86-64), rounded to the nearest double; when the extended value lies within
  8 extended ulps of a rounding boundary (about 1% of draws) the value is recomputed with
  Python's :mod:`decimal` (``ln`` correctly rounded to 60 digits) and converted with correct
  rounding. Where ``longdouble`` has no extra precision every value takes the decimal path.
* :func:`snap` is f~ itself for a sensitivity-1 query: multiply, negate, add, round to the
  grid by exact operations (division by a power of 2, floor, comparison with k + 1/2, ties
  toward +inf), clamp.
* :class:`SnappingMechanism` handles a query of L1 sensitivity Delta and the public output
  clamp B. It releases ``coordinates`` = k values that may each differ between neighbours (k =
  1: a scalar, or a vector of which one entry changes, like LocalLap's bits; a feature vector
  under feature-LDP: k = d) and requires each changed entry to move by at most
  c = Delta / k. Every entry is divided by D = c + 2^-51 B (rounded up): the rounding of that
  division moves two values in [-B, B] by at most 2^-52 B / D + 2^-1074 together, so the
  divided entries differ by at most 1 and form a sensitivity-1 query with values in
  [-B/D, B/D]. The theorem applies per entry with lambda = ``scale_unit`` and bound B_m =
  max(B/D, 2 k / eps) rounded up to a multiple of Lambda (a larger clamp than the data need
  is allowed; it keeps lambda < B_m and the releases on the grid), and k entries compose:
  the stated guarantee is k (1 + 2^-49 B_m) / lambda, which :func:`calibrate_snapping`
  makes <= the requested eps (lambda ~ k (1 + 2^-49 B_m) / eps).
  The released value is c times the snapped value, clamped to the largest multiple of the
  output grid c * Lambda that is <= B (post-processing).
"""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpgl.errors import ConfigError, PrivacyError
from dpgl.privacy._validation import (
    as_finite_float,
    check_generator,
    check_positive,
    check_positive_int,
)
from dpgl.privacy.guarantee import check_epsilon

__all__ = [
    "SnappingMechanism",
    "SnappingParams",
    "calibrate_snapping",
    "log_correctly_rounded",
    "snap",
    "snapping_epsilon",
    "uniform_double",
]

#: Mironov's Theorem 1 needs lambda < B < 2^46 lambda.
MAX_BOUND_RATIO = 2.0**46
_ERR_TERM = Fraction(1, 2**49)          # the 2^-49 B / lambda term of Theorem 1
_DIV_SLACK = Fraction(1, 2**51)         # D = c + 2^-51 B absorbs the rounding of x / D
_MIN_SCALE, _MAX_SCALE = 2.0**-900, 2.0**900
_MANT_MASK = np.uint64((1 << 52) - 1)
_HIDDEN_BIT = np.uint64(1 << 52)
_SUBNORMAL_ZEROS = 1022                 # k - 1 >= 1022 leading zeros: U* < 2^-1022
_LD_MANT = int(np.finfo(np.longdouble).nmant)
_DEC = decimal.Context(prec=60, rounding=decimal.ROUND_HALF_EVEN)


# --------------------------------------------------------------------------- exact helpers


def _round_up(x: Fraction) -> float:
    """The smallest double >= x."""
    f = float(x)
    return math.nextafter(f, math.inf) if Fraction(f) < x else f


def _pow2_ceil(x: float) -> float:
    """The smallest power of 2 >= x (x > 0, normal)."""
    m, e = math.frexp(x)
    return x if m == 0.5 else math.ldexp(1.0, e)


def _bit_length(a: np.ndarray) -> np.ndarray:
    """Bit lengths of positive integers < 2^53 (exact through float64)."""
    return np.frexp(a.astype(np.float64))[1].astype(np.int64)


def _words(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, 2**64, size=n, dtype=np.uint64)


# --------------------------------------------------------------------------- U* and LN


def _uniform_and_sign(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n draws of U* (Mironov's uniform double) and n independent sign bits."""
    w = _words(n, rng)
    mant = w & _MANT_MASK
    neg = ((w >> np.uint64(52)) & np.uint64(1)).astype(bool)
    top = w >> np.uint64(53)                      # 11 further random bits start the stream
    zeros = np.full(n, 11, dtype=np.int64)        # leading zero bits before the first one
    hit = top != 0
    zeros[hit] = 11 - _bit_length(top[hit])
    pending = np.flatnonzero(~hit)
    while pending.size:                           # rare: 53 more bits per round
        chunk = _words(pending.size, rng) >> np.uint64(11)
        hit = chunk != 0
        zeros[pending[hit]] += 53 - _bit_length(chunk[hit])
        zeros[pending[~hit]] += 53
        pending = pending[~hit]
        pending = pending[zeros[pending] < _SUBNORMAL_ZEROS]
    u = np.empty(n)
    normal = zeros < _SUBNORMAL_ZEROS
    # U* in [2^-k, 2^-k+1) with k = zeros + 1: (2^52 + m) 2^-(k + 52), exact.
    u[normal] = np.ldexp((mant[normal] | _HIDDEN_BIT).astype(np.float64),
                         -(zeros[normal] + 53).astype(np.int32))
    sub = np.flatnonzero(~normal)                 # probability 2^-1022 per draw
    if sub.size:
        m = mant[sub]
        while np.any(m == 0):                     # uniform over the positive subnormals
            redo = np.flatnonzero(m == 0)
            m[redo] = _words(redo.size, rng) & _MANT_MASK
        u[sub] = np.ldexp(m.astype(np.float64), -1074)
    return u, neg


def uniform_double(size: int | tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """U*: every double of (0, 1) with probability proportional to its ulp (Mironov 2012,
    Sec. 5.2): 52 uniform significand bits and a geometric exponent, from uniform integers."""
    rng = check_generator(rng)
    shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    n = int(np.prod(shape, dtype=np.int64))
    return _uniform_and_sign(n, rng)[0].reshape(shape)


def _ln_decimal(values: np.ndarray) -> np.ndarray:
    return np.array([float(_DEC.ln(decimal.Decimal(float(v)))) for v in values])


def log_correctly_rounded(u: object) -> np.ndarray:
    """ln(u) rounded to the nearest double, for positive finite doubles ``u``.

    Fast path: ln in ``numpy.longdouble`` (the platform's ``logl``, assumed accurate to 8
    extended ulps; glibc documents <= 2), rounded to double; it is the correctly rounded
    result unless the extended value lies within those 8 ulps of a midpoint between doubles,
    and those values (and all values where ``longdouble`` is plain double) are recomputed
    with :mod:`decimal` at 60 significant digits, far beyond the accuracy that the hardest
    cases of rounding the double-precision logarithm need.
    """
    a = np.asarray(u, dtype=np.float64)
    flat = a.reshape(-1)
    if flat.size and not (np.all(np.isfinite(flat)) and np.all(flat > 0)):
        raise ConfigError("log_correctly_rounded needs positive finite values")
    if _LD_MANT < 63:
        return _ln_decimal(flat).reshape(a.shape)
    r = np.log(flat.astype(np.longdouble))
    out = r.astype(np.float64)
    d = out.astype(np.longdouble)
    up = (d + np.nextafter(out, np.inf).astype(np.longdouble)) / 2
    down = (d + np.nextafter(out, -np.inf).astype(np.longdouble)) / 2
    tol = np.abs(r) * np.longdouble(2.0) ** (3 - _LD_MANT)
    unsure = np.flatnonzero((np.abs(r - up) <= tol) | (np.abs(r - down) <= tol))
    if unsure.size:
        out[unsure] = _ln_decimal(flat[unsure])
    return out.reshape(a.shape)


# --------------------------------------------------------------------------- the mechanism


def snapping_epsilon(scale: float, bound: float) -> float:
    """Mironov's Theorem 1 for a sensitivity-1 query: 1/lambda + 2^-49 B / lambda (rounded
    up to a double), valid for lambda < B < 2^46 lambda (refused otherwise)."""
    lam = check_positive(scale, "scale")
    b = check_positive(bound, "bound")
    if not lam < b < MAX_BOUND_RATIO * lam:
        raise PrivacyError(f"the snapping theorem needs scale < bound < 2^46 scale, got "
                           f"scale={lam:.6g}, bound={b:.6g}")
    return _round_up((1 + Fraction(b) * _ERR_TERM) / Fraction(lam))


def snap(values: object, scale: float, bound: float, rng: np.random.Generator) -> np.ndarray:
    """Mironov's f~ for a sensitivity-1 query, elementwise and independently:
    clamp_B(round_Lambda(clamp_B(x) (+) S (x) lambda (x) LN(U*))); its guarantee is
    :func:`snapping_epsilon` (scale, bound) per changed entry."""
    snapping_epsilon(scale, bound)  # validates lambda < B < 2^46 lambda
    lam, b = float(scale), float(bound)
    if not _MIN_SCALE <= lam <= _MAX_SCALE:
        raise PrivacyError(f"scale must lie in [2^-900, 2^900], got {lam:.6g}")
    rng = check_generator(rng)
    a = as_finite_float(values)
    x = np.clip(a.reshape(-1), -b, b)
    grid = _pow2_ceil(lam)
    u, neg = _uniform_and_sign(x.size, rng)
    noise = lam * log_correctly_rounded(u)        # lambda (x) LN(U*): one rounding, <= 0
    noise = np.where(neg, -noise, noise)          # S (x): exact
    v = x + noise                                 # (+): one rounding
    q = v / grid                                  # exact: grid is a power of 2
    k = np.floor(q)                               # |q| < 2^47, so k + 0.5 is exact
    k += q >= k + 0.5                             # nearest multiple, ties toward +inf
    return np.clip(k * grid, -b, b).reshape(a.shape)


@dataclass(frozen=True)
class SnappingParams:
    """A calibrated snapping mechanism (see the module docstring for every quantity).

    ``unit``-scaled quantities (``scale_unit``, ``grid_unit``, ``input_bound``,
    ``mech_bound``) are in units of ``unit`` = c, the largest change of one entry.
    """

    requested: float     # the epsilon asked for
    epsilon: float       # the stated epsilon: k (1 + 2^-49 B_m) / lambda, rounded up; <= requested
    sensitivity: float   # Delta (L1)
    coordinates: int     # k: entries that may differ between neighbours
    bound: float         # B: public clamp of the released values
    unit: float          # c = Delta / k (rounded up)
    divisor: float       # D = c + 2^-51 B (rounded up)
    input_bound: float   # B / D
    mech_bound: float    # B_m: the theorem's B, max(B / D, 2 k / eps) up to the grid
    scale_unit: float    # the theorem's lambda
    grid_unit: float     # the theorem's Lambda: smallest power of 2 >= lambda
    out_bound: float     # largest multiple of the output grid <= B

    @property
    def scale(self) -> float:
        """Laplace scale of the noise in output units: c lambda (>= Delta / eps)."""
        return self.unit * self.scale_unit

    @property
    def grid(self) -> float:
        """Spacing of the released values in output units: c Lambda."""
        return self.unit * self.grid_unit


def calibrate_snapping(epsilon: float, sensitivity: float, bound: float, *,
                       coordinates: int = 1) -> SnappingParams:
    """The snapping mechanism whose stated epsilon is <= ``epsilon`` for a release of L1
    sensitivity ``sensitivity`` in which at most ``coordinates`` entries differ between
    neighbours (each by at most sensitivity / coordinates), clamped to [-bound, bound]."""
    eps = check_epsilon(epsilon)
    delta = check_positive(sensitivity, "sensitivity")
    b = check_positive(bound, "bound")
    k = check_positive_int(coordinates, "coordinates")
    c = _round_up(Fraction(delta) / k)
    divisor = _round_up(Fraction(c) + Fraction(b) * _DIV_SLACK)
    b_in = b / divisor
    if b_in < 2.0**-900:
        raise PrivacyError(f"bound={b:.6g} is too small for sensitivity {delta:.6g}")
    lam0 = k / eps
    if not _MIN_SCALE <= lam0 <= _MAX_SCALE / 4:
        raise PrivacyError(f"sensitivity / epsilon is out of range for the snapping "
                           f"mechanism (epsilon={eps:.6g})")
    b_m = max(b_in, 2.0 * lam0)
    while True:  # B_m on the grid (releases stay on it); two rounds at most in practice
        factor = k * (1 + Fraction(b_m) * _ERR_TERM)
        lam = float(factor / Fraction(eps))
        while _round_up(factor / Fraction(lam)) > eps:
            lam = math.nextafter(lam, math.inf)
        grid_unit = _pow2_ceil(lam)
        on_grid = math.ceil(b_m / grid_unit) * grid_unit
        if on_grid == b_m or not math.isfinite(on_grid):
            break
        b_m = on_grid
    if not lam < b_m:
        raise PrivacyError(f"epsilon={eps:.6g} is too small for the snapping mechanism "
                           f"(its noise scale must stay below 2^48)")
    if not b_m < MAX_BOUND_RATIO * lam:
        raise PrivacyError(
            f"bound={b:.6g} is too large for the noise: the snapping theorem needs "
            f"bound / (sensitivity per entry) < 2^46 x scale, here {b_in:.6g} >= 2^46 x "
            f"{lam:.6g}; lower the bound or epsilon")
    grid = c * grid_unit
    steps = math.floor(b / grid)
    while steps > 0 and steps * grid > b:
        steps -= 1
    if steps < 1:
        raise PrivacyError(f"bound={b:.6g} is smaller than the snapping grid {grid:.6g} "
                           f"(every release would be 0); use a bound >= {grid:.6g}")
    return SnappingParams(
        requested=eps, epsilon=_round_up(factor / Fraction(lam)), sensitivity=delta,
        coordinates=k, bound=b, unit=c, divisor=divisor, input_bound=b_in, mech_bound=b_m,
        scale_unit=lam, grid_unit=grid_unit, out_bound=steps * grid)


class SnappingMechanism:
    """Secure real-valued Laplace release: x in [-B, B]^shape with L1 sensitivity Delta,
    snapped entry by entry (Mironov 2012, Sec. 5.2, Theorem 1, per entry; k entries compose).

    ``epsilon`` is the stated guarantee (<= the requested one); outputs are multiples of
    ``grid`` in [-B, B].
    """

    def __init__(self, epsilon: float, sensitivity: float, bound: float, *,
                 coordinates: int = 1) -> None:
        self.params = calibrate_snapping(epsilon, sensitivity, bound, coordinates=coordinates)

    @property
    def epsilon(self) -> float:
        return self.params.epsilon

    @property
    def scale(self) -> float:
        return self.params.scale

    @property
    def grid(self) -> float:
        return self.params.grid

    @property
    def bound(self) -> float:
        return self.params.bound

    def randomize(self, x: object, rng: np.random.Generator) -> np.ndarray:
        """Snapped noisy copy of ``x`` (float64, same shape)."""
        p = self.params
        rng = check_generator(rng)
        a = as_finite_float(x)
        g = np.clip(np.clip(a, -p.bound, p.bound) / p.divisor, -p.input_bound, p.input_bound)
        y = snap(g, p.scale_unit, p.mech_bound, rng)
        return np.clip(y * p.unit, -p.out_bound, p.out_bound)

    __call__ = randomize

    def __repr__(self) -> str:
        p = self.params
        return (f"SnappingMechanism(epsilon={p.requested:g}, sensitivity={p.sensitivity:g}, "
                f"bound={p.bound:g}, coordinates={p.coordinates})")
