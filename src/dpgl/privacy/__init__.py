"""Privacy core: guarantees, the accountant, primitive mechanisms and the audit harness.

No graph code lives here. See docs/privacy.md ("Privacy guarantees") for every mechanism's
unit, guarantee and proof reference.
"""

from typing import TYPE_CHECKING

from dpgl._lazy import attach

if TYPE_CHECKING:
    from dpgl.privacy.accountant import (
        Accountant,
        ParallelScope,
        current_accountant,
        evaluation_only,
    )
    from dpgl.privacy.amplification import amplify_by_subsampling, subsampled_inner_target
    from dpgl.privacy.audit import (
        AUDITABLE_MECHANISMS,
        AuditResult,
        list_auditable,
        parse_audit_params,
        run_audit,
    )
    from dpgl.privacy.calibration import (
        gaussian_epsilon,
        gaussian_noise_multiplier,
        per_release_epsilon,
    )
    from dpgl.privacy.composition import (
        advanced_composition,
        advanced_composition_epsilon,
        basic_composition,
        best_composition,
        kov_delta,
        optimal_composition,
        optimal_composition_epsilon,
    )
    from dpgl.privacy.dp_events import GaussianSpend, gaussian_dp_event
    from dpgl.privacy.gaussian import (
        GaussianMechanism,
        analytic_gaussian_delta,
        analytic_gaussian_epsilon,
        analytic_gaussian_sigma,
        classic_gaussian_sigma,
    )
    from dpgl.privacy.guarantee import (
        Guarantee,
        Unit,
        check_delta,
        check_epsilon,
        check_fraction,
        edge_ldp_to_relationship_dp,
        symmetric_edge_ldp_to_relationship_dp,
    )
    from dpgl.privacy.gumbel_topk import GumbelTopK
    from dpgl.privacy.interface import AccountantInterface
    from dpgl.privacy.laplace import DiscreteLaplace, LaplaceMechanism, sample_discrete_laplace
    from dpgl.privacy.multibit import ClippingWarning, MultiBit, multibit_variance, optimal_m
    from dpgl.privacy.one_bit import OneBit, one_bit_estimate, one_bit_probability
    from dpgl.privacy.randomized_response import KRandomizedResponse, RandomizedResponse
    from dpgl.privacy.randomizer import Randomizer, compose_parts
    from dpgl.privacy.rdp import pure_rdp
    from dpgl.privacy.reference_dprr import DegreeRRSampling
    from dpgl.privacy.report import UNIT_SUBJECTS, PrivacyReport, ReportEntry
    from dpgl.privacy.selection import (
        PoissonRepetitions,
        PrivateSelection,
        TruncatedNegativeBinomial,
        selection_rdp,
    )
    from dpgl.privacy.snapping import SnappingMechanism

__getattr__, __dir__ = attach(__name__, __file__)

__all__ = [
    "AUDITABLE_MECHANISMS",
    "UNIT_SUBJECTS",
    "Accountant",
    "AccountantInterface",
    "AuditResult",
    "ClippingWarning",
    "DegreeRRSampling",
    "DiscreteLaplace",
    "GaussianMechanism",
    "GaussianSpend",
    "Guarantee",
    "GumbelTopK",
    "KRandomizedResponse",
    "LaplaceMechanism",
    "MultiBit",
    "OneBit",
    "ParallelScope",
    "PoissonRepetitions",
    "PrivacyReport",
    "PrivateSelection",
    "RandomizedResponse",
    "Randomizer",
    "ReportEntry",
    "SnappingMechanism",
    "TruncatedNegativeBinomial",
    "Unit",
    "advanced_composition",
    "advanced_composition_epsilon",
    "amplify_by_subsampling",
    "analytic_gaussian_delta",
    "analytic_gaussian_epsilon",
    "analytic_gaussian_sigma",
    "basic_composition",
    "best_composition",
    "check_delta",
    "check_epsilon",
    "check_fraction",
    "classic_gaussian_sigma",
    "compose_parts",
    "current_accountant",
    "edge_ldp_to_relationship_dp",
    "evaluation_only",
    "gaussian_dp_event",
    "gaussian_epsilon",
    "gaussian_noise_multiplier",
    "kov_delta",
    "list_auditable",
    "multibit_variance",
    "one_bit_estimate",
    "one_bit_probability",
    "optimal_composition",
    "optimal_composition_epsilon",
    "optimal_m",
    "parse_audit_params",
    "per_release_epsilon",
    "pure_rdp",
    "run_audit",
    "sample_discrete_laplace",
    "selection_rdp",
    "subsampled_inner_target",
    "symmetric_edge_ldp_to_relationship_dp",
]
