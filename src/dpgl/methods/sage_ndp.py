"""DP-SAGE (Daigavane, Madan, Sinha, Thakurta, Aggarwal & Jain, "Node-Level Differentially
Private Graph Neural Networks", 2021): a one-layer GNN trained with DP-SGD, in DPAR's
inductive setting, under **bounded-degree node-DP** (``Unit.BOUNDED_NODE_DP``).

Node v's example is (x_v, the features of all its in-neighbours, y_v). On graphs whose in- and
out-degrees are <= D (a public bound the training graph must keep; checked), removing a node
removes its own example and changes the examples of its <= D out-neighbours (they aggregate
it), and no other example: there is no sampling step whose choices depend on other nodes.
DP-SGD is then charged with the multi-term RDP bound (own shift C, each of the D others 2 C;
:mod:`dpgl.privacy.multiterm`), the form of Daigavane et al. Thm 1 for Poisson sampling.

Daigavane et al. sample a degree-bounded subgraph instead; removing a node changes other
nodes' samples (it changes their in-degrees and frees slots), so more than 1 + D examples can
change and the count their theorem uses does not hold on all graphs (docs/node-dp.md).
``sage-nonprivate`` trains the same model without clipping and noise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from dpgl.methods.base import Method, MethodOutput, RunContext, register
from dpgl.methods.params import NodeDPParams, Params
from dpgl.privacy import Unit
from dpgl.rng import spawn

if TYPE_CHECKING:
    import numpy as np

if TYPE_CHECKING:
    import torch
    from torch_geometric.data import Data

    from dpgl.nn.decoupled import SAGE1

__all__ = ["SAGEParams", "neighbourhoods", "train_sage"]

UNIT = Unit.BOUNDED_NODE_DP


class SAGEParams(NodeDPParams):
    epochs: int = Field(100, ge=1)
    max_degree: int = Field(5, ge=1, description="public bound D on every in- and out-degree "
                            "of the training graph (a graph above it is refused)")


def neighbourhoods(x: torch.Tensor, edge_index: torch.Tensor, n: int, d: int
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded in-neighbour features [n, D, f] and mask [n, D]: every in-neighbour of every
    node (the graph keeps in-degree <= D; a larger in-degree is refused)."""
    import numpy as np
    import torch
    src, dst = edge_index[0].numpy(), edge_index[1].numpy()
    order = np.argsort(dst, kind="stable")
    src, dst = src[order], dst[order]
    first = np.searchsorted(dst, np.arange(n))
    slot = np.arange(dst.size) - first[dst]
    if slot.size and int(slot.max()) >= d:
        raise ValueError(f"in-degree above max_degree={d}")  # check_degree_bound runs first
    idx = np.zeros((n, d), dtype=np.int64)
    mask = np.zeros((n, d), dtype=np.float32)
    idx[dst, slot] = src
    mask[dst, slot] = 1.0
    return x[torch.from_numpy(idx)], torch.from_numpy(mask)


def train_sage(train: Data, universe: int, p: SAGEParams, num_classes: int,
               epsilon: float | None, private: bool, sgd_rng: np.random.Generator
               ) -> tuple[SAGE1, dict[str, object]]:
    """The method's training step on a training graph of present ids of a public universe of
    ``universe`` ids (DP-SGD's sampling rate and steps come from it): the degree promise is
    checked, DP-SGD charges the multi-term bound for 1 + max_degree examples per node."""
    from dpgl.central.aggregation import check_degree_bound
    from dpgl.nn.decoupled import SAGE1, sage_example_loss
    from dpgl.privacy import current_accountant
    from dpgl.privacy.multiterm import calibrate_multiterm
    from dpgl.train.dpsgd import DPSGDAccounting, DPSGDConfig, train_dpsgd
    n = int(train.num_nodes)
    if private:  # bounded-degree node-DP: the training graph must keep the promise
        check_degree_bound(train.edge_index, n, p.max_degree)
        train_edges = train.edge_index
    else:        # the non-private baseline caps in-neighbourhoods at D for the same model
        train_edges = _first_in_edges(train.edge_index, n, p.max_degree)
    nb, mask = neighbourhoods(train.x, train_edges, n, p.max_degree)
    probe = DPSGDConfig(epochs=p.epochs, batch_size=p.batch_size, clip=p.clip,
                        public_size=universe)
    q, steps = probe.sampling_rate(universe), probe.steps(universe)
    z = None
    if private:
        assert epsilon is not None
        acc = current_accountant()
        if acc is not None:
            acc.delta = p.delta
        z = calibrate_multiterm(epsilon, p.delta, q, steps, p.max_degree)
    model = SAGE1(train.x.size(1), num_classes, hidden=p.hidden, max_degree=p.max_degree,
                  dropout=p.dropout)
    res = train_dpsgd(model, sage_example_loss, (train.x, nb, mask, train.y),
                      DPSGDConfig(lr=p.lr, epochs=p.epochs, batch_size=p.batch_size,
                                  clip=p.clip, noise_multiplier=z,
                                  weight_decay=p.weight_decay, public_size=universe),
                      rng=sgd_rng,
                      accounting=DPSGDAccounting(UNIT, p.max_degree, "DP-SGD (1-layer GNN)"))
    info = {"public_train_nodes": universe, "sgd_steps": steps, "sgd_sampling_rate": q,
            "noise_multiplier": z, "train_seconds": res.seconds, "max_degree": p.max_degree}
    return model, info


