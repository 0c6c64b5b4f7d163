"""Graph classification under edge LDP (Hidano & Murakami, "Degree-Preserving Randomized
Response for Graph Neural Networks under Local Differential Privacy", arXiv 2202.10209).

Every graph (a thread, a community) is classified; in every graph each user randomizes her
neighbor list once and the server trains GIN-0 (Sec. 5.1) on the noisy graphs. Methods
(the graph randomizer each one holds):

* ``dprr``: DPRR (noisy degree with eps1, RR with eps2, edge sampling; Eq. 8 budget
  allocation with n_max = the largest graph of the dataset unless ``n_max`` is given, or the
  plain split eps1 = ``degree_share`` eps; the paper's alpha is 1 - ``degree_share``);
* ``rr``: Warner's RR with eps on every bit;
* ``locallap``: Laplace noise on every bit (eps2 = 9 eps / 10) + noisy degree
  (eps1 = eps / 10), server keeps the top T = sum(noisy degrees) / 2 pairs;
* ``nonpriv-part``: only the non-private users' true lists are used, the private users'
  lists are dropped (no noise, no privacy for the non-private users);
* ``nonpriv-full``: every true list is used (no privacy).

Customized setting (Sec. 5): a fraction lambda = ``non_private_fraction`` of the users of
each graph, drawn uniformly per graph, are non-private and send their true lists; they have
**no** privacy (recorded with ``spend_nonprivate``). Sec. 6: ``poison`` replaces the lists
of a fraction ``poison_fraction`` of users in the *training* graphs
(:mod:`dpgl.mechanisms.poisoning`), ``defense_theta`` drops the lists whose number of ones
is >= tau (Eq. 17) in every graph.

One registry serves both tasks: a method that declares the ``"graph"`` task holds its
per-graph client as :attr:`~dpgl.methods.base.Method.graph_randomizer` (a
:class:`GraphRandomizer` subclass below) and :meth:`~dpgl.methods.base.Method.fit` runs it
through :func:`fit_graph_ldp`. Registered here: ``locallap``, ``nonpriv-part``,
``nonpriv-full`` (graph task only); ``rr`` and ``dprr`` are registered by
:mod:`dpgl.methods.edge_ldp` for both tasks, holding :class:`RRGraph` and :class:`DPRRGraph`.
"""

from __future__ import annotations

import contextlib
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, model_validator

from dpgl.errors import ConfigError
from dpgl.methods.base import (
    Method,
    MethodOutput,
    RunContext,
    check_task,
    get_method,
    list_methods,
    register,
)
from dpgl.methods.params import GraphParams, Params, Renamed, complement
from dpgl.privacy import Unit
from dpgl.rng import spawn

if TYPE_CHECKING:
    import numpy as np

if TYPE_CHECKING:
    import torch
    from torch_geometric.data import Data

    from dpgl.mechanisms.rr import DirectedReports

__all__ = [
    "DPRRGraph",
    "GraphLDPParams",
    "GraphRandomizer",
    "LocalLapGraph",
    "NonPrivFullGraph",
    "NonPrivPartGraph",
    "RRGraph",
    "RandomizedGraph",
    "fit_graph_ldp",
    "graph_randomizer",
    "randomize_graphs",
]


def customized_setting(params: Params) -> set[Unit]:
    """DPRR's customized setting (Sec. 5): with ``non_private_fraction`` > 0 some users send
    their true lists, a "no privacy" edge-LDP total chosen on purpose."""
    return {Unit.EDGE_LDP} if getattr(params, "non_private_fraction", 0.0) > 0 else set()


#: descriptions shared by the node and graph tasks' DPRR parameters
#: (:class:`dpgl.methods.edge_ldp.DPRRParams`)
SYMMETRIZE_HELP = ("the reports as sent (directed), or an edge where either end (or) or both "
                   "ends (and) report it")
ALLOCATION_HELP = ("eq8: the degree gets max(sqrt(8/(n_max-1)), degree_share eps) (DPRR Eq. 8); "
                   "split: degree_share eps")
