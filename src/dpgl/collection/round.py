"""A round's reports end to end: what a device sends (:func:`device_report`), what the server
accepts (:func:`parse_report`), the estimator input (:func:`assemble`), and the in-process
collection with the same per-user code path (:func:`collect_in_process`) (issue #14).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from dpgl.collection.items import Item, ReportError, items_for, user_rng
from dpgl.collection.spec import RoundSpec

if TYPE_CHECKING:
    import numpy as np

__all__ = ["PrivateData", "Round", "canonical_json", "collect_in_process"]


def canonical_json(obj: Any) -> str:
    """One text per JSON value (sorted keys, no spaces): equal reports have equal bytes."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


@dataclass(frozen=True)
class PrivateData:
    """What one user holds on her device: her neighbours' indices in the round's population,
    her feature vector, her label (each only when the round collects it)."""

    neighbors: Any = None
    features: Any = None
    label: int | None = None

    def get(self, key: str) -> Any:
        value = {"neighbors": self.neighbors, "features": self.features,
                 "labels": self.label}[key]
        if value is None:
            raise ReportError(f"the round collects {key}, and the device holds none")
        return value


class Round:
    """A published round: its spec, population index and items."""

    def __init__(self, spec: RoundSpec) -> None:
        self.spec = spec
        self.items: dict[str, Item] = items_for(spec)

    @cached_property
    def users(self) -> list[str]:
        return self.spec.population.ids()

    @cached_property
    def _index(self) -> dict[str, int]:
        return {u: i for i, u in enumerate(self.users)}

    def __len__(self) -> int:
        return len(self.spec.population)

    def index_of(self, user_id: str) -> int:
        try:
            return self._index[user_id]
        except KeyError:
            raise ReportError(f"user {user_id!r} is not in round "
                              f"{self.spec.round_id!r}'s population") from None

    def charge(self) -> dict[str, tuple[float, float]]:
        """Per unit, what one member spends in this round: the guarantees of the randomizer
        objects the devices run (one item per unit)."""
        out: dict[str, tuple[float, float]] = {}
        for item in self.items.values():
            g = item.guarantee
            out[str(g.unit)] = (float(g.epsilon), float(g.delta))
        return out

    def max_bytes(self) -> int:
        """The largest encoded report a member can send (the request size limit)."""
        return sum(item.max_bytes() for item in self.items.values()) + 200

    # ------------------------------------------------------------------ device side
    def device_report(self, private: PrivateData, index: int,
                      rng: np.random.Generator) -> dict[str, Any]:
        """User ``index``'s report: every item's randomizer on her own data (each charges
        the active accountant), encoded as JSON."""
        return {key: item.encode(item.report(private.get(key), index, rng))
                for key, item in self.items.items()}

    # ------------------------------------------------------------------ server side
    def parse_report(self, obj: object, index: int) -> dict[str, Any]:
        """Check a received report of user ``index`` (:class:`ReportError` if it is outside
        the mechanisms' output space) and return its items."""
        if not isinstance(obj, dict):
            raise ReportError("a report is a JSON object with one field per collected item")
        if set(obj) != set(self.items):
            raise ReportError(f"a report of this round has exactly the fields "
                              f"{', '.join(self.items)}; got {', '.join(map(str, obj)) or 'none'}")
        return {key: item.parse(obj[key], index) for key, item in self.items.items()}

    def assemble(self, reports: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """The estimator inputs, per item, from the parsed reports (user index -> items)."""
        return {key: item.assemble({i: r[key] for i, r in reports.items()})
                for key, item in self.items.items()}


def collect_in_process(spec: RoundSpec, private: dict[int, PrivateData], seed: int
                       ) -> dict[str, Any]:
    """The round simulated in one process: user ``i`` runs :meth:`Round.device_report` with
    :func:`user_rng` (seed, i), exactly what a seeded device does over HTTP, and the server's
    :meth:`Round.assemble` reads the reports. Each user's report charges the active
    accountant in a parallel scope (one member per user)."""
    from dpgl.privacy import current_accountant
    rnd = Round(spec)
    acc = current_accountant()
    reports: dict[int, dict[str, Any]] = {}
    if acc is None:
        reports = {i: rnd.device_report(p, i, user_rng(seed, i))
                   for i, p in sorted(private.items())}
    else:  # every user charges her own report: disjoint users, parallel composition
        with acc.parallel("devices", "one report per user, each on her own device") as scope:
            for i, p in sorted(private.items()):
                with scope.member(f"user {i}"):
                    reports[i] = rnd.device_report(p, i, user_rng(seed, i))
    return rnd.assemble({i: rnd.parse_report(json.loads(canonical_json(r)), i)
                         for i, r in reports.items()})
