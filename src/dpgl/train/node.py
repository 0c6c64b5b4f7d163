"""Full-batch node-classification trainer (and the loop the mini-batch trainer,
:mod:`dpgl.train.minibatch`, shares): Adam with weight decay, model selection on the
validation set (best epoch: by validation accuracy, by validation loss as Blink's code
does, or by the LPGNN authors' noise-capped rule for k-RR labels), optional early stopping.
Deterministic given ``seed`` on one device: the torch RNG is forked, so the caller's global
torch state is left untouched (:func:`dpgl.device.seeded`)."""

from __future__ import annotations

import contextlib
import copy
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from dpgl import progress
from dpgl.device import module_device, seeded, target_device
from dpgl.errors import ConfigError
from dpgl.nn.init import reset_parameters
from dpgl.train.metrics import accuracy, f1_scores


@dataclass(frozen=True)
class TrainConfig:
    lr: float = 0.01
    weight_decay: float = 5e-4
    epochs: int = 200
    patience: int | None = 50  # epochs without validation improvement; None = run all epochs
    #: the kept epoch: "val_accuracy" (ties: lower loss) or "val_loss" (lowest; the first of
    #: equal ones), see :func:`better_epoch`; or "lpgnn-noise-capped" (full batch only), see
    #: :func:`noise_capped_better`
    select_by: str = "val_accuracy"

    def __post_init__(self) -> None:
        if self.lr <= 0 or self.weight_decay < 0 or self.epochs < 1:
            raise ConfigError("need lr > 0, weight_decay >= 0 and epochs >= 1")
        if self.patience is not None and self.patience < 1:
            raise ConfigError("patience must be >= 1 or None")
        check_select_by(self.select_by, NODE_SELECT_BY)


SELECT_BY = ("val_accuracy", "val_loss")
#: the LPGNN authors' epoch-selection rule for k-RR labels (:func:`noise_capped_better`)
NOISE_CAPPED = "lpgnn-noise-capped"
#: the rules of the node trainer (:func:`train_with_selection`)
NODE_SELECT_BY = (*SELECT_BY, NOISE_CAPPED)


def check_select_by(select_by: str, allowed: tuple[str, ...] = SELECT_BY) -> None:
    if select_by not in allowed:
        raise ConfigError(f"select_by must be one of {', '.join(allowed)}, got {select_by!r}")


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


class EpochScore(NamedTuple):
    """What :func:`noise_capped_better` compares, per epoch: accuracies are fractions
    measured on the *reported* (k-RR) labels."""

    val_accuracy: float
    val_loss: float
    train_accuracy: float


#: the slack of the training-accuracy cap of :func:`noise_capped_better` (authors' code)
TRAIN_CAP_SLACK = 1.05


def noise_capped_better(score: EpochScore, best: EpochScore | None,
                        keep_probability: float) -> bool:
    """The LPGNN authors' epoch selection (``select_by="lpgnn-noise-capped"``): whether an
    epoch replaces the kept one.

    From ``Trainer.fit`` in ``trainer.py`` of github.com/sisaman/LPGNN at commit 02c60f1
    (Sajadmanesh & Gatica-Perez, CCS 2021): the first epoch is kept; a later one replaces the
    kept one only if *all* of

    * its validation loss is strictly lower,
    * its validation accuracy is strictly higher and at most ``keep_probability``,
    * its training accuracy is strictly higher and at most 1.05 ``keep_probability``,

    where both accuracies are on the labels as reported through k-RR (``models.py``:
    ``training_step`` / ``validation_step`` compare the base model's prediction with
    ``data.y``, the perturbed labels) and the cap ``keep_probability`` = e^eps_y /
    (e^eps_y + k - 1) is k-RR's P[report = true label] (``train/maxacc`` = 100 T[0, 0],
    ``transforms.py`` ``LabelPerturbation``): what a perfect classifier of the true labels
    scores on the reports in expectation. It is public (eps_y and the number of classes k);
    1 for labels used as is, where the caps never bind. The patience counts the epochs since
    the kept one, as in :func:`better_epoch`.
    """
    if best is None:
        return True
    return (score.val_loss < best.val_loss
            and best.val_accuracy < score.val_accuracy <= keep_probability
            and best.train_accuracy < score.train_accuracy
            <= TRAIN_CAP_SLACK * keep_probability)


@dataclass(frozen=True)
class ReportedLabels:
    """The labels the server received through k-RR, for ``select_by="lpgnn-noise-capped"``
    (:func:`noise_capped_better`): every node's ``reports`` (the training nodes' are the
    training accuracy's reference), k-RR's public ``keep_probability`` (the cap) and the
    ``transition`` matrix of the forward-corrected validation loss (None: plain
    cross-entropy on the reports, as the authors' model without ``--forward``)."""

    reports: torch.Tensor
    keep_probability: float
    transition: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if not 0 < self.keep_probability <= 1:
            raise ConfigError(f"keep_probability must lie in (0, 1], got "
                              f"{self.keep_probability}")


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


def _base_model(model: nn.Module) -> nn.Module:
    """The module whose output is the model's own class scores: the base model of a label
    propagation head (whose training output is the propagated, corrected one)."""
    from dpgl.nn.kprop import LabelPropagationHead
    return model.base if isinstance(model, LabelPropagationHead) else model


@contextlib.contextmanager
def _training_outputs(model: nn.Module, enabled: bool) -> Iterator[list[torch.Tensor]]:
    """A list that receives the (detached) output of every training-mode forward of the
    model's base (:func:`_base_model`) while the context lasts; nothing when not
    ``enabled``."""
    out: list[torch.Tensor] = []
    if not enabled:
        yield out
        return

    def keep(module: nn.Module, args: object, output: torch.Tensor) -> None:
        if module.training:
            out.append(output.detach())

    handle = _base_model(model).register_forward_hook(keep)
    try:
        yield out
    finally:
        handle.remove()


