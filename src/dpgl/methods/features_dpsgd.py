"""Features-only baseline of DPAR (Zhang et al. 2024, Sec. 5): an MLP on node features trained
with DP-SGD. No edge is used, so one node changes exactly one per-example gradient and the
standard Poisson-subsampled Gaussian accounting applies (recorded with
:meth:`dpgl.privacy.Accountant.spend_gaussian`, i.e. dp-accounting's RDP/PLD). Same inductive
split and evaluation as DPAR (test accuracy on the test graph's nodes, no propagation).
With ``subsample`` < 1 the training nodes are first Poisson-subsampled (as DPAR does) and the
total is amplified (docs/node-dp.md)."""

from __future__ import annotations

from typing import ClassVar, Literal

import torch
from pydantic import Field
from scipy import optimize

from dpgl.central.accounting import (
    amplify_by_subsampling,
    paper_sgd_epsilon,
    quiet_absl,
    subsampled_inner_target,
)
from dpgl.central.inductive import evaluate_logits, make_inductive, poisson_node_subsample
from dpgl.methods.base import Method, MethodOutput, RunContext, register
from dpgl.methods.params import NodeDPParams, Params
from dpgl.nn.decoupled import DecoupledMLP, mlp_example_loss
from dpgl.privacy import Accountant, Guarantee, Unit, gaussian_noise_multiplier
from dpgl.rng import spawn
from dpgl.train.dpsgd import DPSGDConfig, train_dpsgd

__all__ = ["FeaturesDPSGDParams"]


class FeaturesDPSGDParams(NodeDPParams):
    epochs: int = Field(200, ge=1)
    subsample: float = Field(1.0, gt=0, le=1)
    accounting: Literal["dpgl", "paper"] = "dpgl"


def _paper_z(target: float, q: float, steps: int, delta: float, sub: float) -> float:
    """Noise multiplier from DPAR's DP-SGD statement (eps x q'), for comparability."""
    f = lambda z: paper_sgd_epsilon(z, q, steps, delta, sub) - target  # noqa: E731
    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
    lo = hi / 2
    while f(lo) <= 0 and lo > 1e-3:
        hi, lo = lo, lo / 2
    return float(optimize.brentq(f, lo, hi, xtol=1e-6))


def run_features(ctx: RunContext, private: bool) -> MethodOutput:
    p = ctx.params
    assert isinstance(p, FeaturesDPSGDParams)
    split_rng, sub_rng, sgd_rng = spawn(ctx.rng, 3)
    ind = make_inductive(ctx.dataset, p.inductive_train, split_rng, p.val_fraction)
    train = poisson_node_subsample(ind.train, p.subsample, sub_rng)
    n = int(train.num_nodes)
    probe = DPSGDConfig(lr=p.lr, epochs=p.epochs, batch_size=p.batch_size, clip=p.clip)
    q, steps = probe.sampling_rate(n), probe.steps(n)
    z = None
    acc = ctx.accountant
    info: dict[str, object] = {"accounting": p.accounting}
    if private:
        assert ctx.epsilon is not None
        eps_in, delta_in = subsampled_inner_target(ctx.epsilon, p.delta, p.subsample)
        if p.accounting == "paper":
            z = _paper_z(ctx.epsilon, q, steps, p.delta, p.subsample)
            info["paper_epsilon"] = paper_sgd_epsilon(z, q, steps, p.delta, p.subsample)
        else:
            with quiet_absl():
                z = gaussian_noise_multiplier(eps_in, delta_in, steps=steps, sampling_rate=q,
                                              sampling="poisson", method="rdp")
    model = DecoupledMLP(train.x.size(1), ind.num_classes, hidden=p.hidden,
                         num_layers=p.num_layers, dropout=p.dropout)
    cfg = DPSGDConfig(lr=p.lr, epochs=p.epochs, batch_size=p.batch_size, clip=p.clip,
                      noise_multiplier=z, weight_decay=p.weight_decay)
    res = train_dpsgd(model, mlp_example_loss, (train.x, train.y), cfg, rng=sgd_rng)
    with torch.no_grad():
        logits = model(ind.test.x)
    metrics = evaluate_logits(logits, ind.test.y, ind.val_idx, ind.test_idx, ind.num_classes)
    info.update({"train_nodes": n, "sgd_steps": steps, "sgd_sampling_rate": q,
                 "noise_multiplier": z, "train_seconds": res.seconds, "edges_used": 0})
    if not private:
        acc.spend_nonprivate("training nodes", "features and labels used as is", Unit.NODE_DP)
        return MethodOutput(metrics, info)
    assert z is not None
    note = "one example per node (no edges): per-example clip C, Poisson sampling"
    if p.subsample == 1.0:
        acc.delta = p.delta
        acc.spend_gaussian("DP-SGD (features MLP)", noise_multiplier=z, steps=steps,
                           sampling_rate=q, sampling="poisson", unit=Unit.NODE_DP,
                           sensitivity_note=note)
    else:
        # delta_in = delta / q' whatever the calibration (the target delta is fixed)
        delta_in = min(p.delta / p.subsample, 0.5)
        inner = Accountant(delta=delta_in)
        inner.spend_gaussian("DP-SGD", noise_multiplier=z, steps=steps, sampling_rate=q,
                             sampling="poisson", unit=Unit.NODE_DP, sensitivity_note=note)
        with quiet_absl():
            total = inner.report().total(Unit.NODE_DP)
        assert total is not None
        eps_out, delta_out = amplify_by_subsampling(total.epsilon, total.delta, p.subsample)
        acc.spend("DP-SGD (features MLP) on a Poisson node subsample",
                  Guarantee(eps_out, delta_out, Unit.NODE_DP),
                  mechanism=f"amplification by subsampling q'={p.subsample:g} of DP-SGD "
                            f"(inner eps={total.epsilon:.4g})")
    return MethodOutput(metrics, info)


@register
class FeaturesDPSGD(Method):
    name = "features-dpsgd"
    tasks = ("node",)
    private = True
    summary = "MLP on node features trained with DP-SGD (node DP; DPAR's Features baseline)"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": FeaturesDPSGDParams}

    def fit(self, ctx: RunContext) -> MethodOutput:
        return run_features(ctx, True)


@register
class FeaturesNonPrivate(Method):
    name = "features-nonprivate"
    tasks = ("node",)
    private = False
    summary = "features-dpsgd's MLP and split without privacy (mini-batch Adam)"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": FeaturesDPSGDParams}

    def fit(self, ctx: RunContext) -> MethodOutput:
        return run_features(ctx, False)
