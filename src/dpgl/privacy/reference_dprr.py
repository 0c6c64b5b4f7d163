"""Reference implementation (not run by any method): a DPRR-style composed local randomizer
with exact output probabilities, the verified reference for DPRR's privacy argument.

DPRR (Hidano & Murakami, "Degree-Preserving Randomized Response for Graph Neural Networks under
Local Differential Privacy", Sec. IV): user i with neighbor bit vector a_i in {0,1}^n

1. computes a noisy degree  d~ = deg(a_i) + noise  with an eps1-DP Laplace mechanism
   (sensitivity 1 under edge-LDP: flipping one bit changes the degree by 1);
2. applies Warner's RR with eps2 to every bit;
3. keeps each reported 1 with probability q(d~) and reports the kept bits.

Step 3 uses d~ only, so it is post-processing of step 1; steps 1-2 compose sequentially, hence
(eps1 + eps2)-edge LDP. This module implements that composition *generically*: any sampling
function q with values in [0, 1] may be given, and the noisy degree is the exact discrete
Laplace, clamped to [0, n] (clamping is post-processing), so that every output probability is
a finite sum that tests can enumerate exactly:

    P[y | a] = sum_{D=0}^{n} P[clamp(deg(a) + Z) = D] prod_j P[y_j | a_j, q(D)],
    P[y_j = 1 | a_j, q] = q * P_RR[1 | a_j].

The graph-level DPRR (with the paper's q and continuous Laplace) lives in ``dpgl.mechanisms``;
this class is the verified reference for its privacy argument.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import special

from dpgl.errors import ConfigError
from dpgl.privacy._validation import as_bits, check_generator, check_unit
from dpgl.privacy.guarantee import Guarantee, Unit
from dpgl.privacy.laplace import DiscreteLaplace
from dpgl.privacy.randomized_response import RandomizedResponse

__all__ = ["DegreeRRSampling"]

QFunction = Callable[[np.ndarray, int], np.ndarray] | Sequence[float] | np.ndarray


class DegreeRRSampling:
    """Noisy degree (eps1, discrete Laplace) + RR (eps2) + sampling of reported 1s with q(d~).

    ``q`` is either a callable ``q(noisy_degrees, n) -> probabilities`` evaluated on the
    clamped noisy degrees in [0, n], or a sequence of n + 1 probabilities indexed by the
    clamped noisy degree. Guarantee: (eps1 + eps2)-DP for one bit of the list (DPRR, Sec. IV).
    """

    def __init__(self, epsilon_degree: float, epsilon_rr: float, q: QFunction, *,
                 unit: Unit | str = Unit.EDGE_LDP) -> None:
        self.unit = check_unit(unit)
        self.degree_mechanism = DiscreteLaplace(epsilon_degree, 1, unit=self.unit)
        self.rr = RandomizedResponse(epsilon_rr, unit=self.unit)
        if not callable(q):
            table = np.asarray(q, dtype=float)
            if table.ndim != 1 or table.size < 2:
                raise ConfigError("q must be a callable or a sequence of n + 1 probabilities")
        self.q = q

    @property
    def guarantee(self) -> Guarantee:
        """eps1 + eps2 by sequential composition; sampling is post-processing (DPRR, Sec. IV)."""
        return Guarantee.pure(self.degree_mechanism.epsilon + self.rr.epsilon, self.unit)

    def q_values(self, n: int) -> np.ndarray:
        """q(D) for D = 0..n, validated to lie in [0, 1]."""
        if callable(self.q):
            vals = np.asarray(self.q(np.arange(n + 1), n), dtype=float)
        else:
            vals = np.asarray(self.q, dtype=float)
        if vals.shape != (n + 1,):
            raise ConfigError(f"q must give {n + 1} probabilities for lists of length {n}, "
                              f"got shape {vals.shape}")
        if not np.all(np.isfinite(vals)) or np.any(vals < 0) or np.any(vals > 1):
            raise ConfigError("q must take values in [0, 1]")
        return vals

    def _lists(self, bits: object) -> np.ndarray:
        b = as_bits(bits, "bits")
        if b.ndim not in (1, 2) or b.shape[-1] < 1:
            raise ConfigError(f"bits must be a list (n,) or lists (users, n), got {b.shape}")
        return b

    def randomize(self, bits: object, rng: np.random.Generator) -> np.ndarray:
        """One report per row of ``bits`` (bool array of the same shape)."""
        rng = check_generator(rng)
        b = self._lists(bits)
        rows = b.reshape(-1, b.shape[-1])
        n = rows.shape[1]
        noisy = self.degree_mechanism.randomize(rows.sum(axis=1), rng)
        clamped = np.clip(noisy, 0, n)
        q = self.q_values(n)[clamped]
        reported = self.rr.randomize(rows, rng)
        keep = rng.random(rows.shape) < q[:, None]
        return (reported & keep).reshape(b.shape)

    __call__ = randomize

    def noisy_degree_distribution(self, degree: int, n: int) -> np.ndarray:
        """P[clamp(degree + Z, 0, n) = D] for D = 0..n (exact, tails in closed form)."""
        dl = self.degree_mechanism
        probs = np.exp(dl.log_pmf(np.arange(n + 1) - degree))
        probs[0] = dl.tail_ge(degree)          # P[Z <= -degree]
        probs[n] = dl.tail_ge(n - degree)      # P[Z >= n - degree]
        return probs

    def log_prob(self, output: object, inputs: object) -> float:
        """Exact log P[report = output | neighbor list = inputs] for one list."""
        y, a = as_bits(output, "output"), as_bits(inputs, "inputs")
        if y.ndim != 1 or y.shape != a.shape:
            raise ConfigError("log_prob takes one output list and one input list of equal length")
        n = a.size
        q = self.q_values(n)
        log_pd = np.log(self.noisy_degree_distribution(int(a.sum()), n))
        r1 = np.where(a, self.rr.keep_probability, self.rr.flip_probability)   # P_RR[1 | a_j]
        p1 = q[:, None] * r1[None, :]                                          # (n+1, n)
        with np.errstate(divide="ignore"):
            per_bit = np.where(y[None, :], np.log(p1), np.log1p(-p1))
        return float(special.logsumexp(log_pd + per_bit.sum(axis=1)))

    def __repr__(self) -> str:
        return (f"DegreeRRSampling(epsilon_degree={self.degree_mechanism.epsilon:g}, "
                f"epsilon_rr={self.rr.epsilon:g})")
