"""Client-side randomizers: what one user's device runs, plus a vectorized whole-graph
simulation with the same distribution that never builds an n x n matrix.

Edge LDP (one bit of one user's neighbor list): :class:`RR` (Warner), :class:`SymRR`
(lower triangle only), :class:`DPRR` (degree-preserving RR), :class:`BlinkClient` (RR +
Laplace degree), :class:`LocalLap` (Laplace bits: L-DpGCN / LocalLap), :class:`LDPGenClient`
(noisy degree vectors). See docs/edge-ldp.md.
"""

from typing import TYPE_CHECKING

from dpgl._lazy import attach

if TYPE_CHECKING:
    from dpgl.mechanisms.blink import BlinkClient, BlinkReport
    from dpgl.mechanisms.dprr import DPRR, DPRRReport, dprr_budget, dprr_sampling_probability
    from dpgl.mechanisms.lap import LapCandidates, LapReport, LocalLap
    from dpgl.mechanisms.ldpgen import LDPGenClient
    from dpgl.mechanisms.rr import RR, DirectedReports
    from dpgl.mechanisms.symrr import SymRR

__getattr__, __dir__ = attach(__name__, __file__)

__all__ = [
    "DPRR",
    "RR",
    "BlinkClient",
    "BlinkReport",
    "DPRRReport",
    "DirectedReports",
    "LDPGenClient",
    "LapCandidates",
    "LapReport",
    "LocalLap",

    "SymRR",

    "dprr_budget",
    "dprr_sampling_probability",
]
