import math

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from dpgl.errors import ConfigError
from dpgl.nn import PreparedGraph, build_node_model
from dpgl.nn.gin import GIN
from dpgl.train import GraphTrainConfig, TrainConfig, train_graph_classifier, train_node_classifier


def _two_block_graph(n: int = 200, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    same = y[:, None] == y[None, :]
    a = np.triu(rng.random((n, n)) < np.where(same, 0.08, 0.005), 1)
    a = a | a.T
    x = (rng.normal(size=(n, 8)) + 0.3 * y[:, None]).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y), torch.tensor(np.stack(np.nonzero(a)))


def _run(seed: int):
    x, y, ei = _two_block_graph()
    g = PreparedGraph(ei, x.size(0))
    perm = torch.from_numpy(np.random.default_rng(0).permutation(x.size(0)))
    m = build_node_model("gcn", 8, 2)
    before = torch.random.get_rng_state()
    result = train_node_classifier(
        m,
        lambda mm: mm(x, g),
        y,
        perm[:100],
        perm[100:150],
        perm[150:],
        TrainConfig(epochs=60, patience=20),
        seed=seed,
    )
    assert torch.equal(before, torch.random.get_rng_state())  # no global seeding leaks out
    return result


def test_node_trainer_learns_and_is_deterministic() -> None:
    r1, r2 = _run(3), _run(3)
    assert r1.metrics == r2.metrics
    assert r1.metrics["test_accuracy"] > 0.9
    assert 1 <= r1.best_epoch <= r1.epochs_run <= 60
    assert set(r1.metrics) >= {
        "train_accuracy",
        "val_accuracy",
        "test_accuracy",
        "test_f1_micro",
        "test_f1_macro",
    }


def test_node_trainer_rejects_empty_train_split() -> None:
    x, y, _ = _two_block_graph(20)
    m = build_node_model("mlp", 8, 2)
    with pytest.raises(ConfigError, match="empty"):
        train_node_classifier(
            m,
            lambda mm: mm(x, None),
            y,
            torch.tensor([], dtype=torch.long),
            torch.arange(10),
            torch.arange(10, 20),
            TrainConfig(),
            seed=0,
        )


def _graphs(n_graphs: int = 60):
    """Class 0: paths; class 1: stars (different degree structure, constant features)."""
    out = []
    for i in range(n_graphs):
        k = 6 + i % 5
        e = [(j, j + 1) for j in range(k - 1)] if i % 2 == 0 else [(0, j) for j in range(1, k)]
        ei = torch.tensor(e).t()
        ei = torch.cat([ei, ei.flip(0)], 1)
        out.append(Data(x=torch.ones(k, 1), edge_index=ei, y=torch.tensor([i % 2]), num_nodes=k))
    return out


def test_graph_trainer_separates_paths_from_stars() -> None:
    g = _graphs()
    cfg = GraphTrainConfig(epochs=30, patience=30, batch_size=16)
    r = train_graph_classifier(
        GIN(1, 2, hidden=16, num_layers=2), g[:40], g[40:50], g[50:], cfg, seed=0
    )
    r2 = train_graph_classifier(
        GIN(1, 2, hidden=16, num_layers=2), g[:40], g[40:50], g[50:], cfg, seed=0
    )
    assert r.metrics == r2.metrics
    assert r.metrics["test_accuracy"] >= 0.9
    assert r.metrics["test_auc"] >= 0.9


def test_graph_trainer_learning_rate_schedule() -> None:
    """A gamma-1 schedule is the constant rate; a decaying one changes the training."""
    g = _graphs(40)

    def fit(**kw):
        cfg = GraphTrainConfig(epochs=6, patience=None, batch_size=8, **kw)
        return train_graph_classifier(GIN(1, 2, hidden=8, num_layers=2), g[:24], g[24:32],
                                      g[32:], cfg, seed=1).metrics

    assert fit(lr_step=None) == fit(lr_step=1, lr_gamma=1.0)
    assert fit(lr_step=None)["train_loss"] != fit(lr_step=1, lr_gamma=0.1)["train_loss"]
    with pytest.raises(ConfigError):
        GraphTrainConfig(lr_step=0)
    with pytest.raises(ConfigError):
        GraphTrainConfig(lr_gamma=0.0)



class _Scripted(torch.nn.Module):
    """A 'model' whose logits at epoch k are scripted: ``step`` (a parameter, so the kept
    state restores it) counts the training epochs; the trainer's re-initialisation and Adam
    leave it alone (no gradient, no reset_parameters)."""

    def __init__(self, script: list[torch.Tensor]) -> None:
        super().__init__()
        self.step = torch.nn.Parameter(torch.zeros(()), requires_grad=False)
        self.w = torch.nn.Parameter(torch.zeros(()))
        self.script = script

    def forward(self) -> torch.Tensor:
        return self.script[int(self.step)] + 0 * self.w


