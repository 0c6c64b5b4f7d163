"""RDP curves (over :data:`dpgl.privacy.multiterm.ORDERS`) of what an accountant recorded.

:func:`pure_rdp` is the RDP curve of an eps-DP release: eps-DP implies (eps^2/2)-zCDP, i.e.
(lambda, lambda eps^2/2)-RDP for every lambda > 1 (Bun & Steinke 2016, Prop. 3.3), and
D_lambda <= D_inf <= eps. :func:`record_rdp` composes one unit's parts of a record in RDP
(Mironov 2017, Prop. 1: RDP curves add): Gaussian parts with dp-accounting's RDP accountant,
RDP curves as recorded, pure parts with :func:`pure_rdp` of each release (``count`` times);
a parallel scope is the pointwise maximum over its members (disjoint units); a subsampled
scope is its inner curve (a Poisson sample never increases a Renyi divergence, by joint
convexity of exp((lambda - 1) D_lambda); the amplification is not claimed). The sum is made
nondecreasing in lambda (as D_lambda is), so an order dp-accounting leaves unbounded takes the
next order's value. An (eps, delta)
part with delta > 0 that is not made of pure releases, or data used as is, has no RDP curve:
:class:`PrivacyError`. Private hyper-parameter selection (:mod:`dpgl.privacy.selection`) is
charged from these curves.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from dpgl.errors import PrivacyError
from dpgl.privacy.guarantee import Unit, check_epsilon
from dpgl.privacy.multiterm import ORDERS

if TYPE_CHECKING:
    from dpgl.privacy.scopes import Part, Scope

__all__ = ["check_curve", "noisy_units", "pure_rdp", "record_rdp", "round_up"]


def pure_rdp(epsilon: float) -> np.ndarray:
    """RDP curve of an eps-DP release: min(eps, lambda eps^2 / 2) at every order of ORDERS
    (Bun & Steinke 2016, Prop. 3.3, and D_lambda <= eps)."""
    eps = check_epsilon(epsilon)
    return np.minimum(eps, ORDERS * eps * eps / 2.0)


def check_curve(curve: object, what: str = "an RDP curve") -> np.ndarray:
    """``curve`` as a float array over ORDERS: finite values >= 0 (:class:`PrivacyError`)."""
    c = np.asarray(curve, dtype=float)
    if c.shape != ORDERS.shape or not np.all(np.isfinite(c)) or np.any(c < 0):
        raise PrivacyError(f"{what} must hold {ORDERS.size} finite values >= 0 (one per order "
                           "of dpgl.privacy.multiterm.ORDERS)")
    return c


def round_up(curve: np.ndarray, digits: int = 6) -> list[float]:
    """The curve rounded *up* to ``digits`` significant digits (for storage): each value is
    inflated by 10^(1-digits) before rounding to nearest, so it never decreases."""
    return [float(f"{float(x) * (1.0 + 10.0 ** (1 - digits)):.{digits}g}") for x in curve]


def record_rdp(record: Sequence[Part | Scope], unit: Unit) -> np.ndarray:
    """The RDP curve of everything ``record`` holds for ``unit`` (see the module docstring)."""
    import dp_accounting

    from dpgl.privacy.dp_events import _relation, gaussian_dp_event, make_dp_accountant
    from dpgl.privacy.multiterm import quiet_absl
    from dpgl.privacy.scopes import Part, Scope

    total = np.zeros(ORDERS.size)
    spends = []
    for p in record:
        if isinstance(p, Scope):
            members = [record_rdp(m, unit) for _, m in p.members]
            if p.kind == "subsampled":
                total += members[0]
            elif members:
                total += np.max(members, axis=0)
            continue
        assert isinstance(p, Part)
        e = p.entry
        if e.unit is not unit:
            continue
        if p.gaussian is not None:
            spends.append(p.gaussian)
        elif p.curve is not None:
            total += p.curve
        elif e.kind == "nonprivate" or math.isinf(e.epsilon):
            raise PrivacyError(f"{e.name!r} used {unit.value} data as is: no RDP curve")
        elif p.release is not None and p.release.is_pure:
            total += e.count * pure_rdp(p.release.epsilon)
        elif e.delta == 0:
            total += pure_rdp(e.epsilon)
        else:
            raise PrivacyError(f"{e.name!r} is an (eps, delta) part with delta > 0: no RDP "
                               "curve")
    if spends:
        acc = make_dp_accountant("rdp", _relation(spends), orders=ORDERS)
        with quiet_absl():
            acc.compose(dp_accounting.ComposedDpEvent([gaussian_dp_event(s) for s in spends]))
        total += np.asarray(acc._rdp, dtype=float)
    # D_lambda is nondecreasing in lambda: an order dp-accounting could not bound (inf) takes
    # the bound of the next larger one
    total = np.minimum.accumulate(total[::-1])[::-1]
    if not np.all(np.isfinite(total)):
        raise PrivacyError(f"no finite RDP curve for {unit.value} at the largest orders")
    return total


def noisy_units(record: Sequence[Part | Scope]) -> list[Unit]:
    """Units with a Gaussian or RDP-curve part anywhere in ``record`` (scopes included): those
    whose report states an RDP curve (:attr:`dpgl.privacy.PrivacyReport.rdp`)."""
    from dpgl.privacy.scopes import Scope

    found: list[Unit] = []
    for p in record:
        units = ([u for _, m in p.members for u in noisy_units(m)] if isinstance(p, Scope)
                 else [p.entry.unit] if p.gaussian is not None or p.curve is not None else [])
        found += [u for u in units if u not in found]
    return found
