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

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from dpgl.methods.base import Method, MethodOutput, RunContext, register
from dpgl.methods.common import node_split
from dpgl.methods.params import NodeParams, Params, Renamed
from dpgl.privacy import Unit
from dpgl.rng import spawn

if TYPE_CHECKING:
    import torch

    from dpgl.mechanisms.labels import LabelRR
    from dpgl.train.node import ReportedLabels


class PrivateLabelNodeParams(NodeParams):
    """What LPGNN and its feature baselines share (LPGNN, CCS 2021): the Table 2 style
    training defaults and the optional private labels (k-RR with ``label_epsilon``, then
    Drop: label propagation + forward correction, Sec. 4.3); with ``label_epsilon`` unset
    the labels are used as is."""

    no_noise_capped: ClassVar[str] = ""  # k-RR labels: the authors' rule applies

    activation: Literal["relu", "selu", "elu", "tanh"] = "selu"
    batch_norm: bool = True
    weight_decay: float = Field(1e-3, ge=0)
    epochs: int = Field(300, ge=1)
    patience: int | None = Field(100, ge=1)
    label_epsilon: float | None = Field(None, gt=0, description="label-LDP budget eps_y of k-ary "
                                        "RR on the labels (unset: labels used as is)")
    label_denoise: Literal["drop", "none"] = Field(
        "drop", description="noisy-label handling: drop (LPGNN's label propagation + forward "
        "correction) or none")
    label_steps: int = Field(0, ge=0, le=256, description="label propagation steps K_y")
    forward_correction: bool = Field(True, description="correct the loss with the RR "
                                     "transition matrix of the noisy labels")


class LpgnnParams(PrivateLabelNodeParams):
    """LPGNN options (defaults: LPGNN Sec. 5.1 / Table 2 style architecture)."""

    no_minibatch: ClassVar[str] = ("lpgnn trains its KProp model full batch: batch_size and "
                                   "fanout are not supported")
    renamed: ClassVar[dict[str, Renamed]] = {"steps": Renamed("feature_steps"),
                                             "gaussian_delta": Renamed("delta")}
    randomizer_params: ClassVar[frozenset[str]] = frozenset(
        {"feature_mechanism", "m", "delta", "feature_low", "feature_high", "label_epsilon"})

    feature_mechanism: Literal["multibit", "1bit", "gaussian", "laplace"] = Field(
        "multibit", description="how each user randomizes her feature vector (LPGNN's "
        "multi-bit by default)")
    m: int | Literal["best", "max"] = Field(
        "best", description="features each user reports (multi-bit): a number, best (LPGNN "
        "Eq. 6) or max (all d)")
    delta: float = Field(1e-4, gt=0, lt=1, description="delta of the Gaussian mechanism's "
                         "feature-LDP guarantee")
    feature_low: float | None = Field(None, description="public lower end alpha of the feature "
                                      "values (unset: the dataset's public range)")
    feature_high: float | None = Field(None, description="public upper end beta of the feature "
                                       "values (unset: the dataset's public range)")
    feature_steps: int = Field(4, ge=0, le=256, description="KProp steps K_x over the noisy "
                               "features")
    aggregator: Literal["gcn", "mean"] = Field("gcn", description="KProp's neighbour "
                                               "aggregation")
    self_loops: bool = Field(False, description="KProp aggregates a node's own report too")
    propagation: Literal["auto", "precompute", "factorized"] = Field(
        "auto", description="KProp on the reports (precompute) or after the first projection "
        "(factorized, same result); auto: by n d")


def collect_labels(ctx: RunContext, y: torch.Tensor, label_epsilon: float | None, rng: object,
                   *, source: str = "labels") -> tuple[torch.Tensor | None, LabelRR | None]:
    """Every user's label report (k-RR with ``label_epsilon``; the randomizer charges the run's
    accountant), or ``(None, None)`` when the labels are used as is (recorded as such)."""
    from torch_geometric.data import Data

    from dpgl.transforms import CollectLabels
    if label_epsilon is None:
        ctx.accountant.spend_nonprivate(source, "true training/validation labels used as is",
                                        Unit.LABEL_LDP)
        return None, None
    num_classes = int(y.max()) + 1
    collector = CollectLabels(label_epsilon, num_classes, seed=rng)  # type: ignore[arg-type]
    y_noisy = collector(Data(y=y, num_nodes=int(y.numel()))).y
    return y_noisy, collector.mechanism


def label_targets(y: torch.Tensor, y_noisy: torch.Tensor | None, mechanism: LabelRR | None,
                  split: tuple[torch.Tensor, ...], edge_index: torch.Tensor, num_nodes: int, *,
                  denoise: str, steps: int, forward_correction: bool
                  ) -> tuple[torch.Tensor, torch.Tensor, tuple | None, dict[str, float]]:
    """The labels training uses: ``(y_eval, train_targets, head factory args, diagnostics)``.

    Without reports (``y_noisy`` None) the true labels. With them, the server validates on
    the reported validation labels (test metrics still use the true labels held by the
    evaluator), and with ``denoise="drop"`` trains on propagated targets with a propagated,
    forward-corrected head. The diagnostics (noise rates against the true labels) are
    evaluation-only.
    """
    import torch

    from dpgl.estimators.smoothing import denoise_labels
    from dpgl.nn.kprop import kprop_matrix
    train, val, _ = split
    if y_noisy is None or mechanism is None:
        return y, y, None, {}
    num_classes = mechanism.num_classes
    y_eval = y.clone()
    y_eval[val] = y_noisy[val]
    labelled = torch.cat([train, val])
    diag = {"label_noise_rate_train": float((y_noisy[train] != y[train]).float().mean())}
    if denoise == "none":
        return y_eval, y_noisy, None, diag
    adj = kprop_matrix(edge_index, num_nodes, aggregator="gcn", operator=True) \
        if steps > 0 else None
    targets = denoise_labels(y_noisy, labelled, num_classes, adj, steps)
    diag["label_error_rate_train_after_denoise"] = float(
        (targets[train] != y[train]).float().mean())
    transition = mechanism.transition_matrix() if forward_correction else None
    return y_eval, targets, (adj, steps, transition), diag


