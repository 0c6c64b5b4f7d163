"""Empirical privacy audits of what dpgl runs: every shipped randomizer end to end through the
methods' own code path (:mod:`dpgl.audit.local`, many runs with searched events, on the
engine of :mod:`dpgl.privacy.audit`), and the central (node-level) methods' training with
canaries (:mod:`dpgl.audit.central`, the one-run bound of Steinke, Nasr & Jagielski,
NeurIPS 2023, in :mod:`dpgl.audit.one_run`). :mod:`dpgl.audit.registry` names them all."""

from typing import TYPE_CHECKING

from dpgl._lazy import attach

if TYPE_CHECKING:
    from dpgl.audit.central import (
        CENTRAL_AUDITS,
        CentralAuditResult,
        list_central_audits,
        run_central_audit,
    )
    from dpgl.audit.local import LOCAL_AUDITS
    from dpgl.audit.one_run import (
        best_guess_bound,
        epsilon_lower_bound,
        make_guesses,
        p_value,
    )
    from dpgl.audit.registry import list_audits, parse_named_params, run_named_audit

__getattr__, __dir__ = attach(__name__, __file__)

__all__ = [
    "CENTRAL_AUDITS",
    "LOCAL_AUDITS",
    "CentralAuditResult",
    "best_guess_bound",
    "epsilon_lower_bound",
    "list_audits",
    "list_central_audits",
    "make_guesses",
    "p_value",
    "parse_named_params",
    "run_central_audit",
    "run_named_audit",
]
