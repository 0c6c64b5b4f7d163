"""Trainers: full-batch node classification and mini-batch graph classification."""

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
    from dpgl.train.node import TrainConfig, TrainResult, train_node_classifier

__getattr__, __dir__ = attach(__name__, __file__)

__all__ = [
    "DPSGDConfig",
    "DPSGDResult",
    "GraphTrainConfig",
    "TrainConfig",
    "TrainResult",
    "clip_and_sum",
    "per_sample_gradients",
    "train_dpsgd",
    "train_graph_classifier",
    "train_node_classifier",
]