def _scripted_epoch(m: torch.nn.Module, opt: torch.optim.Optimizer,
                    targets: torch.Tensor) -> float:
    """One training epoch of a :class:`_Scripted` model: the script moves on one step."""
    m.step.data += 1
    opt.zero_grad()
    loss = m.w * 1.0
    loss.backward()
    opt.step()
    return loss.item()


def _scripted_run(select_by: str, patience: int | None = None):
    """Validation nodes 0, 1 (labels 0, 1), test node 2 (label 0). Epoch 1: validation
    accuracy 1/2, loss 0.43 (the lowest), test right; epoch 2: accuracy 1, loss 0.69, test
    wrong; epoch 3: accuracy 1/2, loss 1.13, test wrong."""
    script = [torch.zeros(3, 2),
              torch.tensor([[2.0, 0.2], [2.0, 1.99], [2.0, 0.2]]),    # epoch 1
              torch.tensor([[0.01, 0.0], [0.0, 0.01], [0.0, 2.0]]),   # epoch 2
              torch.tensor([[2.0, 0.0], [2.0, 0.0], [0.0, 2.0]])]     # epoch 3
    model = _Scripted(script)

    from dpgl.train.node import train_with_selection
    y, idx = torch.tensor([0, 1, 0]), torch.tensor
    return train_with_selection(model, _scripted_epoch, lambda m: m(), y, idx([0]), idx([0, 1]),
                                idx([2]), TrainConfig(epochs=3, patience=patience,
                                                      select_by=select_by), seed=0)


def test_epoch_selection_by_validation_accuracy_or_by_validation_loss() -> None:
    by_acc = _scripted_run("val_accuracy")  # dpgl's default
    assert by_acc.best_epoch == 2 and by_acc.metrics["val_accuracy"] == 1.0
    assert by_acc.metrics["test_accuracy"] == 0.0 and by_acc.epochs_run == 3
    by_loss = _scripted_run("val_loss")  # Blink's rule: test accuracy at the lowest val loss
    assert by_loss.best_epoch == 1 and by_loss.metrics["val_accuracy"] == 0.5
    assert by_loss.metrics["test_accuracy"] == 1.0
    assert by_loss.metrics["val_loss"] == pytest.approx(0.4256, abs=1e-3)
    # patience counts the epochs without a lower loss: stops after epoch 2, keeps epoch 1
    short = _scripted_run("val_loss", patience=1)
    assert short.best_epoch == 1 and short.epochs_run == 2
    with pytest.raises(ConfigError, match="select_by must be one of"):
        TrainConfig(select_by="test_accuracy")


def test_noise_capped_rule_on_a_metric_sequence() -> None:
    """The LPGNN authors' rule (trainer.py, sisaman/LPGNN@02c60f1): the first epoch is kept;
    a later one only with a lower validation loss and strictly higher validation and
    training accuracies, capped at p and 1.05 p (p: k-RR's keep probability)."""
    from dpgl.train.node import EpochScore, noise_capped_better
    p = 0.5
    seq = [EpochScore(0.20, 2.0, 0.20),   # 1: kept (the first)
           EpochScore(0.30, 1.9, 0.30),   # 2: kept
           EpochScore(0.40, 1.95, 0.40),  # 3: val loss higher: no
           EpochScore(0.55, 1.5, 0.45),   # 4: val accuracy above p: no
           EpochScore(0.45, 1.5, 0.53),   # 5: training accuracy above 1.05 p: no
           EpochScore(0.45, 1.5, 0.30),   # 6: training accuracy not higher: no
           EpochScore(0.30, 1.5, 0.45),   # 7: validation accuracy not higher: no
           EpochScore(0.50, 1.8, 0.525),  # 8: both at their caps: kept
           EpochScore(0.50, 1.0, 0.52)]   # 9: nothing higher: no
    kept, chosen = None, []
    for epoch, score in enumerate(seq, 1):
        if noise_capped_better(score, kept, p):
            kept = score
            chosen.append(epoch)
    assert chosen == [1, 2, 8]
    # the default rule would take epoch 4 (the highest validation accuracy)
    assert max(range(len(seq)), key=lambda i: seq[i].val_accuracy) + 1 == 4
    # labels used as is (p = 1): the caps never bind, the rest still does
    assert noise_capped_better(EpochScore(0.99, 1.0, 1.0), seq[0], 1.0)
    assert not noise_capped_better(EpochScore(0.99, 3.0, 1.0), seq[0], 1.0)


