"""Server-side smoothing of noisy features and labels over the (known or estimated) graph.

* Feature smoothing (Solitude, Lin et al. TIFS 2022, Eq. 11; the same operation as LPGNN's
  KProp aggregation, Alg. 2): X_s = AGG^{l_x}(X'), ``l_x`` aggregation steps of the rectified
  multi-bit features over N(v) - {v}. Averaging the independent, unbiased per-user reports of
  a neighbourhood lowers the variance (LPGNN Sec. 4.2, Prop. 2).
* Label smoothing / denoising (Solitude Eq. 12; LPGNN's "Drop", Sec. 4.3): the one-hot
  noisy labels of the labelled nodes (all other rows zero) are propagated ``l_y`` steps,
  Y~ = softmax(AGG^{l_y}(Y')), and each labelled node is trained on argmax Y~_v (its own
  noisy label when its propagated row is empty, e.g. an isolated node).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dpgl.errors import ConfigError
from dpgl.graph.kprop import kprop, kprop_matrix
from dpgl.graph.propagation import SparseOperator

__all__ = ["denoise_labels", "feature_smoothing", "propagate_labels"]


def feature_smoothing(x: torch.Tensor, edge_index: torch.Tensor, num_nodes: int, hops: int, *,
                      aggregator: str = "gcn", self_loops: bool = False,
                      adj: torch.Tensor | SparseOperator | None = None) -> torch.Tensor:
    """Solitude Eq. 11 / KProp aggregation: ``hops`` steps over the graph (``adj`` reuses a
    precomputed :func:`~dpgl.graph.kprop.kprop_matrix`)."""
    if hops < 0:
        raise ConfigError(f"feature smoothing hops must be >= 0, got {hops}")
    if hops == 0:
        return x
    a = adj if adj is not None else kprop_matrix(edge_index, num_nodes, aggregator=aggregator,
                                                 self_loops=self_loops)
    return kprop(x, a, hops)


def propagate_labels(y_noisy: torch.Tensor, labelled: torch.Tensor, num_classes: int,
                     adj: torch.Tensor | SparseOperator, steps: int) -> torch.Tensor:
    """softmax(AGG^steps(Y')) where Y' is one-hot on the ``labelled`` nodes and 0 elsewhere
    (LPGNN Drop / Solitude Eq. 12). Returns (n, C) probabilities (before the softmax when
    ``steps == 0``: the one-hot rows)."""
    n = y_noisy.size(0)
    y = torch.zeros(n, num_classes)
    y[labelled] = F.one_hot(y_noisy[labelled], num_classes).float()
    if steps == 0:
        return y
    return torch.softmax(kprop(y, adj, steps), dim=-1)


def denoise_labels(y_noisy: torch.Tensor, labelled: torch.Tensor, num_classes: int,
                   adj: torch.Tensor | SparseOperator | None, steps: int) -> torch.Tensor:
    """Hard training targets after label smoothing: argmax of :func:`propagate_labels` on
    every node whose propagated row received mass, else the node's own noisy label."""
    if steps == 0:
        return y_noisy.clone()
    if adj is None:
        raise ConfigError("label smoothing with steps > 0 needs an aggregation matrix")
    n = y_noisy.size(0)
    y = torch.zeros(n, num_classes)
    y[labelled] = F.one_hot(y_noisy[labelled], num_classes).float()
    raw = kprop(y, adj, steps)
    out = torch.softmax(raw, dim=-1).argmax(dim=-1)
    empty = raw.abs().sum(dim=-1) == 0
    out[empty] = y_noisy[empty]
    return out
