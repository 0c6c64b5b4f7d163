"""The privacy report of a run: what each part spent, per-unit totals, and one plain sentence.

:class:`PrivacyReport` is what :meth:`dpgl.privacy.Accountant.report` returns and what every
run stores (``to_dict`` / ``from_dict``). Its :attr:`~PrivacyReport.headline` is the sentence
every rendering starts with: what is protected, at which epsilon, and what is not protected
(used as is, or assumed public in the method's setting: :attr:`PrivacyReport.public`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from dpgl.errors import ConfigError
from dpgl.privacy.guarantee import Guarantee, Unit, check_unit

__all__ = ["LOCAL_UNITS", "UNIT_SUBJECTS", "PrivacyReport", "ReportEntry"]

#: Units whose parts compose into the per-user local guarantee (Unit.USER_LDP).
LOCAL_UNITS = (Unit.EDGE_LDP, Unit.FEATURE_LDP, Unit.LABEL_LDP, Unit.USER_LDP)

#: What one unit of each kind is, in plain words (the subject of the report's headline).
UNIT_SUBJECTS: dict[Unit, str] = {
    Unit.EDGE_LDP: "each user's neighbour list",
    Unit.RELATIONSHIP_DP: "each undirected edge",
    Unit.FEATURE_LDP: "each user's feature vector",
    Unit.LABEL_LDP: "each user's label",
    Unit.USER_LDP: "everything each user reports",
    Unit.NODE_DP: "each node of the training graph with its features, label and edges",
    Unit.BOUNDED_NODE_DP: ("each node of the training graph with its features, label and "
                           "edges, among graphs within the declared degree bound"),
    Unit.EDGE_DP: "each edge",
    Unit.NONE: "nothing",
}


def _fmt_eps(eps: float) -> str:
    return "inf" if math.isinf(eps) else f"{eps:.4g}"


def _fmt_delta(delta: float) -> str:
    return "0" if delta == 0 else f"{delta:.3g}"


@dataclass(frozen=True)
class ReportEntry:
    """One part of a run: what it spent (after k-fold composition) under which unit."""

    name: str
    unit: Unit
    epsilon: float
    delta: float
    mechanism: str = ""
    kind: str = "pure"          # pure | approx | gaussian | rdp | nonprivate | scope
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


def _total_text(g: Guarantee, public: bool = False) -> str:
    if math.isinf(g.epsilon):
        return AS_IS_PUBLIC if public else AS_IS
    if g.delta == 0:
        return f"eps={_fmt_eps(g.epsilon)}"
    return f"eps={_fmt_eps(g.epsilon)}, delta={_fmt_delta(g.delta)}"


#: How a unit whose data was used as is reads in the totals: public in the method's setting,
#: or not.
AS_IS_PUBLIC = "not protected: used as is (public in this setting)"
AS_IS = "no privacy: used as is"


def _budget_words(g: Guarantee) -> str:
    text = f"eps = {_fmt_eps(g.epsilon)}"
    if g.delta:
        text += f", delta = {_fmt_delta(g.delta)}"
    return text


def _and(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


@dataclass
class PrivacyReport:
    """What a run spent: per-part entries, per-unit totals and the per-user local total.

    ``public``: the units whose data the method's setting assumes the server knows (e.g.
    Blink's node features and labels, :attr:`dpgl.methods.Method.public`); data of such a unit
    recorded as used as is is reported as public in this setting, not as unprotected data.
    ``rdp``: the RDP curve over :data:`dpgl.privacy.multiterm.ORDERS` of every unit with a
    Gaussian or RDP part whose record has one (:func:`dpgl.privacy.rdp.record_rdp`), so that a
    later selection over runs can be charged from it (:mod:`dpgl.privacy.selection`); stored
    rounded up to 6 significant digits.
    """

    entries: list[ReportEntry] = field(default_factory=list)
    totals: dict[Unit, Guarantee] = field(default_factory=dict)
    per_user: Guarantee | None = None
    delta: float | None = None
    method: str | None = None
    notes: list[str] = field(default_factory=list)
    public: frozenset[Unit] = frozenset()
    rdp: dict[Unit, Any] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.entries

    @property
    def private(self) -> bool:
        """True when something was recorded and every unit's total is finite."""
        return bool(self.totals) and all(math.isfinite(g.epsilon) for g in self.totals.values())

    def total(self, unit: Unit | str) -> Guarantee | None:
        return self.totals.get(check_unit(unit))

    @property
    def protected(self) -> dict[Unit, Guarantee]:
        """Units with a finite total (what the run protects)."""
        return {u: g for u, g in self.totals.items() if math.isfinite(g.epsilon)}

    @property
    def used_as_is(self) -> list[str]:
        """Names of the parts whose data was used without protection."""
        names: list[str] = []
        for e in self.entries:
            if (e.kind == "nonprivate" or math.isinf(e.epsilon)) and e.name not in names:
                names.append(e.name)
        return names

    def _as_is(self, *, public: bool, units: tuple[Unit, ...] | None = None) -> list[str]:
        """Names of the parts used as is whose unit is (``public``) or is not public in the
        method's setting, optionally only those of ``units``."""
        names: list[str] = []
        for e in self.entries:
            if not (e.kind == "nonprivate" or math.isinf(e.epsilon)) or e.name in names:
                continue
            if (e.unit in self.public) == public and (units is None or e.unit in units):
                names.append(e.name)
        return names

    @property
    def headline(self) -> str:
        """One plain sentence (two when something is not protected): what is protected, at
        which epsilon, under which unit and by which parts; then what is not protected, and
        whether the method's setting assumes it public. Everything comes from the recorded
        entries and totals and :attr:`public`."""
        if self.empty:
            return "Nothing was released: no data release recorded."
        order = list(Unit)
        clauses = []
        for unit in sorted(self.totals, key=order.index):
            g = self.totals[unit]
            parts = [e for e in self.entries if e.unit is unit and math.isfinite(e.epsilon)]
            if not parts:
                continue
            if len(parts) == 1:
                inner = parts[0].name
            else:
                inner = " + ".join(f"{e.name} {_fmt_eps(e.epsilon)}" for e in parts)
                if sum(e.kind in ("gaussian", "rdp") for e in parts) > 1:
                    inner += ", each alone; the noisy parts compose jointly"
            if math.isfinite(g.epsilon):
                clauses.append(f"{UNIT_SUBJECTS[unit]}, {_budget_words(g)} {unit.value} "
                               f"({inner})")
            else:  # some users' reports are randomized, the others' data is used as is
                eps = math.fsum(e.epsilon for e in parts)
                delta = min(math.fsum(e.delta for e in parts), 1.0 - 1e-16)
                budget = _budget_words(Guarantee(eps, delta, unit))
                who = ("for the users whose reports are randomized" if unit in LOCAL_UNITS
                       else "for the randomized parts")
                clauses.append(f"{UNIT_SUBJECTS[unit]}, {budget} {unit.value} {who} ({inner})")
        as_is, public = self._as_is(public=False), self._as_is(public=True)
        if clauses:
            sentence = "Protected: " + "; ".join(clauses)
            local = [u for u in self.protected if u in LOCAL_UNITS]
            if (self.per_user is not None and math.isfinite(self.per_user.epsilon)
                    and len(local) > 1):
                sentence += f"; per user {_budget_words(self.per_user)} in total"
            missing = ([f"{_and(as_is)} (used as is)"] if as_is else []) + (
                [f"{_and(public)} (assumed public in this setting)"] if public else [])
            if missing:
                sentence += ". Not protected: " + "; ".join(missing)
            return sentence + "."
        if not as_is:
            return (f"Nothing private is used: {_and(public)} used as is (assumed public in "
                    "this setting).")
        sentence = f"Nothing is protected: {_and(as_is)} used as is"
        if public:
            sentence += f"; {_and(public)} assumed public in this setting"
        return sentence + "."

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable form (inf epsilon -> None; ``rdp`` only when there is one)."""
        from dpgl.privacy.rdp import round_up
        out = {
            "summary": self.headline,
            "entries": [e.to_dict() for e in self.entries],
            "totals": {u.value: g.to_dict() for u, g in self.totals.items()},
            "per_user": None if self.per_user is None else self.per_user.to_dict(),
            "delta": self.delta,
            "method": self.method,
            "notes": list(self.notes),
            "public": sorted(u.value for u in self.public),
        }
        if self.rdp:
            out["rdp"] = {u.value: round_up(c) for u, c in self.rdp.items()}
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PrivacyReport:
        from dpgl.privacy.rdp import check_curve
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
                public=frozenset(check_unit(u) for u in d.get("public", [])),
                rdp={check_unit(u): check_curve(c, f"the stored RDP curve of {u}")
                     for u, c in (d.get("rdp") or {}).items()},
            )
        except (KeyError, TypeError, ValueError) as err:  # PrivacyError is a ValueError
            raise ConfigError(f"malformed privacy report: {err}") from None

    def __str__(self) -> str:
        if self.empty:
            return "privacy: no data release recorded"
        parts = []
        for unit, g in self.totals.items():
            parts.append(f"{unit.value} {_total_text(g, unit in self.public)}")
        if self.per_user is not None and math.isfinite(self.per_user.epsilon) and len(
                [u for u in self.totals if u in LOCAL_UNITS]) > 1:
            parts.append(f"per user {_total_text(self.per_user)}")
        return "privacy: " + "; ".join(parts)

    def render(self) -> str:
        """Plain text that opens with :attr:`headline`, then every part, the per-unit totals,
        and the per-user local total (or, when that is unbounded, which local data is used as
        is)."""
        if self.empty:
            return self.headline + "\n"
        lines = [self.headline, "  Privacy report, part by part:"]
        rows = [("part", "unit", "guarantee", "mechanism")]
        for e in self.entries:
            mech = e.mechanism
            if e.kind in ("gaussian", "rdp"):
                mech += f" [{e.composition}]"
            elif e.count > 1:
                mech += f" [x{e.count}, {e.composition} composition]"
            if e.details:
                mech += f" ({e.details})"
            guarantee = e.guarantee_text
            if guarantee == "no privacy" and e.unit in self.public:
                guarantee = "used as is (public)"
            rows.append((e.name, e.unit.value, guarantee, mech.strip()))
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        for r in rows:
            lines.append("    " + "  ".join(r[i].ljust(widths[i]) for i in range(3))
                         + "  " + r[3])
        lines.append("  Totals per unit (basic composition across parts):")
        uw = max(len(u.value) for u in self.totals)
        for unit, g in self.totals.items():
            lines.append(f"    {unit.value.ljust(uw)}  {_total_text(g, unit in self.public)}")
        if self.per_user is not None and math.isfinite(self.per_user.epsilon):
            lines.append("  Per user (local model: edge-, feature- and label-LDP parts, basic "
                         f"composition): {_total_text(self.per_user)}")
        elif self.per_user is not None and self.protected:  # say which local data is as is
            for public in (True, False):
                names = self._as_is(public=public, units=LOCAL_UNITS)
                if names:
                    what = _and(names)
                    lines.append(f"  {what[0].upper()}{what[1:]}: used as is ("
                                 + ("public in this setting)." if public else "no privacy)."))
        for n in self.notes:
            lines.append(f"  Note: {n}")
        return "\n".join(lines) + "\n"
