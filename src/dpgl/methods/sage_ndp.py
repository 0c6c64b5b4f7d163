"""DP-SAGE (Daigavane, Madan, Sinha, Thakurta, Aggarwal & Jain, "Node-Level Differentially
Private Graph Neural Networks", 2021): a one-layer GNN on a degree-bounded neighbourhood,
trained with DP-SGD, in DPAR's inductive setting.

After degree bounding (:func:`dpgl.central.aggregation.bound_in_degree_sample`, in- and
out-degree <= D) a node's data enters its own example and the examples of at most D other
nodes (those it sends a message to). Accounting: the multi-term RDP bound of
:mod:`dpgl.central.accounting` (Daigavane et al. Thm 1, written for Poisson sampling: own
term shift C, each other term 2 C), converted to (eps, delta) and recorded in the accountant
as one approximate-DP part. The degree-bounding step itself is taken as in the paper (see
docs/node-dp.md: removing a node can change which edges *other* nodes keep).
``sage-nonprivate`` trains the same model without clipping and noise.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch
from pydantic import Field

from dpgl.central.accounting import calibrate_multiterm, multiterm_epsilon
from dpgl.central.aggregation import bound_in_degree_sample
from dpgl.central.inductive import evaluate_logits, make_inductive
from dpgl.methods.base import Method, MethodOutput, RunContext, register
from dpgl.methods.params import NodeDPParams, Params
from dpgl.nn.decoupled import SAGE1, sage_example_loss
from dpgl.privacy import Guarantee, Unit
from dpgl.rng import spawn
from dpgl.train.dpsgd import DPSGDConfig, train_dpsgd

__all__ = ["SAGEParams"]


class SAGEParams(NodeDPParams):
    epochs: int = Field(100, ge=1)
    max_degree: int = Field(5, ge=1)


def _neighbourhoods(x: torch.Tensor, edge_index: torch.Tensor, n: int, d: int
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded in-neighbour features [n, D, f] and mask [n, D] of a degree-bounded graph."""
    src, dst = edge_index[0].numpy(), edge_index[1].numpy()
    order = np.argsort(dst, kind="stable")
    src, dst = src[order], dst[order]
    first = np.searchsorted(dst, np.arange(n))
    slot = np.arange(dst.size) - first[dst]
    idx = np.zeros((n, d), dtype=np.int64)
    mask = np.zeros((n, d), dtype=np.float32)
    ok = slot < d
    idx[dst[ok], slot[ok]] = src[ok]
    mask[dst[ok], slot[ok]] = 1.0
    return x[torch.from_numpy(idx)], torch.from_numpy(mask)


def run_sage(ctx: RunContext, private: bool) -> MethodOutput:
    p = ctx.params
    assert isinstance(p, SAGEParams)
    split_rng, deg_rng, sgd_rng, test_rng = spawn(ctx.rng, 4)
    ind = make_inductive(ctx.dataset, p.inductive_train, split_rng, p.val_fraction)
    tr = ind.train
    n = int(tr.num_nodes)
    ei = bound_in_degree_sample(tr.edge_index, n, p.max_degree, deg_rng)
    nb, mask = _neighbourhoods(tr.x, ei, n, p.max_degree)
    probe = DPSGDConfig(epochs=p.epochs, batch_size=p.batch_size, clip=p.clip)
    q, steps = probe.sampling_rate(n), probe.steps(n)
    z = None
    if private:
        assert ctx.epsilon is not None
        z = calibrate_multiterm(ctx.epsilon, p.delta, q, steps, p.max_degree)
    model = SAGE1(tr.x.size(1), ind.num_classes, hidden=p.hidden, max_degree=p.max_degree,
                  dropout=p.dropout)
    res = train_dpsgd(model, sage_example_loss, (tr.x, nb, mask, tr.y),
                      DPSGDConfig(lr=p.lr, epochs=p.epochs, batch_size=p.batch_size,
                                  clip=p.clip, noise_multiplier=z,
                                  weight_decay=p.weight_decay), rng=sgd_rng)
    te = ind.test
    m = int(te.num_nodes)
    tei = bound_in_degree_sample(te.edge_index, m, p.max_degree, test_rng)
    tnb, tmask = _neighbourhoods(te.x, tei, m, p.max_degree)
    with torch.no_grad():
        logits = model(te.x, tnb, tmask)
    metrics = evaluate_logits(logits, te.y, ind.val_idx, ind.test_idx, ind.num_classes)
    info = {"train_nodes": n, "sgd_steps": steps, "sgd_sampling_rate": q,
            "noise_multiplier": z, "train_seconds": res.seconds}
    acc = ctx.accountant
    if not private:
        acc.spend_nonprivate("training graph", "neighbourhoods and gradients without noise",
                             Unit.NODE_DP)
        return MethodOutput(metrics, info)
    assert z is not None
    eps = multiterm_epsilon(z, q, steps, p.max_degree, p.delta)
    acc.spend("DP-SGD (1-layer GNN)", Guarantee(eps, p.delta, Unit.NODE_DP),
              mechanism=f"multi-term DP-SGD, 1 + {p.max_degree} terms per node, Poisson "
                        f"rate {q:.4g}, {steps} steps, noise multiplier {z:.4g} (RDP, "
                        "Daigavane et al. Thm 1 form)")
    return MethodOutput(metrics, info)


@register
class SAGENodeDP(Method):
    name = "sage-ndp"
    tasks = ("node",)
    private = True
    summary = "DP-SAGE: 1-layer GNN, degree-bounded sampling, multi-term DP-SGD (node DP)"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": SAGEParams}

    def fit(self, ctx: RunContext) -> MethodOutput:
        return run_sage(ctx, True)


@register
class SAGENonPrivate(Method):
    name = "sage-nonprivate"
    tasks = ("node",)
    private = False
    summary = "DP-SAGE's 1-layer GNN without privacy"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": SAGEParams}

    def fit(self, ctx: RunContext) -> MethodOutput:
        return run_sage(ctx, False)
