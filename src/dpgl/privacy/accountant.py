"""One accountant per run: what each part of a run spends, per protected unit, and the report.

Composition rules (documented in docs/privacy.md):

* Parts are grouped by :class:`Unit`; units are never mixed (node-DP and edge-LDP totals stay
  separate). The only cross-unit total is :attr:`PrivacyReport.per_user`, the basic
  composition of a local-model user's edge-, feature-, label- and user-LDP parts.
* Pure and approximate (eps, delta) parts of one unit compose by basic composition
  (epsilons add, deltas add; Dwork & Roth 2014, Thm 3.16). A part released ``count`` times
  is composed k-fold by ``composition="basic" | "advanced" | "optimal" | "best"``
  (see :mod:`dpgl.privacy.composition`).
* Gaussian parts (``spend_gaussian``) are dp-accounting events (Gaussian, Poisson-subsampled
  or fixed-size-subsampled Gaussian, self-composed over steps). All Gaussian parts of one unit
  are composed jointly in dp-accounting's RDP or PLD accountant and converted to epsilon at the
  report's target delta; the result is then added to the unit's pure/approximate parts by basic
  composition (epsilons add, deltas add).
* ``spend_nonprivate`` marks a unit's data as used without protection: that unit's total is
  "no privacy" (epsilon = inf), stated plainly in the report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import metadata
from typing import Any

import dp_accounting
from dp_accounting import pld, rdp

from dpgl.errors import ConfigError, PrivacyError
from dpgl.privacy._validation import check_positive, check_positive_int, check_unit
from dpgl.privacy.composition import (
    advanced_composition,
    best_composition,
    optimal_composition,
)
from dpgl.privacy.guarantee import Guarantee, Unit, check_delta, check_fraction

__all__ = [
    "COMPOSITIONS",
    "LOCAL_UNITS",
    "METHODS",
    "Accountant",
    "GaussianSpend",
    "PrivacyReport",
    "ReportEntry",
    "gaussian_dp_event",
    "make_dp_accountant",
]

COMPOSITIONS = ("basic", "advanced", "optimal", "best")
METHODS = ("rdp", "pld")
SAMPLINGS = ("poisson", "fixed")
#: Units whose parts compose into the per-user local guarantee (Unit.USER_LDP).
LOCAL_UNITS = (Unit.EDGE_LDP, Unit.FEATURE_LDP, Unit.LABEL_LDP, Unit.USER_LDP)

_NR = dp_accounting.NeighboringRelation


def _dp_accounting_version() -> str:
    try:
        return metadata.version("dp-accounting")
    except metadata.PackageNotFoundError:  # pragma: no cover - always installed
        return "unknown"


def _fmt_eps(eps: float) -> str:
    return "inf" if math.isinf(eps) else f"{eps:.4g}"


def _fmt_delta(delta: float) -> str:
    return "0" if delta == 0 else f"{delta:.3g}"


# --------------------------------------------------------------------------- Gaussian events


@dataclass(frozen=True)
class GaussianSpend:
    """A Gaussian part: noise multiplier sigma/sensitivity, ``steps`` releases, each on a
    sample of rate ``sampling_rate`` (1.0 = no sampling) drawn by ``sampling``."""

    noise_multiplier: float
    steps: int = 1
    sampling_rate: float = 1.0
    sampling: str = "poisson"
    dataset_size: int | None = None

    @property
    def subsampled(self) -> bool:
        return self.sampling_rate < 1.0

    @property
    def relation(self) -> str | None:
        """dp-accounting neighbouring relation this event needs (None: either works)."""
        if not self.subsampled:
            return None
        return "add_or_remove_one" if self.sampling == "poisson" else "replace_one"

    def describe(self) -> str:
        s = f"Gaussian, noise multiplier {self.noise_multiplier:g}, {self.steps} step(s)"
        if self.subsampled:
            kind = "Poisson" if self.sampling == "poisson" else "fixed-size"
            s += f", {kind} sampling rate {self.sampling_rate:g}"
        return s


def gaussian_dp_event(spend: GaussianSpend) -> dp_accounting.DpEvent:
    """The dp-accounting event of a Gaussian part (self-composed over its steps)."""
    base = dp_accounting.GaussianDpEvent(spend.noise_multiplier)
    if not spend.subsampled:
        event: dp_accounting.DpEvent = base
    elif spend.sampling == "poisson":
        event = dp_accounting.PoissonSampledDpEvent(spend.sampling_rate, base)
    else:
        if spend.dataset_size is not None:
            size = spend.dataset_size
            sample = round(spend.sampling_rate * size)
        else:
            frac = Fraction(spend.sampling_rate).limit_denominator(10**6)
            size, sample = frac.denominator, frac.numerator
        if sample < 1 or sample > size:
            raise PrivacyError(
                f"fixed-size sampling rate {spend.sampling_rate:g} of {size} records gives "
                f"sample size {sample}"
            )
        event = dp_accounting.SampledWithoutReplacementDpEvent(size, sample, base)
    return event if spend.steps == 1 else dp_accounting.SelfComposedDpEvent(event, spend.steps)


def make_dp_accountant(method: str, relation: str | None) -> dp_accounting.PrivacyAccountant:
    """A fresh dp-accounting RDP or PLD accountant for the given neighbouring relation."""
    nr = _NR.REPLACE_ONE if relation == "replace_one" else _NR.ADD_OR_REMOVE_ONE
    if method == "rdp":
        return rdp.RdpAccountant(neighboring_relation=nr)
    if method == "pld":
        return pld.PLDAccountant(neighboring_relation=nr)
    raise ConfigError(f"unknown accounting method {method!r}; choose one of: {', '.join(METHODS)}")


def _gaussian_epsilon(spends: list[GaussianSpend], delta: float, method: str
                      ) -> tuple[float, str]:
    """Jointly compose Gaussian parts in dp-accounting; returns (epsilon, method used)."""
    relations = {s.relation for s in spends} - {None}
    relation = relations.pop() if relations else None
    used = method
    if method == "pld" and relation == "replace_one":
        # dp-accounting's PLD accountant has no fixed-size (without replacement) sampling.
        used = "rdp (pld does not support fixed-size sampling)"
        method = "rdp"
    acc = make_dp_accountant(method, relation)
    event = dp_accounting.ComposedDpEvent([gaussian_dp_event(s) for s in spends])
    if not acc.supports(event):  # pragma: no cover - all events we build are supported
        raise PrivacyError(f"dp-accounting {method} cannot account for {event}")
    acc.compose(event)
    return float(acc.get_epsilon(delta)), used


# --------------------------------------------------------------------------- report


@dataclass(frozen=True)
class ReportEntry:
    """One part of a run: what it spent (after k-fold composition) under which unit."""

    name: str
    unit: Unit
    epsilon: float
    delta: float
    mechanism: str = ""
    kind: str = "pure"          # pure | approx | gaussian | nonprivate
    count: int = 1
    composition: str = ""       # how ``count`` releases were composed
    details: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "unit": self.unit.value,
            "epsilon": None if math.isinf(self.epsilon) else self.epsilon,
            "delta": self.delta,
            "mechanism": self.mechanism,
            "kind": self.kind,
            "count": self.count,
            "composition": self.composition,
            "details": self.details,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ReportEntry:
        eps = d.get("epsilon")
        return cls(
            name=str(d["name"]),
            unit=check_unit(d["unit"]),
            epsilon=math.inf if eps is None else float(eps),
            delta=float(d.get("delta", 0.0)),
            mechanism=str(d.get("mechanism", "")),
            kind=str(d.get("kind", "pure")),
            count=int(d.get("count", 1)),
            composition=str(d.get("composition", "")),
            details=str(d.get("details", "")),
        )

    @property
    def guarantee_text(self) -> str:
        if self.kind == "nonprivate" or math.isinf(self.epsilon):
            return "no privacy"
        if self.delta == 0:
            return f"eps={_fmt_eps(self.epsilon)}"
        return f"eps={_fmt_eps(self.epsilon)}, delta={_fmt_delta(self.delta)}"


def _guarantee_from_dict(d: dict[str, Any]) -> Guarantee:
    eps = d.get("epsilon")
    unit = check_unit(d["unit"])
    if unit is Unit.NONE:
        return Guarantee.none()
    return Guarantee(math.inf if eps is None else float(eps), float(d.get("delta", 0.0)), unit)


def _total_text(g: Guarantee) -> str:
    if math.isinf(g.epsilon):
        return "NO PRIVACY (data used as is)"
    if g.delta == 0:
        return f"eps={_fmt_eps(g.epsilon)}"
    return f"eps={_fmt_eps(g.epsilon)}, delta={_fmt_delta(g.delta)}"


@dataclass
class PrivacyReport:
    """What a run spent: per-part entries, per-unit totals and the per-user local total."""

    entries: list[ReportEntry] = field(default_factory=list)
    totals: dict[Unit, Guarantee] = field(default_factory=dict)
    per_user: Guarantee | None = None
    delta: float | None = None
    method: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.entries

    @property
    def private(self) -> bool:
        """True when something was recorded and every unit's total is finite."""
        return bool(self.totals) and all(math.isfinite(g.epsilon) for g in self.totals.values())

    def total(self, unit: Unit | str) -> Guarantee | None:
        return self.totals.get(check_unit(unit))

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable form (inf epsilon -> None)."""
        return {
            "summary": str(self),
            "entries": [e.to_dict() for e in self.entries],
            "totals": {u.value: g.to_dict() for u, g in self.totals.items()},
            "per_user": None if self.per_user is None else self.per_user.to_dict(),
            "delta": self.delta,
            "method": self.method,
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PrivacyReport:
        try:
            return cls(
                entries=[ReportEntry.from_dict(e) for e in d.get("entries", [])],
                totals={check_unit(u): _guarantee_from_dict(g)
                        for u, g in d.get("totals", {}).items()},
                per_user=None if d.get("per_user") is None
                else _guarantee_from_dict(d["per_user"]),
                delta=None if d.get("delta") is None else float(d["delta"]),
                method=d.get("method"),
                notes=[str(n) for n in d.get("notes", [])],
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ConfigError(f"malformed privacy report: {err}") from None

    def __str__(self) -> str:
        if self.empty:
            return "privacy: no data release recorded"
        parts = []
        for unit, g in self.totals.items():
            parts.append(f"{unit.value} {_total_text(g)}")
        if self.per_user is not None and len([u for u in self.totals if u in LOCAL_UNITS]) > 1:
            parts.append(f"per user {_total_text(self.per_user)}")
        return "privacy: " + "; ".join(parts)

    def render(self) -> str:
        """A plain-text multi-line table."""
        if self.empty:
            return "Privacy report\n  no data release recorded\n"
        lines = ["Privacy report", "  Parts:"]
        rows = [("part", "unit", "guarantee", "mechanism")]
        for e in self.entries:
            mech = e.mechanism
            if e.kind == "gaussian":
                mech += f" [{e.composition}]"
            elif e.count > 1:
                mech += f" [x{e.count}, {e.composition} composition]"
            if e.details:
                mech += f" ({e.details})"
            rows.append((e.name, e.unit.value, e.guarantee_text, mech.strip()))
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        for r in rows:
            lines.append("    " + "  ".join(r[i].ljust(widths[i]) for i in range(3))
                         + "  " + r[3])
        lines.append("  Totals per unit (basic composition across parts):")
        uw = max(len(u.value) for u in self.totals)
        for unit, g in self.totals.items():
            lines.append(f"    {unit.value.ljust(uw)}  {_total_text(g)}")
        if self.per_user is not None:
            lines.append("  Per user (local model: edge-, feature- and label-LDP parts, basic "
                         f"composition): {_total_text(self.per_user)}")
        for n in self.notes:
            lines.append(f"  Note: {n}")
        return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- accountant


@dataclass
class _Part:
    entry: ReportEntry
    gaussian: GaussianSpend | None = None


class Accountant:
    """Records every data release of a run and reports the privacy spent per unit.

    ``delta`` is the default target delta of :meth:`report` (needed when Gaussian parts exist).
    """

    def __init__(self, delta: float | None = None) -> None:
        self._delta: float | None = None
        self.delta = delta
        self._parts: list[_Part] = []

    @property
    def delta(self) -> float | None:
        """Default target delta of :meth:`report` (a method with Gaussian parts sets it to its
        delta hyper-parameter when the run's driver did not)."""
        return self._delta

    @delta.setter
    def delta(self, value: float | None) -> None:
        self._delta = None if value is None else check_delta(value, allow_zero=False)

    def __len__(self) -> int:
        return len(self._parts)

    @property
    def units(self) -> list[Unit]:
        """Units with at least one recorded part, in order of first use."""
        seen: list[Unit] = []
        for p in self._parts:
            if p.entry.unit not in seen:
                seen.append(p.entry.unit)
        return seen

    @staticmethod
    def _check_name(name: str) -> str:
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"a spend needs a non-empty name, got {name!r}")
        return name

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
        self._parts.append(_Part(entry))
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
                     if p.gaussian is not None and p.entry.unit is unit} - {None}
        if spend.relation is not None and relations and spend.relation not in relations:
            raise PrivacyError(
                f"cannot compose Poisson-sampled (add/remove neighbours) and fixed-size-sampled "
                f"(replace-one neighbours) Gaussian parts under one unit ({unit.value})"
            )
        entry = ReportEntry(name, unit, math.nan, math.nan, spend.describe(), "gaussian", steps,
                            "", sensitivity_note)
        self._parts.append(_Part(entry, spend))
        return spend

    def spend_nonprivate(self, name: str, description: str, unit: Unit | str) -> None:
        """Record that data of ``unit`` was used as is: that unit has no privacy."""
        self._check_name(name)
        unit = check_unit(unit)
        entry = ReportEntry(name, unit, math.inf, 0.0, description or "data used as is",
                            "nonprivate")
        self._parts.append(_Part(entry))

    def dp_event(self, unit: Unit | str) -> dp_accounting.DpEvent:
        """The composed dp-accounting event of a unit's Gaussian parts (NoOp if none)."""
        unit = check_unit(unit)
        events = [gaussian_dp_event(p.gaussian) for p in self._parts
                  if p.gaussian is not None and p.entry.unit is unit]
        return dp_accounting.ComposedDpEvent(events) if events else dp_accounting.NoOpDpEvent()

    def report(self, delta: float | None = None, *, method: str = "rdp") -> PrivacyReport:
        """Compose everything recorded into a :class:`PrivacyReport`.

        ``delta`` (or the accountant's default) is the target delta at which the Gaussian
        parts of each unit are converted to epsilon; ``method`` is "rdp" or "pld".
        """
        if method not in METHODS:
            raise ConfigError(f"unknown accounting method {method!r}; choose one of: "
                              f"{', '.join(METHODS)}")
        target = self.delta if delta is None else check_delta(delta, allow_zero=False)
        has_gauss = any(p.gaussian is not None for p in self._parts)
        if has_gauss and target is None:
            raise PrivacyError("Gaussian parts need a target delta: pass report(delta=...), "
                               "Accountant(delta=...) or set accountant.delta")
        entries: list[ReportEntry] = []
        notes: list[str] = []
        totals: dict[Unit, Guarantee] = {}
        for unit in self.units:
            parts = [p for p in self._parts if p.entry.unit is unit]
            gauss = [p.gaussian for p in parts if p.gaussian is not None]
            eps_sum, delta_sum, nonprivate = 0.0, 0.0, False
            for p in parts:
                e = p.entry
                if e.kind == "nonprivate":
                    nonprivate = True
                elif p.gaussian is None:
                    eps_sum += e.epsilon
                    delta_sum += e.delta
            if gauss:
                assert target is not None
                g_eps, used = _gaussian_epsilon(gauss, target, method)
                eps_sum += g_eps
                delta_sum += target
                notes.append(f"{unit.value}: {len(gauss)} Gaussian part(s) composed jointly with "
                             f"{used.upper() if used in METHODS else used} accounting "
                             f"(dp-accounting {_dp_accounting_version()}) at delta={target:g}; "
                             "the per-part epsilons above are each part alone")
            if unit is Unit.NONE:
                totals[unit] = Guarantee.none()
            elif nonprivate:
                totals[unit] = Guarantee(math.inf, 0.0, unit)
            else:
                totals[unit] = Guarantee(eps_sum, min(delta_sum, math.nextafter(1.0, 0.0)), unit)
        for p in self._parts:
            e = p.entry
            if p.gaussian is not None:
                assert target is not None
                g_eps, used = _gaussian_epsilon([p.gaussian], target, method)
                e = ReportEntry(e.name, e.unit, g_eps, target, e.mechanism, e.kind, e.count,
                                f"{used.upper() if used in METHODS else used} accounting",
                                e.details)
            entries.append(e)
        nonpriv = [u for u, g in totals.items() if math.isinf(g.epsilon)]
        if nonpriv:
            notes.append("NO PRIVACY for: " + ", ".join(u.value for u in nonpriv)
                         + " (data of that unit used as is)")
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
        return PrivacyReport(entries, totals, per_user, target if has_gauss else None,
                             method if has_gauss else None, notes)

    def __repr__(self) -> str:
        return f"Accountant({len(self._parts)} part(s), units={[u.value for u in self.units]})"