NON_PRIVATE_FRACTION_HELP = ("fraction of users who send their true lists, with no privacy "
                             "(DPRR's lambda)")


class GraphLDPParams(GraphParams):
    """GIN-0 hyper-parameters (:class:`GraphParams`) + the DPRR paper's options."""

    renamed: ClassVar[dict[str, Renamed]] = {
        "alpha": Renamed("degree_share", complement),  # DPRR's Eq. 8 alpha (RR's share)
        "degree_fraction": Renamed("degree_share"),  # LocalLap's
    }
    # (poison*: the attack of Sec. 6 rewrites the poisoned users' reports; an adversary's
    # choice, not a parameter the honest users' randomizers read)
    randomizer_params: ClassVar[frozenset[str]] = frozenset(
        {"degree_share", "allocation", "n_max", "non_private_fraction"})

    non_private_fraction: float = Field(0.0, ge=0, lt=1, description=NON_PRIVATE_FRACTION_HELP)
    degree_share: float = Field(0.1, gt=0, lt=1, description="share of epsilon for the noisy "
                                "degree (DPRR's 1 - alpha, LocalLap's eps1 / eps)")
    allocation: Literal["eq8", "split"] = Field("eq8", description=ALLOCATION_HELP)
    n_max: int | None = Field(None, ge=2, description="n_max of DPRR's Eq. 8 (unset: the "
                              "largest graph of the dataset)")
    symmetrize: Literal["directed", "or", "and"] = Field("directed", description=SYMMETRIZE_HELP)
    poison: Literal["none", "all-ones", "random", "custom"] = Field(
        "none", description="data poisoning attack on the training graphs (DPRR Sec. 6)")
    poison_fraction: float = Field(0.0, ge=0, le=0.5, description="fraction beta of poisoned "
                                   "users per training graph")
    poison_omega1: float | None = Field(None, ge=0, le=1, description="poison=custom: "
                                        "probability a poisoned user reports a true edge")
    poison_omega2: float | None = Field(None, ge=0, le=1, description="poison=custom: "
                                        "probability a poisoned user reports a non-edge")
    defense_theta: float | None = Field(None, gt=0, lt=1, description="Defense(theta): drop "
                                        "lists with too many ones (Eq. 17; unset: no defense)")
    max_total_edges: int = Field(60_000_000, ge=1, description="refuse a run whose noisy "
                                 "graphs hold more edges than this (memory guard)")

    @model_validator(mode="after")
    def _poison(self) -> GraphLDPParams:
        custom = self.poison_omega1 is not None or self.poison_omega2 is not None
        if self.poison == "custom" and (self.poison_omega1 is None or self.poison_omega2 is None):
            raise ValueError("poison='custom' needs poison_omega1 and poison_omega2")
        if custom and self.poison != "custom":
            raise ValueError("poison_omega1/poison_omega2 need poison='custom'")
        if self.poison == "none" and self.poison_fraction > 0:
            raise ValueError("poison_fraction > 0 needs poison='all-ones', 'random' or 'custom'")
        return self

    @property
    def omegas(self) -> tuple[float, float] | None:
        """(omega1, omega2) of the attack, None without one."""
        from dpgl.mechanisms.poisoning import POISON_PRESETS
        if self.poison == "none":
            return None
        if self.poison == "custom":
            assert self.poison_omega1 is not None and self.poison_omega2 is not None
            return self.poison_omega1, self.poison_omega2
        return POISON_PRESETS[self.poison]


def _no_users() -> np.ndarray:
    import numpy as np

    return np.zeros(0, np.int64)


@dataclass
class RandomizedGraph:
    """What the server holds for one graph: the users' reports (directed) and per-user
    diagnostics."""

    reports: DirectedReports
    #: DPRR: every user's noisy degree, which stays on her device (it only sets her sampling
    #: probability); kept for evaluation-only analysis, never part of the server's data.
    device_noisy_degree: np.ndarray | None = None
    private: np.ndarray | None = None  # mask of private users
    poisoned: np.ndarray = field(default_factory=_no_users)
    flagged: np.ndarray | None = None  # Defense(theta) flags


