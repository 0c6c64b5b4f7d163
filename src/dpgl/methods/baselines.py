"""Non-private baselines: ``none`` (the chosen model on the true graph) and ``mlp`` (node
features only: no edge is used, so it is perfectly link-private; features and labels are
used as is)."""

from __future__ import annotations

from typing import ClassVar

from dpgl.methods.base import Method, MethodOutput, RunContext, register
from dpgl.methods.common import node_split, run_graph_classification, train_node_model
from dpgl.methods.params import GraphParams, NodeParams, Params
from dpgl.privacy import Unit


@register
class NonPrivate(Method):
    name = "none"
    tasks = ("node", "graph")
    private = False
    summary = "non-private: the chosen model on the true graph, features and labels"
    display_name = "{model} on the true graph"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": NodeParams, "graph": GraphParams}

    def fit_graph(self, ctx: RunContext) -> MethodOutput:
        ctx.accountant.spend_nonprivate("neighbor lists", "true edges used as is", Unit.EDGE_LDP)
        return run_graph_classification(ctx)

    def fit_node(self, ctx: RunContext) -> MethodOutput:
        from dpgl.nn import PreparedGraph
        acc = ctx.accountant
        acc.spend_nonprivate("neighbor lists", "true edges used as is", Unit.EDGE_LDP)
        data = ctx.dataset
        acc.spend_nonprivate("features", "true node features used as is", Unit.FEATURE_LDP)
        acc.spend_nonprivate("labels", "true training labels used as is", Unit.LABEL_LDP)
        split = node_split(ctx, data)
        graph = PreparedGraph(data.edge_index, data.num_nodes)
        return train_node_model(ctx, data.x, data.y, split, graph)


@register
class FeaturesOnlyMLP(Method):
    name = "mlp"
    tasks = ("node",)
    private = False
    summary = "MLP on node features only (the run's model is ignored): no edge is used"
    display_name = "MLP, no edges"
    fixed_model = "mlp"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": NodeParams}

    def fit_node(self, ctx: RunContext) -> MethodOutput:
        data = ctx.dataset
        acc = ctx.accountant
        acc.spend_nonprivate("features", "true node features used as is", Unit.FEATURE_LDP)
        acc.spend_nonprivate("labels", "true training labels used as is", Unit.LABEL_LDP)
        split = node_split(ctx, data)
        out = train_node_model(ctx, data.x, data.y, split, None, model="mlp")
        out.info["edges_used"] = 0
        return out