def _logits(train_right: int, val_right: int, test_right: bool) -> torch.Tensor:
    """Scripted logits of 9 nodes: training nodes 0-3 and validation nodes 4-7 (all reported
    and labelled 1), test node 8 (label 0); the first ``train_right`` / ``val_right`` of
    them predict 1, the others 0."""
    t = torch.tensor([[1.0, 0.0]]).repeat(9, 1)
    t[:train_right] = torch.tensor([0.0, 1.0])
    t[4:4 + val_right] = torch.tensor([0.0, 1.0])
    t[8] = torch.tensor([1.0, 0.0] if test_right else [0.0, 1.0])
    return t


def test_noise_capped_caps_bind_in_the_trainer() -> None:
    """The trainer measures the training accuracy on the training-mode forward of the epoch
    (before the step: script[e - 1] at epoch e) and the validation accuracy after it
    (script[e]), both on the reports; with p = 0.6 the caps refuse epochs 3 (validation
    3/4 > p) and 4 (training 4/4 > 1.05 p) and keep epoch 2."""
    from dpgl.train.node import ReportedLabels, train_with_selection
    script = [_logits(0, 0, False),
              _logits(1, 1, True),    # epoch 1: train 0/4, val 1/4: kept (the first)
              _logits(2, 2, False),   # epoch 2: train 1/4, val 2/4, lower loss: kept
              _logits(4, 3, True),    # epoch 3: train 2/4, val 3/4 > 0.6: refused
              _logits(4, 4, True)]    # epoch 4: train 4/4 > 0.63: refused

    def epoch(m: torch.nn.Module, opt: torch.optim.Optimizer, targets: torch.Tensor) -> float:
        m()  # the training-mode forward whose accuracy the rule reads
        return _scripted_epoch(m, opt, targets)

    idx = torch.tensor
    y = torch.tensor([1, 1, 1, 1, 1, 1, 1, 1, 0])

    def run(cfg: TrainConfig, reported: ReportedLabels | None):  # a fresh model each time
        return train_with_selection(_Scripted(script), epoch, lambda m: m(), y,
                                    idx([0, 1, 2, 3]), idx([4, 5, 6, 7]), idx([8]), cfg,
                                    seed=0, reported=reported)

    cfg = TrainConfig(epochs=4, patience=None, select_by="lpgnn-noise-capped")
    capped = run(cfg, ReportedLabels(y, 0.6))
    assert capped.best_epoch == 2 and capped.metrics["test_accuracy"] == 0.0
    # p = 1 (labels as is, or reported=None): no cap binds, epoch 4 is kept
    for reported in (ReportedLabels(y, 1.0), None):
        free = run(cfg, reported)
        assert free.best_epoch == 4 and free.metrics["test_accuracy"] == 1.0
    # patience counts the epochs since the kept one: stops after epoch 3, keeps epoch 2
    short = run(TrainConfig(epochs=4, patience=1, select_by="lpgnn-noise-capped"),
                ReportedLabels(y, 0.6))
    assert short.best_epoch == 2 and short.epochs_run == 3
    # dpgl's default keeps the highest validation accuracy (epoch 4)
    assert run(TrainConfig(epochs=4, patience=None), None).best_epoch == 4
    # the mini-batch trainer cannot measure it (one forward per batch)
    from dpgl.train.minibatch import MiniBatchConfig, train_node_minibatch
    with pytest.raises(ConfigError, match="full batch"):
        train_node_minibatch(build_node_model("mlp", 2, 2), torch.zeros(9, 2), None, y,
                             idx([0]), idx([4]), idx([8]), cfg, MiniBatchConfig(4), seed=0)


def test_noise_capped_validation_loss_is_forward_corrected() -> None:
    from dpgl.train.node import _capped_score
    lg = torch.tensor([[4.0, 0.0], [4.0, 0.0]])
    reports = torch.tensor([0, 1])
    plain = _capped_score(lg, lg, reports, reports, None)
    assert plain.val_accuracy == plain.train_accuracy == 0.5
    assert plain.val_loss == pytest.approx(float(torch.nn.functional.cross_entropy(lg, reports)),
                                           abs=1e-5)
    uniform = _capped_score(lg, lg, reports, reports, torch.full((2, 2), 0.5))
    assert uniform.val_loss == pytest.approx(math.log(2), abs=1e-6)  # P(report) = 1/2
