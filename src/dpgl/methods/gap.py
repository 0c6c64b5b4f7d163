"""GAP, node-level (Sajadmanesh, Shamsabadi, Bellet & Gatica-Perez, "GAP: Differentially
Private Graph Neural Networks with Aggregation Perturbation", USENIX Security 2023), in DPAR's
inductive setting, under **bounded-degree node-DP** (``Unit.BOUNDED_NODE_DP``).

Three modules, each a Gaussian mechanism:

1. encoder: an MLP on node features pre-trained with DP-SGD on the labels (one example per
   node: Poisson-subsampled Gaussian);
2. aggregation perturbation (PMA, :class:`dpgl.central.aggregation.AggregationPerturbation`):
   H hops of normalize -> sum over in-neighbours -> + N(0, sigma_AP^2); l2 sensitivity
   sqrt(D + D^2) per hop on graphs whose in- and out-degrees are <= D (proof in
   :mod:`dpgl.central.aggregation`); computed once and cached;
3. classifier: per-hop MLPs + head trained with DP-SGD on the cached (released) aggregates,
   one example per node.

GAP's own degree bounding (keep D random out-edges) does not have the node-level sensitivity
GAP states, and no bounding step with a proved one is known (docs/node-dp.md), so dpgl applies
none: ``max_degree`` is a public bound D that the training graph must keep (checked; a graph
that breaks it is refused with its largest degrees). One noise multiplier z is calibrated for
the three parts (sigma_AP = z sqrt(D + D^2), DP-SGD noise z C) so that their joint RDP
composition meets the target (eps, delta); each part charges the run's accountant when it
draws, through the same code the calibration runs. The sampling rate and the number of DP-SGD
steps come from the public size of the training universe. Inference runs the trained encoder,
the PMA and the classifier on the test graph (held-out evaluation data, not a release of the
training graph: :func:`dpgl.privacy.evaluation_only`). ``gap-nonprivate`` runs the same
pipeline without clipping and noise.
"""

from __future__ import annotations

from dataclasses import dataclass
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

    from dpgl.central.aggregation import AggregationPerturbation
    from dpgl.nn.decoupled import GAPClassifier, GAPEncoder
    from dpgl.train.dpsgd import DPSGDAccounting, DPSGDConfig

__all__ = ["GAPModel", "GAPParams", "calibrate_gap", "train_gap"]

UNIT = Unit.BOUNDED_NODE_DP


class GAPParams(NodeDPParams):
    encoder_dim: int = Field(16, ge=1, description="width of the encoder's output (the "
                             "aggregated embeddings)")
    epochs: int = Field(100, ge=1, description="classifier training epochs")
    encoder_epochs: int = Field(50, ge=1, description="encoder pre-training epochs")
    batch_size: int = Field(256, ge=1)
    hops: int = Field(2, ge=1, description="aggregation hops H (each perturbed with Gaussian "
                      "noise)")
    max_degree: int = Field(10, ge=1, description="public bound D on every in- and out-degree "
                            "of the training graph (a graph above it is refused)")


def _configs(p: GAPParams, z: float | None, n_public: int) -> tuple[DPSGDConfig, DPSGDConfig]:
    return (p.dpsgd_config(public_size=n_public, noise_multiplier=z, epochs=p.encoder_epochs),
            p.dpsgd_config(public_size=n_public, noise_multiplier=z))




def _encoder() -> DPSGDAccounting:
    """How the encoder's DP-SGD is charged (one example per node)."""
    from dpgl.train.dpsgd import DPSGDAccounting
    return DPSGDAccounting(UNIT, 0, "encoder DP-SGD")


def _classifier() -> DPSGDAccounting:
    """How the classifier's DP-SGD is charged (one example per node, on released aggregates)."""
    from dpgl.train.dpsgd import DPSGDAccounting
    return DPSGDAccounting(UNIT, 0, "classifier DP-SGD (on released aggregates)")


def calibrate_gap(epsilon: float, p: GAPParams, n_public: int) -> float:
    """Smallest common noise multiplier whose three parts, charged exactly as the run charges
    them, compose (RDP) to at most ``epsilon`` at ``p.delta``."""
    from scipy import optimize

    from dpgl.central.aggregation import AggregationPerturbation
    from dpgl.privacy import Accountant
    from dpgl.privacy.multiterm import quiet_absl
    def total(z: float) -> float:
        acc = Accountant(delta=p.delta)
        enc, cls = _configs(p, z, n_public)
        _encoder().charge(acc, z, enc.sampling_rate(n_public), enc.steps(n_public))
        with acc.active():
            AggregationPerturbation(p.hops, z, p.max_degree).charge()
        _classifier().charge(acc, z, cls.sampling_rate(n_public), cls.steps(n_public))
        with quiet_absl():
            t = acc.report().total(UNIT)
        assert t is not None
        return t.epsilon

    def f(z: float) -> float:
        return total(z) - epsilon

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


@dataclass
class GAPModel:
    """A trained GAP pipeline: encoder, the aggregation module (its noise scale) and the
    classifier."""

    encoder: GAPEncoder
    pma: AggregationPerturbation
    classifier: GAPClassifier

    def logits(self, graph: Data, rng: np.random.Generator, *, training: bool = False
               ) -> torch.Tensor:
        import torch
        with torch.no_grad():
            emb = self.encoder.embed(graph.x)
        hops = self.pma.perturb(emb, graph.edge_index, rng, check_bound=training,
                                what="the training graph" if training else "the test graph")
        with torch.no_grad():
            return self.classifier(torch.cat(hops, dim=1))


