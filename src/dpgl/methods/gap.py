"""GAP, node-level (Sajadmanesh, Shamsabadi, Bellet & Gatica-Perez, "GAP: Differentially
Private Graph Neural Networks with Aggregation Perturbation", USENIX Security 2023), in DPAR's
inductive setting.

Three modules, each a Gaussian mechanism under node-level DP:

1. encoder: an MLP on node features pre-trained with DP-SGD on the labels (one example per
   node: standard Poisson-subsampled Gaussian);
2. aggregation perturbation (PMA): out-degree bounded to D, H hops of
   normalize -> sum over in-neighbours -> + N(0, sigma_AP^2), node-level l2 sensitivity sqrt(D)
   per hop (GAP Sec. 5); computed once and cached;
3. classifier: per-hop MLPs + head trained with DP-SGD on the cached (already private)
   aggregates, one example per node (a node's own example depends on its label and on
   released aggregates only).

One noise multiplier z is calibrated for all three (sigma_AP = z sqrt(D), DP-SGD noise z C) so
that their joint RDP composition (dp-accounting, via the run's accountant) meets the target
(eps, delta), as GAP does. Inference on the test graph runs the trained encoder, the same PMA
(with the same noise) on the test graph and the classifier. ``gap-nonprivate`` runs the same
pipeline without clipping and noise.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
from pydantic import Field
from scipy import optimize

from dpgl.central.accounting import quiet_absl
from dpgl.central.aggregation import aggregation_perturbation, ap_sensitivity, bound_degree
from dpgl.central.inductive import evaluate_logits, make_inductive
from dpgl.methods.base import Method, MethodOutput, RunContext, register
from dpgl.methods.params import NodeDPParams, Params
from dpgl.nn.decoupled import GAPClassifier, GAPEncoder, mlp_example_loss
from dpgl.privacy import Accountant, Unit
from dpgl.rng import spawn
from dpgl.train.dpsgd import DPSGDConfig, train_dpsgd

__all__ = ["GAPParams"]


class GAPParams(NodeDPParams):
    encoder_dim: int = Field(16, ge=1)
    epochs: int = Field(100, ge=1)                   # classifier epochs
    encoder_epochs: int = Field(50, ge=1)
    batch_size: int = Field(256, ge=1)
    hops: int = Field(2, ge=1)
    max_degree: int = Field(10, ge=1)


def _record(acc: Accountant, z: float, p: GAPParams, n: int) -> None:
    enc = DPSGDConfig(epochs=p.encoder_epochs, batch_size=p.batch_size)
    cls = DPSGDConfig(epochs=p.epochs, batch_size=p.batch_size)
    acc.spend_gaussian("encoder DP-SGD", noise_multiplier=z, steps=enc.steps(n),
                       sampling_rate=enc.sampling_rate(n), unit=Unit.NODE_DP,
                       sensitivity_note="one example per node")
    acc.spend_gaussian("aggregation perturbation", noise_multiplier=z, steps=p.hops,
                       unit=Unit.NODE_DP,
                       sensitivity_note=f"out-degree <= {p.max_degree}: l2 sensitivity "
                                        f"sqrt({p.max_degree}) per hop (GAP Sec. 5)")
    acc.spend_gaussian("classifier DP-SGD", noise_multiplier=z, steps=cls.steps(n),
                       sampling_rate=cls.sampling_rate(n), unit=Unit.NODE_DP,
                       sensitivity_note="one example per node on released aggregates")


def calibrate_gap(epsilon: float, p: GAPParams, n: int) -> float:
    """Smallest common noise multiplier with the composed RDP epsilon <= target."""
    def f(z: float) -> float:
        acc = Accountant(delta=p.delta)
        _record(acc, z, p, n)
        with quiet_absl():
            total = acc.report().total(Unit.NODE_DP)
        assert total is not None
        return total.epsilon - epsilon
    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
    lo = hi / 2
    while f(lo) <= 0 and lo > 1e-3:
        hi, lo = lo, lo / 2
    z = optimize.brentq(f, lo, hi, xtol=1e-5)
    while f(z) > 0:
        z *= 1 + 1e-5
    return float(z)


def run_gap(ctx: RunContext, private: bool) -> MethodOutput:
    p = ctx.params
    assert isinstance(p, GAPParams)
    split_rng, deg_rng, enc_rng, ap_rng, cls_rng, test_rng = spawn(ctx.rng, 6)
    ind = make_inductive(ctx.dataset, p.inductive_train, split_rng, p.val_fraction)
    train = ind.train
    n = int(train.num_nodes)
    z = calibrate_gap(ctx.epsilon, p, n) if private and ctx.epsilon is not None else None
    enc = GAPEncoder(train.x.size(1), ind.num_classes, dim=p.encoder_dim, hidden=p.hidden,
                     dropout=p.dropout)
    train_dpsgd(enc, mlp_example_loss, (train.x, train.y),
                DPSGDConfig(lr=p.lr, epochs=p.encoder_epochs, batch_size=p.batch_size,
                            clip=p.clip, noise_multiplier=z, weight_decay=p.weight_decay),
                rng=enc_rng)
    sigma_ap = 0.0 if z is None else z * ap_sensitivity(p.max_degree)

    def aggregates(graph: object, rng: object) -> torch.Tensor:
        with torch.no_grad():
            emb = enc.embed(graph.x)  # type: ignore[attr-defined]
        ei = bound_degree(graph.edge_index, int(graph.num_nodes),  # type: ignore[attr-defined]
                          p.max_degree, deg_rng if graph is train else test_rng)
        hops = aggregation_perturbation(emb, ei, p.hops, sigma_ap, rng)  # type: ignore[arg-type]
        return torch.cat(hops, dim=1)

    z_train = aggregates(train, ap_rng)
    cls = GAPClassifier(p.encoder_dim, p.hops, ind.num_classes, hidden=p.hidden,
                        dropout=p.dropout)
    res = train_dpsgd(cls, mlp_example_loss, (z_train, train.y),
                      DPSGDConfig(lr=p.lr, epochs=p.epochs, batch_size=p.batch_size,
                                  clip=p.clip, noise_multiplier=z,
                                  weight_decay=p.weight_decay), rng=cls_rng)
    z_test = aggregates(ind.test, test_rng)
    with torch.no_grad():
        logits = cls(z_test)
    metrics = evaluate_logits(logits, ind.test.y, ind.val_idx, ind.test_idx, ind.num_classes)
    info = {"train_nodes": n, "noise_multiplier": z, "sigma_ap": sigma_ap,
            "train_seconds": res.seconds}
    acc = ctx.accountant
    if not private:
        acc.spend_nonprivate("training graph", "aggregates and gradients without noise",
                             Unit.NODE_DP)
    else:
        assert z is not None and math.isfinite(z)
        acc.delta = p.delta
        _record(acc, z, p, n)
    return MethodOutput(metrics, info)


@register
class GAPNodeDP(Method):
    name = "gap-ndp"
    tasks = ("node",)
    private = True
    summary = "GAP, node-level: DP-SGD encoder + aggregation perturbation + DP-SGD classifier"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": GAPParams}

    def fit(self, ctx: RunContext) -> MethodOutput:
        return run_gap(ctx, True)


@register
class GAPNonPrivate(Method):
    name = "gap-nonprivate"
    tasks = ("node",)
    private = False
    summary = "GAP's pipeline without privacy (no clipping or noise)"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": GAPParams}

    def fit(self, ctx: RunContext) -> MethodOutput:
        return run_gap(ctx, False)
