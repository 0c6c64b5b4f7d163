"""One accountant per run: what each part of a run spends, per protected unit.

The accountant is fed by the objects that draw privacy noise, when they draw (Opacus' pattern:
the optimizer feeds the accountant). A run *activates* its accountant
(``with accountant.active(): ...``); every randomizer charges :func:`current_accountant` with
the guarantee of the parameters it actually drew with (:class:`dpgl.privacy.Randomizer`).
Methods never compute a budget; they choose parameters and call randomizers.

Composition rules (documented in docs/privacy.md):

* Parts are grouped by :class:`Unit`; units are never mixed (node-DP and edge-LDP totals stay
  separate). The only cross-unit total is :attr:`PrivacyReport.per_user`, the basic
  composition of a local-model user's edge-, feature-, label- and user-LDP parts.
* Pure and approximate (eps, delta) parts of one unit compose by basic composition
  (epsilons add, deltas add; Dwork & Roth 2014, Thm 3.16). A part released ``count`` times
  is composed k-fold by ``composition="basic" | "advanced" | "optimal" | "best"``
  (see :mod:`dpgl.privacy.composition`).
* Gaussian parts (``spend_gaussian``) are dp-accounting events (Gaussian, Poisson-subsampled
  or fixed-size-subsampled Gaussian, self-composed over steps); RDP parts (``spend_rdp``) are
  RDP curves over :data:`dpgl.privacy.multiterm.ORDERS`. All Gaussian and RDP parts of one
  unit are composed jointly (dp-accounting's RDP or PLD accountant; RDP whenever an RDP curve
  is present) and converted to epsilon at the report's target delta; the result is then added
  to the unit's pure/approximate parts by basic composition.
* ``spend_nonprivate`` marks a unit's data as used without protection: that unit's total is
  "no privacy" (epsilon = inf), stated plainly in the report.
* Scopes: :meth:`Accountant.parallel` (members hold disjoint sets of protected units, e.g. the
  users of different graphs: parallel composition, the total is the maximum over members;
  McSherry 2009) and :meth:`Accountant.subsampled` (everything charged inside ran on a Poisson
  sample of rate q: amplification by subsampling, :mod:`dpgl.privacy.amplification`).

The modules: the Gaussian/RDP parts and their dp-accounting events in
:mod:`dpgl.privacy.dp_events`; the record of parts and scopes and its composition into
per-unit totals in :mod:`dpgl.privacy.scopes`; the report in :mod:`dpgl.privacy.report`; the
interface every accountant implements in :mod:`dpgl.privacy.interface`.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from dpgl.errors import ConfigError, PrivacyError
from dpgl.privacy._validation import check_positive, check_positive_int, check_unit
from dpgl.privacy.composition import (
    advanced_composition,
    best_composition,
    optimal_composition,
)
from dpgl.privacy.dp_events import (
    METHODS,
    SAMPLINGS,
    GaussianSpend,
    gaussian_dp_event,
    make_dp_accountant,
)
from dpgl.privacy.guarantee import Guarantee, Unit, check_delta, check_fraction
from dpgl.privacy.interface import AccountantInterface
from dpgl.privacy.multiterm import ORDERS
from dpgl.privacy.rdp import noisy_units, record_rdp
from dpgl.privacy.report import LOCAL_UNITS, PrivacyReport, ReportEntry
from dpgl.privacy.scopes import (
    Part,
    Scope,
    evaluate,
    record_from_state,
    record_state,
    units_of,
)

if TYPE_CHECKING:
    import dp_accounting
    import numpy as np

__all__ = [
    "COMPOSITIONS",
    "LOCAL_UNITS",
    "METHODS",
    "SAMPLINGS",
    "Accountant",
    "GaussianSpend",
    "ParallelScope",
    "PrivacyReport",
    "ReportEntry",
    "current_accountant",
    "evaluation_only",
    "gaussian_dp_event",
    "make_dp_accountant",
]

COMPOSITIONS = ("basic", "advanced", "optimal", "best")
#: Version of :meth:`Accountant.state_dict`'s format.
STATE_FORMAT = 1

_ACTIVE: contextvars.ContextVar[Accountant | None] = contextvars.ContextVar(
    "dpgl_active_accountant", default=None)


def current_accountant() -> Accountant | None:
    """The accountant activated by the innermost ``with accountant.active():`` (or None)."""
    return _ACTIVE.get()


@contextlib.contextmanager
def evaluation_only() -> Iterator[Accountant]:
    """Randomizers run inside draw noise on *held-out evaluation data* (e.g. GAP's aggregation
    on the inductive test graph), which is not a release of the protected training data: their
    charges go to a fresh accountant that is discarded. Use it only for evaluation."""
    scratch = Accountant()
    token = _ACTIVE.set(scratch)
    try:
        yield scratch
    finally:
        _ACTIVE.reset(token)


class ParallelScope:
    """Members of :meth:`Accountant.parallel`: ``with scope.member(label): ...`` activates a
    fresh child accountant for the charges made by one member (e.g. one graph's users)."""

    def __init__(self, scope: Scope, delta: float | None) -> None:
        self._scope = scope
        self._delta = delta

    @contextlib.contextmanager
    def member(self, label: str) -> Iterator[Accountant]:
        child = Accountant(delta=self._delta)
        self._scope.members.append((str(label), child._parts))
        with child.active():
            yield child

    def __len__(self) -> int:
        return len(self._scope.members)


# --------------------------------------------------------------------------- accountant


class Accountant(AccountantInterface):
    """Records every data release of a run and reports the privacy spent per unit.

    ``delta`` is the default target delta of :meth:`report` (needed when Gaussian or RDP
    parts exist).
    """

    def __init__(self, delta: float | None = None) -> None:
        self._delta: float | None = None
        self.delta = delta
        self._parts: list[Part | Scope] = []   # shared with a parent's scope: never rebound

    @property
    def delta(self) -> float | None:
        """Default target delta of :meth:`report`."""
        return self._delta

    @delta.setter
    def delta(self, value: float | None) -> None:
        self._delta = None if value is None else check_delta(value, allow_zero=False)

    def __len__(self) -> int:
        return len(self._parts)

    # ------------------------------------------------------------------ activation and scopes

    @contextlib.contextmanager
    def active(self) -> Iterator[Accountant]:
        """Make this the accountant randomizers charge (:func:`current_accountant`)."""
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)

    @contextlib.contextmanager
    def parallel(self, name: str, description: str = "") -> Iterator[ParallelScope]:
        """A scope whose members hold *disjoint* sets of protected units (parallel
        composition: each unit's total is the maximum over members; McSherry 2009)."""
        scope = Scope("parallel", self._check_name(name), description)
        self._parts.append(scope)
        yield ParallelScope(scope, self.delta)

    @contextlib.contextmanager
    def subsampled(self, name: str, rate: float, *, delta: float | None = None,
                   description: str = "") -> Iterator[Accountant]:
        """Everything charged inside ran on a Poisson sample of rate ``rate`` (each unit kept
        independently): the inner totals are amplified to (log(1 + q (e^eps - 1)), q delta).
        ``delta`` is the inner accountant's target delta for its Gaussian/RDP parts."""
        q = check_fraction(rate, "subsampling rate", low_open=True)
        inner = Accountant(delta=self.delta if delta is None else delta)
        scope = Scope("subsampled", self._check_name(name), description,
                       [("inner", inner._parts)], q, inner.delta)
        self._parts.append(scope)
        with inner.active():
            yield inner

    @property
    def units(self) -> list[Unit]:
        """Units with at least one recorded part, in order of first use."""
        return units_of(self._parts)

    @staticmethod
    def _check_name(name: str) -> str:
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"a spend needs a non-empty name, got {name!r}")
        return name

    # ------------------------------------------------------------------ recording

    def spend(self, name: str, guarantee: Guarantee, *, mechanism: str = "", count: int = 1,
              composition: str = "basic", delta_slack: float = 0.0) -> Guarantee:
        """Record a pure or (eps, delta) release, ``count`` times (k-fold composition by
        ``composition``: basic, advanced (needs ``delta_slack`` > 0), optimal or best).
        Returns the composed guarantee of this part."""
        self._check_name(name)
        if not isinstance(guarantee, Guarantee):
            raise ConfigError(f"spend needs a Guarantee, got {type(guarantee).__name__}")
        count = check_positive_int(count, "count")
        if composition not in COMPOSITIONS:
            raise ConfigError(f"unknown composition {composition!r}; choose one of: "
                              f"{', '.join(COMPOSITIONS)}")
        slack = check_delta(delta_slack, "delta_slack")
        if guarantee.unit is Unit.NONE or math.isinf(guarantee.epsilon):
            self.spend_nonprivate(name, mechanism or "data used as is", guarantee.unit)
            return Guarantee(math.inf, 0.0, guarantee.unit) if guarantee.unit is not Unit.NONE \
                else Guarantee.none()
        used = composition if count > 1 else ""
        if count == 1:
            composed = guarantee
        elif composition == "basic":
            composed = Guarantee(count * guarantee.epsilon,
                                 min(count * guarantee.delta, math.nextafter(1.0, 0.0)),
                                 guarantee.unit)
        elif composition == "advanced":
            if slack <= 0:
                raise PrivacyError("advanced composition needs delta_slack in (0, 1)")
            composed = advanced_composition(guarantee, count, slack)
        elif composition == "optimal":
            composed = optimal_composition(guarantee, count, slack)
        else:
            composed, rule = best_composition(guarantee, count, slack)
            used = f"best ({rule})"
        details = ""
        if count > 1:
            details = f"each release {guarantee}"
            if slack > 0 and composition != "basic":
                details += f", delta slack {slack:g}"
        entry = ReportEntry(name, guarantee.unit, composed.epsilon, composed.delta, mechanism,
                            "pure" if composed.is_pure else "approx", count, used, details)
        self._parts.append(Part(entry, release=guarantee))
        return composed

    def spend_gaussian(self, name: str, *, noise_multiplier: float, steps: int = 1,
                       sampling_rate: float = 1.0, sampling: str = "poisson",
                       unit: Unit | str = Unit.NODE_DP, sensitivity_note: str = "",
                       dataset_size: int | None = None) -> GaussianSpend:
        """Record ``steps`` Gaussian releases with noise std = noise_multiplier x sensitivity,
        each on a ``sampling`` ("poisson" or "fixed") sample of rate ``sampling_rate``."""
        self._check_name(name)
        unit = check_unit(unit)
        if unit is Unit.NONE:
            raise PrivacyError("a Gaussian release protects some unit; Unit.NONE is not one")
        sigma = check_positive(noise_multiplier, "noise_multiplier")
        steps = check_positive_int(steps, "steps")
        rate = check_fraction(sampling_rate, "sampling_rate", low_open=True)
        if sampling not in SAMPLINGS:
            raise ConfigError(f"unknown sampling {sampling!r}; choose one of: "
                              f"{', '.join(SAMPLINGS)}")
        if dataset_size is not None:
            dataset_size = check_positive_int(dataset_size, "dataset_size")
        spend = GaussianSpend(sigma, steps, rate, sampling, dataset_size)
        gaussian_dp_event(spend)  # validate now, not at report time
        relations = {p.gaussian.relation for p in self._parts
                     if isinstance(p, Part) and p.gaussian is not None
                     and p.entry.unit is unit} - {None}
        if spend.relation is not None and relations and spend.relation not in relations:
            raise PrivacyError(
                f"cannot compose Poisson-sampled (add/remove neighbours) and fixed-size-sampled "
                f"(replace-one neighbours) Gaussian parts under one unit ({unit.value})"
            )
        entry = ReportEntry(name, unit, math.nan, math.nan, spend.describe(), "gaussian", steps,
                            "", sensitivity_note)
        self._parts.append(Part(entry, gaussian=spend))
        return spend

    def spend_rdp(self, name: str, rdp_curve: np.ndarray, *, unit: Unit | str,
                  mechanism: str = "", details: str = "") -> None:
        """Record a part by its RDP curve over :data:`~dpgl.privacy.multiterm.ORDERS` (already
        composed over its steps); it joins the unit's Gaussian parts in RDP."""
        import numpy as np
        self._check_name(name)
        unit = check_unit(unit)
        if unit is Unit.NONE:
            raise PrivacyError("an RDP part protects some unit; Unit.NONE is not one")
        curve = np.asarray(rdp_curve, dtype=float)
        if curve.shape != ORDERS.shape or not np.all(np.isfinite(curve)) or np.any(curve < 0):
            raise PrivacyError(f"an RDP curve must hold {ORDERS.size} finite values >= 0 (one "
                               "per order of dpgl.privacy.multiterm.ORDERS)")
        entry = ReportEntry(name, unit, math.nan, math.nan, mechanism, "rdp", 1, "", details)
        self._parts.append(Part(entry, curve=curve))

    def spend_nonprivate(self, name: str, description: str, unit: Unit | str) -> None:
        """Record that data of ``unit`` was used as is: that unit has no privacy."""
        self._check_name(name)
        unit = check_unit(unit)
        entry = ReportEntry(name, unit, math.inf, 0.0, description or "data used as is",
                            "nonprivate")
        self._parts.append(Part(entry))

    def dp_event(self, unit: Unit | str) -> dp_accounting.DpEvent:
        """The composed dp-accounting event of a unit's top-level Gaussian parts (NoOp if
        none)."""
        import dp_accounting
        unit = check_unit(unit)
        events = [gaussian_dp_event(p.gaussian) for p in self._parts
                  if isinstance(p, Part) and p.gaussian is not None and p.entry.unit is unit]
        return dp_accounting.ComposedDpEvent(events) if events else dp_accounting.NoOpDpEvent()

    # ------------------------------------------------------------------ totals and state

    def rdp_curve(self, unit: Unit | str) -> np.ndarray:
        """The RDP curve over :data:`~dpgl.privacy.multiterm.ORDERS` of everything recorded for
        ``unit`` (:func:`dpgl.privacy.rdp.record_rdp`; :class:`PrivacyError` when a part has
        none, e.g. an (eps, delta) part or data used as is)."""
        return record_rdp(self._parts, check_unit(unit))

    def report(self, delta: float | None = None, *, method: str = "rdp") -> PrivacyReport:
        """Compose everything recorded into a :class:`PrivacyReport`.

        ``delta`` (or the accountant's default) is the target delta at which the Gaussian
        and RDP parts of each unit are converted to epsilon; ``method`` is "rdp" or "pld".
        """
        if method not in METHODS:
            raise ConfigError(f"unknown accounting method {method!r}; choose one of: "
                              f"{', '.join(METHODS)}")
        target = self.delta if delta is None else check_delta(delta, allow_zero=False)
        ev = evaluate(self._parts, target, method)
        totals = ev.totals
        notes = list(ev.notes)
        local = [totals[u] for u in LOCAL_UNITS if u in totals]
        per_user = None
        if local:
            if any(math.isinf(g.epsilon) for g in local):
                per_user = Guarantee(math.inf, 0.0, Unit.USER_LDP)
            else:
                per_user = Guarantee(math.fsum(g.epsilon for g in local),
                                     min(math.fsum(g.delta for g in local),
                                         math.nextafter(1.0, 0.0)),
                                     Unit.USER_LDP)
        curves = {}
        for unit in noisy_units(self._parts):
            if math.isfinite(totals[unit].epsilon):
                with contextlib.suppress(PrivacyError):  # a part without an RDP curve
                    curves[unit] = record_rdp(self._parts, unit)
        return PrivacyReport(ev.entries, totals, per_user, target if ev.has_gauss else None,
                             method if ev.has_gauss else None, notes, rdp=curves)

    def state_dict(self) -> dict[str, Any]:
        """Everything recorded (parts, scopes and their members) and the default delta, as
        strict-JSON data; :meth:`load_state_dict` restores it and the report is unchanged."""
        return {"format": STATE_FORMAT, "delta": self.delta, "parts": record_state(self._parts)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace what was recorded by ``state`` (from :meth:`state_dict`)."""
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise ConfigError(f"not an accountant state of format {STATE_FORMAT}")
        parts = record_from_state(state.get("parts", []))
        self.delta = state.get("delta")
        self._parts[:] = parts

    def __repr__(self) -> str:
        return f"Accountant({len(self._parts)} part(s), units={[u.value for u in self.units]})"
