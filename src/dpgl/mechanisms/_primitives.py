"""Thin adapters from the privacy core's primitives to the array shapes the edge-LDP
simulations use. The probabilities and scales come from :mod:`dpgl.privacy` (one source of
truth for each mechanism's guarantee): Warner's RR keeps a bit with probability
e^eps / (1 + e^eps) (:class:`~dpgl.privacy.RandomizedResponse`); the Laplace mechanism adds
Lap(Delta / eps) (:class:`~dpgl.privacy.LaplaceMechanism`)."""

from __future__ import annotations

import numpy as np

from dpgl.privacy.laplace import LaplaceMechanism
from dpgl.privacy.randomized_response import RandomizedResponse


def rr_keep_probability(epsilon: float) -> float:
    """P[RR keeps a bit] = e^eps / (1 + e^eps) (Warner 1965)."""
    return RandomizedResponse(epsilon).keep_probability


def rr_flip_probability(epsilon: float) -> float:
    """P[RR flips a bit] = 1 / (1 + e^eps)."""
    return RandomizedResponse(epsilon).flip_probability


def laplace_noise(epsilon: float, size: int | tuple[int, ...] | None,
                  rng: np.random.Generator, sensitivity: float = 1.0) -> np.ndarray:
    """Lap(sensitivity / eps) noise, drawn from ``rng`` (Dwork et al. 2006)."""
    return rng.laplace(0.0, LaplaceMechanism(epsilon, sensitivity).scale, size)
