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
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import metadata

import dp_accounting
import numpy as np
from dp_accounting import pld, rdp

from dpgl.errors import ConfigError, PrivacyError
from dpgl.privacy._validation import check_positive, check_positive_int, check_unit
from dpgl.privacy.amplification import amplify_by_subsampling
from dpgl.privacy.composition import (
    advanced_composition,
    best_composition,
    optimal_composition,
)
from dpgl.privacy.guarantee import Guarantee, Unit, check_delta, check_fraction
from dpgl.privacy.multiterm import ORDERS, rdp_to_epsilon
from dpgl.privacy.report import LOCAL_UNITS, PrivacyReport, ReportEntry

__all__ = [
    "COMPOSITIONS",
    "LOCAL_UNITS",
    "METHODS",
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
METHODS = ("rdp", "pld")
SAMPLINGS = ("poisson", "fixed")

_NR = dp_accounting.NeighboringRelation
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


def _dp_accounting_version() -> str:
    try:
        return metadata.version("dp-accounting")
    except metadata.PackageNotFoundError:  # pragma: no cover - always installed
        return "unknown"


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


def make_dp_accountant(method: str, relation: str | None, *, orders: np.ndarray | None = None
                       ) -> dp_accounting.PrivacyAccountant:
    """A fresh dp-accounting RDP or PLD accountant for the given neighbouring relation."""
    nr = _NR.REPLACE_ONE if relation == "replace_one" else _NR.ADD_OR_REMOVE_ONE
    if method == "rdp":
        if orders is not None:
            return rdp.RdpAccountant(orders=list(orders), neighboring_relation=nr)
        return rdp.RdpAccountant(neighboring_relation=nr)
    if method == "pld":
        return pld.PLDAccountant(neighboring_relation=nr)
    raise ConfigError(f"unknown accounting method {method!r}; choose one of: {', '.join(METHODS)}")


def _relation(spends: list[GaussianSpend]) -> str | None:
    relations = {s.relation for s in spends} - {None}
    return relations.pop() if relations else None


def _joint_epsilon(spends: list[GaussianSpend], curves: list[np.ndarray], delta: float,
                   method: str) -> tuple[float, str]:
    """Jointly compose Gaussian events and RDP curves; returns (epsilon, method used)."""
    relation = _relation(spends)
    used = method
    if curves:
        method, used = "rdp", "rdp" if method == "rdp" else "rdp (an RDP-curve part is present)"
    elif method == "pld" and relation == "replace_one":
        # dp-accounting's PLD accountant has no fixed-size (without replacement) sampling.
        used = "rdp (pld does not support fixed-size sampling)"
        method = "rdp"
    if curves:
        total = np.zeros(len(ORDERS))
        if spends:
            acc = make_dp_accountant("rdp", relation, orders=ORDERS)
            acc.compose(dp_accounting.ComposedDpEvent([gaussian_dp_event(s) for s in spends]))
            total = total + np.asarray(acc._rdp, dtype=float)
        for c in curves:
            total = total + c
        return rdp_to_epsilon(total, delta), used
    acc = make_dp_accountant(method, relation)
    event = dp_accounting.ComposedDpEvent([gaussian_dp_event(s) for s in spends])
    if not acc.supports(event):  # pragma: no cover - all events we build are supported
        raise PrivacyError(f"dp-accounting {method} cannot account for {event}")
    acc.compose(event)
    return float(acc.get_epsilon(delta)), used


def _method_label(used: str) -> str:
    return used.upper() if used in METHODS else used


# --------------------------------------------------------------------------- parts


@dataclass
class _Part:
    entry: ReportEntry
    gaussian: GaussianSpend | None = None
    curve: np.ndarray | None = None


@dataclass
class _Scope:
    """A parallel or subsampled scope: child accountants and how they combine."""

    kind: str                      # "parallel" | "subsampled"
    name: str
    description: str
    members: list[tuple[str, Accountant]] = field(default_factory=list)
    rate: float = 1.0
    inner_delta: float | None = None


@dataclass
class _Evaluation:
    totals: dict[Unit, Guarantee]
    entries: list[ReportEntry]
    notes: list[str]
    has_gauss: bool


class ParallelScope:
    """Members of :meth:`Accountant.parallel`: ``with scope.member(label): ...`` activates a
    fresh child accountant for the charges made by one member (e.g. one graph's users)."""

    def __init__(self, scope: _Scope, delta: float | None) -> None:
        self._scope = scope
        self._delta = delta

    @contextlib.contextmanager
    def member(self, label: str) -> Iterator[Accountant]:
        child = Accountant(delta=self._delta)
        self._scope.members.append((str(label), child))
        with child.active():
            yield child

    def __len__(self) -> int:
        return len(self._scope.members)


# --------------------------------------------------------------------------- accountant


class Accountant:
    """Records every data release of a run and reports the privacy spent per unit.

    ``delta`` is the default target delta of :meth:`report` (needed when Gaussian or RDP
    parts exist).
    """

    def __init__(self, delta: float | None = None) -> None:
        self._delta: float | None = None
        self.delta = delta
        self._parts: list[_Part | _Scope] = []

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
        scope = _Scope("parallel", self._check_name(name), description)
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
        scope = _Scope("subsampled", self._check_name(name), description,
                       [("inner", inner)], q, inner.delta)
        self._parts.append(scope)
        with inner.active():
            yield inner

    @property
    def units(self) -> list[Unit]:
        """Units with at least one recorded part, in order of first use."""
        seen: list[Unit] = []
        for p in self._parts:
            if isinstance(p, _Part):
                units = [p.entry.unit]
            else:
                units = [u for _, m in p.members for u in m.units]
            for u in units:
                if u not in seen:
                    seen.append(u)
        return seen

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
                     if isinstance(p, _Part) and p.gaussian is not None
                     and p.entry.unit is unit} - {None}
        if spend.relation is not None and relations and spend.relation not in relations:
            raise PrivacyError(
                f"cannot compose Poisson-sampled (add/remove neighbours) and fixed-size-sampled "
                f"(replace-one neighbours) Gaussian parts under one unit ({unit.value})"
            )
        entry = ReportEntry(name, unit, math.nan, math.nan, spend.describe(), "gaussian", steps,
                            "", sensitivity_note)
        self._parts.append(_Part(entry, gaussian=spend))
        return spend

    def spend_rdp(self, name: str, rdp_curve: np.ndarray, *, unit: Unit | str,
                  mechanism: str = "", details: str = "") -> None:
        """Record a part by its RDP curve over :data:`~dpgl.privacy.multiterm.ORDERS` (already
        composed over its steps); it joins the unit's Gaussian parts in RDP."""
        self._check_name(name)
        unit = check_unit(unit)
        if unit is Unit.NONE:
            raise PrivacyError("an RDP part protects some unit; Unit.NONE is not one")
        curve = np.asarray(rdp_curve, dtype=float)
        if curve.shape != ORDERS.shape or not np.all(np.isfinite(curve)) or np.any(curve < 0):
            raise PrivacyError(f"an RDP curve must hold {ORDERS.size} finite values >= 0 (one "
                               "per order of dpgl.privacy.multiterm.ORDERS)")
        entry = ReportEntry(name, unit, math.nan, math.nan, mechanism, "rdp", 1, "", details)
        self._parts.append(_Part(entry, curve=curve))

    def spend_nonprivate(self, name: str, description: str, unit: Unit | str) -> None:
        """Record that data of ``unit`` was used as is: that unit has no privacy."""
        self._check_name(name)
        unit = check_unit(unit)
        entry = ReportEntry(name, unit, math.inf, 0.0, description or "data used as is",
                            "nonprivate")
        self._parts.append(_Part(entry))

    def dp_event(self, unit: Unit | str) -> dp_accounting.DpEvent:
        """The composed dp-accounting event of a unit's top-level Gaussian parts (NoOp if
        none)."""
        unit = check_unit(unit)
        events = [gaussian_dp_event(p.gaussian) for p in self._parts
                  if isinstance(p, _Part) and p.gaussian is not None and p.entry.unit is unit]
        return dp_accounting.ComposedDpEvent(events) if events else dp_accounting.NoOpDpEvent()

    # ------------------------------------------------------------------ composing

    def _evaluate(self, target: float | None, method: str) -> _Evaluation:
        entries: list[ReportEntry] = []
        notes: list[str] = []
        eps_sum: dict[Unit, float] = {}
        delta_sum: dict[Unit, float] = {}
        nonprivate: set[Unit] = set()
        has_gauss = False
        joint: dict[Unit, tuple[list[GaussianSpend], list[np.ndarray]]] = {}
        for unit in self.units:
            eps_sum[unit], delta_sum[unit] = 0.0, 0.0
        for p in self._parts:
            if isinstance(p, _Scope):
                ev = self._evaluate_scope(p, target, method)
                has_gauss = has_gauss or ev.has_gauss
                entries.extend(ev.entries)
                notes.extend(ev.notes)
                for unit, g in ev.totals.items():
                    if math.isinf(g.epsilon):
                        nonprivate.add(unit)
                    else:
                        eps_sum[unit] += g.epsilon
                        delta_sum[unit] += g.delta
                continue
            e = p.entry
            if p.gaussian is not None or p.curve is not None:
                has_gauss = True
                if target is None:
                    raise PrivacyError("Gaussian or RDP parts need a target delta: pass "
                                       "report(delta=...), Accountant(delta=...) or set "
                                       "accountant.delta")
                g_list, c_list = joint.setdefault(e.unit, ([], []))
                if p.gaussian is not None:
                    g_list.append(p.gaussian)
                    alone, used = _joint_epsilon([p.gaussian], [], target, method)
                else:
                    assert p.curve is not None
                    c_list.append(p.curve)
                    alone, used = rdp_to_epsilon(p.curve, target), "rdp"
                entries.append(ReportEntry(e.name, e.unit, alone, target, e.mechanism, e.kind,
                                           e.count, f"{_method_label(used)} accounting",
                                           e.details))
                continue
            entries.append(e)
            if e.kind == "nonprivate":
                nonprivate.add(e.unit)
            else:
                eps_sum[e.unit] += e.epsilon
                delta_sum[e.unit] += e.delta
        for unit, (g_list, c_list) in joint.items():
            assert target is not None
            eps, used = _joint_epsilon(g_list, c_list, target, method)
            eps_sum[unit] += eps
            delta_sum[unit] += target
            n = len(g_list) + len(c_list)
            notes.append(f"{unit.value}: {n} Gaussian/RDP part(s) composed jointly with "
                         f"{_method_label(used)} accounting (dp-accounting "
                         f"{_dp_accounting_version()}) at delta={target:g}; the per-part "
                         "epsilons above are each part alone")
        totals: dict[Unit, Guarantee] = {}
        for unit in self.units:
            if unit is Unit.NONE:
                totals[unit] = Guarantee.none()
            elif unit in nonprivate:
                totals[unit] = Guarantee(math.inf, 0.0, unit)
            else:
                totals[unit] = Guarantee(eps_sum[unit],
                                         min(delta_sum[unit], math.nextafter(1.0, 0.0)), unit)
        return _Evaluation(totals, entries, notes, has_gauss)

    def _evaluate_scope(self, scope: _Scope, target: float | None, method: str) -> _Evaluation:
        if scope.kind == "subsampled":
            inner = scope.members[0][1]
            ev = inner._evaluate(scope.inner_delta, method)
            totals: dict[Unit, Guarantee] = {}
            entries: list[ReportEntry] = []
            for unit, g in ev.totals.items():
                if unit is Unit.NONE:
                    totals[unit] = g
                    continue
                eps, delta = amplify_by_subsampling(g.epsilon, g.delta, scope.rate)
                totals[unit] = Guarantee(eps, min(delta, math.nextafter(1.0, 0.0)), unit)
                inner_parts = "; ".join(f"{e.name}: {e.guarantee_text}" for e in ev.entries
                                        if e.unit is unit)
                kind = "nonprivate" if math.isinf(eps) else "scope"
                entries.append(ReportEntry(
                    scope.name, unit, eps, totals[unit].delta,
                    f"amplification by Poisson subsampling at rate {scope.rate:g}", kind, 1, "",
                    f"inner total {g}; inner parts: {inner_parts}"
                    + (f"; {scope.description}" if scope.description else "")))
            notes = [f"{scope.name} (inner): {n}" for n in ev.notes]
            return _Evaluation(totals, entries, notes, ev.has_gauss)
        # parallel composition: the maximum over members that hold disjoint units
        member_evals = [m._evaluate(target, method) for _, m in scope.members]
        totals = {}
        for ev in member_evals:
            for unit, g in ev.totals.items():
                prev = totals.get(unit)
                if prev is None or g.epsilon > prev.epsilon or (
                        g.epsilon == prev.epsilon and g.delta > prev.delta):
                    totals[unit] = g
        merged: dict[tuple[str, Unit, str, str], tuple[ReportEntry, int]] = {}
        for ev in member_evals:
            for e in ev.entries:
                key = (e.name, e.unit, e.mechanism, e.kind)
                prev_e, k = merged.get(key, (e, 0))
                best = e if (e.epsilon > prev_e.epsilon
                             or (e.epsilon == prev_e.epsilon and e.delta > prev_e.delta)) \
                    else prev_e
                merged[key] = (best, k + 1)
        entries = []
        n = len(scope.members)
        for (name, unit, mech, kind), (e, k) in merged.items():
            detail = (f"in {k} of {n} disjoint groups of {scope.name} (parallel composition: "
                      "the largest is shown)")
            if scope.description:
                detail += f"; {scope.description}"
            if e.details:
                detail = f"{e.details}; {detail}"
            entries.append(ReportEntry(name, unit, e.epsilon, e.delta, mech, kind, e.count,
                                       e.composition, detail))
        notes = sorted({n for ev in member_evals for n in ev.notes})
        return _Evaluation(totals, entries, notes, any(ev.has_gauss for ev in member_evals))

    def report(self, delta: float | None = None, *, method: str = "rdp") -> PrivacyReport:
        """Compose everything recorded into a :class:`PrivacyReport`.

        ``delta`` (or the accountant's default) is the target delta at which the Gaussian
        and RDP parts of each unit are converted to epsilon; ``method`` is "rdp" or "pld".
        """
        if method not in METHODS:
            raise ConfigError(f"unknown accounting method {method!r}; choose one of: "
                              f"{', '.join(METHODS)}")
        target = self.delta if delta is None else check_delta(delta, allow_zero=False)
        ev = self._evaluate(target, method)
        totals = ev.totals
        notes = list(ev.notes)
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
        return PrivacyReport(ev.entries, totals, per_user, target if ev.has_gauss else None,
                             method if ev.has_gauss else None, notes)

    def __repr__(self) -> str:
        return f"Accountant({len(self._parts)} part(s), units={[u.value for u in self.units]})"
