"""Mini-batch graph-classification trainer (GIN; DPRR Sec. 5.1 settings: Adam, batch 64,
early stopping on validation, at most 500 epochs). Reports accuracy and ROC AUC.
Deterministic given ``seed`` on one device (the torch RNG is forked,
:func:`dpgl.device.seeded`)."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.data import Data
from torch_geometric.loader import DataLoader

from dpgl import progress
from dpgl.device import module_device, seeded, target_device
from dpgl.errors import ConfigError
from dpgl.nn.init import reset_parameters
from dpgl.train.metrics import accuracy, roc_auc
from dpgl.train.node import TrainResult


@dataclass(frozen=True)
class GraphTrainConfig:
    lr: float = 0.01
    weight_decay: float = 0.0
    epochs: int = 500
    patience: int | None = 50
    batch_size: int = 64
    #: multiply the learning rate by ``lr_gamma`` every ``lr_step`` epochs (GIN, Xu et al.
    #: Sec. 7: halve it every 50 epochs); None: constant learning rate
    lr_step: int | None = 50
    lr_gamma: float = 0.5

    def __post_init__(self) -> None:
        if self.lr <= 0 or self.weight_decay < 0 or self.epochs < 1 or self.batch_size < 1:
            raise ConfigError("need lr > 0, weight_decay >= 0, epochs >= 1, batch_size >= 1")
        if (self.lr_step is not None and self.lr_step < 1) or not 0 < self.lr_gamma <= 1:
            raise ConfigError("need lr_step >= 1 (or None) and 0 < lr_gamma <= 1")


def _predict(
    model: nn.Module, graphs: list[Data], batch_size: int
) -> tuple[np.ndarray, np.ndarray, float]:
    model.eval()
    device = module_device(model)
    probs, labels, loss_sum = [], [], 0.0
    with torch.no_grad():
        for batch in DataLoader(graphs, batch_size=batch_size, shuffle=False):
            batch = batch.to(device)
            logits = model(batch.x, batch.edge_index, batch.batch)
            loss_sum += float(F.cross_entropy(logits, batch.y, reduction="sum"))
            probs.append(torch.softmax(logits, -1).cpu().numpy())
            labels.append(batch.y.cpu().numpy())
    if not probs:
        return np.zeros((0, 0)), np.zeros(0, dtype=int), float("nan")
    return np.concatenate(probs), np.concatenate(labels), loss_sum / max(len(graphs), 1)


def _scores(model: nn.Module, graphs: list[Data], batch_size: int) -> dict[str, float]:
    p, y, loss = _predict(model, graphs, batch_size)
    if y.size == 0:
        return {"accuracy": float("nan"), "auc": float("nan"), "loss": float("nan")}
    return {"accuracy": accuracy(p.argmax(1), y), "auc": roc_auc(p, y), "loss": loss}


def train_graph_classifier(
    model: nn.Module,
    train: list[Data],
    val: list[Data],
    test: list[Data],
    config: GraphTrainConfig,
    *,
    seed: int,
    device: torch.device | str | None = None,
) -> TrainResult:
    """Train on ``train`` graphs (each with ``x``, ``edge_index``, ``y``); select the epoch
    with the best validation accuracy (ties: lower validation loss); early-stop after
    ``patience`` epochs without improvement. ``device`` (default
    :func:`dpgl.device.current_device`): batches are moved there; the model is initialised
    where it is, trained there and returned on the device it came with."""
    if not train:
        raise ConfigError("the training split is empty")
    dev = target_device(device)
    home = module_device(model)
    start = time.perf_counter()
    with seeded(seed, dev), progress.step("training", total=config.epochs) as bar:
        reset_parameters(model)
        model.to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        sched = (torch.optim.lr_scheduler.StepLR(opt, config.lr_step, config.lr_gamma)
                 if config.lr_step is not None else None)
        loader = DataLoader(
            train,
            batch_size=config.batch_size,
            shuffle=True,
            drop_last=len(train) > config.batch_size,
        )
        best = (-1.0, float("inf"))
        best_state = copy.deepcopy(model.state_dict())
        best_epoch, since_best, epoch = 0, 0, 0
        for epoch in range(1, config.epochs + 1):
            model.train()
            for batch in loader:
                batch = batch.to(dev)
                opt.zero_grad()
                F.cross_entropy(model(batch.x, batch.edge_index, batch.batch), batch.y).backward()
                opt.step()
            if sched is not None:
                sched.step()
            v = _scores(model, val, config.batch_size)
            bar.advance(val_accuracy=v["accuracy"])
            if v["accuracy"] > best[0] or (v["accuracy"] == best[0] and v["loss"] < best[1]):
                best, best_epoch, since_best = (v["accuracy"], v["loss"]), epoch, 0
                best_state = copy.deepcopy(model.state_dict())
            else:
                since_best += 1
                if config.patience is not None and since_best >= config.patience:
                    break
        model.load_state_dict(best_state)
    metrics = {}
    for part, graphs in (("train", train), ("val", val), ("test", test)):
        for k, v in _scores(model, graphs, config.batch_size).items():
            metrics[f"{part}_{k}"] = v
    model.to(home)
    return TrainResult(metrics, best_epoch, epoch, time.perf_counter() - start)