def train_gap(train: Data, universe: int, p: GAPParams, num_classes: int,
              epsilon: float | None, private: bool, enc_rng: np.random.Generator,
              ap_rng: np.random.Generator, cls_rng: np.random.Generator
              ) -> tuple[GAPModel, dict[str, object]]:
    """The method's training step on a training graph of present ids of a public universe of
    ``universe`` ids (DP-SGD's sampling rate and steps come from it): calibration, encoder
    DP-SGD, aggregation perturbation on the training graph, classifier DP-SGD; each part
    charges the active accountant when it draws."""
    import torch

    from dpgl.central.aggregation import AggregationPerturbation, check_degree_bound
    from dpgl.nn.decoupled import GAPClassifier, GAPEncoder, mlp_example_loss
    from dpgl.privacy import current_accountant
    from dpgl.train.dpsgd import train_dpsgd
    n = int(train.num_nodes)
    z = None
    if private:
        assert epsilon is not None
        acc = current_accountant()
        if acc is not None:
            acc.delta = p.delta
        z = calibrate_gap(epsilon, p, universe)
        check_degree_bound(train.edge_index, n, p.max_degree)  # before any noise is drawn
    pma = AggregationPerturbation(p.hops, z, p.max_degree, unit=UNIT)
    enc_cfg, cls_cfg = _configs(p, z, universe)
    enc = GAPEncoder(train.x.size(1), num_classes, dim=p.encoder_dim, hidden=p.hidden,
                     dropout=p.dropout)
    train_dpsgd(enc, mlp_example_loss, (train.x, train.y), enc_cfg, rng=enc_rng,
                accounting=_encoder())
    with torch.no_grad():
        emb = enc.embed(train.x)
    z_train = torch.cat(pma.perturb(emb, train.edge_index, ap_rng, check_bound=private), dim=1)
    cls = GAPClassifier(p.encoder_dim, p.hops, num_classes, hidden=p.hidden,
                        dropout=p.dropout)
    res = train_dpsgd(cls, mlp_example_loss, (z_train, train.y), cls_cfg, rng=cls_rng,
                      accounting=_classifier())
    info = {"public_train_nodes": universe, "noise_multiplier": z, "sigma_ap": pma.sigma,
            "train_seconds": res.seconds, "max_degree": p.max_degree}
    return GAPModel(enc, pma, cls), info


def run_gap(ctx: RunContext, private: bool) -> MethodOutput:
    from dpgl.central.inductive import make_inductive
    from dpgl.privacy import evaluation_only
    from dpgl.train.metrics import evaluate_logits
    p = ctx.params
    assert isinstance(p, GAPParams)
    # (the second stream drove the old random degree bounding; kept so the others stay put)
    split_rng, _, enc_rng, ap_rng, cls_rng, test_rng = spawn(ctx.rng, 6)
    ind = make_inductive(ctx.dataset, p.inductive_train, split_rng, p.val_fraction)
    model, info = train_gap(ind.train, int(ind.train.num_nodes), p, ind.num_classes,
                            ctx.epsilon, private, enc_rng, ap_rng, cls_rng)
    with evaluation_only():  # the held-out test graph is evaluation data, not a release
        logits = model.logits(ind.test, test_rng)
    metrics = evaluate_logits(logits, ind.test.y, ind.val_idx, ind.test_idx, ind.num_classes)
    if not private:
        ctx.accountant.spend_nonprivate("training graph", "aggregates and gradients without "
                                        "noise", UNIT)
    return MethodOutput(metrics, info)


@register
class GAPNodeDP(Method):
    """Sajadmanesh, Shamsabadi, Bellet & Gatica-Perez, "GAP: Differentially Private Graph
    Neural Networks with Aggregation Perturbation", USENIX Security 2023."""

    models = ("mlp",)  # trains its own model; runs are stored under "mlp"
    name = "gap-ndp"
    tasks = ("node",)
    private = True
    summary = ("GAP under bounded-degree node-DP: DP-SGD encoder + aggregation perturbation "
               "+ DP-SGD classifier (training graph must keep degree <= max_degree)")
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": GAPParams}
    budgets: ClassVar[dict[Unit, str]] = {UNIT: "epsilon"}
    deltas: ClassVar[dict[Unit, str]] = {UNIT: "delta"}
    budget_split = ("one noise multiplier for encoder DP-SGD, aggregation perturbation and "
                    "classifier DP-SGD, composed jointly (RDP) to epsilon at delta")

    def fit_node(self, ctx: RunContext) -> MethodOutput:
        return run_gap(ctx, True)


@register
class GAPNonPrivate(Method):
    """Sajadmanesh, Shamsabadi, Bellet & Gatica-Perez, "GAP: Differentially Private Graph
    Neural Networks with Aggregation Perturbation", USENIX Security 2023."""

    models = ("mlp",)  # trains its own model; runs are stored under "mlp"
    name = "gap-nonprivate"
    tasks = ("node",)
    private = False
    summary = "GAP's pipeline without privacy (no clipping or noise)"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": GAPParams}

    def fit_node(self, ctx: RunContext) -> MethodOutput:
        return run_gap(ctx, False)
