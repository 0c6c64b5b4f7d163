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
serve graph classification too (issue #6): they hold the per-graph randomizers
:class:`~dpgl.methods.graph_ldp.RRGraph` and :class:`~dpgl.methods.graph_ldp.DPRRGraph`.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from dpgl.errors import ConfigError
from dpgl.methods.base import Method, MethodOutput, RunContext, register
from dpgl.methods.common import node_split
from dpgl.methods.edge_scale import EDGE_SCALE_HELP, PUBLIC_SCALE_HELP, fit_scaled
from dpgl.methods.graph_ldp import (
    ALLOCATION_HELP,
    NON_PRIVATE_FRACTION_HELP,
    SYMMETRIZE_HELP,
    DPRRGraph,
    GraphLDPParams,
    RRGraph,
    customized_setting,
)
from dpgl.methods.params import NodeParams, Params, Renamed, complement
from dpgl.privacy import Unit

if TYPE_CHECKING:
    from dpgl.transforms import EdgeLDPTransform

Symmetrize = Literal["directed", "or", "and"]
Direction = Literal["user", "reported"]
DIRECTION_HELP = ("which end of a directed report receives messages: user (she aggregates "
                  "from the neighbours she reported) or reported (Blink's code)")


def _check_orientation(direction: str, symmetrize: str) -> None:
    """RR's and DPRR's params: :func:`dpgl.mechanisms.rr.check_direction`, imported only
    when ``direction`` is not the default (which needs no check), so that validating the
    default stays free of heavy imports."""
    if direction != "user":
        from dpgl.mechanisms.rr import check_direction
        check_direction(direction, symmetrize)


class RRParams(NodeParams):
    symmetrize: Symmetrize = Field("directed", description=SYMMETRIZE_HELP)
    direction: Direction = Field("user", description=DIRECTION_HELP)

    @model_validator(mode="after")
    def _direction(self) -> RRParams:
        _check_orientation(self.direction, self.symmetrize)
        return self


class DPRRParams(NodeParams):
    renamed: ClassVar[dict[str, Renamed]] = {"alpha": Renamed("degree_share", complement)}
    randomizer_params: ClassVar[frozenset[str]] = frozenset(
        {"degree_share", "allocation", "non_private_fraction"})

    degree_share: float = Field(0.1, gt=0, lt=1, description="share of epsilon for the "
                                "Laplace degree (1 - alpha of DPRR's Eq. 8)")
    allocation: Literal["eq8", "split"] = Field("eq8", description=ALLOCATION_HELP)
    symmetrize: Symmetrize = Field("directed", description=SYMMETRIZE_HELP)
    direction: Direction = Field("user", description=DIRECTION_HELP)
    non_private_fraction: float = Field(0.0, ge=0, lt=1, description=NON_PRIVATE_FRACTION_HELP)

    @model_validator(mode="after")
    def _direction(self) -> DPRRParams:
        _check_orientation(self.direction, self.symmetrize)
        return self


def _unit_or_val(cls: type, v: Any) -> Any:
    """A scale parameter (``edge_scale``, ``public_scale``): a number in [0, 1] or "val"."""
    if v == "val" or (isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1):
        return v
    raise ValueError(f"must be a number in [0, 1] or val, got {v!r}")


class BlinkParams(NodeParams):
    randomizer_params: ClassVar[frozenset[str]] = frozenset({"degree_share"})

    degree_share: float = Field(0.1, gt=0, lt=1, description="share of epsilon for the noisy "
                                "degree (Blink's delta: eps_d = degree_share eps)")
    edge_scale: float | Literal["val"] = Field(1.0, description=EDGE_SCALE_HELP)

    _edge_scale = field_validator("edge_scale", mode="before")(_unit_or_val)


class LDPGenParams(NodeParams):
    randomizer_params: ClassVar[frozenset[str]] = frozenset({"phase1_share"})

    phase1_share: float = Field(0.5, gt=0, lt=1, description="share of epsilon for the phase-1 "
                                "degree vector (LDPGen's eps1 / eps)")
    generator: Literal["chung-lu", "blink-authors-bug"] = Field(
        "chung-lu", description="the server's graph: chung-lu (a block Chung-Lu graph, "
        "undirected) or blink-authors-bug (the Blink authors' baseline code, github.com/zhxchd/"
        "Blink_GNN src/ldpgen/server.py: a directed graph whose edge u -> v ignores v's "
        "report, a defect reproduced only to compare with Blink's Fig. 5)")


class EdgeLDPMethod(Method):
    """Users randomize neighbor lists; the server estimates a graph; a GNN is trained on it."""

    tasks: ClassVar[tuple[str, ...]] = ("node",)
    private = True
    budgets: ClassVar[dict[Unit, str]] = {Unit.EDGE_LDP: "epsilon"}
    # Blink's setting (Sec. 3): the server knows the node features and the training labels
    public: ClassVar[frozenset[Unit]] = frozenset({Unit.FEATURE_LDP, Unit.LABEL_LDP})

    def unprotected_by_choice(self, params: Params) -> set[Unit]:
        return customized_setting(params)

    def check_model(self, params: Params, model: str) -> None:
        scale = getattr(params, "edge_scale", 1.0)
        if scale != 1.0 and model != "gcn":
            raise ConfigError(f"edge_scale={scale} weighs the estimated edges against the "
                              f"self-loops of a GCN; model {model!r} does not use edge "
                              "weights that way: use --model gcn or edge_scale=1")
        if getattr(params, "public_graph", None) is not None and model != "gcn":
            raise ConfigError(f"public_graph weighs a public kNN graph against the self-loops "
                              f"of a GCN; model {model!r} does not use edge weights that way: "
                              "use --model gcn or leave public_graph unset")

    def public_graph(self, ctx: RunContext) -> Any:
        """A graph from public data alone that the GCN reads beside the estimate
        (:func:`dpgl.methods.edge_scale.fit_scaled`), or None (every method but blink-pp)."""
        return None

    @abstractmethod
    def transform(self, ctx: RunContext, seed: Any, split: Any) -> EdgeLDPTransform:
        """The client+server pipeline for this run, seeded with ``seed``; ``split`` is the
        run's (train, val, test), for a server that uses the public training labels
        (``blink-pp``); the users' randomizers never see it."""

    def estimate(self, ctx: RunContext) -> tuple[Any, Any, EdgeLDPTransform]:
        """The steps before training: the run's split (its first draw, the same for every
        method at a seed; with ``split="blink-fixed"`` no draw, the same for every seed),
        then the users' reports and the server's estimate, a ``Data`` with ``edge_index`` and
        possibly ``edge_weight`` (the users' randomizers charge the run's accountant).
        Returns (split, estimated graph, the transform that made it)."""
        data = ctx.dataset
        split = node_split(ctx, data)
        transform = self.transform(ctx, ctx.rng.spawn(1)[0], split)
        return split, transform(data), transform

    def fit_node(self, ctx: RunContext) -> MethodOutput:
        import torch

        from dpgl.nn import PreparedGraph
        from dpgl.nn.dense_graph import DenseGraph
        data = ctx.dataset
        split, estimated, transform = self.estimate(ctx)
        n = int(data.num_nodes)
        acc = ctx.accountant
        acc.spend_nonprivate("node features", "known to the server (Blink setting)",
                             Unit.FEATURE_LDP)
        acc.spend_nonprivate("labels", "training labels known to the server (Blink setting)",
                             Unit.LABEL_LDP)
        weight = getattr(estimated, "edge_weight", None)
        dense = getattr(estimated, "dense_adjacency", None)
        graph: Any = (DenseGraph(dense) if dense is not None
                      else PreparedGraph(estimated.edge_index, n, weight))
        del estimated, dense  # a dense estimate: the graph holds the one copy
        out = fit_scaled(ctx, data.x, data.y, split, graph,
                         getattr(ctx.params, "edge_scale", 1.0), public=self.public_graph(ctx),
                         public_scale=getattr(ctx.params, "public_scale", 1.0))
        out.info["estimated_edges"] = graph.num_edges
        out.diagnostics["true_edges"] = int(data.edge_index.size(1))
        out.info.update({f"estimator_{k}": v for k, v in transform.last_info.items()
                         if isinstance(v, (int, float, str, bool))})
        if isinstance(graph, DenseGraph):
            out.info["estimated_weight_sum"] = graph.edge_weight_sum
        elif weight is not None:
            out.info["estimated_weight_sum"] = float(torch.as_tensor(weight).sum())
        return out


@register
class RRMethod(EdgeLDPMethod):
    """Warner, "Randomized Response: A Survey Technique for Eliminating Evasive Answer
    Bias", JASA 1965 (edge LDP: Qin et al., CCS 2017)."""

    name = "rr"
    display_name = "RR"
    tasks = ("node", "graph")
    summary = "Warner randomized response on every bit of each neighbor list"
    budget_split = "all of epsilon to Warner RR on every neighbor-list bit"

    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": RRParams,
                                                          "graph": GraphLDPParams}
    graph_randomizer = RRGraph

    def transform(self, ctx: RunContext, seed: Any, split: Any) -> EdgeLDPTransform:
        from dpgl.transforms import RRTransform
        assert ctx.epsilon is not None and isinstance(ctx.params, RRParams)
        return RRTransform(ctx.epsilon, symmetrize=ctx.params.symmetrize, seed=seed,
                           direction=ctx.params.direction)


