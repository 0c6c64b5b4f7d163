"""Client-side feature collection under feature-LDP (LPGNN, Sajadmanesh & Gatica-Perez, CCS
2021, Sec. 4.1; Solitude, Lin et al. TIFS 2022, Sec. IV-A).

Every user holds a feature vector x_v and sends one randomized report; the server keeps the
rectified (unbiased) estimate. The range [low, high] the mechanisms need is **public and
data-independent** (:class:`FeatureRange`): [0, 1] for binary or per-node normalized features,
declared bounds for continuous ones. A user clips her own vector into it (the count of clipped
values is an evaluation-only diagnostic); nothing computed from other users' data (no global
min or max) reaches her randomizer. LPGNN Sec. 3/5 and Solitude's theorem assume exactly such
a public range [alpha, beta].

Mechanisms (all eps-feature-LDP for the whole vector):

* ``"multibit"``: LPGNN's multi-bit encoder (Alg. 1) + rectifier (Eq. 4), m = m* (Eq. 6).
* ``"1bit"``: the 1-bit mechanism on every dimension with eps/d (LPGNN's 1BM baseline).
* ``"gaussian"``: the analytic Gaussian mechanism (Balle & Wang 2018), (eps, delta)-LDP with
  L2 sensitivity sqrt(d) (high - low) (any two vectors in the box differ by at most that).
* ``"laplace"``: the Laplace mechanism with L1 sensitivity d (high - low).

One report per user: :class:`CollectFeatures` draws a user's report once and keeps it, so asking
again (for the same user, or the whole matrix) returns the same report and charges nothing
more; repeated queries never average the noise away. It is a PyG transform that never mutates
its input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from torch_geometric.data import Data

from dpgl.errors import ConfigError, unknown_name
from dpgl.privacy import (
    GaussianMechanism,
    Guarantee,
    LaplaceMechanism,
    MultiBit,
    OneBit,
    Randomizer,
    Unit,
    check_epsilon,
)

__all__ = [
    "FEATURE_MECHANISMS",
    "FeatureRandomizer",
    "FeatureRange",
    "public_feature_range",
]

FEATURE_MECHANISMS = ("multibit", "1bit", "gaussian", "laplace")


@dataclass(frozen=True)
class FeatureRange:
    """A public, data-independent range [low, high] of every feature value, and why it is
    public (``source``: e.g. "binary features", "declared bounds")."""

    low: float
    high: float
    source: str = "declared bounds"

    def __post_init__(self) -> None:
        lo, hi = float(self.low), float(self.high)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ConfigError(f"a feature range needs finite low < high, got [{self.low}, "
                              f"{self.high}]")
        object.__setattr__(self, "low", lo)
        object.__setattr__(self, "high", hi)

    @property
    def center(self) -> float:
        return 0.5 * (self.low + self.high)

    def clip(self, x: np.ndarray) -> tuple[np.ndarray, int]:
        """Each user's own clipping into the range; returns (clipped, number clipped)."""
        outside = (x < self.low) | (x > self.high)
        count = int(outside.sum())
        return (np.clip(x, self.low, self.high) if count else x), count

    def __str__(self) -> str:
        return f"[{self.low:g}, {self.high:g}] ({self.source})"


def public_feature_range(data: Data, low: float | None = None, high: float | None = None
                         ) -> FeatureRange:
    """The public range for ``data``'s features: declared ``low``/``high`` when given (both),
    else the dataset's own public range (``data.feature_range``, set by
    :func:`dpgl.datasets.load_dataset` from the registry: [0, 1] for binary features, declared
    generator bounds for synthetic ones). Refuses a dataset without one: a range computed from
    the users' data would leak about every user into every report."""
    if (low is None) != (high is None):
        raise ConfigError("declare both feature_low and feature_high, or neither")
    if low is not None and high is not None:
        return FeatureRange(low, high, "declared bounds (feature_low/feature_high)")
    declared = getattr(data, "feature_range", None)
    if declared is None:
        name = getattr(data, "name", "this dataset")
        raise ConfigError(
            f"{name} has no public feature range (and normalize_features computes one from all "
            "users' data, which feature-LDP forbids); declare feature_low and feature_high")
    lo, hi, why = declared
    return FeatureRange(lo, hi, str(why))


