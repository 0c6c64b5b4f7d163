"""Privacy amplification by Poisson subsampling.

An (eps, delta)-DP mechanism (add/remove neighbours) run on a Poisson sample of rate q, each
record kept independently, is (log(1 + q (e^eps - 1)), q delta)-DP (Li, Qardaji & Su 2012;
Balle, Barthe & Gaboardi 2018, Thm 8). For node-level DP on the induced subgraph of the
sampled nodes it applies as is: when the differing node is not sampled, the induced subgraphs
coincide. :meth:`dpgl.privacy.Accountant.subsampled` records it for whatever is charged inside.
"""

from __future__ import annotations

import math

from dpgl.errors import ConfigError

__all__ = ["amplify_by_subsampling", "subsampled_inner_target"]


def amplify_by_subsampling(epsilon: float, delta: float, rate: float) -> tuple[float, float]:
    """(log(1 + q (e^eps - 1)), q delta): Poisson subsampling at rate q (add/remove)."""
    if not 0 < rate <= 1:
        raise ConfigError(f"subsampling rate must be in (0, 1], got {rate}")
    if math.isinf(epsilon):
        return epsilon, delta
    # log(1 + q (e^eps - 1)) = eps + log(q + (1 - q) e^-eps), stable for large eps
    return float(epsilon + math.log(rate + (1.0 - rate) * math.exp(-epsilon))), rate * delta


def subsampled_inner_target(epsilon: float, delta: float, rate: float) -> tuple[float, float]:
    """Inverse of :func:`amplify_by_subsampling`: the budget a mechanism may spend on the
    subsample so that the amplified total is (epsilon, delta)."""
    if not 0 < rate <= 1:
        raise ConfigError(f"subsampling rate must be in (0, 1], got {rate}")
    # log(1 + (e^eps - 1) / q) = eps + log(1/q + (1 - 1/q) e^-eps), stable for large eps
    inner = epsilon + math.log(1.0 / rate + (1.0 - 1.0 / rate) * math.exp(-epsilon))
    return float(inner), min(delta / rate, 0.5)
