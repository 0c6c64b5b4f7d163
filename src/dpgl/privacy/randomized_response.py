"""Randomized response: Warner's RR on bits and k-ary RR.

* Warner (1965) RR on one bit: keep the bit with probability e^eps / (1 + e^eps), flip it
  otherwise. eps-DP for the bit (Dwork & Roth 2014, Sec. 3.2; on a neighbor list it is
  eps-edge LDP: Qin et al. 2017; Blink Def. 2; DPRR Sec. III-B).
* k-ary RR (Kairouz, Bonawitz & Ramage 2016, Sec. 2; Wang et al. 2017 "direct encoding"):
  report the true value with probability e^eps / (e^eps + k - 1), each other value with
  probability 1 / (e^eps + k - 1). eps-DP; LPGNN uses it for labels (Sec. 4.3, Eq. 8).

Both are vectorized: one uniform draw per entry.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from dpgl.errors import ConfigError
from dpgl.privacy._validation import (
    as_bits,
    as_int_array,
    check_generator,
    check_positive_int,
    check_unit,
)
from dpgl.privacy.guarantee import Guarantee, Unit, check_epsilon
from dpgl.privacy.randomizer import Randomizer

__all__ = ["KRandomizedResponse", "RandomizedResponse"]


class RandomizedResponse(Randomizer):
    """Warner's randomized response on bits: ``eps``-DP per bit.

    Parameters: ``epsilon`` > 0; ``unit`` is what one bit stands for (default edge-LDP: one
    entry of a user's neighbor list).
    """

    def __init__(self, epsilon: float, unit: Unit | str = Unit.EDGE_LDP, *,
                 label: str = "randomized response") -> None:
        self.epsilon = check_epsilon(epsilon)
        self.unit = check_unit(unit)
        self.label = label

    @property
    def guarantee(self) -> Guarantee:
        """eps-DP for one bit (Warner 1965; likelihood ratio of the two outputs is e^eps)."""
        return Guarantee.pure(self.epsilon, self.unit)

    @property
    def keep_probability(self) -> float:
        """P[output = input] = e^eps / (1 + e^eps)."""
        return float(special.expit(self.epsilon))

    @property
    def flip_probability(self) -> float:
        """P[output != input] = 1 / (1 + e^eps)."""
        return float(special.expit(-self.epsilon))

    def randomize(self, bits: object, rng: np.random.Generator) -> np.ndarray:
        """Flip each bit independently with probability ``flip_probability``.

        Returns an array of the input's shape and dtype (bool in, bool out).
        """
        rng = check_generator(rng)
        arr = np.asarray(bits)
        b = as_bits(arr, "bits")
        flips = rng.random(b.shape) < self.flip_probability
        out = b ^ flips
        return out if arr.dtype == bool else out.astype(arr.dtype)

    __call__ = randomize

    def output_distribution(self, bit: int) -> np.ndarray:
        """[P(output = 0), P(output = 1)] for one input bit."""
        b = int(as_bits(bit, "bit"))
        keep, flip = self.keep_probability, self.flip_probability
        return np.array([keep, flip]) if b == 0 else np.array([flip, keep])

    def log_prob(self, output: object, inputs: object) -> np.ndarray:
        """Elementwise log P(output | input) (exact)."""
        y, x = as_bits(output, "output"), as_bits(inputs, "inputs")
        if y.shape != x.shape:
            raise ConfigError(f"output shape {y.shape} does not match input shape {x.shape}")
        log_keep = -float(np.logaddexp(0.0, -self.epsilon))
        log_flip = -float(np.logaddexp(0.0, self.epsilon))
        return np.where(y == x, log_keep, log_flip)

    def __repr__(self) -> str:
        return f"RandomizedResponse(epsilon={self.epsilon:g}, unit={self.unit.value!r})"


class KRandomizedResponse(Randomizer):
    """k-ary randomized response over values {0, ..., k-1}: ``eps``-DP per value.

    ``unit`` defaults to label-LDP (one user's label, LPGNN Sec. 4.3).
    """

    def __init__(self, epsilon: float, k: int, unit: Unit | str = Unit.LABEL_LDP, *,
                 label: str = "k-ary randomized response") -> None:
        self.label = label
        self.epsilon = check_epsilon(epsilon)
        self.k = check_positive_int(k, "k")
        if self.k < 2:
            raise ConfigError(f"k-ary randomized response needs k >= 2 values, got k={k}")
        self.unit = check_unit(unit)

    @property
    def guarantee(self) -> Guarantee:
        """eps-DP: any two outputs' probabilities differ by at most a factor e^eps."""
        return Guarantee.pure(self.epsilon, self.unit)

    @property
    def keep_probability(self) -> float:
        """P[output = input] = e^eps / (e^eps + k - 1)."""
        return 1.0 / (1.0 + (self.k - 1) * math.exp(-self.epsilon))

    @property
    def other_probability(self) -> float:
        """P[output = v] for each v != input: 1 / (e^eps + k - 1)."""
        return math.exp(-self.epsilon) / (1.0 + (self.k - 1) * math.exp(-self.epsilon))

    def _values(self, x: object, name: str) -> np.ndarray:
        v = as_int_array(x, name)
        if v.size and (v.min() < 0 or v.max() >= self.k):
            raise ConfigError(f"{name} must lie in [0, {self.k - 1}] for k={self.k}")
        return v

    def randomize(self, values: object, rng: np.random.Generator) -> np.ndarray:
        """Randomize each value independently; returns int64 array of the input's shape."""
        rng = check_generator(rng)
        v = self._values(values, "values")
        change = rng.random(v.shape) >= self.keep_probability
        # A changed value is uniform over the k-1 others: shift by 1..k-1 modulo k.
        shift = rng.integers(1, self.k, size=v.shape)
        return np.where(change, (v + shift) % self.k, v)

    __call__ = randomize

    def output_distribution(self, value: int) -> np.ndarray:
        """Length-k vector of P(output = j | input = value)."""
        x = int(self._values(value, "value"))
        p = np.full(self.k, self.other_probability)
        p[x] = self.keep_probability
        return p

    def log_prob(self, output: object, inputs: object) -> np.ndarray:
        """Elementwise log P(output | input) (exact)."""
        y, x = self._values(output, "output"), self._values(inputs, "inputs")
        if y.shape != x.shape:
            raise ConfigError(f"output shape {y.shape} does not match input shape {x.shape}")
        log_norm = float(np.logaddexp(self.epsilon, math.log(self.k - 1)))
        return np.where(y == x, self.epsilon - log_norm, -log_norm)

    def __repr__(self) -> str:
        return (f"KRandomizedResponse(epsilon={self.epsilon:g}, k={self.k}, "
                f"unit={self.unit.value!r})")
