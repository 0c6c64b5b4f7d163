"""Edge local DP for node classification (issue #4): each user randomizes her neighbor list
on her device, the server estimates a graph from the reports and trains a GNN on it; node
features and labels are known to the server, as in Blink (Zhu, Tan, Xiao, CCS 2023, Sec. 3).

Methods: ``rr`` (Warner RR on every bit, reports used as is), ``symrr`` (RR on the lower
triangle, Imola et al. 2021), ``dprr`` (Hidano & Murakami), ``ldpgcn`` (Laplace bits + top-T,
Blink's baseline 2), ``ldpgen`` (Qin et al. 2017), ``blink-hard`` / ``blink-soft`` /
``blink-hybrid`` (Blink). Every method records its budget split in the run's accountant
(edge-LDP unit; each private user's total is ``epsilon``) and says that features and labels
are used as is. The mechanisms and estimators live in :mod:`dpgl.mechanisms` and
:mod:`dpgl.estimators`; this module only wires them to the trainer. ``rr`` and ``dprr`` also
serve graph classification (issue #6, :mod:`dpgl.methods.graph_ldp`).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar, Literal

import torch
from pydantic import Field

from dpgl.estimators.blink import BlinkTransform
from dpgl.estimators.dprr import DPRRTransform
from dpgl.estimators.ldpgen import LDPGenTransform
from dpgl.estimators.toptt import LocalLapTransform
from dpgl.mechanisms._transform import EdgeLDPTransform
from dpgl.mechanisms.rr import RRTransform
from dpgl.mechanisms.symrr import SymRRTransform
from dpgl.methods.base import Method, MethodOutput, RunContext, register
from dpgl.methods.common import node_split, train_node_model
from dpgl.methods.params import NodeParams, Params
from dpgl.nn import PreparedGraph
from dpgl.privacy import Guarantee, Unit

Symmetrize = Literal["directed", "or", "and"]


class RRParams(NodeParams):
    symmetrize: Symmetrize = "directed"


class DPRRParams(NodeParams):
    alpha: float = Field(0.9, gt=0, lt=1)
    allocation: Literal["eq8", "split"] = "eq8"
    symmetrize: Symmetrize = "directed"
    non_private_fraction: float = Field(0.0, ge=0, lt=1)


class BlinkParams(NodeParams):
    degree_share: float = Field(0.1, gt=0, lt=1)  # Blink's delta; eps_d = share * eps


class LDPGenParams(NodeParams):
    phase1_share: float = Field(0.5, gt=0, lt=1)


def _parts(transform: EdgeLDPTransform, num_nodes: int) -> dict[str, Guarantee]:
    """The named budget parts of a transform's client mechanism (they sum to epsilon)."""
    mech = getattr(transform, "mechanism", None) or getattr(transform, "client", None)
    parts = getattr(mech, "parts", None)
    if parts is None:
        return {"neighbor list": transform.guarantee}
    # A property, except for DPRR, whose split depends on the graph size (Eq. 8).
    return dict(parts(num_nodes)) if callable(parts) else dict(parts)


class EdgeLDPMethod(Method):
    """Users randomize neighbor lists; the server estimates a graph; a GNN is trained on it."""

    tasks: ClassVar[tuple[str, ...]] = ("node",)
    private = True

    @abstractmethod
    def transform(self, ctx: RunContext, seed: Any) -> EdgeLDPTransform:
        """The client+server pipeline for this run, seeded with ``seed``."""

    def fit(self, ctx: RunContext) -> MethodOutput:
        if ctx.task == "graph":
            from dpgl.methods.graph_ldp import fit_graph_ldp

            return fit_graph_ldp(self.name, ctx)
        data = ctx.dataset
        split = node_split(ctx, data)  # first draw: the same split for every method and seed
        transform = self.transform(ctx, ctx.rng.spawn(1)[0])
        estimated = transform(data)
        n = int(data.num_nodes)
        acc = ctx.accountant
        for part, guarantee in _parts(transform, n).items():
            acc.spend(f"{self.name}: {part}", guarantee, mechanism=type(transform).__name__)
        acc.spend_nonprivate("features", "node features known to the server (Blink setting)",
                             Unit.FEATURE_LDP)
        acc.spend_nonprivate("labels", "training labels known to the server (Blink setting)",
                             Unit.LABEL_LDP)
        weight = getattr(estimated, "edge_weight", None)
        graph = PreparedGraph(estimated.edge_index, n, weight)
        out = train_node_model(ctx, data.x, data.y, split, graph)
        out.info["estimated_edges"] = graph.num_edges
        out.info["true_edges"] = int(data.edge_index.size(1))
        out.info.update({f"estimator_{k}": v for k, v in transform.last_info.items()
                         if isinstance(v, (int, float, str, bool))})
        if weight is not None:
            out.info["estimated_weight_sum"] = float(torch.as_tensor(weight).sum())
        return out


