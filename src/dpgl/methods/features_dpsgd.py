"""Features-only baseline of DPAR (Zhang et al. 2024, Sec. 5): an MLP on node features trained
with DP-SGD. No edge is used, so one node changes exactly one per-example gradient and the
trainer charges dp-accounting's Poisson-subsampled Gaussian event (RDP/PLD). Same inductive
split and evaluation as DPAR (test accuracy on the test graph's nodes, no propagation). The
sampling rate and the number of steps come from the public size of the training universe. With
``subsample`` < 1 the training nodes are first Poisson-subsampled (as DPAR does): the sampler
records the amplification of everything trained on the sample (docs/node-dp.md).

``accounting="paper"`` calibrates the noise with DPAR's own statement (eps x q') for
comparability: such a run takes no ``--epsilon`` but ``paper_epsilon`` (what the paper's
accounting would claim); its report records what the noise actually spends (larger).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field, model_validator

from dpgl.methods.base import Method, MethodOutput, RunContext, register
from dpgl.methods.params import NodeDPParams, Params
from dpgl.privacy import Unit
from dpgl.rng import spawn

if TYPE_CHECKING:
    import numpy as np

if TYPE_CHECKING:
    from torch_geometric.data import Data

    from dpgl.nn.decoupled import DecoupledMLP

__all__ = ["FeaturesDPSGDParams", "public_subsample_size", "train_features"]


class PaperAccountingParams(NodeDPParams):
    """How DP-SGD's noise is calibrated: by dpgl's verified analysis to meet --epsilon, or,
    for comparison with the paper, by DPAR's own statements for ``paper_epsilon`` (shared by
    DPAR and DP-SGD on features)."""

    accounting: Literal["dpgl", "paper"] = Field(
        "dpgl", description="dpgl: noise meets --epsilon by the verified analysis; paper: by "
        "DPAR's own statements for paper_epsilon")
    paper_epsilon: float | None = Field(None, gt=0, description="the epsilon DPAR's accounting "
                                        "would claim (accounting=paper only; no --epsilon)")

    @model_validator(mode="after")
    def _paper(self) -> PaperAccountingParams:
        if (self.accounting == "paper") != (self.paper_epsilon is not None):
            raise ValueError("accounting='paper' needs paper_epsilon (and only it takes one)")
        return self


class FeaturesDPSGDParams(PaperAccountingParams):
    epochs: int = Field(200, ge=1)
    subsample: float = Field(1.0, gt=0, le=1, description="Poisson node-subsampling rate q' of "
                             "the training graph (1: no subsample)")


def public_subsample_size(universe: int, rate: float) -> int:
    """The public expected size q' N of a Poisson node sample of a universe of N ids: it sets
    DP-SGD's sampling rate and step count (the sample's true size is private)."""
    return max(1, round(rate * universe))


def _paper_z(target: float, q: float, steps: int, delta: float, sub: float) -> float:
    """Noise multiplier from DPAR's DP-SGD statement (eps x q'), for comparability."""
    from scipy import optimize

    from dpgl.central.accounting import paper_sgd_epsilon
    f = lambda z: paper_sgd_epsilon(z, q, steps, delta, sub) - target  # noqa: E731
    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
    lo = hi / 2
    while f(lo) <= 0 and lo > 1e-3:
        hi, lo = lo, lo / 2
    return float(optimize.brentq(f, lo, hi, xtol=1e-6))


def train_features(train: Data, universe: int, p: FeaturesDPSGDParams, num_classes: int,
                   epsilon: float | None, private: bool, sub_rng: np.random.Generator,
                   sgd_rng: np.random.Generator) -> tuple[DecoupledMLP, dict[str, object]]:
    """The method's training step on a training graph whose nodes are present ids of a public
    universe of ``universe`` ids (the sampling rate and step count come from it): noise
    calibration, the Poisson node subsample (which records the amplification) and DP-SGD,
    which charges the active accountant. Returns the model and info."""
    from dpgl.central.accounting import paper_sgd_epsilon
    from dpgl.central.inductive import node_subsample
    from dpgl.nn.decoupled import DecoupledMLP, mlp_example_loss
    from dpgl.privacy import current_accountant, gaussian_noise_multiplier, subsampled_inner_target
    from dpgl.privacy.multiterm import quiet_absl
    from dpgl.train.dpsgd import DPSGDAccounting, DPSGDConfig, train_dpsgd
    n_pub = public_subsample_size(universe, p.subsample)
    probe = DPSGDConfig(lr=p.lr, epochs=p.epochs, batch_size=p.batch_size, clip=p.clip,
                        public_size=n_pub)
    q, steps = probe.sampling_rate(n_pub), probe.steps(n_pub)
    info: dict[str, object] = {"accounting": p.accounting}
    z = None
    _, delta_in = subsampled_inner_target(1.0, p.delta, p.subsample)
    if private:
        if p.accounting == "paper":
            assert p.paper_epsilon is not None
            z = _paper_z(p.paper_epsilon, q, steps, p.delta, p.subsample)
            info["paper_epsilon"] = paper_sgd_epsilon(z, q, steps, p.delta, p.subsample)
        else:
            assert epsilon is not None
            eps_in, delta_in = subsampled_inner_target(epsilon, p.delta, p.subsample)
            with quiet_absl():
                z = gaussian_noise_multiplier(eps_in, delta_in, steps=steps, sampling_rate=q,
                                              sampling="poisson", method="rdp")
        acc = current_accountant()
        if acc is not None:
            acc.delta = p.delta
    model = DecoupledMLP(train.x.size(1), num_classes, hidden=p.hidden,
                         num_layers=p.num_layers, dropout=p.dropout)
    cfg = DPSGDConfig(lr=p.lr, epochs=p.epochs, batch_size=p.batch_size, clip=p.clip,
                      noise_multiplier=z, weight_decay=p.weight_decay, public_size=n_pub)
    with node_subsample(train, p.subsample, sub_rng,
                        name="DP-SGD (features MLP) on a Poisson node subsample",
                        inner_delta=delta_in) as (sample, _), quiet_absl():
        res = train_dpsgd(model, mlp_example_loss, (sample.x, sample.y), cfg, rng=sgd_rng,
                          accounting=DPSGDAccounting(Unit.NODE_DP, 0,
                                                     "DP-SGD (features MLP)"))
    info.update({"public_train_nodes": n_pub, "sgd_steps": steps, "sgd_sampling_rate": q,
                 "noise_multiplier": z, "train_seconds": res.seconds, "edges_used": 0})
    return model, info


def run_features(ctx: RunContext, private: bool) -> MethodOutput:
    import torch

    from dpgl.central.inductive import make_inductive
    from dpgl.train.metrics import evaluate_logits
    p = ctx.params
    assert isinstance(p, FeaturesDPSGDParams)
    split_rng, sub_rng, sgd_rng = spawn(ctx.rng, 3)
    ind = make_inductive(ctx.dataset, p.inductive_train, split_rng, p.val_fraction)
    model, info = train_features(ind.train, int(ind.train.num_nodes), p, ind.num_classes,
                                 ctx.epsilon, private, sub_rng, sgd_rng)
    with torch.no_grad():
        logits = model(ind.test.x)
    metrics = evaluate_logits(logits, ind.test.y, ind.val_idx, ind.test_idx, ind.num_classes)
    if not private:
        ctx.accountant.spend_nonprivate("training nodes", "features and labels used as is",
                                        Unit.NODE_DP)
    return MethodOutput(metrics, info)


@register
class FeaturesDPSGD(Method):
    """The "Features" baseline of DPAR (Sec. 5): Zhang, Lee, Ma, Lou, Yang & Xiong, "DPAR:
    Decoupled Graph Neural Networks with Node-Level Differential Privacy", WWW 2024."""

    models = ("mlp",)  # trains its own model; runs are stored under "mlp"
    name = "features-dpsgd"
    tasks = ("node",)
    private = True
    summary = "MLP on node features trained with DP-SGD (node DP; DPAR's Features baseline)"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": FeaturesDPSGDParams}
    budgets: ClassVar[dict[Unit, str]] = {Unit.NODE_DP: "epsilon"}
    deltas: ClassVar[dict[Unit, str]] = {Unit.NODE_DP: "delta"}
    budget_split = "all of epsilon to DP-SGD (amplified by the node subsample when < 1)"

    def takes_epsilon(self, params: Params) -> bool:
        return getattr(params, "accounting", "dpgl") == "dpgl"

    def fit_node(self, ctx: RunContext) -> MethodOutput:
        return run_features(ctx, True)


@register
class FeaturesNonPrivate(Method):
    """The "Features" baseline of DPAR (Sec. 5), without privacy: Zhang, Lee, Ma, Lou, Yang
    & Xiong, "DPAR: Decoupled Graph Neural Networks with Node-Level Differential Privacy",
    WWW 2024."""

    models = ("mlp",)  # trains its own model; runs are stored under "mlp"
    name = "features-nonprivate"
    tasks = ("node",)
    private = False
    summary = "features-dpsgd's MLP and split without privacy (mini-batch Adam)"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": FeaturesDPSGDParams}

    def fit_node(self, ctx: RunContext) -> MethodOutput:
        return run_features(ctx, False)
