"""Gaussian and RDP parts as dp-accounting events, and their joint composition to epsilon.

A Gaussian part (:class:`GaussianSpend`: Gaussian, Poisson-subsampled or fixed-size-subsampled
Gaussian, self-composed over its steps) is a dp-accounting event (:func:`gaussian_dp_event`).
All Gaussian parts and RDP curves (over :data:`dpgl.privacy.multiterm.ORDERS`) of one unit
are composed jointly by :func:`joint_epsilon`, with dp-accounting's RDP or PLD accountant
(RDP whenever an RDP curve is present), and converted to epsilon at a target delta.
:class:`dpgl.privacy.Accountant` records these parts; :mod:`dpgl.privacy.calibration` uses the
same events to choose noise multipliers.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from importlib import metadata
from typing import TYPE_CHECKING

from dpgl.errors import ConfigError, PrivacyError
from dpgl.privacy.multiterm import ORDERS, rdp_to_epsilon

if TYPE_CHECKING:
    import dp_accounting
    import numpy as np

__all__ = [
    "METHODS",
    "SAMPLINGS",
    "GaussianSpend",
    "dp_accounting_version",
    "gaussian_dp_event",
    "joint_epsilon",
    "make_dp_accountant",
    "method_label",
]

#: Accounting methods of the joint Gaussian/RDP composition.
METHODS = ("rdp", "pld")
#: How a Gaussian part's sample is drawn.
SAMPLINGS = ("poisson", "fixed")

def dp_accounting_version() -> str:
    try:
        return metadata.version("dp-accounting")
    except metadata.PackageNotFoundError:  # pragma: no cover - always installed
        return "unknown"

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
    import dp_accounting
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
    import dp_accounting
    from dp_accounting import pld, rdp
    relations = dp_accounting.NeighboringRelation
    nr = (relations.REPLACE_ONE if relation == "replace_one"
          else relations.ADD_OR_REMOVE_ONE)
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

def joint_epsilon(spends: list[GaussianSpend], curves: list[np.ndarray], delta: float,
                  method: str) -> tuple[float, str]:
    """Jointly compose Gaussian events and RDP curves; returns (epsilon, method used)."""
    import dp_accounting
    import numpy as np
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

def method_label(used: str) -> str:
    """How a report names the accounting method used ("RDP", "PLD" or the fallback's text)."""
    return used.upper() if used in METHODS else used
