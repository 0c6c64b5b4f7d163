"""LPGNN's feature baselines (Sajadmanesh & Gatica-Perez, CCS 2021, Sec. 5.1), on the same
GCN as ``lpgnn`` (hidden 16, SeLU, batch norm after the first layer, dropout):

* ``gcn-raw``: the true features (non-private upper bound, "GCN+Raw").
* ``gcn-rnd``: random features in [0, 1]^d drawn by the server ("GCN+RND"): the users' features
  are never used (perfect feature privacy).
* ``gcn-ohd``: the one-hot encoding of each node's degree, clipped at ``max_degree``
  ("GCN+OHD"): computed from the graph, which the server knows; features never used.

The graph is used as is (recorded as non-private). The labels too by default; with
``label_epsilon`` each user reports her label through k-ary RR (eps_y-label-LDP) and the
server trains as ``lpgnn`` does on reported labels (``label_denoise``, ``label_steps`` K_y,
``forward_correction``): LPGNN's (CCS 2021) rows with eps_x = infinity ("Raw" features with
private labels) and its fully private baselines (RND / OHD features, private labels).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from dpgl.methods.base import Method, MethodOutput, RunContext, register
from dpgl.methods.common import node_split, train_node_model
from dpgl.methods.lpgnn import (
    PrivateLabelNodeParams,
    collect_labels,
    label_targets,
    reported_labels,
)
from dpgl.methods.params import Params
from dpgl.privacy import Unit
from dpgl.rng import spawn, torch_generator

if TYPE_CHECKING:
    import torch


class FeatureBaselineParams(PrivateLabelNodeParams):
    randomizer_params: ClassVar[frozenset[str]] = frozenset({"label_epsilon"})

    normalize_features: bool = Field(True, description="no effect (scaling is the run's data "
                                     "option normalize_features)")


class OhdParams(FeatureBaselineParams):
    max_degree: int = Field(64, ge=1, description="degrees above it share the last one-hot "
                            "feature")


class _FeatureBaseline(Method):
    """The feature baselines of LPGNN (Sec. 5.1): Sajadmanesh & Gatica-Perez, "Locally
    Private Graph Neural Networks", CCS 2021."""

    tasks = ("node",)
    private = False
    models = ("gcn", "sage", "gat")
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": FeatureBaselineParams}
    public: ClassVar[frozenset[Unit]] = frozenset({Unit.EDGE_LDP})  # LPGNN's threat model
    #: no --epsilon (no feature budget); the labels' budget when they are private
    budgets: ClassVar[dict[Unit, str]] = {Unit.LABEL_LDP: "label_epsilon"}

    def features(self, ctx: RunContext) -> torch.Tensor:
        raise NotImplementedError

    def fit_node(self, ctx: RunContext) -> MethodOutput:
        from dpgl.nn import PreparedGraph
        p = ctx.params
        assert isinstance(p, FeatureBaselineParams)
        data = ctx.dataset
        acc = ctx.accountant
        acc.spend_nonprivate("graph", "true edges used as is (LPGNN: the server knows the "
                             "graph)", Unit.EDGE_LDP)
        if p.label_epsilon is None:  # the labels as is (draws nothing: runs unchanged)
            acc.spend_nonprivate("labels", "true training labels used as is", Unit.LABEL_LDP)
            split = node_split(ctx, data)
            y_eval, targets, head, reported = data.y, None, None, None
            diag: dict[str, float] = {}
        else:  # every user's k-RR label report; the randomizer charges
            (label_rng,) = spawn(ctx.rng, 1)
            y_noisy, mech = collect_labels(ctx, data.y, p.label_epsilon, label_rng)
            split = node_split(ctx, data, labels=y_noisy)  # stratified on the reports
            y_eval, targets, head, diag = label_targets(
                data.y, y_noisy, mech, split, data.edge_index, int(data.num_nodes),
                denoise=p.label_denoise, steps=p.label_steps,
                forward_correction=p.forward_correction)
            reported = reported_labels(y_noisy, mech, head)
        x = self.features(ctx)
        graph = PreparedGraph(data.edge_index, int(data.num_nodes))
        out = train_node_model(ctx, x, y_eval, split, graph, train_targets=targets, head=head,
                               reported=reported)
        out.info["feature_dim"] = int(x.size(1))
        out.diagnostics.update(diag)
        return out


@register
class GcnRaw(_FeatureBaseline):
    name = "gcn-raw"
    summary = "GCN+Raw (LPGNN baseline): true features, graph and labels (non-private)"

    def features(self, ctx: RunContext) -> torch.Tensor:
        ctx.accountant.spend_nonprivate("features", "true node features used as is",
                                        Unit.FEATURE_LDP)
        return ctx.dataset.x


@register
class GcnRnd(_FeatureBaseline):
    name = "gcn-rnd"
    summary = "GCN+RND (LPGNN baseline): random features, the users' features are never used"

    def features(self, ctx: RunContext) -> torch.Tensor:
        import torch
        x = ctx.dataset.x
        gen = torch_generator(ctx.rng)
        return torch.rand(x.size(0), x.size(1), generator=gen)


@register
class GcnOhd(_FeatureBaseline):
    name = "gcn-ohd"
    summary = "GCN+OHD (LPGNN baseline): one-hot degree features from the known graph"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": OhdParams}

    def features(self, ctx: RunContext) -> torch.Tensor:
        import torch
        from torch_geometric.utils import degree
        p = ctx.params
        assert isinstance(p, OhdParams)
        data = ctx.dataset
        deg = degree(data.edge_index[1], int(data.num_nodes), dtype=torch.long)
        return torch.nn.functional.one_hot(deg.clamp(max=p.max_degree),
                                           p.max_degree + 1).float()
