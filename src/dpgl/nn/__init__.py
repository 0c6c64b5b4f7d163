"""Layers and models: MLP, (weighted) GCN / GraphSAGE / GAT for nodes, GIN for graphs."""

from typing import TYPE_CHECKING

from dpgl._lazy import attach

if TYPE_CHECKING:
    from dpgl.nn.models import ModelConfig, NodeModel, build_node_model
    from dpgl.nn.names import MODEL_NAMES
    from dpgl.nn.prepared import PreparedGraph

__getattr__, __dir__ = attach(__name__, __file__)

__all__ = ["MODEL_NAMES", "ModelConfig", "NodeModel", "PreparedGraph", "build_node_model"]