@register
class SymRRMethod(EdgeLDPMethod):
    """Imola, Murakami & Chaudhuri, "Locally Differentially Private Analysis of Graph
    Statistics", USENIX Security 2021."""

    name = "symrr"
    display_name = "SymRR"
    summary = "randomized response on the lower triangle only (symmetric; Imola et al.)"
    budget_split = "all of epsilon to RR on the bits j < i of user i's list"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": NodeParams}

    def transform(self, ctx: RunContext, seed: Any, split: Any) -> EdgeLDPTransform:
        from dpgl.transforms import SymRRTransform
        assert ctx.epsilon is not None
        return SymRRTransform(ctx.epsilon, seed=seed)


@register
class DPRRMethod(EdgeLDPMethod):
    """Hidano & Murakami, "Degree-Preserving Randomized Response for Graph Neural Networks
    under Local Differential Privacy", arXiv:2202.10209, 2022."""

    name = "dprr"
    display_name = "DPRR"
    tasks = ("node", "graph")
    summary = "degree-preserving RR: Laplace degree + RR + edge sampling (Hidano & Murakami)"
    budget_split = ("eps1 = max(sqrt(8/(n_max-1)), degree_share eps) to the Laplace degree "
                    "(Eq. 8 with alpha = 1 - degree_share; allocation='split': degree_share "
                    "eps), the rest to RR")

    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": DPRRParams,
                                                          "graph": GraphLDPParams}
    graph_randomizer = DPRRGraph

    def transform(self, ctx: RunContext, seed: Any, split: Any) -> EdgeLDPTransform:
        from dpgl.transforms import DPRRTransform
        p = ctx.params
        assert ctx.epsilon is not None and isinstance(p, DPRRParams)
        n = int(ctx.dataset.num_nodes)
        return DPRRTransform(ctx.epsilon, n_max=n, degree_share=p.degree_share,
                             allocation=p.allocation, symmetrize=p.symmetrize,
                             non_private_fraction=p.non_private_fraction,
                             direction=p.direction, seed=seed)


