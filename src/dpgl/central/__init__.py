"""Central (trusted-server) node-level DP building blocks: DPAR's differentially private
approximate PPR (DP-APPR-EM / DP-APPR-GM, column clipping) and GAP's aggregation
perturbation. See docs/node-dp.md for every guarantee and what is proven vs. taken as stated."""

from dpgl.central.aggregation import (
    aggregation_perturbation,
    ap_sensitivity,
    bound_degree,
    bound_in_degree_sample,
)
from dpgl.central.dp_appr import (
    DPAPPRExponential,
    DPAPPRGaussian,
    cap_column_occurrences,
    clip_columns_l1,
    topk_nonprivate,
)

__all__ = [
    "DPAPPRExponential",
    "DPAPPRGaussian",
    "aggregation_perturbation",
    "ap_sensitivity",
    "bound_degree",
    "bound_in_degree_sample",
    "cap_column_occurrences",
    "clip_columns_l1",
    "topk_nonprivate",
]
