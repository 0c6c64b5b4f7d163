"""What a device sends for each collected item, and how the server reads it back (issue #14).

One class per item of a round (:class:`NeighborItem`, :class:`FeatureItem`,
:class:`LabelItem`). Each builds, from the published round, the *same randomizer object the
simulations use* (:mod:`dpgl.mechanisms`): the device calls :meth:`Item.report` (the
randomizer draws and charges the active accountant), :meth:`Item.encode` turns the report
into JSON, the server's :meth:`Item.parse` checks a received report against the mechanism's
output space (types, lengths, id and value ranges) and returns the same object, and
:meth:`Item.assemble` builds the estimator's input from every user's report. The round's
per-user charge is :attr:`Item.guarantee`, the guarantee of that randomizer object.
"""

from __future__ import annotations

import base64
import binascii
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dpgl.errors import DpglError

if TYPE_CHECKING:
    import numpy as np

    from dpgl.collection.spec import FeatureSpec, LabelSpec, NeighborSpec, RoundSpec
    from dpgl.privacy import Guarantee, Unit

__all__ = ["FeatureItem", "Item", "LabelItem", "NeighborItem", "ReportError", "items_for",
           "user_rng"]

#: the largest |noisy degree| a report may carry (the discrete Laplace tail beyond it has
#: probability below 1e-300 for every budget a round accepts)
MAX_ABS_DEGREE = 2**53


class ReportError(DpglError):
    """A report outside the mechanism's output space (refused with 4xx; nothing stored)."""


def user_rng(seed: int, index: int) -> np.random.Generator:
    """User ``index``'s generator for a seeded (simulated) round: one independent stream per
    user derived from (seed, index), so a device's report does not depend on which other
    devices ran, or in which order. Real devices use OS entropy (``seed=None``)."""
    import numpy as np
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(int(index),)))


def _int_list(obj: object, what: str) -> list[int]:
    if not isinstance(obj, list):
        raise ReportError(f"{what} must be a JSON list of integers")
    for x in obj:
        if type(x) is not int:
            raise ReportError(f"{what} must hold integers only, got {type(x).__name__}")
    return obj


def _int(obj: object, what: str, low: int, high: int) -> int:
    if type(obj) is not int or not low <= obj <= high:
        raise ReportError(f"{what} must be an integer in [{low}, {high}], got {obj!r}")
    return obj


def _fields(obj: object, what: str, required: set[str], optional: set[str] = frozenset()
            ) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise ReportError(f"the {what} report must be a JSON object")
    keys = set(obj)
    if not required <= keys or not keys <= required | optional:
        want = ", ".join(sorted(required)) + (f" (optional: {', '.join(sorted(optional))})"
                                             if optional else "")
        raise ReportError(f"the {what} report needs exactly the fields {want}; got "
                          f"{', '.join(sorted(map(str, keys))) or 'none'}")
    return obj


def _id_list(obj: object, n: int, index: int, what: str) -> np.ndarray:
    """A sorted, duplicate-free list of ids in [0, n) without ``index``."""
    import numpy as np
    lst = _int_list(obj, what)
    if len(lst) > n - 1:
        raise ReportError(f"{what} has {len(lst)} ids; at most {n - 1}")
    if not lst:
        return np.zeros(0, np.int64)
    if min(lst) < 0 or max(lst) >= n:
        raise ReportError(f"{what}: ids must lie in [0, {n - 1}]")
    arr = np.asarray(lst, dtype=np.int64)
    if np.any(np.diff(arr) <= 0):
        raise ReportError(f"{what}: ids must be strictly increasing (sorted, no duplicates)")
    if np.any(arr == index):
        raise ReportError(f"{what} contains the reporting user's own index {index}")
    return arr