def _both_directions(a: np.ndarray, b: np.ndarray, n: int) -> DirectedReports:
    import numpy as np

    from dpgl.graph.pairs import sort_pairs
    from dpgl.mechanisms.rr import DirectedReports
    row, col, _ = sort_pairs(np.concatenate([a, b]), np.concatenate([b, a]), n)
    return DirectedReports(row, col, n)


def _true_rows(u: np.ndarray, v: np.ndarray, n: int, users_mask: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """Directed true pairs (user, neighbor) of the users in ``users_mask``."""
    import numpy as np
    src = np.concatenate([u, v]).astype(np.int64)
    dst = np.concatenate([v, u]).astype(np.int64)
    keep = users_mask[src]
    return src[keep], dst[keep]


def _record_nonprivate_users() -> None:
    from dpgl.privacy.randomizer import record_nonprivate
    record_nonprivate("non-private users' neighbor lists",
                      "the non-private users of DPRR's customized setting send "
                      "their true lists: they have no privacy",
                      Unit.EDGE_LDP)


class GraphRandomizer(ABC):
    """The per-graph client side of a graph-task method (no training): maps a true graph to
    the reports the server receives. A method serves the graph task by holding a subclass in
    :attr:`dpgl.methods.base.Method.graph_randomizer`; :func:`graph_randomizer` builds the
    one of a registered method. ``n_max`` is DPRR's Eq. 8 n_max (the largest graph)."""

    #: takes an epsilon (the non-private baselines do not)
    private: ClassVar[bool] = True
    #: the DPRR paper's poisoning attack and Defense(theta) are defined on its noisy lists
    poisonable: ClassVar[bool] = False
    #: what the server uses as is, (name, description with ``{fraction}`` =
    #: ``non_private_fraction``), recorded once per run; the private randomizers charge the
    #: run's accountant themselves, per graph
    uses_as_is: ClassVar[tuple[str, str] | None] = None

    def __init__(self, epsilon: float | None, params: GraphLDPParams, *,
                 n_max: int | None = None) -> None:
        if self.private and epsilon is None:
            raise ConfigError(f"{type(self).__name__} is private: give an epsilon")
        self.epsilon = epsilon
        self.params = params

    @property
    def eps2(self) -> float | None:
        """The RR budget that bounds an honest list's ones (for Defense(theta))."""
        return None

    @abstractmethod
    def reports(self, u: np.ndarray, v: np.ndarray, n: int, private: np.ndarray,
                rng: np.random.Generator) -> tuple[DirectedReports, np.ndarray | None]:
        """The reports of one graph with undirected edges ``(u, v)``, ``private`` the mask of
        the private users; and the users' device-side noisy degrees (None without)."""

    def __call__(self, g: Data, rng: np.random.Generator) -> RandomizedGraph:
        import numpy as np

        from dpgl.mechanisms.dprr import draw_private_mask
        from dpgl.mechanisms.neighbor_list import undirected_pairs
        n = int(g.num_nodes)
        u, v = undirected_pairs(g.edge_index, n)
        r_mask, r_mech = spawn(rng, 2)
        lam = self.params.non_private_fraction
        private = draw_private_mask(n, lam, r_mask) if lam > 0 else np.ones(n, dtype=bool)
        reports, noisy = self.reports(u, v, n, private, r_mech)
        return RandomizedGraph(reports, noisy, private)

    def expected_reports(self, graphs: list[Data]) -> float:
        """E[total reported pairs] over ``graphs`` (~2|E| unless the output grows as n^2)."""
        return float(sum(int(g.edge_index.size(1)) for g in graphs))

    def info(self) -> dict[str, Any]:
        """Run information about the budget split (public)."""
        return {}


class DPRRGraph(GraphRandomizer):
    """DPRR (Hidano & Murakami, Alg. 1): noisy degree with eps1, RR with eps2, edge sampling;
    Eq. 8 budget allocation with n_max = the largest graph unless ``params.n_max`` is given."""

    poisonable = True

    def __init__(self, epsilon: float | None, params: GraphLDPParams, *,
                 n_max: int | None = None) -> None:
        from dpgl.mechanisms.dprr import DPRR
        super().__init__(epsilon, params, n_max=n_max)
        assert epsilon is not None
        self.dprr = DPRR(epsilon, n_max=params.n_max or n_max, alpha=1.0 - params.degree_share,
                         allocation=params.allocation)

    @property
    def eps2(self) -> float | None:
        return self.dprr.budget()[1] if self.dprr.n_max is not None else None

    def reports(self, u: np.ndarray, v: np.ndarray, n: int, private: np.ndarray,
                rng: np.random.Generator) -> tuple[DirectedReports, np.ndarray | None]:
        lam = self.params.non_private_fraction
        return self.dprr.simulate(u, v, n, rng, private_mask=private if lam > 0 else None)

    def info(self) -> dict[str, Any]:
        eps1, eps2 = self.dprr.budget()
        return {"eps1": eps1, "eps2": eps2, "dprr_n_max": self.dprr.n_max}


class RRGraph(GraphRandomizer):
    """Warner's RR with eps on every bit of every private user's list."""

    poisonable = True

    def __init__(self, epsilon: float | None, params: GraphLDPParams, *,
                 n_max: int | None = None) -> None:
        from dpgl.mechanisms.rr import RR
        super().__init__(epsilon, params, n_max=n_max)
        assert epsilon is not None
        self.rr = RR(epsilon)

    @property
    def eps2(self) -> float | None:
        return self.rr.epsilon

    def reports(self, u: np.ndarray, v: np.ndarray, n: int, private: np.ndarray,
                rng: np.random.Generator) -> tuple[DirectedReports, np.ndarray | None]:
        import numpy as np

        from dpgl.graph.pairs import sort_pairs
        from dpgl.mechanisms.rr import DirectedReports
        lam = self.params.non_private_fraction
        if lam > 0:
            _record_nonprivate_users()
        reports = self.rr.simulate(u, v, n, rng)
        if lam > 0:  # non-private users send their true lists instead
            keep = private[reports.user]
            a, b = _true_rows(u, v, n, ~private)
            row, col, _ = sort_pairs(np.concatenate([reports.user[keep], a]),
                                     np.concatenate([reports.neighbor[keep], b]), n)
            reports = DirectedReports(row, col, n)
        return reports, None

    def expected_reports(self, graphs: list[Data]) -> float:
        return float(sum(self.rr.expected_reports(int(g.num_nodes), int(g.edge_index.size(1)) // 2)
                         for g in graphs))


class LocalLapGraph(GraphRandomizer):
    """LocalLap (DPRR paper baseline): Laplace noise on every bit + noisy degree
    (eps1 = ``degree_share`` eps); the server keeps the top T = sum(noisy degrees) / 2
    pairs among the private users, plus every true edge at a non-private user."""

    def __init__(self, epsilon: float | None, params: GraphLDPParams, *,
                 n_max: int | None = None) -> None:
        from dpgl.mechanisms.lap import LocalLap
        super().__init__(epsilon, params, n_max=n_max)
        assert epsilon is not None
        self.lap = LocalLap(epsilon, variant="locallap", degree_share=params.degree_share)

    def reports(self, u: np.ndarray, v: np.ndarray, n: int, private: np.ndarray,
                rng: np.random.Generator) -> tuple[DirectedReports, np.ndarray | None]:
        import numpy as np

        from dpgl.estimators.toptt import simulate_top_t
        if self.params.non_private_fraction > 0:
            _record_nonprivate_users()
        idx = np.flatnonzero(private)
        inside = private[u] & private[v]
        sel_a = np.zeros(0, np.int64)
        sel_b = np.zeros(0, np.int64)
        if idx.size >= 2:
            relabel = np.full(n, -1, np.int64)
            relabel[idx] = np.arange(idx.size)
            # The noisy degree of a private user minus her (disclosed) edges to the
            # non-private users has the law of the induced degree + Lap(1 / eps1), so
            # the induced subgraph is simulated directly.
            a, b, _info = simulate_top_t(self.lap, relabel[u[inside]], relabel[v[inside]],
                                         int(idx.size), rng)
            sel_a, sel_b = idx[a], idx[b]
        out_a = np.concatenate([sel_a, u[~inside]])
        out_b = np.concatenate([sel_b, v[~inside]])
        return _both_directions(out_a, out_b, n), None


class NonPrivPartGraph(GraphRandomizer):
    """NonPriv-Part: only the non-private users' true lists; the private users' are dropped."""

    private = False
    uses_as_is = ("non-private users' neighbor lists",
                  "a fraction {fraction:g} of the users of each graph send their true lists (the "
                  "private users' lists are dropped)")

    def reports(self, u: np.ndarray, v: np.ndarray, n: int, private: np.ndarray,
                rng: np.random.Generator) -> tuple[DirectedReports, np.ndarray | None]:
        from dpgl.graph.pairs import sort_pairs
        from dpgl.mechanisms.rr import DirectedReports
        a, b = _true_rows(u, v, n, ~private)
        row, col, _ = sort_pairs(a, b, n)
        return DirectedReports(row, col, n), None


class NonPrivFullGraph(GraphRandomizer):
    """NonPriv-Full: every true neighbor list."""

    private = False
    uses_as_is = ("neighbor lists", "every user's true neighbor list used as is")

    def reports(self, u: np.ndarray, v: np.ndarray, n: int, private: np.ndarray,
                rng: np.random.Generator) -> tuple[DirectedReports, np.ndarray | None]:
        return _both_directions(u, v, n), None


def graph_randomizer(method: str, epsilon: float | None, params: GraphLDPParams, *,
                     n_max: int | None = None) -> GraphRandomizer:
    """The graph-task randomizer of the registered method ``method``."""
    m = get_method(method)
    check_task(m, "graph")
    assert m.graph_randomizer is not None
    return m.graph_randomizer(epsilon, params, n_max=n_max)


def _randomize_one(i: int, g: Data, child: np.random.Generator, rand: GraphRandomizer,
                   params: GraphLDPParams, omegas: tuple[float, float] | None,
                   theta: float | None, poison_graphs: set[int] | frozenset[int],
                   stats: dict[str, int], out: list[RandomizedGraph]) -> None:
    """Graph ``i``: its users' reports, the attack on a training graph and Defense(theta)."""
    import numpy as np

    from dpgl.mechanisms.neighbor_list import undirected_pairs
    from dpgl.mechanisms.poisoning import (
        defense_threshold,
        draw_poisoned_users,
        flag_high_degree,
        poison_reports,
    )
    from dpgl.mechanisms.rr import DirectedReports
    r_main, r_poison = spawn(child, 2)
    rg = rand(g, r_main)
    n = int(g.num_nodes)
    if omegas is not None and params.poison_fraction > 0 and i in poison_graphs:
        users = draw_poisoned_users(n, params.poison_fraction, r_poison)
        if users.size:
            u, v = undirected_pairs(g.edge_index, n)
            rg.reports = poison_reports(rg.reports, users, u, v, omegas[0], omegas[1],
                                        r_poison)
            rg.poisoned = users
    if theta is not None:
        eps2 = rand.eps2
        assert eps2 is not None
        tau = defense_threshold(n, eps2, theta)
        flagged = flag_high_degree(rg.reports, tau)
        keep = ~flagged[rg.reports.user]
        rg.reports = DirectedReports(rg.reports.user[keep], rg.reports.neighbor[keep], n)
        rg.flagged = flagged
        is_poisoned = np.zeros(n, dtype=bool)
        is_poisoned[rg.poisoned] = True
        stats["poisoned_users"] += int(is_poisoned.sum())
        stats["poisoned_flagged"] += int((flagged & is_poisoned).sum())
        stats["honest_users"] += int((~is_poisoned).sum())
        stats["honest_flagged"] += int((flagged & ~is_poisoned).sum())
    else:
        stats["poisoned_users"] += int(rg.poisoned.size)
    stats["true_pairs"] += int(g.edge_index.size(1))
    stats["reported_pairs"] += len(rg.reports)
    out.append(rg)


def randomize_graphs(
    method: str,
    graphs: list[Data],
    epsilon: float | None,
    params: GraphLDPParams,
    rng: np.random.Generator,
    *,
    poison_graphs: set[int] | frozenset[int] = frozenset(),
) -> tuple[list[RandomizedGraph], dict[str, Any]]:
    """Randomize every graph (one child generator per graph, so the noise of a graph does not
    depend on the others or on the attack), poison the graphs in ``poison_graphs`` and apply
    Defense(theta) to all. Returns the server's per-graph reports and summary statistics."""
    from dpgl.privacy import current_accountant
    n_max = max(int(g.num_nodes) for g in graphs)
    rand = graph_randomizer(method, epsilon, params, n_max=n_max)
    expected = rand.expected_reports(graphs)
    if expected > params.max_total_edges:
        raise ConfigError(
            f"method {method!r} at eps={epsilon} would output ~{expected:.3g} reported pairs "
            f"over {len(graphs)} graphs (> max_total_edges={params.max_total_edges}); "
            "RR's output grows as n^2: use a larger eps, smaller graphs, or raise max_total_edges")
    omegas = params.omegas
    if omegas is not None and params.poison_fraction > 0 and not rand.poisonable:
        raise ConfigError(f"poisoning is defined for the noisy lists of {_poisonable()} only")
    theta = params.defense_theta
    if omegas is not None and params.poison_fraction > 0 and theta is None:
        # a poisoned list has ~omega (n - 1) ones: beta n^2 omega pairs per training graph
        extra = sum(round(params.poison_fraction * int(graphs[i].num_nodes))
                    * max(omegas) * (int(graphs[i].num_nodes) - 1) for i in poison_graphs)
        if expected + extra > params.max_total_edges:
            raise ConfigError(
                f"Poison{omegas} with beta={params.poison_fraction:g} adds ~{extra:.3g} reported "
                f"pairs to the training graphs (> max_total_edges={params.max_total_edges}); "
                "poisoned lists grow as n^2: use smaller graphs or a defense")
    if theta is not None and not rand.poisonable:
        raise ConfigError(f"defense_theta (Eq. 17) applies to {_poisonable()} only")
    out: list[RandomizedGraph] = []
    stats = {"true_pairs": 0, "reported_pairs": 0, "poisoned_users": 0, "poisoned_flagged": 0,
             "honest_users": 0, "honest_flagged": 0}
    acc = current_accountant()
    # Each graph's users are different people: parallel composition over the graphs (the
    # per-user total is the largest over graphs, not their sum).
    scope = acc.parallel("graphs", "every graph's users are different people") \
        if acc is not None else contextlib.nullcontext(None)
    with scope as group:
        for i, (g, child) in enumerate(zip(graphs, spawn(rng, len(graphs)), strict=True)):
            member = group.member(f"graph {i}") if group is not None \
                else contextlib.nullcontext(None)
            with member:
                _randomize_one(i, g, child, rand, params, omegas, theta, poison_graphs,
                               stats, out)
    info: dict[str, Any] = {
        "n_max": n_max,
        "mean_true_pairs": stats["true_pairs"] / len(graphs),
        "mean_reported_pairs": stats["reported_pairs"] / len(graphs),
        "poisoned_users": stats["poisoned_users"],
    }
    info.update(rand.info())
    if theta is not None:
        info["defense_fpr"] = stats["honest_flagged"] / max(stats["honest_users"], 1)
        info["defense_tpr"] = (stats["poisoned_flagged"] / stats["poisoned_users"]
                               if stats["poisoned_users"] else float("nan"))
    return out, info


def _poisonable() -> str:
    names = [name for name in list_methods("graph")
             if getattr(get_method(name).graph_randomizer, "poisonable", False)]
    return " and ".join(repr(n) for n in names)


def to_training_graph(rg: RandomizedGraph, y: torch.Tensor, symmetrize: str) -> Data:
    """The server's PyG graph: constant features, reports as edges (neighbor -> user)."""
    import torch
    from torch_geometric.data import Data

    from dpgl.estimators.dprr import dprr_graph
    ei, _ = dprr_graph(rg.reports, symmetrize)
    n = rg.reports.num_nodes
    return Data(x=torch.ones(n, 1), edge_index=ei, y=y.view(-1), num_nodes=n)


def fit_graph_ldp(method: Method | str, ctx: RunContext) -> MethodOutput:
    """Run the graph-task method ``method`` (a registered name): its users randomize every
    graph with the method's :class:`GraphRandomizer`, the server trains GIN-0 on the noisy
    graphs (the DPRR paper's protocol, see the module docstring)."""
    import torch

    from dpgl.graph.splits import graph_split
    from dpgl.train import train_graph_classifier
    m = get_method(method) if isinstance(method, str) else method
    check_task(m, "graph")
    p = ctx.params
    if not isinstance(p, GraphLDPParams):
        raise ConfigError(f"method {method!r} needs GraphLDPParams, got {type(p).__name__}")
    ds = ctx.dataset
    split_rng, noise_rng, train_rng = spawn(ctx.rng, 3)
    tr, va, te = graph_split(ds.y, p.train_ratio, p.val_ratio, p.test_ratio, rng=split_rng)
    start = time.perf_counter()
    randomized, info = randomize_graphs(m.name, list(ds.graphs), ctx.epsilon, p, noise_rng,
                                        poison_graphs=frozenset(int(i) for i in tr))
    info["randomize_seconds"] = time.perf_counter() - start
    uses = m.graph_randomizer.uses_as_is
    if uses is not None:
        ctx.accountant.spend_nonprivate(uses[0], uses[1].format(fraction=p.non_private_fraction),
                                        Unit.EDGE_LDP)
    graphs = [to_training_graph(rg, g.y, p.symmetrize)
              for rg, g in zip(randomized, ds.graphs, strict=True)]
    del randomized
    pick = lambda idx: [graphs[int(i)] for i in idx]  # noqa: E731
    with torch.random.fork_rng(devices=[]):  # the trainer re-initializes with the run's seed
        model = p.gin(ds.num_classes)
    result = train_graph_classifier(
        model, pick(tr), pick(va), pick(te), p.train_config(), seed=int(train_rng.integers(2**31)),
    )
    info.update(best_epoch=result.best_epoch, epochs_run=result.epochs_run,
                train_seconds=result.seconds)
    return MethodOutput(result.metrics, info)


class _GraphOnly(Method):
    """Baselines of DPRR: Hidano & Murakami, "Degree-Preserving Randomized Response for
    Graph Neural Networks under Local Differential Privacy", arXiv:2202.10209, 2022."""

    tasks = ("graph",)
    params_for_task: ClassVar[dict[str, type[Params]]] = {"graph": GraphLDPParams}


@register
class LocalLapGraphMethod(_GraphOnly):
    name = "locallap"
    graph_randomizer = LocalLapGraph
    private = True
    budgets: ClassVar[dict[Unit, str]] = {Unit.EDGE_LDP: "epsilon"}
    budget_split = "degree_share to the noisy degree, the rest to Laplace noise on every bit"
    summary = ("LocalLap (DPRR paper baseline): Laplace on every bit + noisy degree "
               "(eps/10), top-T server; graph classification with GIN-0")

    def unprotected_by_choice(self, params: Params) -> set[Unit]:
        return customized_setting(params)


@register
class NonPrivPart(_GraphOnly):
    name = "nonpriv-part"
    graph_randomizer = NonPrivPartGraph
    private = False
    summary = ("NonPriv-Part (DPRR paper): only the non-private users' true lists "
               "(non_private_fraction) are used, private users' lists are dropped")


@register
class NonPrivFull(_GraphOnly):
    name = "nonpriv-full"
    graph_randomizer = NonPrivFullGraph
    private = False
    summary = "NonPriv-Full (DPRR paper): every true neighbor list, GIN-0 (no privacy)"
