"""Solitude's training loop: the alternating optimisation of Eq. 14 (Lin, Li & Wang, IEEE TIFS
2022, Sec. IV-C) of the GNN (:class:`dpgl.nn.weighted_gnn.WeightedGNN`) and the structure
learner A^c (:class:`dpgl.estimators.solitude.StructureLearner`; the module docstring there
gives the update)."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from dpgl import progress
from dpgl.device import module_device, seeded, target_device
from dpgl.errors import ConfigError
from dpgl.estimators.solitude import StructureLearner
from dpgl.nn.weighted_gnn import WeightedGNN
from dpgl.train.metrics import accuracy, f1_scores
from dpgl.train.node import better_epoch, check_select_by

__all__ = ["SolitudeConfig", "SolitudeResult", "train_solitude"]


@dataclass(frozen=True)
class SolitudeConfig:
    lr: float = 0.01
    weight_decay: float = 5e-4
    epochs: int = 200
    patience: int | None = 50
    select_by: str = "val_accuracy"  # or "val_loss" (:func:`dpgl.train.node.better_epoch`)
    structure_learning: bool = True
    adj_lr: float = 0.01
    lambda1: float = 5.0      # ||A~ - A^c||_F^2
    lambda2: float = 5.0      # ||A^c||_1
    gnn_weight: float = 1.0   # weight of L_GNN in the A^c update
    inner_steps: int = 1


@dataclass
class SolitudeResult:
    metrics: dict[str, float]
    best_epoch: int
    epochs_run: int
    seconds: float
    kept_edges: int
    mean_weight: float


def _evaluate(logits: torch.Tensor, y: torch.Tensor, idx: torch.Tensor,
              num_classes: int) -> dict[str, float]:
    pred = logits[idx].argmax(-1).cpu().numpy()
    true = y[idx].cpu().numpy()
    micro, macro = f1_scores(pred, true, num_classes)
    loss = float(F.cross_entropy(logits[idx], y[idx])) if idx.numel() else float("nan")
    return {"accuracy": accuracy(pred, true), "f1_micro": micro, "f1_macro": macro, "loss": loss}


def train_solitude(model: WeightedGNN, learner: StructureLearner, x: torch.Tensor,
                   y_eval: torch.Tensor, targets: torch.Tensor,
                   split: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                   config: SolitudeConfig, *, seed: int,
                   output: Callable[[torch.Tensor], torch.Tensor] | None = None,
                   device: torch.device | str | None = None) -> SolitudeResult:
    """Alternating optimisation of Eq. 14 (:mod:`dpgl.estimators.solitude` gives the update).

    ``targets`` are the training labels (possibly smoothed), ``y_eval`` the labels for
    validation (the server's) and test (the evaluator's). ``output`` maps the logits to the
    log-probabilities used in the training loss (label-propagation head; default identity).
    Model selection: best validation accuracy (ties: lower validation loss), or the lowest
    validation loss with ``config.select_by="val_loss"``; the returned metrics are those of
    the kept (theta, A^c).

    ``device`` (default :func:`dpgl.device.current_device`): the GNN is initialised where it
    is; it, the learner (and ``output`` when it is a module) are trained there and returned
    on the devices they came with.
    """
    train_idx, val_idx, test_idx = split
    check_select_by(config.select_by)
    if train_idx.numel() == 0:
        raise ConfigError("the training split is empty")
    dev = target_device(device)
    homes = [(m, module_device(m)) for m in (model, learner, output)
             if isinstance(m, torch.nn.Module)]
    x, y_eval, targets, train_idx, val_idx, test_idx = (
        t.to(dev) for t in (x, y_eval, targets, train_idx, val_idx, test_idx))
    num_classes = int(max(int(y_eval.max()), int(targets.max())) + 1)
    out_fn = output if output is not None else (lambda z: z)
    start = time.perf_counter()
    with seeded(seed, dev), \
            progress.step("training (structure learning)", total=config.epochs) as bar:
        model.reset_parameters()
        for m, _ in homes:
            m.to(dev)
        op = model.operator(learner.edge_index, x.size(0))  # prepared once for every pass
        opt = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        opt_adj = torch.optim.Adam(learner.parameters(), lr=config.adj_lr)
        best = (-1.0, float("inf"))
        best_state = (copy.deepcopy(model.state_dict()), learner.weight.detach().clone())
        best_epoch, since, epoch = 0, 0, 0
        for epoch in range(1, config.epochs + 1):
            model.train()
            opt.zero_grad()
            loss = F.cross_entropy(out_fn(model(x, op, learner.edge_weight(detach=True)))
                                   [train_idx], targets[train_idx])
            loss.backward()
            train_loss = loss.item()
            # a graph's products keep per-edge tensors (the normalised weights, the transposed
            # matrix) until the graph goes: none is kept past its backward pass
            del loss
            opt.step()
            if config.structure_learning:
                for _ in range(config.inner_steps):
                    opt_adj.zero_grad()
                    gnn = F.cross_entropy(out_fn(model(x, op, learner.edge_weight()))
                                          [train_idx], targets[train_idx])
                    (config.gnn_weight * gnn).backward()
                    del gnn
                    opt_adj.step()
                    learner.proximal_step(config.adj_lr, config.lambda1, config.lambda2)
            model.eval()
            with torch.no_grad():
                val = _evaluate(model(x, op, learner.edge_weight()), y_eval, val_idx,
                                num_classes)
            score = (val["accuracy"], val["loss"])
            bar.advance(loss=train_loss, val_accuracy=score[0])
            if better_epoch(score, best, config.select_by):
                best, best_epoch, since = score, epoch, 0
                best_state = (copy.deepcopy(model.state_dict()), learner.weight.detach().clone())
            else:
                since += 1
                if config.patience is not None and since >= config.patience:
                    break
        model.load_state_dict(best_state[0])
        with torch.no_grad():
            learner.weight.copy_(best_state[1])
        model.eval()
        with torch.no_grad():
            logits = model(x, op, learner.edge_weight())
    metrics: dict[str, float] = {}
    for part, idx in (("train", train_idx), ("val", val_idx), ("test", test_idx)):
        labels = targets if part == "train" else y_eval
        for k, v in _evaluate(logits, labels, idx, num_classes).items():
            metrics[f"{part}_{k}"] = v
    w = learner.weight.detach()
    kept = int((learner.edge_weight(detach=True) > 0).sum())
    mean = float(w.mean()) if w.numel() else 0.0
    for m, home in homes:
        m.to(home)
    return SolitudeResult(metrics, best_epoch, epoch, time.perf_counter() - start, kept, mean)
