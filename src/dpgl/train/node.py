"""Full-batch node-classification trainer (and the loop the mini-batch trainer,
:mod:`dpgl.train.minibatch`, shares): Adam with weight decay, model selection on the
validation set (best epoch: by validation accuracy, or by validation loss as Blink's code
does), optional early stopping. Deterministic given ``seed`` on one
device: the torch RNG is forked, so the caller's global torch state is left untouched
(:func:`dpgl.device.seeded`)."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from dpgl import progress
from dpgl.device import module_device, seeded, target_device
from dpgl.errors import ConfigError
from dpgl.train.metrics import accuracy, f1_scores


@dataclass(frozen=True)
class TrainConfig:
    lr: float = 0.01
    weight_decay: float = 5e-4
    epochs: int = 200
    patience: int | None = 50  # epochs without validation improvement; None = run all epochs
    #: the kept epoch: "val_accuracy" (ties: lower loss) or "val_loss" (lowest; the first of
    #: equal ones), see :func:`better_epoch`
    select_by: str = "val_accuracy"

    def __post_init__(self) -> None:
        if self.lr <= 0 or self.weight_decay < 0 or self.epochs < 1:
            raise ConfigError("need lr > 0, weight_decay >= 0 and epochs >= 1")
        if self.patience is not None and self.patience < 1:
            raise ConfigError("patience must be >= 1 or None")
        check_select_by(self.select_by)


SELECT_BY = ("val_accuracy", "val_loss")


def check_select_by(select_by: str) -> None:
    if select_by not in SELECT_BY:
        raise ConfigError(f"select_by must be one of {', '.join(SELECT_BY)}, got {select_by!r}")


def better_epoch(score: tuple[float, float], best: tuple[float, float], select_by: str) -> bool:
    """Whether an epoch's validation ``(accuracy, loss)`` beats the kept one's.

    ``"val_accuracy"``: higher accuracy, ties broken by lower loss (dpgl's default).
    ``"val_loss"``: strictly lower loss, so the first of equal losses is kept: the test
    accuracy reported is the one at the epoch of minimum validation loss, as in Blink's code
    (Zhu, Tan & Xiao, CCS 2023; github.com/zhxchd/Blink_GNN ``src/blink/run_blink.py``).
    The starting ``best`` is ``(-1, inf)``, which every epoch beats either way.
    """
    if select_by == "val_loss":
        return score[1] < best[1] or (best[1] == float("inf") and best[0] < 0)
    return score[0] > best[0] or (score[0] == best[0] and score[1] < best[1])


@dataclass
class TrainResult:
    metrics: dict[str, float]
    best_epoch: int
    epochs_run: int
    seconds: float
    history: list[dict[str, float]] = field(default_factory=list)
    #: seconds spent training ("train") and predicting for validation ("eval"), all epochs
    timings: dict[str, float] = field(default_factory=dict)


def _evaluate(
    logits: torch.Tensor, y: torch.Tensor, idx: torch.Tensor, num_classes: int
) -> dict[str, float]:
    pred = logits[idx].argmax(-1).cpu().numpy()
    true = y[idx].cpu().numpy()
    micro, macro = f1_scores(pred, true, num_classes)
    loss = float(F.cross_entropy(logits[idx], y[idx])) if idx.numel() else float("nan")
    return {"accuracy": accuracy(pred, true), "f1_micro": micro, "f1_macro": macro, "loss": loss}


def train_node_classifier(
    model: nn.Module,
    forward: Callable[[nn.Module], torch.Tensor],
    y: torch.Tensor,
    train_idx: torch.Tensor,
    val_idx: torch.Tensor,
    test_idx: torch.Tensor,
    config: TrainConfig,
    *,
    seed: int,
    train_targets: torch.Tensor | None = None,
    device: torch.device | str | None = None,
) -> TrainResult:
    """Train ``model`` full batch; ``forward(model)`` returns logits for all nodes.

    ``train_targets`` (default ``y``) are the labels used in the loss: label-private methods
    pass their noisy/denoised labels here while validation and test use the true ``y`` held
    by the evaluator. Model selection: the epoch with the best validation accuracy (ties:
    lower validation loss), or with ``config.select_by="val_loss"`` the lowest validation
    loss. Returns train/val/test accuracy, micro-F1 and macro-F1.

    ``device`` (default :func:`dpgl.device.current_device`): the model is initialised where
    it is, trained there and returned on the device it came with; ``forward``'s inputs must
    be on ``device`` already (:func:`dpgl.device.to_device`).
    """
    dev = target_device(device)
    idx = train_idx.to(dev)

    def epoch(model: nn.Module, opt: torch.optim.Optimizer, targets: torch.Tensor) -> float:
        opt.zero_grad()
        loss = F.cross_entropy(forward(model)[idx], targets[idx])
        loss.backward()
        opt.step()
        return loss.item()

    return train_with_selection(model, epoch, forward, y, train_idx, val_idx, test_idx, config,
                                seed=seed, train_targets=train_targets, device=dev)


def train_with_selection(
    model: nn.Module,
    train_epoch: Callable[[nn.Module, torch.optim.Optimizer, torch.Tensor], float],
    predict: Callable[[nn.Module], torch.Tensor],
    y: torch.Tensor,
    train_idx: torch.Tensor,
    val_idx: torch.Tensor,
    test_idx: torch.Tensor,
    config: TrainConfig,
    *,
    seed: int,
    train_targets: torch.Tensor | None = None,
    device: torch.device | str | None = None,
) -> TrainResult:
    """The node trainers' loop (full batch and mini-batch share it): re-initialise ``model``
    under ``seed``, Adam, then per epoch ``train_epoch(model, opt, targets)`` (model in
    training mode; returns the loss it reports) and ``predict(model)`` (evaluation mode, no
    gradient; logits of all nodes) for the validation score; keep the best validation epoch
    (:func:`better_epoch` by ``config.select_by``: accuracy, ties lower loss; or the lowest
    loss), stop after ``config.patience`` epochs without a better one,
    and report train/val/test metrics of the kept model's ``predict``. ``targets`` are
    ``train_targets`` (default ``y``) on the device. ``TrainResult.timings`` holds the seconds
    spent in ``train_epoch`` ("train") and in ``predict`` ("eval")."""
    if train_idx.numel() == 0:
        raise ConfigError("the training split is empty")
    dev = target_device(device)
    home = module_device(model)
    y, train_idx, val_idx, test_idx = (t.to(dev) for t in (y, train_idx, val_idx, test_idx))
    targets = y if train_targets is None else train_targets.to(dev)
    num_classes = int(max(int(y.max()), int(targets.max())) + 1)
    timings = {"train": 0.0, "eval": 0.0}
    start = time.perf_counter()
    with seeded(seed, dev), progress.step("training", total=config.epochs) as bar:
        for module in model.modules():
            if module is not model and hasattr(module, "reset_parameters"):
                module.reset_parameters()
        model.to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        best: tuple[float, float] = (-1.0, float("inf"))
        best_state = copy.deepcopy(model.state_dict())
        best_epoch, since_best, epoch = 0, 0, 0
        for epoch in range(1, config.epochs + 1):
            t0 = time.perf_counter()
            model.train()
            loss = train_epoch(model, opt, targets)
            t1 = time.perf_counter()
            model.eval()
            with torch.no_grad():
                val = _evaluate(predict(model), y, val_idx, num_classes)
            timings["train"] += t1 - t0
            timings["eval"] += time.perf_counter() - t1
            score = (val["accuracy"], val["loss"])
            bar.advance(loss=loss, val_accuracy=score[0])
            if better_epoch(score, best, config.select_by):
                best, best_epoch, since_best = score, epoch, 0
                best_state = copy.deepcopy(model.state_dict())
            else:
                since_best += 1
                if config.patience is not None and since_best >= config.patience:
                    break
        model.load_state_dict(best_state)
        model.eval()
        with torch.no_grad():
            logits = predict(model)
    model.to(home)
    metrics: dict[str, float] = {}
    for part, idx in (("train", train_idx), ("val", val_idx), ("test", test_idx)):
        labels = targets if part == "train" else y
        for k, v in _evaluate(logits, labels, idx, num_classes).items():
            metrics[f"{part}_{k}"] = v
    return TrainResult(metrics, best_epoch, epoch, time.perf_counter() - start,
                       timings=timings)