class Item(ABC):
    """One collected item of a round: its randomizer, report format and estimator input."""

    key: str

    @property
    @abstractmethod
    def randomizer(self) -> Any:
        """The randomizer every device of the round runs (the simulation's class)."""

    @property
    def guarantee(self) -> Guarantee:
        """What one report costs its user: the randomizer's guarantee."""
        return self.randomizer.guarantee

    def parts(self) -> dict[str, Guarantee]:
        """The named parts one report composes, as the randomizer states them."""
        return self.randomizer.parts()

    @property
    def unit(self) -> Unit:
        return self.guarantee.unit

    @abstractmethod
    def report(self, private: Any, index: int, rng: np.random.Generator) -> Any:
        """The device side: randomize user ``index``'s own ``private`` value (charges the
        active accountant)."""

    @abstractmethod
    def encode(self, report: Any) -> dict[str, Any]:
        """The report as a JSON object."""

    @abstractmethod
    def parse(self, obj: object, index: int) -> Any:
        """The server side: check a received JSON object against the output space of user
        ``index``'s randomizer and return the report (:class:`ReportError` otherwise)."""

    @abstractmethod
    def assemble(self, reports: dict[int, Any]) -> Any:
        """The estimator's input from the reports of the users who reported (by index)."""

    @abstractmethod
    def max_bytes(self) -> int:
        """An upper bound on one encoded report's size (the request size limit)."""


# ---------------------------------------------------------------------------- neighbours
@dataclass(frozen=True)
class EdgeReports:
    """The estimator input of a neighbour-list round: directed reports (user -> reported
    neighbour), noisy degrees (Blink, LocalLap; NaN for users who did not report), dense
    Laplace reports (LocalLap/L-DpGCN), and who reported."""

    reports: Any            # DirectedReports | None
    degrees: Any            # float64 (n,) | None
    dense: Any              # float64 (n, n) | None
    reported: Any           # bool (n,)

    def equals(self, other: EdgeReports) -> bool:
        import numpy as np

        def same(a: Any, b: Any) -> bool:
            if a is None or b is None:
                return a is None and b is None
            return bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
        ra, rb = self.reports, other.reports
        rep = (ra is None and rb is None) or (
            ra is not None and rb is not None and ra.num_nodes == rb.num_nodes
            and same(ra.user, rb.user) and same(ra.neighbor, rb.neighbor))
        return bool(rep and same(self.degrees, other.degrees) and same(self.dense, other.dense)
                    and same(self.reported, other.reported))


