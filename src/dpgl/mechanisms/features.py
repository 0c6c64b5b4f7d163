"""Client-side feature collection under feature-LDP (LPGNN, Sajadmanesh & Gatica-Perez, CCS
2021, Sec. 4.1; Solitude, Lin et al. TIFS 2022, Sec. IV-A).

Every user holds a feature vector x_v in [alpha, beta]^d and sends one randomized report; the
server keeps the rectified (unbiased) estimate. Mechanisms (all eps-feature-LDP for the whole
vector):

* ``"multibit"``: LPGNN's multi-bit encoder (Alg. 1) + rectifier (Eq. 4), m = m* (Eq. 6).
* ``"1bit"``: the 1-bit mechanism on every dimension with eps/d (LPGNN's 1BM baseline).
* ``"gaussian"``: the analytic Gaussian mechanism (Balle & Wang 2018), (eps, delta)-LDP with
  L2 sensitivity sqrt(d) (beta - alpha) (any two vectors in the box differ by at most that).
* ``"laplace"``: the Laplace mechanism with L1 sensitivity d (beta - alpha).

Reports are generated once per user and reused: asking the same user (or the same feature
matrix) again returns the same report, so repeated queries never average the noise away.
:class:`CollectFeatures` is a PyG transform that never mutates its input.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from dpgl.errors import ConfigError, unknown_name
from dpgl.privacy import (
    ClippingWarning,
    GaussianMechanism,
    Guarantee,
    LaplaceMechanism,
    MultiBit,
    OneBit,
    Unit,
    check_epsilon,
)
from dpgl.rng import SeedLike, make_rng

__all__ = ["FEATURE_MECHANISMS", "CollectFeatures", "FeatureRandomizer"]

FEATURE_MECHANISMS = ("multibit", "1bit", "gaussian", "laplace")


class FeatureRandomizer:
    """One feature mechanism for vectors of dimension ``d`` in [alpha, beta]^d.

    :meth:`privatize` maps the true (n, d) matrix to the server's unbiased estimate; every row
    is one user's independent report. :attr:`guarantee` is the per-user feature-LDP guarantee.
    """

    def __init__(self, epsilon: float, d: int, mechanism: str = "multibit", *,
                 alpha: float = 0.0, beta: float = 1.0, m: int | str = "best",
                 delta: float = 1e-4) -> None:
        if mechanism not in FEATURE_MECHANISMS:
            raise unknown_name("feature mechanism", mechanism, FEATURE_MECHANISMS)
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
            raise ConfigError(f"the feature dimension d must be an integer >= 1, got {d!r}")
        if not (math.isfinite(alpha) and math.isfinite(beta) and alpha < beta):
            raise ConfigError(f"the feature range needs finite alpha < beta, got [{alpha}, {beta}]")
        self.epsilon = check_epsilon(epsilon)
        self.d, self.mechanism = int(d), mechanism
        self.alpha, self.beta = float(alpha), float(beta)
        span = self.beta - self.alpha
        self._impl: Any
        if mechanism == "multibit":
            self._impl = MultiBit(self.epsilon, alpha=alpha, beta=beta, m=m, unit=Unit.FEATURE_LDP)
        elif mechanism == "1bit":
            self._impl = OneBit(self.epsilon, alpha=alpha, beta=beta, unit=Unit.FEATURE_LDP)
        elif mechanism == "gaussian":
            self._impl = GaussianMechanism(self.epsilon, delta, math.sqrt(self.d) * span,
                                           calibration="analytic", unit=Unit.FEATURE_LDP)
        else:
            self._impl = LaplaceMechanism(self.epsilon, self.d * span, unit=Unit.FEATURE_LDP)

    @property
    def guarantee(self) -> Guarantee:
        """The per-user guarantee (pure eps, or (eps, delta) for the Gaussian mechanism)."""
        return self._impl.guarantee

    @property
    def m(self) -> int | None:
        """Sampled dimensions per user (multi-bit / 1-bit), else None."""
        if isinstance(self._impl, MultiBit):
            return self._impl.resolve_m(self.d)
        return None

    def describe(self) -> str:
        if self.mechanism == "multibit":
            return f"multi-bit (LPGNN Alg. 1 + Eq. 4), m={self.m}"
        if self.mechanism == "1bit":
            return "1-bit per dimension with eps/d (LPGNN 1BM)"
        if self.mechanism == "gaussian":
            return f"analytic Gaussian, sigma={self._impl.sigma:.4g}"
        return f"Laplace, scale={self._impl.scale:.4g}"

    def privatize(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The server's estimate of every row of ``x`` (n, d): one report per row."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.d:
            raise ConfigError(f"features must have shape (n, {self.d}), got {x.shape}")
        if self.mechanism in ("multibit", "1bit"):
            return self._impl.privatize(x, rng)
        outside = (x < self.alpha) | (x > self.beta)
        if np.any(outside):  # the sensitivity assumes the box; clip like the multi-bit path
            warnings.warn(f"{int(outside.sum())} feature value(s) outside [alpha, beta] were "
                          "clipped", ClippingWarning, stacklevel=2)
            x = np.clip(x, self.alpha, self.beta)
        return self._impl.randomize(x, rng)


def _fingerprint(x: torch.Tensor) -> str:
    arr = np.ascontiguousarray(x.detach().cpu().numpy())
    h = hashlib.blake2b(arr.tobytes(), digest_size=16)
    h.update(repr((arr.shape, arr.dtype.str)).encode())
    return h.hexdigest()


class CollectFeatures(BaseTransform):
    """PyG transform: every user sends a feature report; returns a *new* ``Data`` whose ``x``
    is the server's rectified estimate (float32). The input is never mutated.

    Reports are generated once and cached: calling the transform again on the same feature
    matrix returns the identical reports, and :meth:`user_report` returns a user's cached
    report. ``seed`` is an int, a generator, or None with ``secure=True``.
    """

    def __init__(self, epsilon: float, mechanism: str = "multibit", *, alpha: float = 0.0,
                 beta: float = 1.0, m: int | str = "best", delta: float = 1e-4,
                 seed: SeedLike = None, secure: bool = False) -> None:
        if mechanism not in FEATURE_MECHANISMS:
            raise unknown_name("feature mechanism", mechanism, FEATURE_MECHANISMS)
        self.epsilon = check_epsilon(epsilon)
        self.mechanism = mechanism
        self.alpha, self.beta, self.m, self.delta = alpha, beta, m, delta
        self.rng = make_rng(seed, secure=secure)
        self._reports: dict[str, torch.Tensor] = {}
        self._user_reports: dict[int, np.ndarray] = {}
        self.randomizer: FeatureRandomizer | None = None

    def randomizer_for(self, d: int) -> FeatureRandomizer:
        if self.randomizer is None or self.randomizer.d != d:
            self.randomizer = FeatureRandomizer(self.epsilon, d, self.mechanism,
                                                alpha=self.alpha, beta=self.beta, m=self.m,
                                                delta=self.delta)
        return self.randomizer

    def guarantee(self, d: int) -> Guarantee:
        """The per-user feature-LDP guarantee for dimension ``d``."""
        return self.randomizer_for(d).guarantee

    def user_report(self, user: int, x: object) -> np.ndarray:
        """What user ``user`` sends (rectified), generated on first request and reused."""
        if user not in self._user_reports:
            xv = np.asarray(x, dtype=np.float64)
            if xv.ndim != 1:
                raise ConfigError(f"a user's feature vector must be 1-d, got shape {xv.shape}")
            rand = self.randomizer_for(xv.shape[0])
            self._user_reports[user] = rand.privatize(xv[None, :], self.rng)[0]
        return self._user_reports[user]

    def forward(self, data: Data) -> Data:
        if getattr(data, "x", None) is None:
            raise ConfigError("CollectFeatures: the graph has no node features")
        key = _fingerprint(data.x)
        if key not in self._reports:
            rand = self.randomizer_for(int(data.x.size(1)))
            est = rand.privatize(data.x.detach().cpu().numpy(), self.rng)
            self._reports[key] = torch.from_numpy(est.astype(np.float32))
        data.x = self._reports[key]
        return data

    def __repr__(self) -> str:
        return f"CollectFeatures(epsilon={self.epsilon:g}, mechanism={self.mechanism!r})"
