"""The base of every object that draws privacy noise.

A :class:`Randomizer` states its guarantee from the parameters it draws with (one stored noise
parameter per part; the guarantee is derived from it, never stated separately) and *charges*
the active accountant (:func:`dpgl.privacy.current_accountant`) when it draws: Opacus' pattern,
in which the optimizer that adds the noise feeds the accountant. A composed randomizer (Blink:
RR + Laplace degree) holds its parts as randomizers; each part charges when its noise is drawn
and the composed guarantee is the composition of the parts' guarantees
(:meth:`Randomizer.parts`).

In the local model one charge means "every user of the current population sent one report
with this guarantee": a whole-graph simulation charges once, a second simulation of the same
users charges again. Outside an active accountant (unit tests, the audit harness) charging is a
no-op.
"""

from __future__ import annotations

from typing import Any

from dpgl.errors import PrivacyError
from dpgl.privacy.accountant import current_accountant
from dpgl.privacy.guarantee import Guarantee, Unit
from dpgl.privacy.interface import AccountantInterface

__all__ = ["Randomizer", "compose_parts", "record_nonprivate"]


def record_nonprivate(name: str, description: str, unit: Unit | str) -> None:
    """Record in the active accountant that ``name`` (data of ``unit``) is used as is, e.g. the
    users of DPRR's customized setting who send their true lists."""
    acc = current_accountant()
    if acc is not None:
        acc.spend_nonprivate(name, description, unit)


def compose_parts(parts: dict[str, Guarantee], unit: Unit) -> Guarantee:
    """Basic composition of the parts of one user's report (sequential composition: epsilons
    and deltas add; Dwork & Roth 2014, Thm 3.16)."""
    if not parts:
        raise PrivacyError("a composed randomizer needs at least one part")
    if any(g.unit is not unit for g in parts.values()):
        raise PrivacyError(f"every part of a composed {unit.value} randomizer must protect "
                           f"{unit.value}")
    eps = sum(g.epsilon for g in parts.values())
    delta = min(sum(g.delta for g in parts.values()), 1.0 - 1e-16)
    return Guarantee(eps, delta, unit)


class Randomizer:
    """Something that draws privacy noise and records what it spends when it draws.

    Subclasses define :attr:`guarantee` from their noise parameters and call :meth:`charge`
    where they draw. ``label`` names the part in the privacy report.
    """

    label: str = ""

    @property
    def guarantee(self) -> Guarantee:  # pragma: no cover - abstract
        raise NotImplementedError

    def parts(self) -> dict[str, Guarantee]:
        """The named parts one report composes (a primitive is its own single part)."""
        return {self.label or type(self).__name__: self.guarantee}

    def charge(self, *, count: int = 1, composition: str = "basic", delta_slack: float = 0.0,
               accountant: AccountantInterface | None = None, name: str | None = None
               ) -> Guarantee | None:
        """Record one release of this randomizer (``count`` releases composed by
        ``composition`` when one protected unit is in all of them) in ``accountant`` or, by
        default, the active accountant. Returns the composed guarantee (None: not recorded)."""
        acc = accountant if accountant is not None else current_accountant()
        if acc is None:
            return None
        return acc.spend(name or self.label or type(self).__name__, self.guarantee,
                         mechanism=repr(self), count=count, composition=composition,
                         delta_slack=delta_slack)

    def _repr_args(self) -> dict[str, Any]:
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v!r}"
                         for k, v in self._repr_args().items())
        return f"{type(self).__name__}({args})"
