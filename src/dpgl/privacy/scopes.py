"""What an accountant records, and its composition into per-unit (eps, delta) totals.

An accountant's record is a list of :class:`Part` (one release: a pure or approximate
guarantee, a Gaussian part, an RDP curve or data used as is) and :class:`Scope` (a parallel
or subsampled group of records, each the record of a child accountant). :func:`evaluate`
composes a record into per-unit totals and report entries (the rules are in
:mod:`dpgl.privacy.accountant` and docs/privacy.md); :func:`record_state` and
:func:`record_from_state` give its JSON-serializable form.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dpgl.errors import ConfigError, PrivacyError
from dpgl.privacy.amplification import amplify_by_subsampling
from dpgl.privacy.dp_events import (
    GaussianSpend,
    dp_accounting_version,
    joint_epsilon,
    method_label,
)
from dpgl.privacy.guarantee import Guarantee, Unit
from dpgl.privacy.multiterm import ORDERS, rdp_to_epsilon
from dpgl.privacy.report import ReportEntry

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "Evaluation",
    "Part",
    "Record",
    "Scope",
    "evaluate",
    "evaluate_scope",
    "record_from_state",
    "record_state",
    "units_of",
]


@dataclass
class Part:
    """One recorded release: its report entry, its Gaussian event or RDP curve if any, and
    the guarantee of each of its ``entry.count`` releases (``release``; kept so that the part
    can be composed in RDP, :func:`dpgl.privacy.rdp.record_rdp`)."""

    entry: ReportEntry
    gaussian: GaussianSpend | None = None
    curve: np.ndarray | None = None
    release: Guarantee | None = None


@dataclass
class Scope:
    """A parallel or subsampled scope: the records of its child accountants and how they
    combine."""

    kind: str                      # "parallel" | "subsampled"
    name: str
    description: str
    members: list[tuple[str, Record]] = field(default_factory=list)
    rate: float = 1.0
    inner_delta: float | None = None


#: An accountant's record, in order of recording.
Record = list[Part | Scope]


@dataclass
class Evaluation:
    """A record composed: per-unit totals, report entries and notes."""

    totals: dict[Unit, Guarantee]
    entries: list[ReportEntry]
    notes: list[str]
    has_gauss: bool


def units_of(record: Sequence[Part | Scope]) -> list[Unit]:
    """Units with at least one part in ``record`` (scopes included), in order of first use."""
    seen: list[Unit] = []
    for p in record:
        if isinstance(p, Part):
            units = [p.entry.unit]
        else:
            units = [u for _, m in p.members for u in units_of(m)]
        for u in units:
            if u not in seen:
                seen.append(u)
    return seen


def evaluate(record: Sequence[Part | Scope], target: float | None, method: str) -> Evaluation:
    """Compose a record into per-unit totals: basic composition across parts, the Gaussian
    and RDP parts of each unit jointly at delta ``target`` (method "rdp" or "pld")."""
    entries: list[ReportEntry] = []
    notes: list[str] = []
    eps_sum: dict[Unit, float] = {}
    delta_sum: dict[Unit, float] = {}
    nonprivate: set[Unit] = set()
    has_gauss = False
    joint: dict[Unit, tuple[list[GaussianSpend], list[np.ndarray]]] = {}
    for unit in units_of(record):
        eps_sum[unit], delta_sum[unit] = 0.0, 0.0
    for p in record:
        if isinstance(p, Scope):
            ev = evaluate_scope(p, target, method)
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
                alone, used = joint_epsilon([p.gaussian], [], target, method)
            else:
                assert p.curve is not None
                c_list.append(p.curve)
                alone, used = rdp_to_epsilon(p.curve, target), "rdp"
            entries.append(ReportEntry(e.name, e.unit, alone, target, e.mechanism, e.kind,
                                       e.count, f"{method_label(used)} accounting",
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
        eps, used = joint_epsilon(g_list, c_list, target, method)
        eps_sum[unit] += eps
        delta_sum[unit] += target
        n = len(g_list) + len(c_list)
        notes.append(f"{unit.value}: {n} Gaussian/RDP part(s) composed jointly with "
                     f"{method_label(used)} accounting (dp-accounting "
                     f"{dp_accounting_version()}) at delta={target:g}; the per-part "
                     "epsilons above are each part alone")
    totals: dict[Unit, Guarantee] = {}
    for unit in units_of(record):
        if unit is Unit.NONE:
            totals[unit] = Guarantee.none()
        elif unit in nonprivate:
            totals[unit] = Guarantee(math.inf, 0.0, unit)
        else:
            totals[unit] = Guarantee(eps_sum[unit],
                                     min(delta_sum[unit], math.nextafter(1.0, 0.0)), unit)
    return Evaluation(totals, entries, notes, has_gauss)


def evaluate_scope(scope: Scope, target: float | None, method: str) -> Evaluation:
    """Compose a scope: the amplified inner totals of a subsampled scope, the maximum over
    the members of a parallel one (McSherry 2009)."""
    if scope.kind == "subsampled":
        inner = scope.members[0][1]
        ev = evaluate(inner, scope.inner_delta, method)
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
        return Evaluation(totals, entries, notes, ev.has_gauss)
    # parallel composition: the maximum over members that hold disjoint units
    member_evals = [evaluate(m, target, method) for _, m in scope.members]
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
    return Evaluation(totals, entries, notes, any(ev.has_gauss for ev in member_evals))


# --------------------------------------------------------------------------- state


def _part_state(p: Part | Scope) -> dict[str, Any]:
    if isinstance(p, Scope):
        return {"scope": p.kind, "name": p.name, "description": p.description,
                "members": [{"label": label, "record": record_state(m)}
                            for label, m in p.members],
                "rate": p.rate, "inner_delta": p.inner_delta}
    entry = p.entry.to_dict()
    if p.gaussian is not None or p.curve is not None:
        del entry["epsilon"], entry["delta"]   # stated at report time (NaN until then)
    state = {"entry": entry,
             "gaussian": None if p.gaussian is None else dataclasses.asdict(p.gaussian),
             "rdp_curve": None if p.curve is None else [float(x) for x in p.curve]}
    if p.release is not None:
        state["release"] = p.release.to_dict()
    return state


def record_state(record: Sequence[Part | Scope]) -> list[dict[str, Any]]:
    """The JSON-serializable form of a record (strict JSON: no NaN or infinity)."""
    return [_part_state(p) for p in record]


def _part_from_state(d: dict[str, Any]) -> Part | Scope:
    import numpy as np
    if "scope" in d:
        if d["scope"] not in ("parallel", "subsampled"):
            raise ValueError(f"unknown scope kind {d['scope']!r}")
        inner_delta = d.get("inner_delta")
        members: list[tuple[str, Record]] = [
            (str(m["label"]), [_part_from_state(x) for x in m["record"]]) for m in d["members"]]
        return Scope(str(d["scope"]), str(d["name"]), str(d.get("description", "")), members,
                     float(d.get("rate", 1.0)),
                     None if inner_delta is None else float(inner_delta))
    entry = ReportEntry.from_dict(d["entry"])
    gaussian = None if d.get("gaussian") is None else GaussianSpend(**d["gaussian"])
    curve = None
    if d.get("rdp_curve") is not None:
        curve = np.asarray(d["rdp_curve"], dtype=float)
        if curve.shape != ORDERS.shape:
            raise ValueError(f"an RDP curve holds {ORDERS.size} values, got {curve.size}")
    if gaussian is not None or curve is not None:
        entry = dataclasses.replace(entry, epsilon=math.nan, delta=math.nan)
    release = d.get("release")
    return Part(entry, gaussian, curve,
                None if release is None else Guarantee(float(release["epsilon"]),
                                                       float(release["delta"]),
                                                       Unit(release["unit"])))


def record_from_state(state: Sequence[dict[str, Any]]) -> Record:
    """The record :func:`record_state` serialized (:class:`ConfigError` if malformed)."""
    try:
        return [_part_from_state(d) for d in state]
    except (KeyError, TypeError, ValueError) as err:
        raise ConfigError(f"malformed accountant state: {err}") from None
