"""What every accountant offers (the idea of Opacus' ``IAccountant``, for per-unit reports).

An accountant records releases as they happen and states what was spent, per protected unit:

* record: :meth:`~AccountantInterface.spend` (a pure or (eps, delta) release, ``count`` times)
  and :meth:`~AccountantInterface.spend_nonprivate` (data of a unit used as is);
* totals: :meth:`~AccountantInterface.report` composes everything recorded into a
  :class:`~dpgl.privacy.report.PrivacyReport` (per-unit totals, entries, notes);
  :meth:`~AccountantInterface.total` is one unit's total;
* state: :meth:`~AccountantInterface.state_dict` is the record as JSON-serializable data and
  :meth:`~AccountantInterface.load_state_dict` restores it, so that a restored accountant
  reports what the original did. A run stores its report (``PrivacyReport.to_dict``, the
  run store's privacy JSON); the state is the record the report is computed from.

:class:`dpgl.privacy.Accountant` implements it (and adds Gaussian and RDP parts and the
parallel and subsampled scopes). Randomizers charge any implementation
(:meth:`dpgl.privacy.Randomizer.charge`).
"""

from __future__ import annotations

import abc
from typing import Any

from dpgl.privacy.guarantee import Guarantee, Unit
from dpgl.privacy.report import PrivacyReport

__all__ = ["AccountantInterface"]


class AccountantInterface(abc.ABC):
    """An accountant: records releases, reports per-unit totals, saves and restores its
    record."""

    @abc.abstractmethod
    def spend(self, name: str, guarantee: Guarantee, *, mechanism: str = "", count: int = 1,
              composition: str = "basic", delta_slack: float = 0.0) -> Guarantee:
        """Record ``count`` releases with ``guarantee`` each; returns their composed
        guarantee."""

    @abc.abstractmethod
    def spend_nonprivate(self, name: str, description: str, unit: Unit | str) -> None:
        """Record that data of ``unit`` was used as is: that unit has no privacy."""

    @abc.abstractmethod
    def report(self, delta: float | None = None, *, method: str = "rdp") -> PrivacyReport:
        """Everything recorded, composed per unit (``delta``: the target delta of parts that
        are converted to (eps, delta) at report time)."""

    @abc.abstractmethod
    def __len__(self) -> int:
        """The number of recorded parts."""

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """The record as JSON-serializable data (strict JSON)."""

    @abc.abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace the record by one :meth:`state_dict` gave."""

    def total(self, unit: Unit | str, delta: float | None = None) -> Guarantee | None:
        """One unit's total (None: nothing recorded for it)."""
        return self.report(delta).total(unit)