def run_sage(ctx: RunContext, private: bool) -> MethodOutput:
    import torch

    from dpgl.central.inductive import make_inductive
    from dpgl.train.metrics import evaluate_logits
    p = ctx.params
    assert isinstance(p, SAGEParams)
    # (the second and fourth streams drove the old degree-bounded sampling)
    split_rng, _, sgd_rng, _ = spawn(ctx.rng, 4)
    ind = make_inductive(ctx.dataset, p.inductive_train, split_rng, p.val_fraction)
    model, info = train_sage(ind.train, int(ind.train.num_nodes), p, ind.num_classes,
                             ctx.epsilon, private, sgd_rng)
    te = ind.test
    m = int(te.num_nodes)
    # evaluation on the held-out test graph: its in-neighbourhoods capped at D for the model
    keep = _first_in_edges(te.edge_index, m, p.max_degree)
    tnb, tmask = neighbourhoods(te.x, keep, m, p.max_degree)
    with torch.no_grad():
        logits = model(te.x, tnb, tmask)
    metrics = evaluate_logits(logits, te.y, ind.val_idx, ind.test_idx, ind.num_classes)
    if not private:
        ctx.accountant.spend_nonprivate("training graph",
                                        "neighbourhoods and gradients without noise", UNIT)
    return MethodOutput(metrics, info)


def _first_in_edges(edge_index: torch.Tensor, n: int, d: int) -> torch.Tensor:
    """At most ``d`` in-edges per node (the first by source id): the model's input shape on a
    held-out evaluation graph, which the training guarantee does not cover."""
    import numpy as np
    import torch
    ei = edge_index.numpy()
    order = np.lexsort((ei[0], ei[1]))
    src, dst = ei[0][order], ei[1][order]
    first = np.searchsorted(dst, np.arange(n))
    ok = (np.arange(dst.size) - first[dst]) < d
    return torch.from_numpy(np.stack([src[ok], dst[ok]]))


@register
class SAGENodeDP(Method):
    """Daigavane, Madan, Sinha, Thakurta, Aggarwal & Jain, "Node-Level Differentially
    Private Graph Neural Networks", arXiv:2111.15521, 2021."""

    models = ("mlp",)  # trains its own model; runs are stored under "mlp"
    name = "sage-ndp"
    tasks = ("node",)
    private = True
    summary = ("DP-SAGE under bounded-degree node-DP: 1-layer GNN, multi-term DP-SGD "
               "(training graph must keep degree <= max_degree)")
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": SAGEParams}
    budgets: ClassVar[dict[Unit, str]] = {UNIT: "epsilon"}
    deltas: ClassVar[dict[Unit, str]] = {UNIT: "delta"}
    budget_split = "all of epsilon to DP-SGD (1 + max_degree examples per node, RDP)"

    def fit_node(self, ctx: RunContext) -> MethodOutput:
        return run_sage(ctx, True)


@register
class SAGENonPrivate(Method):
    """Daigavane, Madan, Sinha, Thakurta, Aggarwal & Jain, "Node-Level Differentially
    Private Graph Neural Networks", arXiv:2111.15521, 2021."""

    models = ("mlp",)  # trains its own model; runs are stored under "mlp"
    name = "sage-nonprivate"
    tasks = ("node",)
    private = False
    summary = "DP-SAGE's 1-layer GNN without privacy"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": SAGEParams}

    def fit_node(self, ctx: RunContext) -> MethodOutput:
        return run_sage(ctx, False)
