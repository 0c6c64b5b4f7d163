"""``lpgnn``: Locally Private GNN (Sajadmanesh & Gatica-Perez, CCS 2021).

Users send their feature vectors through a feature-LDP mechanism (multi-bit by default,
LPGNN Alg. 1 + Eq. 4); the server, which knows the graph, propagates the rectified reports K
steps with KProp (Alg. 2, no self-loops) and trains a two-layer GCN whose first layer is
KProp. Optionally the labels are private too: k-ary RR with ``label_epsilon`` and label
denoising by propagation ("Drop", Sec. 4.3: KProp on the noisy labels, forward correction
with the RR transition matrix, predictions propagated like the labels).

Privacy: the run's ``epsilon`` is the feature budget eps_x (feature-LDP). Labels: with
``label_epsilon`` they are eps_y-label-LDP, otherwise (the default, LPGNN Table 3's setting)
the training labels are used as is and recorded as non-private. The graph is known to the
server in LPGNN's threat model: recorded as non-private edge data.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import torch
from pydantic import Field

from dpgl.estimators.smoothing import denoise_labels
from dpgl.mechanisms.features import CollectFeatures
from dpgl.mechanisms.labels import CollectLabels
from dpgl.methods.base import Method, MethodOutput, RunContext, register
from dpgl.methods.common import node_split
from dpgl.methods.params import NodeParams, Params
from dpgl.nn import PreparedGraph
from dpgl.nn.kprop import (
    KPropGNN,
    LabelPropagationHead,
    centred_sparse,
    kprop,
    kprop_matrix,
)
from dpgl.privacy import Unit
from dpgl.rng import spawn
from dpgl.train import TrainConfig, train_node_classifier


class LpgnnParams(NodeParams):
    """LPGNN options (defaults: LPGNN Sec. 5.1 / Table 2 style architecture)."""

    normalize_features: bool = True          # features in [alpha, beta] = [0, 1]
    activation: Literal["relu", "selu", "elu", "tanh"] = "selu"
    batch_norm: bool = True
    weight_decay: float = Field(1e-3, ge=0)
    epochs: int = Field(300, ge=1)
    patience: int | None = Field(100, ge=1)
    feature_mechanism: Literal["multibit", "1bit", "gaussian", "laplace"] = "multibit"
    m: int | Literal["best", "max"] = "best"
    gaussian_delta: float = Field(1e-4, gt=0, lt=1)
    steps: int = Field(4, ge=0, le=256)        # K of KProp on the features
    aggregator: Literal["gcn", "mean"] = "gcn"
    self_loops: bool = False
    label_epsilon: float | None = Field(None, gt=0)
    label_denoise: Literal["drop", "none"] = "drop"
    label_steps: int = Field(0, ge=0, le=256)  # K_y of the label propagation
    forward_correction: bool = True
    #: precompute AGG^K(x') (LPGNN) or propagate after the projection (same function; for
    #: large n x d with sparse reports); "auto": factorised when n * d > 2e7.
    propagation: Literal["auto", "precompute", "factorized"] = "auto"


def label_targets(ctx: RunContext, y: torch.Tensor, split: tuple[torch.Tensor, ...],
                  edge_index: torch.Tensor, num_nodes: int, *, label_epsilon: float | None,
                  denoise: str, steps: int, forward_correction: bool, rng: object,
                  source: str = "labels") -> tuple[torch.Tensor, torch.Tensor,
                                                   LabelPropagationHead | None, dict]:
    """Record the label release and return (y_eval, train_targets, head factory args, info).

    Without ``label_epsilon`` the true labels are used (recorded as non-private). With it,
    every user's label goes through k-RR; the server validates on the noisy validation labels
    (test metrics still use the true labels held by the evaluator), and with
    ``denoise="drop"`` trains on propagated targets with a propagated, forward-corrected head.
    Returns ``(y_eval, targets, (adj, steps, T) | None, info)``.
    """
    acc = ctx.accountant
    train, val, _ = split
    if label_epsilon is None:
        acc.spend_nonprivate(source, "true training/validation labels used as is",
                             Unit.LABEL_LDP)
        return y, y, None, {}
    num_classes = int(y.max()) + 1
    collector = CollectLabels(label_epsilon, num_classes, seed=rng)  # type: ignore[arg-type]
    y_noisy = collector.mechanism.randomize(y, collector.rng)
    acc.spend(source, collector.guarantee, mechanism="k-ary randomized response (LPGNN Eq. 7)")
    y_eval = y.clone()
    y_eval[val] = y_noisy[val]
    labelled = torch.cat([train, val])
    info = {"label_noise_rate_train": float((y_noisy[train] != y[train]).float().mean())}
    if denoise == "none":
        return y_eval, y_noisy, None, info
    adj = kprop_matrix(edge_index, num_nodes, aggregator="gcn", operator=True) \
        if steps > 0 else None
    targets = denoise_labels(y_noisy, labelled, num_classes, adj, steps)
    info["label_error_rate_train_after_denoise"] = float(
        (targets[train] != y[train]).float().mean())
    transition = collector.mechanism.transition_matrix() if forward_correction else None
    return y_eval, targets, (adj, steps, transition), info  # type: ignore[return-value]


@register
class LPGNN(Method):
    name = "lpgnn"
    tasks = ("node",)
    private = True
    models = ("gcn", "sage")
    summary = ("LPGNN: feature-LDP (multi-bit) + KProp over the known graph; optional "
               "label-LDP with KProp label denoising (epsilon = feature budget)")
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": LpgnnParams}

    def fit(self, ctx: RunContext) -> MethodOutput:
        p = ctx.params
        assert isinstance(p, LpgnnParams)
        assert ctx.epsilon is not None
        data = ctx.dataset
        n = int(data.num_nodes)
        acc = ctx.accountant
        split = node_split(ctx, data)
        feat_rng, label_rng = spawn(ctx.rng, 2)
        acc.spend_nonprivate("graph", "LPGNN threat model: the server knows the graph",
                             Unit.EDGE_LDP)
        collector = CollectFeatures(ctx.epsilon, p.feature_mechanism, alpha=0.0, beta=1.0,
                                    m=p.m, delta=p.gaussian_delta, seed=feat_rng)
        x_noisy = collector(data).x
        d = int(x_noisy.size(1))
        rand = collector.randomizer_for(d)
        acc.spend("features", rand.guarantee, mechanism=rand.describe())
        factorized = p.propagation == "factorized" or (
            p.propagation == "auto" and n * d > 20_000_000)
        adj = kprop_matrix(data.edge_index, n, aggregator=p.aggregator,
                           self_loops=p.self_loops, operator=factorized)
        # features normalized to [0, 1]: the reports' centre is 1/2
        xk = centred_sparse(x_noisy, 0.5) if factorized else kprop(x_noisy, adj, p.steps)
        y_eval, targets, head, info = label_targets(
            ctx, data.y, split, data.edge_index, n, label_epsilon=p.label_epsilon,
            denoise=p.label_denoise, steps=p.label_steps,
            forward_correction=p.forward_correction, rng=label_rng)
        num_classes = int(data.y.max()) + 1
        with torch.random.fork_rng(devices=[]):  # the trainer re-initializes from the seed
            net: torch.nn.Module = KPropGNN(d, num_classes, hidden=p.hidden, dropout=p.dropout,
                                            activation=p.activation, batch_norm=p.batch_norm,
                                            second_layer=ctx.model,
                                            propagate=(adj, p.steps) if factorized else None,
                                            center=0.5)
        if head is not None:
            net = LabelPropagationHead(net, *head)
        graph = PreparedGraph(data.edge_index, n)
        result = train_node_classifier(
            net, lambda m: m(xk, graph), y_eval, *split,
            TrainConfig(lr=p.lr, weight_decay=p.weight_decay, epochs=p.epochs,
                        patience=p.patience),
            seed=int(ctx.rng.integers(2**31)), train_targets=targets)
        info.update({"best_epoch": result.best_epoch, "epochs_run": result.epochs_run,
                     "train_seconds": result.seconds, "feature_m": rand.m,
                     "feature_mechanism": p.feature_mechanism, "steps": p.steps,
                     "factorized_propagation": factorized})
        return MethodOutput(result.metrics, info)
