"""Node-level accounting helpers for DPAR, DP-SAGE and friends (see docs/node-dp.md).

* :func:`multiterm_rdp` / :func:`multiterm_epsilon`: DP-SGD where one node can change up to
  ``1 + m`` per-example gradients: its own (present/absent: shift <= C) and ``m`` others
  (changed: shift <= 2 C each). With Poisson sampling at rate q, the noisy sum on neighbouring
  datasets is a mixture over the sampled subset T with the *same* weights on both sides, and
  the two means differ by at most C (a + 2 b) where a ~ Bernoulli(q) (own row sampled) and
  b ~ Binomial(m, q) (changed rows sampled). Because exp((alpha - 1) D_alpha(P || Q)) =
  E_Q[(P/Q)^alpha] is jointly convex in (P, Q),

      exp((alpha - 1) RDP(alpha)) <= E_{a,b}[exp(alpha (alpha - 1) (a + 2 b)^2 / (2 z^2))],

  with z the noise multiplier (noise std z C). This is the bound of Daigavane et al. 2021
  (Thm 1, there with hypergeometric counts for fixed-size batches) written for Poisson
  sampling and unequal shifts; the derivation above is ours (checked by a test against the
  Gaussian RDP for q = 1). It composes additively over steps; epsilon at delta is obtained
  with dp-accounting's RDP-to-DP conversion. It is *looser* than dp-accounting's sampled
  Gaussian for m = 0 (no q^2 amplification), which is why single-term DP-SGD uses the
  accountant's ``spend_gaussian`` instead.
* :func:`amplify_by_subsampling`: an (eps, delta)-DP mechanism (add/remove neighbours) run on
  a Poisson sample of rate q is (log(1 + q (e^eps - 1)), q delta)-DP (Li, Qardaji & Su 2012;
  Balle, Barthe & Gaboardi 2018, Thm 8). For node-level DP on the induced subgraph of the
  sampled nodes this applies as is: when the differing node is not sampled, the induced
  subgraphs coincide.
* :func:`kairouz_total_epsilon` and :func:`paper_*`: DPAR's own statements (its reference code:
  Kairouz et al. 2015 Thm 4-style composition over M vectors, eps multiplied by q' for the
  node subsampling), reproduced *as stated* so the paper's numbers can be shown next to ours.
  They are not valid guarantees in general (eps x q' is only a first-order approximation of
  amplification, and the composition formula is stated for small eps); they are never
  recorded in the accountant.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Iterator

import numpy as np
from dp_accounting import rdp as dp_rdp
from scipy import optimize, special, stats

from dpgl.errors import ConfigError, PrivacyError

__all__ = [
    "ORDERS",
    "amplify_by_subsampling",
    "calibrate_multiterm",
    "kairouz_total_epsilon",
    "multiterm_epsilon",
    "multiterm_rdp",
    "paper_em_vector_epsilon",
    "paper_gm_vector_epsilon",
    "paper_sgd_epsilon",
    "quiet_absl",
    "subsampled_inner_target",
]

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


ORDERS = np.concatenate([np.linspace(1.01, 10.0, 200), np.arange(11, 257)]).astype(float)


def multiterm_rdp(noise_multiplier: float, sampling_rate: float, max_other: int,
                  orders: np.ndarray = ORDERS, *, own_shift: float = 1.0,
                  other_shift: float = 2.0) -> np.ndarray:
    """Per-step RDP curve (see module docstring): own row shift ``own_shift`` C, each of the
    ``max_other`` other rows ``other_shift`` C, Poisson rate q, noise std z C."""
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
    eps, _ = dp_rdp.rdp_privacy_accountant.compute_epsilon(ORDERS, rdp, delta)
    return float(eps)


def calibrate_multiterm(target_epsilon: float, delta: float, sampling_rate: float, steps: int,
                        max_other: int) -> float:
    """Smallest noise multiplier (to 1e-4 relative) with :func:`multiterm_epsilon` <= target."""
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


def amplify_by_subsampling(epsilon: float, delta: float, rate: float) -> tuple[float, float]:
    """(log(1 + q (e^eps - 1)), q delta): Poisson subsampling at rate q (add/remove)."""
    if not 0 < rate <= 1:
        raise ConfigError(f"subsampling rate must be in (0, 1], got {rate}")
    if math.isinf(epsilon):
        return epsilon, delta
    # log(1 + q (e^eps - 1)) = eps + log(q + (1 - q) e^-eps), stable for large eps
    return float(epsilon + math.log(rate + (1.0 - rate) * math.exp(-epsilon))), rate * delta


def subsampled_inner_target(epsilon: float, delta: float, rate: float) -> tuple[float, float]:
    """Inverse of :func:`amplify_by_subsampling`: the budget the mechanism may spend on the
    subsample so that the amplified total is (epsilon, delta)."""
    if not 0 < rate <= 1:
        raise ConfigError(f"subsampling rate must be in (0, 1], got {rate}")
    # log(1 + (e^eps - 1) / q) = eps + log(1/q + (1 - 1/q) e^-eps), stable for large eps
    inner = epsilon + math.log(1.0 / rate + (1.0 - 1.0 / rate) * math.exp(-epsilon))
    return float(inner), min(delta / rate, 0.5)


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
