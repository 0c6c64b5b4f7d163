"""Local stand-ins for the privacy primitives the edge-LDP mechanisms need.

TODO(privacy layer): these mirror ``dpgl.privacy.RandomizedResponse.keep_probability`` /
``flip_probability`` and ``dpgl.privacy.LaplaceMechanism`` (written concurrently by another
worker); swap the calls below for those primitives once their API is final. Kept tiny and
identical in distribution: Warner's RR keeps a bit with probability e^eps / (1 + e^eps)
(Warner 1965); the Laplace mechanism adds Lap(Delta / eps) (Dwork et al. 2006).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from dpgl.privacy import check_epsilon


def rr_keep_probability(epsilon: float) -> float:
    """P[RR keeps a bit] = e^eps / (1 + e^eps) (Warner 1965)."""
    return float(special.expit(check_epsilon(epsilon)))


def rr_flip_probability(epsilon: float) -> float:
    """P[RR flips a bit] = 1 / (1 + e^eps), computed without cancellation."""
    return float(special.expit(-check_epsilon(epsilon)))


def laplace_noise(epsilon: float, size: int | tuple[int, ...] | None,
                  rng: np.random.Generator, sensitivity: float = 1.0) -> np.ndarray:
    """Lap(sensitivity / eps) noise (the Laplace mechanism, Dwork et al. 2006)."""
    return rng.laplace(0.0, sensitivity / check_epsilon(epsilon), size)
