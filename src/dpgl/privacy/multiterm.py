"""DP-SGD where one protected unit changes several per-example gradients (node-level DP).

With Poisson sampling at rate q, one node can change its own example (present/absent: shift
<= C) and up to ``m`` other examples (changed: shift <= 2 C each). The two noisy sums on
neighbouring datasets are mixtures over the sampled subset with *the same* weights, and
component-wise their means differ by at most C (a + 2 b), a ~ Bernoulli(q) (own row sampled),
b ~ Binomial(m, q) (changed rows sampled). Since exp((alpha - 1) D_alpha(P || Q)) =
E_Q[(P/Q)^alpha] is jointly convex in (P, Q),

    exp((alpha - 1) RDP(alpha)) <= E_{a,b}[exp(alpha (alpha - 1) (a + 2 b)^2 / (2 z^2))],

with z the noise multiplier (noise std z C). This is the form of Daigavane et al. 2021
(Thm 1, there with hypergeometric counts for fixed-size batches) written for Poisson sampling
and unequal shifts; the derivation above is ours (a test checks it against the Gaussian RDP
for q = 1). It composes additively over steps. It is *looser* than dp-accounting's sampled
Gaussian for m = 0 (no q^2 amplification), which is why single-term DP-SGD is recorded as a
dp-accounting event instead (:meth:`dpgl.privacy.Accountant.spend_gaussian`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import numpy as np

from dpgl.errors import ConfigError, PrivacyError

__all__ = [
    "ORDERS",
    "calibrate_multiterm",
    "multiterm_epsilon",
    "multiterm_rdp",
    "quiet_absl",
    "rdp_to_epsilon",
]

#: RDP orders used for every RDP computation in dpgl (custom curves and dp-accounting events).
ORDERS = np.concatenate([np.linspace(1.01, 10.0, 200), np.arange(11, 257)]).astype(float)


@contextlib.contextmanager
def quiet_absl() -> Iterator[None]:
    """Silence dp-accounting's absl convergence warnings for fractional RDP orders at large
    sampling rates (those orders are excluded by dp-accounting itself; the result is valid)."""
    logger = logging.getLogger("absl")
    old = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(old)


def rdp_to_epsilon(rdp: np.ndarray, delta: float) -> float:
    """epsilon at ``delta`` of an RDP curve over :data:`ORDERS` (dp-accounting's conversion)."""
    from dp_accounting import rdp as dp_rdp

    eps, _ = dp_rdp.rdp_privacy_accountant.compute_epsilon(ORDERS, np.asarray(rdp), delta)
    return float(eps)


def multiterm_rdp(noise_multiplier: float, sampling_rate: float, max_other: int,
                  orders: np.ndarray = ORDERS, *, own_shift: float = 1.0,
                  other_shift: float = 2.0) -> np.ndarray:
    """Per-step RDP curve (see module docstring): own row shift ``own_shift`` C, each of the
    ``max_other`` other rows ``other_shift`` C, Poisson rate q, noise std z C."""
    from scipy import special, stats
    z = float(noise_multiplier)
    q = float(sampling_rate)
    if not z > 0:
        raise PrivacyError("noise_multiplier must be > 0")
    if not 0 < q <= 1:
        raise PrivacyError(f"sampling_rate must be in (0, 1], got {q}")
    if max_other < 0:
        raise ConfigError("max_other must be >= 0")
    a = np.array([0, 1])
    pa = np.array([1 - q, q])
    b = np.arange(max_other + 1)
    pb = stats.binom.pmf(b, max_other, q)
    shift = own_shift * a[:, None] + other_shift * b[None, :]          # (2, m+1)
    with np.errstate(divide="ignore"):
        logw = (np.log(pa)[:, None] + np.log(pb)[None, :]).ravel()
    s2 = (shift.ravel() / z) ** 2
    out = np.empty(len(orders))
    for i, alpha in enumerate(orders):
        out[i] = special.logsumexp(logw + alpha * (alpha - 1) * s2 / 2.0) / (alpha - 1)
    return out


def multiterm_epsilon(noise_multiplier: float, sampling_rate: float, steps: int,
                      max_other: int, delta: float, *, own_shift: float = 1.0,
                      other_shift: float = 2.0) -> float:
    """epsilon at ``delta`` after ``steps`` multi-term DP-SGD steps (RDP, then dp-accounting's
    RDP-to-(eps, delta) conversion)."""
    rdp = multiterm_rdp(noise_multiplier, sampling_rate, max_other, own_shift=own_shift,
                        other_shift=other_shift) * int(steps)
    return rdp_to_epsilon(rdp, delta)


def calibrate_multiterm(target_epsilon: float, delta: float, sampling_rate: float, steps: int,
                        max_other: int) -> float:
    """Smallest noise multiplier (to 1e-4 relative) with :func:`multiterm_epsilon` <= target."""
    from scipy import optimize
    def f(z: float) -> float:
        return multiterm_epsilon(z, sampling_rate, steps, max_other, delta) - target_epsilon
    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
        if hi > 1e7:
            raise PrivacyError("no noise multiplier up to 1e7 meets the DP-SGD target")
    lo = hi / 2.0
    while f(lo) <= 0 and lo > 1e-3:
        hi, lo = lo, lo / 2.0
    z = optimize.brentq(f, lo, hi, xtol=1e-6, rtol=1e-5)
    # return a value on the private side
    while f(z) > 0:
        z *= 1.0 + 1e-5
    return float(z)
