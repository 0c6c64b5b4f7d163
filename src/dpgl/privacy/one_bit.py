"""The 1-bit mechanism (Ding, Kulkarni & Yekhanin, NeurIPS 2017) and LPGNN's 1-bit baseline.

Ding et al.'s 1BitMean (Sec. 2.1): a user with value x in [alpha, beta] sends one bit b with
    P[b = 1] = 1/(e^eps + 1) + (x - alpha)/(beta - alpha) * (e^eps - 1)/(e^eps + 1);
the probabilities of a bit under any two inputs differ by at most e^eps, so eps-LDP
(Ding et al. 2017, Thm 1). The unbiased estimate is
    x_hat = alpha + (beta - alpha) (b (e^eps + 1) - 1) / (e^eps - 1).

LPGNN's "1-bit mechanism" baseline (1BM in LPGNN's experiments) applies this to every one of the d
feature dimensions with budget eps/d each, which is exactly the multi-bit mechanism with m = d
(every dimension sampled): :class:`OneBit` is that, and eps-feature-LDP by composition over
the d dimensions. On the {-1, +1} encoding, the multi-bit rectifier with m = d equals Ding et
al.'s estimator applied per dimension with eps/d.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from dpgl.privacy.guarantee import Unit, check_epsilon
from dpgl.privacy.multibit import MultiBit

__all__ = ["OneBit", "one_bit_estimate", "one_bit_probability"]


def one_bit_probability(x: object, epsilon: float, alpha: float = 0.0, beta: float = 1.0
                        ) -> np.ndarray:
    """P[b = 1 | x] of Ding et al.'s 1-bit mechanism (1BitMean, Sec. 2.1)."""
    eps = check_epsilon(epsilon)
    xx = np.asarray(x, dtype=float)
    return special.expit(-eps) + (xx - alpha) / (beta - alpha) * math.tanh(eps / 2.0)


def one_bit_estimate(b: object, epsilon: float, alpha: float = 0.0, beta: float = 1.0
                     ) -> np.ndarray:
    """Ding et al.'s unbiased estimate alpha + (beta - alpha)(b (e^eps + 1) - 1)/(e^eps - 1)."""
    eps = check_epsilon(epsilon)
    bb = np.asarray(b, dtype=float)
    return alpha + (beta - alpha) * (bb * (math.exp(eps) + 1.0) - 1.0) / math.expm1(eps)


class OneBit(MultiBit):
    """LPGNN's 1-bit baseline: every dimension perturbed by the 1-bit mechanism with eps/d.

    eps-LDP for the whole feature vector (d-fold composition of eps/d-LDP bits). Output of
    :meth:`randomize` is in {-1, +1}^d (+1 means bit 1); :meth:`rectify` gives Ding et al.'s
    unbiased estimate per dimension.
    """

    def __init__(self, epsilon: float, *, alpha: float | np.ndarray = 0.0,
                 beta: float | np.ndarray = 1.0, unit: Unit | str = Unit.FEATURE_LDP,
                 label: str = "1-bit") -> None:
        super().__init__(epsilon, alpha=alpha, beta=beta, m="max", unit=unit, label=label)

    def __repr__(self) -> str:
        return f"OneBit(epsilon={self.epsilon:g}, unit={self.unit.value!r})"
