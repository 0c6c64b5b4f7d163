"""Trainers: full-batch node classification and mini-batch graph classification."""

from dpgl.train.graph import GraphTrainConfig, train_graph_classifier
from dpgl.train.node import TrainConfig, TrainResult, train_node_classifier

__all__ = [
    "GraphTrainConfig",
    "TrainConfig",
    "TrainResult",
    "train_graph_classifier",
    "train_node_classifier",
]
