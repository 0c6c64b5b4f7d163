"""Solitude's graph-structure denoising, learned jointly with the GNN (Lin, Li & Wang,
"Towards Private Learning on Decentralized Graphs with Local Differential Privacy",
IEEE TIFS 2022, Sec. IV-C, Eq. 14):

    min_{theta, A^c}  L_GNN(theta; A^c, X_s, Y~) + lambda1 ||A~ - A^c||_F^2 + lambda2 ||A^c||_1,

with A~ the RR-noisy adjacency the users reported. Optimised by alternating updates: an Adam
step on the GNN parameters theta with A^c fixed, then ``inner_steps`` proximal-gradient steps
on A^c: an Adam step on L_GNN followed by the exact proximal operator of the regulariser
lambda1 ||A~ - A^c||_F^2 + lambda2 ||A^c||_1 (a shifted soft-threshold, closed form) and the
projection onto [0, 1]. (Putting the Frobenius term through Adam instead would let Adam's
per-coordinate normalisation cancel the l1 prox: every weight would drift to 0 at the same
rate. With the exact prox, a weight without GNN gradient converges to
max(t - lambda2 / (2 lambda1), 0), t its A~ value.)

Sparse by design: A^c is restricted to the candidate set of the noisy edges (A^c_ij = 0 off
the support of A~), so A^c is a weight vector over |E~| entries and memory stays O(|E~|);
off the support A~ = A^c = 0, so the Frobenius term is sum_e (1 - w_e)^2. The GNN consumes the
weights differentiably (weighted GCN normalization / weighted mean), so the GNN loss reaches
A^c. (The reference implementation builds a dense n x n estimator that the GNN never reads,
so its A^c gets no gradient from the GNN loss; here it does, see tests/feature_ldp.)
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GCNConv

from dpgl.errors import ConfigError, unknown_name
from dpgl.nn.models import ACTIVATIONS
from dpgl.train.metrics import accuracy, f1_scores

__all__ = ["SolitudeConfig", "SolitudeResult", "StructureLearner", "WeightedGNN",
           "train_solitude"]


class StructureLearner(nn.Module):
    """A^c on the candidate set of the noisy edges ``edge_index`` (directed reports).

    ``symmetric=True`` (default; the graph is undirected, as in Pro-GNN's symmetric
    estimator): one weight per unordered candidate pair {i, j}, used in both directions; the
    pair's entries of A~ are a_ij, a_ji in {0, 1} and its Frobenius term
    (a_ij - w)^2 + (a_ji - w)^2 is minimised at their mean, so A^c starts at
    (A~ + A~^T) / 2: 1 on pairs both users reported, 1/2 on pairs only one reported (under RR
    mostly fake edges). ``symmetric=False``: one weight per directed report, A~ = 1 there.
    Memory O(|E~|) either way.
    """

    def __init__(self, edge_index: torch.Tensor, num_nodes: int, *,
                 symmetric: bool = True) -> None:
        super().__init__()
        if edge_index.dim() != 2 or edge_index.size(0) != 2:
            raise ConfigError(f"edge_index must be [2, E], got {tuple(edge_index.shape)}")
        n = int(num_nodes)
        self.num_nodes, self.symmetric = n, symmetric
        ei = edge_index.long()
        ei = ei[:, ei[0] != ei[1]]
        if symmetric:
            lo, hi = torch.minimum(ei[0], ei[1]), torch.maximum(ei[0], ei[1])
            keys, counts = torch.unique(lo * n + hi, return_counts=True)
            u, v = keys // n, keys % n
            self.register_buffer("target", counts.float() / 2.0)     # (a_ij + a_ji) / 2
            self.register_buffer("entries", torch.full_like(self.target, 2.0))
            pair = torch.arange(keys.numel())
            self.register_buffer("edge_index", torch.stack([torch.cat([u, v]),
                                                            torch.cat([v, u])]))
            self.register_buffer("edge_pair", torch.cat([pair, pair]))
            # Frobenius optimum: sum over the two entries of (a - w)^2 = 2 (w - mean)^2 + const
            self.register_buffer("frob_const", ((counts.float() / 2.0) * (1 - counts.float()
                                                                          / 2.0) * 2).sum())
        else:
            self.register_buffer("target", torch.ones(ei.size(1)))
            self.register_buffer("entries", torch.ones(ei.size(1)))
            self.register_buffer("edge_index", ei)
            self.register_buffer("edge_pair", torch.arange(ei.size(1)))
            self.register_buffer("frob_const", torch.zeros(()))
        self.weight = nn.Parameter(self.target.clone())

    @property
    def num_candidates(self) -> int:
        return int(self.weight.numel())

    def edge_weight(self, detach: bool = False) -> torch.Tensor:
        """The weight of every edge of :attr:`edge_index` (differentiable in A^c)."""
        w = self.weight.detach() if detach else self.weight
        return w[self.edge_pair]

    def frobenius(self) -> torch.Tensor:
        """||A~ - A^c||_F^2 (entries off the candidate set are 0 in both)."""
        return (self.entries * (self.target - self.weight) ** 2).sum() + self.frob_const

    def l1(self) -> torch.Tensor:
        return (self.entries * self.weight.abs()).sum()

    @torch.no_grad()
    def proximal_step(self, step: float, lambda1: float, lambda2: float) -> None:
        """Exact proximal operator, with step ``step``, of the structure regulariser
        lambda1 ||A~ - A^c||_F^2 + lambda2 ||A^c||_1 (each weight stands for ``entries``
        matrix entries), followed by the projection onto [0, 1]:
        w <- argmin_w (w - z)^2 / (2 step) + e lambda1 (w - t)^2 + e lambda2 |w|."""
        z, e, t = self.weight, self.entries, self.target
        den = 1.0 + 2.0 * step * lambda1 * e
        pos = (z + 2.0 * step * lambda1 * e * t - step * lambda2 * e) / den
        neg = (z + 2.0 * step * lambda1 * e * t + step * lambda2 * e) / den
        z.copy_(torch.where(pos > 0, pos, torch.where(neg < 0, neg, torch.zeros_like(z))))
        z.clamp_(0.0, 1.0)

    def edges(self, threshold: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
        """The learned graph: edges whose weight exceeds ``threshold``, with weights."""
        w = self.edge_weight(detach=True)
        keep = w > threshold
        return self.edge_index[:, keep], w[keep]


class _WeightedMeanSAGE(nn.Module):
    """GraphSAGE-mean with edge weights: W_l (sum_j w_ij x_j / sum_j w_ij) + W_r x_i
    (weighted form of Blink App. B Eq. 22); differentiable in the weights."""

    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__()
        self.lin_l = nn.Linear(in_dim, out_dim)
        self.lin_r = nn.Linear(in_dim, out_dim, bias=False)

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.lin_l.weight)
        nn.init.zeros_(self.lin_l.bias)
        nn.init.xavier_uniform_(self.lin_r.weight)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor,
                edge_weight: torch.Tensor) -> torch.Tensor:
        src, dst = edge_index
        h = self.lin_l(x)  # linear first: aggregation then runs on out_dim columns
        agg = torch.zeros(x.size(0), h.size(1), dtype=h.dtype).index_add_(
            0, dst, h[src] * edge_weight[:, None])
        deg = torch.zeros(x.size(0), dtype=h.dtype).index_add_(0, dst, edge_weight)
        agg = agg / deg.clamp_min(1e-12)[:, None]
        bias = self.lin_l.bias
        agg = agg + bias * (deg <= 1e-12).to(h.dtype)[:, None]  # isolated rows keep the bias
        return agg + self.lin_r(x)


class WeightedGNN(nn.Module):
    """Two-layer GCN or GraphSAGE (hidden 16, SeLU, dropout; Solitude Sec. V-A) whose edge
    weights are an input, so gradients flow to A^c. Xavier initialisation."""

    def __init__(self, kind: str, in_dim: int, out_dim: int, *, hidden: int = 16,
                 dropout: float = 0.5, activation: str = "selu") -> None:
        super().__init__()
        if kind not in ("gcn", "sage"):
            raise unknown_name("Solitude backbone", kind, ["gcn", "sage"])
        self.kind = kind
        if kind == "gcn":
            self.conv1: nn.Module = GCNConv(in_dim, hidden)
            self.conv2: nn.Module = GCNConv(hidden, out_dim)
        else:
            self.conv1 = _WeightedMeanSAGE(in_dim, hidden)
            self.conv2 = _WeightedMeanSAGE(hidden, out_dim)
        self.act = ACTIVATIONS[activation]
        self.dropout = dropout

    def reset_parameters(self) -> None:
        for conv in (self.conv1, self.conv2):
            conv.reset_parameters()  # GCNConv: glorot (Xavier) weights, zero bias

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor,
                edge_weight: torch.Tensor) -> torch.Tensor:
        h = self.act(self.conv1(x, edge_index, edge_weight))
        h = F.dropout(h, self.dropout, self.training)
        return self.conv2(h, edge_index, edge_weight)


@dataclass(frozen=True)
class SolitudeConfig:
    lr: float = 0.01
    weight_decay: float = 5e-4
    epochs: int = 200
    patience: int | None = 50
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
    pred = logits[idx].argmax(-1).numpy()
    true = y[idx].numpy()
    micro, macro = f1_scores(pred, true, num_classes)
    loss = float(F.cross_entropy(logits[idx], y[idx])) if idx.numel() else float("nan")
    return {"accuracy": accuracy(pred, true), "f1_micro": micro, "f1_macro": macro, "loss": loss}


def train_solitude(model: WeightedGNN, learner: StructureLearner, x: torch.Tensor,
                   y_eval: torch.Tensor, targets: torch.Tensor,
                   split: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                   config: SolitudeConfig, *, seed: int,
                   output: Callable[[torch.Tensor], torch.Tensor] | None = None
                   ) -> SolitudeResult:
    """Alternating optimisation of Eq. 14 (see the module docstring).

    ``targets`` are the training labels (possibly smoothed), ``y_eval`` the labels for
    validation (the server's) and test (the evaluator's). ``output`` maps the logits to the
    log-probabilities used in the training loss (label-propagation head; default identity).
    Model selection: best validation accuracy (ties: lower validation loss); the returned
    metrics are those of the best (theta, A^c).
    """
    train_idx, val_idx, test_idx = split
    if train_idx.numel() == 0:
        raise ConfigError("the training split is empty")
    num_classes = int(max(int(y_eval.max()), int(targets.max())) + 1)
    out_fn = output if output is not None else (lambda z: z)
    ei = learner.edge_index
    start = time.perf_counter()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model.reset_parameters()
        opt = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        opt_adj = torch.optim.Adam(learner.parameters(), lr=config.adj_lr)
        best = (-1.0, float("inf"))
        best_state = (copy.deepcopy(model.state_dict()), learner.weight.detach().clone())
        best_epoch, since, epoch = 0, 0, 0
        for epoch in range(1, config.epochs + 1):
            model.train()
            opt.zero_grad()
            logits = model(x, ei, learner.edge_weight(detach=True))
            loss = F.cross_entropy(out_fn(logits)[train_idx], targets[train_idx])
            loss.backward()
            opt.step()
            if config.structure_learning:
                for _ in range(config.inner_steps):
                    opt_adj.zero_grad()
                    logits = model(x, ei, learner.edge_weight())
                    gnn = F.cross_entropy(out_fn(logits)[train_idx], targets[train_idx])
                    (config.gnn_weight * gnn).backward()
                    opt_adj.step()
                    learner.proximal_step(config.adj_lr, config.lambda1, config.lambda2)
            model.eval()
            with torch.no_grad():
                val = _evaluate(model(x, ei, learner.edge_weight()), y_eval, val_idx,
                                num_classes)
            score = (val["accuracy"], val["loss"])
            if score[0] > best[0] or (score[0] == best[0] and score[1] < best[1]):
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
            logits = model(x, ei, learner.edge_weight())
    metrics: dict[str, float] = {}
    for part, idx in (("train", train_idx), ("val", val_idx), ("test", test_idx)):
        labels = targets if part == "train" else y_eval
        for k, v in _evaluate(logits, labels, idx, num_classes).items():
            metrics[f"{part}_{k}"] = v
    w = learner.weight.detach()
    return SolitudeResult(metrics, best_epoch, epoch, time.perf_counter() - start,
                          int((learner.edge_weight(detach=True) > 0).sum()),
                          float(w.mean()) if w.numel() else 0.0)