def reported_labels(y_noisy: torch.Tensor | None, mechanism: LabelRR | None,
                    head: tuple | None) -> ReportedLabels | None:
    """What ``select_epoch_by: lpgnn-noise-capped`` compares against
    (:func:`dpgl.train.node.noise_capped_better`): the k-RR reports, k-RR's public keep
    probability (the cap) and the forward correction's transition matrix, if the loss uses
    one; None when the labels are used as is (the rule without caps)."""
    from dpgl.train.node import ReportedLabels
    if y_noisy is None or mechanism is None:
        return None
    return ReportedLabels(y_noisy, mechanism.keep_probability,
                          None if head is None else head[2])


@register
class LPGNN(Method):
    """Sajadmanesh & Gatica-Perez, "Locally Private Graph Neural Networks", CCS 2021."""

    name = "lpgnn"
    tasks = ("node",)
    private = True
    models = ("gcn", "sage")
    summary = ("LPGNN: feature-LDP (multi-bit) + KProp over the known graph; optional "
               "label-LDP with KProp label denoising (epsilon = feature budget)")
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": LpgnnParams}
    budgets: ClassVar[dict[Unit, str]] = {Unit.FEATURE_LDP: "epsilon",
                                          Unit.LABEL_LDP: "label_epsilon"}
    deltas: ClassVar[dict[Unit, str]] = {Unit.FEATURE_LDP: "delta"}
    budget_split = ("all of epsilon to each user's feature report; labels: label_epsilon "
                    "(k-RR) if set, else used as is; the graph is known to the server")
    public: ClassVar[frozenset[Unit]] = frozenset({Unit.EDGE_LDP})  # LPGNN's threat model

    def fit_node(self, ctx: RunContext) -> MethodOutput:
        import torch

        from dpgl.device import to_device
        from dpgl.mechanisms.features import public_feature_range
        from dpgl.nn import PreparedGraph
        from dpgl.nn.kprop import (
            KPropGNN,
            LabelPropagationHead,
            centred_sparse,
            kprop,
            kprop_matrix,
        )
        from dpgl.train import train_node_classifier
        from dpgl.transforms import CollectFeatures
        p = ctx.params
        assert isinstance(p, LpgnnParams)
        assert ctx.epsilon is not None
        data = ctx.dataset
        n = int(data.num_nodes)
        acc = ctx.accountant
        feat_rng, label_rng = spawn(ctx.rng, 2)
        y_noisy, label_mech = collect_labels(ctx, data.y, p.label_epsilon, label_rng)
        split = node_split(ctx, data, labels=y_noisy)  # stratified on reports when private
        acc.spend_nonprivate("graph", "LPGNN threat model: the server knows the graph",
                             Unit.EDGE_LDP)
        frange = public_feature_range(data, p.feature_low, p.feature_high)
        collector = CollectFeatures(ctx.epsilon, p.feature_mechanism, feature_range=frange,
                                    m=p.m, delta=p.delta, seed=feat_rng)
        x_noisy = collector(data).x  # every user's report; the randomizer charges
        d = int(x_noisy.size(1))
        rand = collector.randomizer_for(d)
        factorized = p.propagation == "factorized" or (
            p.propagation == "auto" and n * d > 20_000_000)
        adj = kprop_matrix(data.edge_index, n, aggregator=p.aggregator,
                           self_loops=p.self_loops, operator=factorized)
        center = frange.center  # the reports' centre (alpha + beta) / 2
        # the propagation and the training run on the run's device (released reports only)
        adj, x_dev = to_device(adj, ctx.device), to_device(x_noisy, ctx.device)
        xk = centred_sparse(x_dev, center) if factorized else kprop(x_dev, adj, p.feature_steps)
        y_eval, targets, head, diag = label_targets(
            data.y, y_noisy, label_mech, split, data.edge_index, n, denoise=p.label_denoise,
            steps=p.label_steps, forward_correction=p.forward_correction)
        num_classes = int(data.y.max()) + 1
        with torch.random.fork_rng(devices=[]):  # the trainer re-initializes from the seed
            net: torch.nn.Module = KPropGNN(d, num_classes, hidden=p.hidden, dropout=p.dropout,
                                            activation=p.activation, batch_norm=p.batch_norm,
                                            second_layer=ctx.model, weight_init=p.weight_init,
                                            propagate=(adj, p.feature_steps) if factorized
                                            else None,
                                            center=center)
        if head is not None:
            net = LabelPropagationHead(net, *head)
        graph = to_device(PreparedGraph(data.edge_index, n), ctx.device)
        result = train_node_classifier(
            net, lambda m: m(xk, graph), y_eval, *split,
            p.train_config(),
            seed=int(ctx.rng.integers(2**31)), train_targets=targets, device=ctx.device,
            reported=reported_labels(y_noisy, label_mech, head))
        info = {"best_epoch": result.best_epoch, "epochs_run": result.epochs_run,
                "train_seconds": result.seconds, "feature_m": rand.m,
                "feature_mechanism": p.feature_mechanism, "steps": p.feature_steps,
                "factorized_propagation": factorized, "feature_range": str(frange)}
        diag["feature_values_clipped"] = collector.clipped
        return MethodOutput(result.metrics, info, diag)
