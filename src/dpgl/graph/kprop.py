"""KProp's parameter-free propagation (LPGNN, Sajadmanesh & Gatica-Perez, CCS 2021, Sec. 4.2,
Alg. 2): the one-step aggregation matrix over N(v) - {v} (GCN's D^-1/2 A D^-1/2 or the mean
D^-1 A) and its K-fold application. Used by the KProp layer (:mod:`dpgl.nn.kprop`) and by the
server-side smoothing estimators (:mod:`dpgl.estimators.smoothing`).
"""

from __future__ import annotations

import scipy.sparse as sp
import torch

from dpgl.errors import ConfigError, unknown_name
from dpgl.graph.propagation import SparseOperator, gcn_normalized_scipy, to_scipy, to_torch_csr

__all__ = ["AGGREGATORS", "kprop", "kprop_matrix"]

AGGREGATORS = ("gcn", "mean")


def kprop_matrix(edge_index: torch.Tensor, num_nodes: int, *, aggregator: str = "gcn",
                 self_loops: bool = False, edge_weight: torch.Tensor | None = None,
                 operator: bool = False) -> torch.Tensor | SparseOperator:
    """The one-step aggregation matrix of KProp as CSR (rows = targets).

    ``aggregator="gcn"``: D^-1/2 A D^-1/2; ``"mean"``: D^-1 A. Without self-loops (the
    default, LPGNN Alg. 2 aggregates over N(v) - {v}); ``self_loops=True`` uses A + I
    (the ablation of LPGNN Fig. 6). Existing self-loops in ``edge_index`` are dropped first.
    ``operator=True`` returns a :class:`~dpgl.graph.propagation.SparseOperator` (cheap
    backward, for propagation inside the training loop).
    """
    if aggregator not in AGGREGATORS:
        raise unknown_name("KProp aggregator", aggregator, AGGREGATORS)
    keep = edge_index[0] != edge_index[1]
    ei = edge_index[:, keep]
    ew = None if edge_weight is None else edge_weight[keep]
    if aggregator == "gcn":
        mat = gcn_normalized_scipy(ei, num_nodes, ew, add_self_loops=self_loops)
    else:
        a = to_scipy(ei, num_nodes, ew)
        if self_loops:
            a = a + sp.identity(num_nodes, dtype=a.dtype, format="csr")
        deg = a.sum(axis=1).A.ravel()
        inv = (1.0 / deg.clip(min=1e-30)) * (deg > 0)
        mat = (sp.diags(inv.astype("float32")) @ a).tocsr()
    return SparseOperator(mat) if operator else to_torch_csr(mat)


def kprop(x: torch.Tensor, adj: torch.Tensor | SparseOperator, steps: int) -> torch.Tensor:
    """AGG^K(x): ``steps`` sparse products with the aggregation matrix ``adj``."""
    if steps < 0:
        raise ConfigError(f"KProp steps must be >= 0, got {steps}")
    for _ in range(steps):
        x = adj @ x
    return x