def _capped_score(train_logits: torch.Tensor, val_logits: torch.Tensor,
                  train_reports: torch.Tensor, val_reports: torch.Tensor,
                  transition: torch.Tensor | None) -> EpochScore:
    """:class:`EpochScore` as the authors' ``models.py`` measures it: accuracies of the
    argmax on the reports; the validation loss -log P(report) with P(report | x) =
    softmax(logits) T (forward correction) or softmax(logits)."""
    prob = torch.softmax(val_logits, dim=-1)
    if transition is not None:
        prob = prob @ transition
    picked = prob.gather(1, val_reports.view(-1, 1)).squeeze(1)
    val_loss = float(-torch.log(picked + 1e-20).mean()) if val_reports.numel() else math.nan

    def acc(logits: torch.Tensor, reports: torch.Tensor) -> float:
        return accuracy(logits.argmax(-1).cpu().numpy(), reports.cpu().numpy())

    return EpochScore(acc(val_logits, val_reports), val_loss, acc(train_logits, train_reports))


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
    reported: ReportedLabels | None = None,
) -> TrainResult:
    """Train ``model`` full batch; ``forward(model)`` returns logits for all nodes.

    ``train_targets`` (default ``y``) are the labels used in the loss: label-private methods
    pass their noisy/denoised labels here while validation and test use the true ``y`` held
    by the evaluator. Model selection: the epoch with the best validation accuracy (ties:
    lower validation loss), or with ``config.select_by="val_loss"`` the lowest validation
    loss, or with ``"lpgnn-noise-capped"`` the LPGNN authors' rule on the ``reported`` labels
    (:func:`noise_capped_better`; None: the labels are ``y``, uncapped). Returns
    train/val/test accuracy, micro-F1 and macro-F1.

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
                                seed=seed, train_targets=train_targets, device=dev,
                                reported=reported)


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
    reported: ReportedLabels | None = None,
) -> TrainResult:
    """The node trainers' loop (full batch and mini-batch share it): re-initialise ``model``
    under ``seed``, Adam, then per epoch ``train_epoch(model, opt, targets)`` (model in
    training mode; returns the loss it reports) and ``predict(model)`` (evaluation mode, no
    gradient; logits of all nodes) for the validation score; keep the best validation epoch
    (:func:`better_epoch` by ``config.select_by``: accuracy, ties lower loss; or the lowest
    loss), stop after ``config.patience`` epochs without a better one,
    and report train/val/test metrics of the kept model's ``predict``. With
    ``config.select_by="lpgnn-noise-capped"`` (:func:`noise_capped_better`) the training
    accuracy is that of the training-mode forward pass of ``train_epoch`` (before the step,
    with dropout, as the authors' ``training_step``), read from the base model of a
    :class:`~dpgl.nn.kprop.LabelPropagationHead`; both accuracies are on
    ``reported.reports`` (None: on ``y``, keep probability 1); the validation loss is
    forward-corrected with ``reported.transition``. ``train_epoch`` must run one full-batch
    forward. ``targets`` are ``train_targets`` (default ``y``) on the device.
    ``TrainResult.timings`` holds the seconds spent in ``train_epoch`` ("train") and in
    ``predict`` ("eval")."""
    if train_idx.numel() == 0:
        raise ConfigError("the training split is empty")
    dev = target_device(device)
    home = module_device(model)
    y, train_idx, val_idx, test_idx = (t.to(dev) for t in (y, train_idx, val_idx, test_idx))
    targets = y if train_targets is None else train_targets.to(dev)
    num_classes = int(max(int(y.max()), int(targets.max())) + 1)
    capped = config.select_by == NOISE_CAPPED
    reports = y if reported is None else reported.reports.to(dev)
    keep = 1.0 if reported is None else reported.keep_probability
    transition = None if reported is None or reported.transition is None \
        else reported.transition.to(dev)
    timings = {"train": 0.0, "eval": 0.0}
    start = time.perf_counter()
    with seeded(seed, dev), progress.step("training", total=config.epochs) as bar, \
            _training_outputs(model, capped) as train_logits:
        reset_parameters(model)
        model.to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        best: tuple[float, float] = (-1.0, float("inf"))
        kept: EpochScore | None = None  # select_by="lpgnn-noise-capped"
        best_state = copy.deepcopy(model.state_dict())
        best_epoch, since_best, epoch = 0, 0, 0
        for epoch in range(1, config.epochs + 1):
            t0 = time.perf_counter()
            model.train()
            loss = train_epoch(model, opt, targets)
            t1 = time.perf_counter()
            model.eval()
            with torch.no_grad():
                logits = predict(model)
                val = _evaluate(logits, y, val_idx, num_classes)
            timings["train"] += t1 - t0
            timings["eval"] += time.perf_counter() - t1
            score = (val["accuracy"], val["loss"])
            bar.advance(loss=loss, val_accuracy=score[0])
            if capped:
                if len(train_logits) != 1:
                    raise ConfigError("select_by='lpgnn-noise-capped' needs one full-batch "
                                      "training forward per epoch")
                now = _capped_score(train_logits.pop()[train_idx], logits[val_idx],
                                    reports[train_idx], reports[val_idx], transition)
                better = noise_capped_better(now, kept, keep)
                kept = now if better else kept
            else:
                better = better_epoch(score, best, config.select_by)
            if better:
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