@register
class LDPGCNMethod(EdgeLDPMethod):
    """L-DpGCN as Blink runs it (its baseline 2): Zhu, Tan & Xiao, "Blink: Link Local
    Differential Privacy in Graph Neural Networks via Bayesian Estimation", CCS 2023."""

    name = "ldpgcn"
    display_name = "L-DpGCN"
    summary = "L-DpGCN: Laplace noise on every bit, server keeps the top-T entries"
    budget_split = "all of epsilon to Laplace noise on every neighbor-list bit"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": NodeParams}

    def transform(self, ctx: RunContext, seed: Any, split: Any) -> EdgeLDPTransform:
        from dpgl.transforms import LocalLapTransform
        assert ctx.epsilon is not None
        return LocalLapTransform(ctx.epsilon, variant="ldpgcn", seed=seed)


@register
class LDPGenMethod(EdgeLDPMethod):
    """Qin, Yu, Yang, Khalil, Xiao & Ren, "Generating Synthetic Decentralized Social Graphs
    with Local Differential Privacy", CCS 2017."""

    name = "ldpgen"
    display_name = "LDPGen"
    summary = "LDPGen: noisy degree vectors, clustering, Chung-Lu generation (Qin et al.)"
    budget_split = "phase1_share to the phase-1 degree vector, the rest to phase 2"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": LDPGenParams}

    def transform(self, ctx: RunContext, seed: Any, split: Any) -> EdgeLDPTransform:
        from dpgl.transforms import LDPGenTransform
        assert ctx.epsilon is not None and isinstance(ctx.params, LDPGenParams)
        return LDPGenTransform(ctx.epsilon, phase1_share=ctx.params.phase1_share,
                               generator=ctx.params.generator, seed=seed)


class _Blink(EdgeLDPMethod):
    """Zhu, Tan & Xiao, "Blink: Link Local Differential Privacy in Graph Neural Networks via
    Bayesian Estimation", CCS 2023."""

    variant: ClassVar[str]
    budget_split = "degree_share to the noisy degree, the rest to RR on every bit"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": BlinkParams}

    def transform(self, ctx: RunContext, seed: Any, split: Any) -> EdgeLDPTransform:
        from dpgl.transforms import BlinkTransform
        assert ctx.epsilon is not None and isinstance(ctx.params, BlinkParams)
        return BlinkTransform(ctx.epsilon, ctx.params.degree_share, variant=self.variant,
                              seed=seed, soft_options=self.soft_options)

    #: :meth:`dpgl.estimators.blink.BlinkServer.soft`'s options (Blink-Soft's)
    soft_options: ClassVar[dict[str, Any]] = {}


