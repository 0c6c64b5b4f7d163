"""Central (trusted-server) node-level DP building blocks: DPAR's differentially private
approximate PPR (DP-APPR-EM / DP-APPR-GM, column clipping) and GAP's aggregation
perturbation under bounded-degree node-DP. See docs/node-dp.md for every guarantee and its
proof."""

from typing import TYPE_CHECKING

from dpgl._lazy import attach

if TYPE_CHECKING:
    from dpgl.central.aggregation import (
        AggregationPerturbation,
        ap_sensitivity,
        check_degree_bound,
        max_degrees,
    )
    from dpgl.central.dp_appr import (
        DPAPPRExponential,
        DPAPPRGaussian,
        cap_column_occurrences,
        clip_columns_l1,
        topk_nonprivate,
    )

__getattr__, __dir__ = attach(__name__, __file__)

__all__ = [
    "AggregationPerturbation",
    "DPAPPRExponential",
    "DPAPPRGaussian",
    "ap_sensitivity",
    "cap_column_occurrences",
    "check_degree_bound",
    "clip_columns_l1",
    "max_degrees",
    "topk_nonprivate",
]