class FeatureRandomizer(Randomizer):
    """One feature mechanism for vectors of dimension ``d`` in the public ``feature_range``.

    :meth:`privatize` maps the true (n, d) matrix to the server's unbiased estimate; every row
    is one user's independent report, each user clipping her own vector into the range. It
    charges the active accountant once per call (one report from each user of the call).
    ``secure=True`` (Laplace only) draws with Mironov's snapping mechanism
    (docs/secure-mode.md); the bit encoders release bits and need no secure mode.
    """

    def __init__(self, epsilon: float, d: int, mechanism: str = "multibit", *,
                 feature_range: FeatureRange | None = None, m: int | str = "best",
                 delta: float = 1e-4, secure: bool = False) -> None:
        if mechanism not in FEATURE_MECHANISMS:
            raise unknown_name("feature mechanism", mechanism, FEATURE_MECHANISMS)
        if secure and mechanism == "gaussian":
            raise ConfigError("secure mode has no Gaussian sampler (a discrete Gaussian would be "
                              "needed); use mechanism='laplace' or a multi-bit encoder")
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
            raise ConfigError(f"the feature dimension d must be an integer >= 1, got {d!r}")
        rng_ = feature_range or FeatureRange(0.0, 1.0, "default [0, 1]")
        if not isinstance(rng_, FeatureRange):
            raise ConfigError("feature_range must be a FeatureRange")
        self.range = rng_
        self.epsilon = check_epsilon(epsilon)
        self.d, self.mechanism = int(d), mechanism
        self.label = "features"
        span = rng_.high - rng_.low
        lo, hi = rng_.low, rng_.high
        self._impl: Any
        if mechanism == "multibit":
            self._impl = MultiBit(self.epsilon, alpha=lo, beta=hi, m=m, unit=Unit.FEATURE_LDP,
                                  label="features")
        elif mechanism == "1bit":
            self._impl = OneBit(self.epsilon, alpha=lo, beta=hi, unit=Unit.FEATURE_LDP,
                                label="features")
        elif mechanism == "gaussian":
            self._impl = GaussianMechanism(self.epsilon, delta, math.sqrt(self.d) * span,
                                           calibration="analytic", unit=Unit.FEATURE_LDP,
                                           label="features")
        else:
            # secure: Mironov's snapping mechanism per coordinate (d entries may change, each
            # by at most the span), clamped to a public bound 50 scales beyond the range
            bound = (max(abs(lo), abs(hi)) + 50.0 * self.d * span / self.epsilon) \
                if secure else None
            self._impl = LaplaceMechanism(self.epsilon, self.d * span, unit=Unit.FEATURE_LDP,
                                          label="features", secure=secure, bound=bound,
                                          coordinates=self.d if secure else 1)

    @property
    def guarantee(self) -> Guarantee:
        """The per-user guarantee (pure eps, or (eps, delta) for the Gaussian mechanism) of the
        mechanism that draws."""
        return self._impl.guarantee

    @property
    def m(self) -> int | None:
        """Sampled dimensions per user (multi-bit / 1-bit), else None."""
        if isinstance(self._impl, MultiBit):
            return self._impl.resolve_m(self.d)
        return None

    def describe(self) -> str:
        if self.mechanism == "multibit":
            text = f"multi-bit (LPGNN Alg. 1 + Eq. 4), m={self.m}"
        elif self.mechanism == "1bit":
            text = "1-bit per dimension with eps/d (LPGNN 1BM)"
        elif self.mechanism == "gaussian":
            text = f"analytic Gaussian, sigma={self._impl.sigma:.4g}"
        else:
            text = f"Laplace, scale={self._impl.scale:.4g}"
        return f"{text}, range {self.range}"

    def client_inputs(self, x: np.ndarray) -> tuple[np.ndarray, int]:
        """What each user's encoder receives: her own row clipped into the public range
        (row-wise; no other user's data is read). Returns (inputs, number of clipped values)."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.d:
            raise ConfigError(f"features must have shape (n, {self.d}), got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ConfigError("features must be finite (no NaN or inf)")
        return self.range.clip(x)

    def privatize(self, x: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, int]:
        """The server's estimate of every row of ``x`` (n, d), one report per row, and the
        number of values the users clipped (an evaluation-only diagnostic)."""
        inputs, clipped = self.client_inputs(x)
        if self.mechanism in ("multibit", "1bit"):
            out = self._impl.rectify(self._impl.randomize(inputs, rng))
        else:
            out = self._impl.randomize(inputs, rng)
        self.charge(name="features")
        return out, clipped

    def encode(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """What the devices of the rows of ``x`` send (bit encoders only): the encoding in
        {-1, 0, +1} (int8, ``x``'s shape), each row clipped into the public range first. The
        same draw as :meth:`privatize` before its rectifier; charges the active accountant
        once (one report from each row's user)."""
        if self.mechanism not in ("multibit", "1bit"):
            raise ConfigError(f"encode is for the bit encoders, not {self.mechanism!r}")
        inputs, _ = self.client_inputs(np.atleast_2d(x))
        out = self._impl.randomize(inputs, rng)
        self.charge(name="features")
        return out.reshape(np.shape(x))

    def decode(self, encoded: np.ndarray) -> np.ndarray:
        """The server's unbiased estimate from encodings (the rectifier, LPGNN Eq. 4); a row
        of zeros (a user who did not report) decodes to the range's centre."""
        if self.mechanism not in ("multibit", "1bit"):
            raise ConfigError(f"decode is for the bit encoders, not {self.mechanism!r}")
        return self._impl.rectify(encoded)

    def _repr_args(self) -> dict[str, object]:
        return {"epsilon": self.epsilon, "d": self.d, "mechanism": self.mechanism,
                "range": str(self.range)}