@register
class BlinkHard(_Blink):
    name = "blink-hard"
    display_name = "Blink-Hard"
    variant = "hard"
    summary = "Blink: RR + discrete Laplace degree, beta-model posterior, keep pairs with P > 0.5"


@register
class BlinkSoft(_Blink):
    name = "blink-soft"
    display_name = "Blink-Soft"
    variant = "soft"
    summary = ("Blink: all posteriors as edge weights (exact up to 3,000 nodes, bounded "
               "beyond, the dense matrix where the bounded pairs would not fit)")
    #: beyond ``max_pairs`` kept pairs, the exact dense matrix up to this many nodes (two
    #: float32 n x n matrices in training: 8.6 GB at the limit, 4 GB for Facebook)
    soft_options: ClassVar[dict[str, Any]] = {"dense_max_n": 32_768}


@register
class BlinkHybrid(_Blink):
    name = "blink-hybrid"
    display_name = "Blink-Hybrid"
    variant = "hybrid"
    summary = "Blink: keep the top ||P||_1 posteriors as edge weights"


class PublicPriorParams(BlinkParams):
    knn: int = Field(10, ge=1, description="feature k-nearest neighbours that form the prior's "
                     "k-pair covariate")
    covariates: Literal["both", "knn", "group", "none"] = Field(
        "both", description="the prior's public covariates: both (feature kNN and same "
        "group), knn, group, or none (Blink's beta model with degree shrinkage)")
    graph: Literal["hybrid", "hard", "soft"] = Field(
        "hybrid", description="hybrid: the top ||P||_1 posteriors as weights; hard: P > 1/2; "
        "soft: every posterior >= floor as a weight")
    floor: float = Field(1e-2, gt=0, lt=1, description="smallest posterior kept by graph=soft")
    public_graph: int | None = Field(
        None, ge=1, description="k of a public feature-kNN graph (cosine, undirected) that the "
        "GCN reads beside the estimate, weighted by public_scale; null: none")
    public_scale: float | Literal["val"] = Field(1.0, description=PUBLIC_SCALE_HELP)

    _public_scale = field_validator("public_scale", mode="before")(_unit_or_val)

    @model_validator(mode="after")
    def _public_scale_needs_a_graph(self) -> PublicPriorParams:
        if self.public_graph is None and self.public_scale != 1.0:
            raise ValueError(f"public_scale={self.public_scale} weighs the public kNN graph, "
                             "but there is none: set public_graph (its k) too")
        return self


@register
class BlinkPublicPrior(EdgeLDPMethod):
    """dpgl's own method (docs/own-method.md): Blink's reports and posterior, with a prior
    whose logit adds a feature-kNN and a same-group covariate computed from the public
    features and training labels, fitted by the method of moments on the reports
    (:mod:`dpgl.estimators.public_prior`). Post-processing of Blink's reports."""

    name = "blink-pp"
    display_name = "Blink-PP (dpgl)"
    summary = ("Blink's reports; prior from public features and training labels (kNN and "
               "same-group covariates, moments fitted on the reports); Hybrid graph")
    budget_split = "degree_share to the noisy degree, the rest to RR on every bit (Blink's)"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": PublicPriorParams}

    def transform(self, ctx: RunContext, seed: Any, split: Any) -> EdgeLDPTransform:
        from dpgl.estimators.public_prior import public_covariates
        from dpgl.transforms import PublicPriorTransform
        p = ctx.params
        assert ctx.epsilon is not None and isinstance(p, PublicPriorParams)
        data = ctx.dataset
        cov = public_covariates(data.x, data.y, split[0],
                                knn=p.knn if p.covariates in ("both", "knn") else None,
                                groups=p.covariates in ("both", "group"))
        return PublicPriorTransform(ctx.epsilon, p.degree_share, variant=p.graph, seed=seed,
                                    covariates=cov, floor=p.floor)

    def public_graph(self, ctx: RunContext) -> Any:
        """The feature kNN graph (``public_graph`` = k), unweighted, both directions: a
        function of the public features alone, no report enters it (docs/own-method.md)."""
        from dpgl.graph.knn import knn_edge_index
        from dpgl.nn import PreparedGraph
        p = ctx.params
        assert isinstance(p, PublicPriorParams)
        if p.public_graph is None:
            return None
        return PreparedGraph(knn_edge_index(ctx.dataset.x, p.public_graph),
                             int(ctx.dataset.num_nodes))