class NeighborItem(Item):
    """A neighbour list, randomized by RR, DPRR, Blink or Laplace bits (edge-LDP)."""

    key = "neighbors"

    def __init__(self, spec: NeighborSpec, num_users: int) -> None:
        from dpgl.mechanisms import DPRR, RR, BlinkClient, LocalLap
        self.spec, self.n = spec, int(num_users)
        mech, eps, share = spec.mechanism, spec.epsilon, spec.degree_share
        self._randomizer: Any
        # secure (docs/secure-mode.md): real devices send these values, so the real-valued
        # Laplace noise (LocalLap's bits, DPRR's degree) is drawn floating-point-safely
        if mech == "rr":
            self._randomizer = RR(eps)
        elif mech == "dprr":
            self._randomizer = DPRR(eps, n_max=self.n, alpha=1.0 - share, secure=True)
        elif mech.startswith("blink"):
            self._randomizer = BlinkClient(eps, share)
        else:
            self._randomizer = LocalLap(eps, variant=mech, degree_share=share, secure=True)
        self.kind = ("rr" if mech == "rr" else "dprr" if mech == "dprr"
                     else "blink" if mech.startswith("blink") else "lap")

    @property
    def randomizer(self) -> Any:
        return self._randomizer

    @property
    def guarantee(self) -> Guarantee:
        if self.kind == "dprr":  # DPRR's Eq. 8 split depends on the population size
            return self._randomizer.guarantee_for(self.n)
        return self._randomizer.guarantee

    def parts(self) -> dict[str, Guarantee]:
        if self.kind == "dprr":
            return self._randomizer.parts(self.n)
        return self._randomizer.parts()

    def report(self, private: Any, index: int, rng: np.random.Generator) -> Any:
        return self._randomizer.report(private, self.n, index, rng)

    def encode(self, report: Any) -> dict[str, Any]:
        import numpy as np
        if self.kind == "rr":
            return {"neighbors": np.asarray(report).tolist()}
        if self.kind == "dprr":  # the noisy degree stays on the device (DPRR Alg. 1)
            return {"neighbors": report.neighbors.tolist()}
        if self.kind == "blink":
            return {"neighbors": report.neighbors.tolist(), "degree": int(report.noisy_degree)}
        values = np.ascontiguousarray(report.values, dtype="<f8")
        out: dict[str, Any] = {"values": base64.b64encode(values.tobytes()).decode("ascii")}
        if report.noisy_degree is not None:
            out["degree"] = int(report.noisy_degree)
        return out

    def parse(self, obj: object, index: int) -> Any:
        import numpy as np

        from dpgl.mechanisms.blink import BlinkReport
        from dpgl.mechanisms.lap import LapReport
        n = self.n
        if self.kind in ("rr", "dprr"):
            return _id_list(_fields(obj, "neighbors", {"neighbors"})["neighbors"], n, index,
                            "neighbors")
        if self.kind == "blink":
            o = _fields(obj, "neighbors", {"neighbors", "degree"})
            nb = _id_list(o["neighbors"], n, index, "neighbors")
            return BlinkReport(nb, _int(o["degree"], "degree", -MAX_ABS_DEGREE, MAX_ABS_DEGREE))
        with_degree = self.spec.mechanism == "locallap"
        o = _fields(obj, "neighbors", {"values", "degree"} if with_degree else {"values"})
        text = o["values"]
        if not isinstance(text, str) or len(text) != 4 * math.ceil(8 * n / 3):
            raise ReportError(f"values must be base64 of {n} little-endian float64 values")
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise ReportError("values is not valid base64") from None
        if len(raw) != 8 * n:
            raise ReportError(f"values must hold {n} float64 values, got {len(raw)} bytes")
        values = np.frombuffer(raw, dtype="<f8").astype(np.float64)
        if not np.all(np.isfinite(values)):
            raise ReportError("values must be finite")
        bound = self._randomizer.bits.bound
        if np.any(np.abs(values) > bound):
            raise ReportError(f"values must lie in the mechanism's public range [-{bound:g}, "
                              f"{bound:g}]")
        if values[index] != 0.0:
            raise ReportError(f"values[{index}] (the user's own entry) must be 0")
        degree = _int(o["degree"], "degree", -MAX_ABS_DEGREE, MAX_ABS_DEGREE) \
            if with_degree else None
        return LapReport(values, degree)

    def assemble(self, reports: dict[int, Any]) -> EdgeReports:
        import numpy as np

        from dpgl.mechanisms.rr import DirectedReports
        n = self.n
        order = sorted(reports)
        reported = np.zeros(n, dtype=bool)
        reported[order] = True
        if self.kind == "lap":
            dense = np.zeros((n, n), dtype=np.float64)
            deg = np.full(n, np.nan) if self.spec.mechanism == "locallap" else None
            for i in order:
                dense[i] = reports[i].values
                if deg is not None:
                    deg[i] = float(reports[i].noisy_degree)
            return EdgeReports(None, deg, dense, reported)
        lists = [np.asarray(reports[i] if self.kind != "blink" else reports[i].neighbors,
                            dtype=np.int64) for i in order]
        sizes = np.array([x.size for x in lists], dtype=np.int64)
        user = np.repeat(np.asarray(order, dtype=np.int64), sizes)
        neighbor = np.concatenate(lists) if lists else np.zeros(0, np.int64)
        deg = None
        if self.kind == "blink":
            deg = np.full(n, np.nan)
            for i in order:
                deg[i] = float(reports[i].noisy_degree)
        return EdgeReports(DirectedReports(user, neighbor.astype(np.int64), n), deg, None,
                           reported)

    def max_bytes(self) -> int:
        if self.kind == "lap":
            return 4 * math.ceil(8 * self.n / 3) + 200
        return (len(str(self.n)) + 2) * self.n + 200


