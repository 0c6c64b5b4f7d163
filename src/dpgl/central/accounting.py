"""DPAR's own accounting statements, reproduced *as stated* so the paper's numbers can be shown
next to ours (docs/node-dp.md). Zhang et al.'s reference code composes the M private PPR
vectors with a Kairouz et al. 2015 Thm 4-style formula and multiplies every epsilon by the
node-subsampling rate q'. They are not valid guarantees in general (eps x q' is only a
first-order approximation of amplification, and the composition formula is stated for small
eps); they set the noise of ``accounting="paper"`` runs and are never recorded in an
accountant: such a run's report holds what its noise really spends. The verified tools live in
:mod:`dpgl.privacy` (:mod:`~dpgl.privacy.multiterm`, :mod:`~dpgl.privacy.amplification`).
"""

from __future__ import annotations

import math

from scipy import optimize

from dpgl.privacy.multiterm import quiet_absl

__all__ = [
    "kairouz_total_epsilon",
    "paper_em_vector_epsilon",
    "paper_gm_vector_epsilon",
    "paper_sgd_epsilon",
]


# ---------------------------------------------------------------- the paper's statements


def kairouz_total_epsilon(per_vector_epsilon: float, count: int, delta_total: float) -> float:
    """DPAR's composition over M vectors as in its reference code: the x with
    x / (2 sqrt(M log(e + x / delta))) = eps_vector (Kairouz, Oh & Viswanath 2015, Thm 4
    form, stated there for small eps)."""
    def g(x: float) -> float:
        return x / (2.0 * math.sqrt(count * math.log(math.e + x / delta_total))) \
            - per_vector_epsilon
    hi = 1.0
    while g(hi) < 0:
        hi *= 2.0
    return float(optimize.brentq(g, 0.0, hi, xtol=1e-12))


def paper_em_vector_epsilon(eps_step: float, k: int, delta0: float,
                            eps_values: float = 0.0) -> float:
    """DPAR's per-vector epsilon for DP-APPR-EM: min(K eps, advanced composition of the K
    steps) plus the value-release epsilon (reference code)."""
    adv = k * eps_step * math.expm1(eps_step) / (math.exp(eps_step) + 1) \
        + eps_step * math.sqrt(2 * k * math.log(1 / delta0))
    return min(k * eps_step, adv) + eps_values


def paper_gm_vector_epsilon(sigma: float, clip: float, delta0: float) -> float:
    """DPAR's per-vector epsilon for DP-APPR-GM: classic Gaussian sqrt(2 ln(1.25/delta)) C1 /
    sigma (sensitivity C1, as in the reference code)."""
    return math.sqrt(2 * math.log(1.25 / delta0)) * clip / sigma


def paper_sgd_epsilon(noise_multiplier: float, sampling_rate: float, steps: int,
                      delta_sgd: float, subsample_rate: float) -> float:
    """DPAR's DP-SGD statement: RDP sampled Gaussian epsilon at delta_sgd / q', times q'
    (one gradient term per node; reference code)."""
    from dpgl.privacy import gaussian_epsilon
    with quiet_absl():
        eps = gaussian_epsilon(noise_multiplier, min(delta_sgd / subsample_rate, 0.5),
                               steps=steps, sampling_rate=sampling_rate, method="rdp")
    return eps * subsample_rate
