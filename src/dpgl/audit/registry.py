"""Every audit dpgl ships, by name: the randomizers the methods run (end to end, many runs,
:mod:`dpgl.audit.local`), the central methods' training (one run with canaries,
:mod:`dpgl.audit.central`) and the primitive mechanisms (:mod:`dpgl.privacy.audit`).
``dpgl audit --list`` prints :func:`list_audits`; ``dpgl audit NAME --epsilon E`` runs
:func:`run_named_audit`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpgl.audit.central import CENTRAL_AUDITS, run_central_audit
from dpgl.audit.local import LOCAL_AUDITS
from dpgl.errors import ConfigError, unknown_name
from dpgl.privacy.audit import AUDITABLE_MECHANISMS, parse_audit_params, run_audit

__all__ = ["AuditListing", "list_audits", "parse_named_params", "run_named_audit"]

KINDS = ("randomizer", "central", "primitive")


@dataclass(frozen=True)
class AuditListing:
    name: str
    kind: str          # randomizer | central | primitive
    description: str
    shipped: bool


def list_audits(include_broken: bool = False) -> list[AuditListing]:
    """Every registered audit, randomizers first (the deliberately broken ones if asked)."""
    out = [AuditListing(n, "randomizer", a.description, a.shipped)
           for n, a in LOCAL_AUDITS.items()]
    out += [AuditListing(n, "central", a.description, a.shipped)
            for n, a in CENTRAL_AUDITS.items()]
    out += [AuditListing(n, "primitive", a.description, a.shipped)
            for n, a in AUDITABLE_MECHANISMS.items()]
    return [a for a in out if a.shipped or include_broken]


def _kind(name: str) -> str:
    if name in LOCAL_AUDITS:
        return "randomizer"
    if name in CENTRAL_AUDITS:
        return "central"
    if name in AUDITABLE_MECHANISMS:
        return "primitive"
    raise unknown_name("audit", name, [a.name for a in list_audits(include_broken=True)])


def parse_named_params(name: str, items: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """``key=value`` parameters for audit ``name`` (typed as the registry defaults)."""
    kind = _kind(name)
    if kind == "central":
        if items:
            raise ConfigError(f"the central audit {name!r} takes no key=value parameters "
                              "here; use the Python API (dpgl.audit.run_central_audit)")
        return {}
    registry = LOCAL_AUDITS if kind == "randomizer" else AUDITABLE_MECHANISMS
    return parse_audit_params(name, items, registry=registry)


def run_named_audit(name: str, epsilon: float, *, trials: int | None = None, seed: int = 0,
                    confidence: float = 0.95, spend_twice: bool = False,
                    canaries: int = 500, **params: Any) -> Any:
    """Run audit ``name`` at ``epsilon``; the result has ``passed``, ``render()`` and
    ``empirical_lower_bound``. ``spend_twice`` runs the variant of a randomizer or primitive
    that draws with twice its claim (it must FAIL); central audits have named broken variants
    instead (``dpsgd-noise-halved``, ``dpsgd-no-clip``)."""
    kind = _kind(name)
    if kind == "central":
        if spend_twice:
            raise ConfigError("central audits have named broken variants instead of "
                              "--spend-twice: dpsgd-noise-halved, dpsgd-no-clip")
        return run_central_audit(name, epsilon, canaries=canaries, seed=seed,
                                 confidence=confidence, **params)
    registry = LOCAL_AUDITS if kind == "randomizer" else AUDITABLE_MECHANISMS
    return run_audit(name, epsilon, trials=trials, confidence=confidence, seed=seed,
                     spend_factor=2.0 if spend_twice else 1.0, registry=registry, **params)
