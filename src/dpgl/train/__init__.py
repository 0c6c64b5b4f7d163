"""Trainers: node classification (full batch, or mini-batches with neighbour sampling),
mini-batch graph classification, DP-SGD."""

from typing import TYPE_CHECKING

from dpgl._lazy import attach

if TYPE_CHECKING:
    from dpgl.train.dpsgd import (
        DPSGDConfig,
        DPSGDResult,
        clip_and_sum,
        per_sample_gradients,
        train_dpsgd,
    )
    from dpgl.train.graph import GraphTrainConfig, train_graph_classifier
    from dpgl.train.minibatch import MiniBatchConfig, layerwise_inference, train_node_minibatch
    from dpgl.train.node import TrainConfig, TrainResult, train_node_classifier
    from dpgl.train.sampling import UniformNeighbourSampler

__getattr__, __dir__ = attach(__name__, __file__)

__all__ = [
    "DPSGDConfig",
    "DPSGDResult",
    "GraphTrainConfig",
    "MiniBatchConfig",
    "TrainConfig",
    "TrainResult",
    "UniformNeighbourSampler",
    "clip_and_sum",
    "layerwise_inference",
    "per_sample_gradients",
    "train_dpsgd",
    "train_graph_classifier",
    "train_node_classifier",
    "train_node_minibatch",
]
