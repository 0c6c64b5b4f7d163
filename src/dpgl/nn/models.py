"""Node-classification models: MLP, GCN, GraphSAGE and GAT, all accepting edge weights.

GCN and GraphSAGE run on pre-normalized sparse CSR matrices (one spmm per layer); the
weighted forms follow Blink (Zhu et al. CCS 2023) App. B: GCN Eq. 20 (weighted degrees in
``D^-1/2 (A+I) D^-1/2``), GraphSAGE Eq. 22 (weighted mean of neighbours plus a root weight),
GAT Eq. 24 (see :mod:`dpgl.nn.gat`). The MLP ignores edges (it is perfectly link-private).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import torch
import torch.nn.functional as F
from torch import nn

from dpgl.errors import ConfigError, unknown_name
from dpgl.nn.gat import WeightedGATConv
from dpgl.nn.layers import Features, GCNLayer, SAGELayer, linear
from dpgl.nn.names import canonical_model_name, check_weight_init
from dpgl.nn.prepared import PreparedGraph

ACTIVATIONS = {"relu": F.relu, "selu": F.selu, "elu": F.elu, "tanh": torch.tanh}


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of a node model (papers: GCN hidden 16, dropout 0.5; LPGNN adds SeLU and
    batch norm after the first layer)."""

    hidden: int = 16
    num_layers: int = 2
    dropout: float = 0.5
    input_dropout: float = 0.0
    activation: str = "relu"
    batch_norm: bool = False
    #: GCN and GAT weight matrices: "torch" or "glorot" (:mod:`dpgl.nn.init`)
    weight_init: str = "torch"

    def __post_init__(self) -> None:
        if self.hidden < 1 or self.num_layers < 1:
            raise ConfigError("hidden and num_layers must be >= 1")
        check_weight_init(self.weight_init)
        for name in ("dropout", "input_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"{name} must be in [0, 1), got {getattr(self, name)}")
        if self.activation not in ACTIVATIONS:
            raise unknown_name("activation", self.activation, list(ACTIVATIONS))


class NodeModel(nn.Module):
    """A stack of ``num_layers`` layers of one kind; hidden layers are followed by optional
    batch norm, the activation and dropout."""

    def __init__(self, kind: str, in_dim: int, out_dim: int, config: ModelConfig) -> None:
        super().__init__()
        self.kind = canonical_model_name(kind)
        self.config = config
        dims = [in_dim] + [config.hidden] * (config.num_layers - 1) + [out_dim]
        self.layers = nn.ModuleList(self._layer(a, b) for a, b in pairwise(dims))
        self.norms = nn.ModuleList(
            nn.BatchNorm1d(config.hidden) if config.batch_norm else nn.Identity()
            for _ in range(config.num_layers - 1)
        )
        self.act = ACTIVATIONS[config.activation]

    def _layer(self, a: int, b: int) -> nn.Module:
        if self.kind == "mlp":
            return nn.Linear(a, b)
        if self.kind == "gcn":
            # Normalization is precomputed in PreparedGraph.gcn_adj (CSR, self-loops added).
            return GCNLayer(a, b, weight_init=self.config.weight_init)
        if self.kind == "sage":
            # The row-normalized (mean) CSR matrix gives the weighted mean aggregation.
            return SAGELayer(a, b)
        return WeightedGATConv(a, b, weight_init=self.config.weight_init)

    def forward(self, x: Features, graph: PreparedGraph | None) -> torch.Tensor:
        """Logits for all nodes. ``x`` may be a sparse feature operator
        (:func:`dpgl.nn.layers.sparse_features`); input dropout then does not apply."""
        if isinstance(x, torch.Tensor):
            x = F.dropout(x, self.config.input_dropout, self.training)
        elif self.config.input_dropout > 0:
            raise ConfigError("input_dropout needs dense features")
        for i in range(len(self.layers)):
            x = self.layer_step(i, x, graph)
        return x

    def layer_step(self, i: int, x: Features, graph: PreparedGraph | None) -> torch.Tensor:
        """Layer ``i`` on ``x`` (the previous layer's output, or the features for ``i = 0``,
        after input dropout), followed by batch norm, the activation and dropout unless it is
        the last layer: :meth:`forward` is these steps in turn, and layer-wise inference
        (:mod:`dpgl.train.minibatch`) runs them one layer at a time over node blocks."""
        x = self._forward_layer(self.layers[i], x, graph)
        if i < len(self.layers) - 1:
            x = self.act(self.norms[i](x))
            x = F.dropout(x, self.config.dropout, self.training)
        return x

    def _forward_layer(self, layer: nn.Module, x: Features, graph: PreparedGraph | None
                       ) -> torch.Tensor:
        # (not ``_apply``: that name is nn.Module's, which ``.to(device)`` calls)
        if self.kind == "mlp":
            assert isinstance(layer, nn.Linear)
            return linear(layer, x)
        if graph is None:
            raise ConfigError(f"model {self.kind!r} needs a graph")
        if self.kind == "gcn":
            return layer(x, graph.gcn_adj())
        if self.kind == "sage":
            return layer(x, graph.mean_adj())
        return layer(x, graph.attention_edges())


def build_node_model(
    kind: str, in_dim: int, out_dim: int, config: ModelConfig | None = None
) -> NodeModel:
    """Build an MLP/GCN/GraphSAGE/GAT node classifier."""
    return NodeModel(kind, in_dim, out_dim, config or ModelConfig())