# ---------------------------------------------------------------------------- features
class FeatureItem(Item):
    """A feature vector in the round's public range, bit-encoded (LPGNN's multi-bit or
    1-bit encoder; feature-LDP)."""

    key = "features"

    def __init__(self, spec: FeatureSpec, num_users: int) -> None:
        from dpgl.mechanisms.features import FeatureRandomizer, FeatureRange
        self.spec, self.n = spec, int(num_users)
        self._randomizer = FeatureRandomizer(
            spec.epsilon, spec.dim, spec.mechanism,
            feature_range=FeatureRange(spec.low, spec.high, "declared in the round"), m=spec.m)
        self.m = int(self._randomizer.m or spec.dim)

    @property
    def randomizer(self) -> Any:
        return self._randomizer

    def report(self, private: Any, index: int, rng: np.random.Generator) -> Any:
        import numpy as np
        x = np.asarray(private, dtype=np.float64).reshape(1, -1)
        return self._randomizer.encode(x, rng)[0]

    def encode(self, report: Any) -> dict[str, Any]:
        import numpy as np
        idx = np.flatnonzero(report)
        return {"indices": idx.tolist(), "signs": report[idx].astype(int).tolist()}

    def parse(self, obj: object, index: int) -> Any:
        import numpy as np
        o = _fields(obj, "features", {"indices", "signs"})
        d, m = self.spec.dim, self.m
        idx = _int_list(o["indices"], "features.indices")
        signs = _int_list(o["signs"], "features.signs")
        if len(idx) != m or len(signs) != m:
            raise ReportError(f"features: the encoder samples exactly {m} of {d} dimensions; "
                              f"got {len(idx)} indices and {len(signs)} signs")
        # the range in Python first: an index beyond int64 must not reach numpy
        if min(idx) < 0 or max(idx) >= d:
            raise ReportError(f"features.indices must be strictly increasing in [0, {d - 1}]")
        arr = np.asarray(idx, dtype=np.int64)
        if np.any(np.diff(arr) <= 0):
            raise ReportError(f"features.indices must be strictly increasing in [0, {d - 1}]")
        if any(s not in (-1, 1) for s in signs):
            raise ReportError("features.signs must be -1 or +1")
        out = np.zeros(d, dtype=np.int8)
        out[arr] = np.asarray(signs, dtype=np.int8)
        return out

    def assemble(self, reports: dict[int, Any]) -> Any:
        """The (n, d) int8 encodings; a user who did not report has a row of zeros (her
        rectified estimate is the range's centre)."""
        import numpy as np
        enc = np.zeros((self.n, self.spec.dim), dtype=np.int8)
        for i, r in reports.items():
            enc[i] = r
        return enc

    def max_bytes(self) -> int:
        return (len(str(self.spec.dim)) + 5) * self.m + 200


# ---------------------------------------------------------------------------- labels
class LabelItem(Item):
    """A label in {0, ..., k-1}, k-ary randomized response (label-LDP)."""

    key = "labels"

    def __init__(self, spec: LabelSpec, num_users: int) -> None:
        from dpgl.mechanisms.labels import LabelRR
        self.spec, self.n = spec, int(num_users)
        self._randomizer = LabelRR(spec.epsilon, spec.classes)

    @property
    def randomizer(self) -> Any:
        return self._randomizer

    def report(self, private: Any, index: int, rng: np.random.Generator) -> Any:
        import torch
        k = self.spec.classes
        if isinstance(private, bool) or not isinstance(private, int) or not 0 <= private < k:
            raise ReportError(f"a label must be an integer in [0, {k - 1}], got {private!r}")
        return int(self._randomizer.randomize(torch.tensor([private]), rng)[0])

    def encode(self, report: Any) -> dict[str, Any]:
        return {"label": int(report)}

    def parse(self, obj: object, index: int) -> Any:
        o = _fields(obj, "labels", {"label"})
        return _int(o["label"], "label", 0, self.spec.classes - 1)

    def assemble(self, reports: dict[int, Any]) -> Any:
        """The reported labels (int64, n); -1 for a user who did not report."""
        import numpy as np
        y = np.full(self.n, -1, dtype=np.int64)
        for i, r in reports.items():
            y[i] = r
        return y

    def max_bytes(self) -> int:
        return 64 + len(str(self.spec.classes))


def items_for(spec: RoundSpec) -> dict[str, Item]:
    """The round's items, built from the published spec (devices and server alike)."""
    n = len(spec.population)
    out: dict[str, Item] = {}
    if spec.neighbors is not None:
        out["neighbors"] = NeighborItem(spec.neighbors, n)
    if spec.features is not None:
        out["features"] = FeatureItem(spec.features, n)
    if spec.labels is not None:
        out["labels"] = LabelItem(spec.labels, n)
    return out
