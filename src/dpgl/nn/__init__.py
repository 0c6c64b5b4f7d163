"""Layers and models: MLP, (weighted) GCN / GraphSAGE / GAT for nodes, GIN for graphs."""

from dpgl.nn.models import MODEL_NAMES, ModelConfig, NodeModel, build_node_model
from dpgl.nn.prepared import PreparedGraph

__all__ = ["MODEL_NAMES", "ModelConfig", "NodeModel", "PreparedGraph", "build_node_model"]