@register
class RRMethod(EdgeLDPMethod):
    name = "rr"
    tasks = ("node", "graph")
    summary = "Warner randomized response on every bit of each neighbor list"

    def params_model(self, task: str) -> type[Params]:
        if task == "graph":
            from dpgl.methods.graph_ldp import GraphLDPParams

            return GraphLDPParams
        return RRParams

    def transform(self, ctx: RunContext, seed: Any) -> EdgeLDPTransform:
        assert ctx.epsilon is not None and isinstance(ctx.params, RRParams)
        return RRTransform(ctx.epsilon, symmetrize=ctx.params.symmetrize, seed=seed)


@register
class SymRRMethod(EdgeLDPMethod):
    name = "symrr"
    summary = "randomized response on the lower triangle only (symmetric; Imola et al.)"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": NodeParams}

    def transform(self, ctx: RunContext, seed: Any) -> EdgeLDPTransform:
        assert ctx.epsilon is not None
        return SymRRTransform(ctx.epsilon, seed=seed)


@register
class DPRRMethod(EdgeLDPMethod):
    name = "dprr"
    tasks = ("node", "graph")
    summary = "degree-preserving RR: Laplace degree + RR + edge sampling (Hidano & Murakami)"

    def params_model(self, task: str) -> type[Params]:
        if task == "graph":
            from dpgl.methods.graph_ldp import GraphLDPParams

            return GraphLDPParams
        return DPRRParams

    def transform(self, ctx: RunContext, seed: Any) -> EdgeLDPTransform:
        p = ctx.params
        assert ctx.epsilon is not None and isinstance(p, DPRRParams)
        n = int(ctx.dataset.num_nodes)
        return DPRRTransform(ctx.epsilon, n_max=n, alpha=p.alpha, allocation=p.allocation,
                             symmetrize=p.symmetrize, nonprivate_fraction=p.non_private_fraction,
                             seed=seed)

    def fit(self, ctx: RunContext) -> MethodOutput:
        out = super().fit(ctx)
        p = ctx.params
        if ctx.task == "node" and isinstance(p, DPRRParams) and p.non_private_fraction > 0:
            ctx.accountant.spend_nonprivate(
                "non-private users",
                f"a fraction {p.non_private_fraction:g} of users send their true lists",
                Unit.EDGE_LDP,
            )
        return out


@register
class LDPGCNMethod(EdgeLDPMethod):
    name = "ldpgcn"
    summary = "L-DpGCN: Laplace noise on every bit, server keeps the top-T entries"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": NodeParams}

    def transform(self, ctx: RunContext, seed: Any) -> EdgeLDPTransform:
        assert ctx.epsilon is not None
        return LocalLapTransform(ctx.epsilon, variant="ldpgcn", seed=seed)


@register
class LDPGenMethod(EdgeLDPMethod):
    name = "ldpgen"
    summary = "LDPGen: noisy degree vectors, clustering, Chung-Lu generation (Qin et al.)"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": LDPGenParams}

    def transform(self, ctx: RunContext, seed: Any) -> EdgeLDPTransform:
        assert ctx.epsilon is not None and isinstance(ctx.params, LDPGenParams)
        return LDPGenTransform(ctx.epsilon, phase1_share=ctx.params.phase1_share, seed=seed)


class _Blink(EdgeLDPMethod):
    variant: ClassVar[str]
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": BlinkParams}

    def transform(self, ctx: RunContext, seed: Any) -> EdgeLDPTransform:
        assert ctx.epsilon is not None and isinstance(ctx.params, BlinkParams)
        return BlinkTransform(ctx.epsilon, ctx.params.degree_share, variant=self.variant,
                              seed=seed)


@register
class BlinkHard(_Blink):
    name = "blink-hard"
    variant = "hard"
    summary = "Blink: RR + Laplace degree, beta-model posterior, keep pairs with P > 0.5"


@register
class BlinkSoft(_Blink):
    name = "blink-soft"
    variant = "soft"
    summary = "Blink: all posteriors as edge weights (exact up to 3,000 nodes, bounded beyond)"


@register
class BlinkHybrid(_Blink):
    name = "blink-hybrid"
    variant = "hybrid"
    summary = "Blink: keep the top ||P||_1 posteriors as edge weights"
