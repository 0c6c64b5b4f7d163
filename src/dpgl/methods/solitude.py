"""``solitude`` and ``solitude-link`` (Lin, Li & Wang, "Towards Private Learning on
Decentralized Graphs with Local Differential Privacy", IEEE TIFS 2022).

``solitude``: nothing is known to the server. Every user sends her neighbor list through
Warner's RR (eps_a-edge-LDP, :class:`dpgl.mechanisms.rr.RRTransform`, whole-graph simulation)
and her features through the multi-bit mechanism (eps_x-feature-LDP); optionally her label
through k-RR (eps_y-label-LDP). The server calibrates: feature smoothing over the noisy graph
(Eq. 11, ``feature_steps`` = l_x), label smoothing (Eq. 12, ``label_steps`` = l_y) and graph
structure learning jointly with the GNN (Eq. 14, :mod:`dpgl.estimators.solitude`).

``variant`` selects the rows of Solitude's Table 3: ``base`` (GNN on the raw noisy reports),
``lpgnn`` (LPGNN's calibration adapted to the noisy graph: feature/label smoothing, no
structure learning) and ``solitude`` (everything).

Budget: the run's ``epsilon`` is the edge budget eps_a; ``feature_epsilon`` (default 1.0) is
eps_x; ``label_epsilon`` (default None = labels used as is, as in Solitude's experiments) is
eps_y. The privacy report's per-user total is eps_a + eps_x (+ eps_y) when labels are
private; with non-private labels it is "no privacy" (honestly: the labels are not protected)
and ``info["per_user_edge_feature_epsilon"]`` gives eps_a + eps_x.

``solitude-link``: only the edge part, under Blink's protocol (true features and labels):
RR on every neighbor list + structure learning; ``epsilon`` = eps_a.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from dpgl.methods.base import Method, MethodOutput, RunContext, register
from dpgl.methods.common import node_split
from dpgl.methods.lpgnn import collect_labels, label_targets
from dpgl.methods.params import NodeParams, Params
from dpgl.privacy import Unit
from dpgl.rng import spawn

if TYPE_CHECKING:
    import torch

    from dpgl.train.solitude import SolitudeConfig


class SolitudeLinkParams(NodeParams):
    """Edge part only (Blink's protocol)."""

    no_minibatch: ClassVar[str] = ("Solitude learns the graph and the GNN together, full "
                                   "batch: batch_size and fanout are not supported")

    activation: Literal["relu", "selu", "elu", "tanh"] = "selu"
    structure_learning: bool = Field(True, description="learn the graph jointly with the GNN "
                                     "(Eq. 14)")
    symmetric: bool = Field(True, description="learn one weight per undirected pair (else one "
                            "per directed report)")
    adj_lr: float = Field(0.01, gt=0, description="learning rate of the learned graph")
    lambda1: float = Field(5.0, ge=0, description="weight of ||A~ - A^c||_F^2, closeness to the "
                           "noisy graph (Eq. 14)")
    lambda2: float = Field(5.0, ge=0, description="weight of ||A^c||_1, sparsity of the learned "
                           "graph (Eq. 14)")
    gnn_weight: float = Field(1.0, ge=0, description="weight of the GNN loss in the graph "
                              "update")
    inner_steps: int = Field(1, ge=1, description="graph updates per GNN step")

    def solitude_config(self, structure_learning: bool) -> SolitudeConfig:
        """The Solitude training loop's configuration these parameters describe."""
        from dpgl.train.solitude import SolitudeConfig
        return SolitudeConfig(lr=self.lr, weight_decay=self.weight_decay, epochs=self.epochs,
                              patience=self.patience, select_by=self.select_epoch_by,
                              structure_learning=structure_learning,
                              adj_lr=self.adj_lr, lambda1=self.lambda1, lambda2=self.lambda2,
                              gnn_weight=self.gnn_weight, inner_steps=self.inner_steps)


class SolitudeParams(SolitudeLinkParams):
    randomizer_params: ClassVar[frozenset[str]] = frozenset(
        {"feature_epsilon", "feature_low", "feature_high", "label_epsilon"})

    variant: Literal["solitude", "lpgnn", "base"] = Field(
        "solitude", description="row of Solitude's Table 3: solitude (everything), lpgnn "
        "(smoothing only), base (raw reports)")
    feature_epsilon: float = Field(1.0, gt=0, description="feature-LDP budget eps_x of each "
                                   "user's multi-bit feature report")
    feature_low: float | None = Field(None, description="public lower end of the feature values "
                                      "(unset: the dataset's public range)")
    feature_high: float | None = Field(None, description="public upper end of the feature "
                                       "values (unset: the dataset's public range)")
    feature_steps: int = Field(4, ge=0, le=256, description="feature smoothing steps l_x "
                               "(Eq. 11)")
    label_epsilon: float | None = Field(None, gt=0, description="label-LDP budget eps_y of k-ary "
                                        "RR on the labels (unset: labels used as is)")
    label_steps: int = Field(0, ge=0, le=256, description="label smoothing steps l_y (Eq. 12)")
    forward_correction: bool = Field(True, description="correct the loss with the RR "
                                     "transition matrix of the noisy labels")
    #: Rectified multi-bit reports are of size ~ d coth(eps/2m)/2m (thousands for CiteSeer's
    #: d = 3,703) and the backbone has no normalization layer.
    standardize_features: bool = Field(True, description="scale the calibrated features to zero "
                                       "mean, unit variance per column (post-processing)")


def _noisy_graph(ctx: RunContext, epsilon: float, rng: object) -> torch.Tensor:
    """Every user's RR neighbor list (the randomizer charges the run's accountant)."""
    from dpgl.transforms import RRTransform
    rr = RRTransform(epsilon, symmetrize="directed", seed=rng)  # type: ignore[arg-type]
    return rr(ctx.dataset).edge_index


@register
class Solitude(Method):
    """Lin, Li & Wang, "Towards Private Learning on Decentralized Graphs with Local
    Differential Privacy", IEEE TIFS 2022."""

    name = "solitude"
    tasks = ("node",)
    private = True
    models = ("gcn", "sage")
    summary = ("Solitude: RR neighbor lists (epsilon = eps_a) + multi-bit features "
               "(feature_epsilon) + calibration and structure learning (Eq. 11-14)")
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": SolitudeParams}
    budgets: ClassVar[dict[Unit, str]] = {Unit.EDGE_LDP: "epsilon",
                                          Unit.FEATURE_LDP: "feature_epsilon",
                                          Unit.LABEL_LDP: "label_epsilon"}
    budget_split = ("epsilon to RR on every neighbor-list bit; feature_epsilon to each user's "
                    "feature report; label_epsilon (k-RR) if set, else labels used as is")

    def fit_node(self, ctx: RunContext) -> MethodOutput:
        import torch

        from dpgl.estimators.smoothing import feature_smoothing
        from dpgl.estimators.solitude import StructureLearner
        from dpgl.mechanisms.features import public_feature_range
        from dpgl.nn.kprop import LabelPropagationHead
        from dpgl.nn.weighted_gnn import WeightedGNN
        from dpgl.train.solitude import train_solitude
        from dpgl.transforms import CollectFeatures
        p = ctx.params
        assert isinstance(p, SolitudeParams)
        assert ctx.epsilon is not None
        data = ctx.dataset
        n = int(data.num_nodes)
        edge_rng, feat_rng, label_rng = spawn(ctx.rng, 3)
        y_noisy, label_mech = collect_labels(ctx, data.y, p.label_epsilon, label_rng)
        split = node_split(ctx, data, labels=y_noisy)  # stratified on reports when private
        noisy_ei = _noisy_graph(ctx, ctx.epsilon, edge_rng)
        frange = public_feature_range(data, p.feature_low, p.feature_high)
        collector = CollectFeatures(p.feature_epsilon, "multibit", feature_range=frange,
                                    seed=feat_rng)
        x_noisy = collector(data).x  # every user's report; the randomizer charges
        rand = collector.randomizer_for(int(x_noisy.size(1)))
        calibrate = p.variant != "base"
        x = feature_smoothing(x_noisy, noisy_ei, n, p.feature_steps if calibrate else 0)
        if p.standardize_features:
            x = (x - x.mean(dim=0)) / x.std(dim=0).clamp_min(1e-12)
        y_eval, targets, head, diag = label_targets(
            data.y, y_noisy, label_mech, split, noisy_ei, n,
            denoise="drop" if calibrate else "none", steps=p.label_steps if calibrate else 0,
            forward_correction=p.forward_correction)
        output = LabelPropagationHead(torch.nn.Identity(), *head) if head is not None else None
        num_classes = int(data.y.max()) + 1
        with torch.random.fork_rng(devices=[]):
            model = WeightedGNN(ctx.model, int(x.size(1)), num_classes, hidden=p.hidden,
                                dropout=p.dropout, activation=p.activation)
        learner = StructureLearner(noisy_ei, n,
                                   symmetric=p.symmetric and p.variant == "solitude")
        noisy_edges = int(noisy_ei.size(1))
        del noisy_ei  # the learner holds its own (int32) copy
        result = train_solitude(model, learner, x, y_eval, targets, split,
                                p.solitude_config(p.structure_learning and p.variant == "solitude"),
                                seed=int(ctx.rng.integers(2**31)), output=output)
        info = {
            "best_epoch": result.best_epoch, "epochs_run": result.epochs_run,
            "train_seconds": result.seconds, "noisy_edges": noisy_edges,
            "kept_edges": result.kept_edges, "mean_edge_weight": result.mean_weight,
            "candidate_edges": int(learner.edge_index.size(1)),
            "per_user_edge_feature_epsilon": float(ctx.epsilon + p.feature_epsilon),
            "feature_m": rand.m, "variant": p.variant, "feature_range": str(frange),
        }
        diag["feature_values_clipped"] = collector.clipped
        return MethodOutput(result.metrics, info, diag)


@register
class SolitudeLink(Method):
    """Lin, Li & Wang, "Towards Private Learning on Decentralized Graphs with Local
    Differential Privacy", IEEE TIFS 2022."""

    name = "solitude-link"
    tasks = ("node",)
    private = True
    models = ("gcn", "sage")
    summary = ("Solitude's edge part under Blink's protocol: RR neighbor lists + structure "
               "learning; true features and labels")
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": SolitudeLinkParams}
    public: ClassVar[frozenset[Unit]] = frozenset({Unit.FEATURE_LDP, Unit.LABEL_LDP})  # Blink's
    budgets: ClassVar[dict[Unit, str]] = {Unit.EDGE_LDP: "epsilon"}
    budget_split = "all of epsilon to RR on every neighbor-list bit"

    def fit_node(self, ctx: RunContext) -> MethodOutput:
        import torch

        from dpgl.estimators.solitude import StructureLearner
        from dpgl.nn.weighted_gnn import WeightedGNN
        from dpgl.train.solitude import train_solitude
        p = ctx.params
        assert isinstance(p, SolitudeLinkParams)
        assert ctx.epsilon is not None
        data = ctx.dataset
        n = int(data.num_nodes)
        acc = ctx.accountant
        split = node_split(ctx, data)
        (edge_rng,) = spawn(ctx.rng, 1)
        noisy_ei = _noisy_graph(ctx, ctx.epsilon, edge_rng)
        acc.spend_nonprivate("node features", "true node features used as is",
                             Unit.FEATURE_LDP)
        acc.spend_nonprivate("labels", "true training labels used as is", Unit.LABEL_LDP)
        num_classes = int(data.y.max()) + 1
        with torch.random.fork_rng(devices=[]):
            model = WeightedGNN(ctx.model, int(data.x.size(1)), num_classes, hidden=p.hidden,
                                dropout=p.dropout, activation=p.activation)
        learner = StructureLearner(noisy_ei, n, symmetric=p.symmetric)
        noisy_edges = int(noisy_ei.size(1))
        del noisy_ei  # the learner holds its own (int32) copy; 16 bytes an edge freed
        result = train_solitude(model, learner, data.x, data.y, data.y, split,
                                p.solitude_config(p.structure_learning),
                                seed=int(ctx.rng.integers(2**31)))
        return MethodOutput(result.metrics, {
            "best_epoch": result.best_epoch, "epochs_run": result.epochs_run,
            "train_seconds": result.seconds, "noisy_edges": noisy_edges,
            "kept_edges": result.kept_edges, "mean_edge_weight": result.mean_weight,
            "candidate_edges": int(learner.edge_index.size(1)),
            "train_graph_edges": noisy_edges,
        })


__all__ = ["Solitude", "SolitudeLink", "SolitudeLinkParams", "SolitudeParams"]
