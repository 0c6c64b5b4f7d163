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


def _scripted_run(select_by: str, patience: int | None = None):
    """Validation nodes 0, 1 (labels 0, 1), test node 2 (label 0). Epoch 1: validation
    accuracy 1/2, loss 0.43 (the lowest), test right; epoch 2: accuracy 1, loss 0.69, test
    wrong; epoch 3: accuracy 1/2, loss 1.13, test wrong."""
    script = [torch.zeros(3, 2),
              torch.tensor([[2.0, 0.2], [2.0, 1.99], [2.0, 0.2]]),    # epoch 1
              torch.tensor([[0.01, 0.0], [0.0, 0.01], [0.0, 2.0]]),   # epoch 2
              torch.tensor([[2.0, 0.0], [2.0, 0.0], [0.0, 2.0]])]     # epoch 3
    model = _Scripted(script)

    def epoch(m: torch.nn.Module, opt: torch.optim.Optimizer, targets: torch.Tensor) -> float:
        m.step.data += 1
        opt.zero_grad()
        loss = m.w * 1.0
        loss.backward()
        opt.step()
        return loss.item()

    from dpgl.train.node import train_with_selection
    y, idx = torch.tensor([0, 1, 0]), torch.tensor
    return train_with_selection(model, epoch, lambda m: m(), y, idx([0]), idx([0, 1]),
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
