"""A graph prepared once for full-batch training: the edge list plus lazily built,
pre-normalized CSR propagation matrices (see :mod:`dpgl.graph.propagation`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from dpgl.device import indexed
from dpgl.graph.propagation import (
    SparseOperator,
    check_edge_index,
    gcn_normalized_scipy,
    mean_normalized_scipy,
)
from dpgl.nn.gat import AttentionEdges


@dataclass
class PreparedGraph:
    """Edges (``edge_index`` [2, E], optional ``edge_weight`` [E]) of an estimated or true
    graph on ``num_nodes`` nodes. Propagation matrices are computed on first use and cached,
    so every epoch of every layer reuses them."""

    edge_index: torch.Tensor
    num_nodes: int
    edge_weight: torch.Tensor | None = None
    #: weighted in-degrees (self-loop included) that normalise :meth:`gcn_adj`, one per node;
    #: None: this graph's own. A block of a larger graph (layer-wise inference) passes the
    #: larger graph's, so that its targets' rows equal the larger graph's rows.
    gcn_degrees: torch.Tensor | None = None
    _cache: dict[str, SparseOperator] = field(default_factory=dict, repr=False)
    _attention: AttentionEdges | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        check_edge_index(self.edge_index, self.num_nodes)
        self.edge_index = self.edge_index.long()
        if self.edge_weight is not None:
            self.edge_weight = self.edge_weight.float()
        if self.gcn_degrees is not None and self.gcn_degrees.numel() != self.num_nodes:
            raise ValueError(f"gcn_degrees has {self.gcn_degrees.numel()} entries for "
                             f"{self.num_nodes} nodes")

    @property
    def num_edges(self) -> int:
        return int(self.edge_index.size(1))

    @property
    def device(self) -> torch.device:
        """Where the edges and the propagation matrices are (:meth:`to`)."""
        return self.edge_index.device

    def to(self, device: torch.device | str) -> PreparedGraph:
        """This graph on ``device``: edges and cached matrices moved (itself when it is there
        already). Matrices built later are built on the CPU (SciPy) and moved once."""
        device = indexed(device)
        if self.device == device:
            return self
        moved = PreparedGraph(self.edge_index.to(device), self.num_nodes,
                              None if self.edge_weight is None else self.edge_weight.to(device),
                              self.gcn_degrees)
        moved._cache = {k: op.to(device) for k, op in self._cache.items()}
        return moved

    def gcn_adj(self) -> SparseOperator:
        """``D^-1/2 (A + I) D^-1/2`` (rows = targets) as a differentiable sparse operator."""
        if "gcn" not in self._cache:
            self._cache["gcn"] = SparseOperator(
                gcn_normalized_scipy(self.edge_index, self.num_nodes, self.edge_weight,
                                     degrees=self.gcn_degrees)
            ).to(self.device)
        return self._cache["gcn"]

    def mean_adj(self) -> SparseOperator:
        """Weighted mean over in-neighbours, ``D^-1 A``, as a sparse operator."""
        if "mean" not in self._cache:
            self._cache["mean"] = SparseOperator(
                mean_normalized_scipy(self.edge_index, self.num_nodes, self.edge_weight)
            ).to(self.device)
        return self._cache["mean"]

    def attention_edges(self) -> AttentionEdges:
        """The edges with a self-loop per node, prepared for a GAT layer (:mod:`dpgl.nn.gat`);
        built on first use, on this graph's device."""
        if self._attention is None:
            self._attention = AttentionEdges.build(self.edge_index, self.num_nodes,
                                                   self.edge_weight)
        return self._attention
