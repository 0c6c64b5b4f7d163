"""DPAR (Zhang, Lee, Ma, Lou, Yang & Xiong, "DPAR: Decoupled Graph Neural Networks with
Node-Level Differential Privacy", WWW 2024): node-level DP by a differentially private
approximate PPR (top-K neighbours per source node) followed by DP-SGD on a decoupled MLP.

One run, in steps (each a function below):

1. :func:`_setup`: inductive split (train/test graphs, cross edges removed). The training
   side's ids are the public universe of N ids; ``num_sources`` source ids are drawn uniformly
   from it (public randomness, whatever the data); DP-SGD's sampling rate and step count come
   from the public expected size q' N of the node subsample.
2. Poisson node subsample of the training graph with rate q' (:func:`node_subsample`, which
   records the amplification of everything charged on the sample).
3. :func:`_appr`: ISTA APPR from every *present* source over the sample; one row per source
   and one column per universe id (absent ids score 0, an absent source's row is all zeros),
   so the set of candidates never depends on which nodes are present.
4. :func:`_calibrate` + :func:`_release`: DP-APPR-EM (option I ``dpar-em0`` / option II
   ``dpar-em1``) or DP-APPR-GM (``dpar-gm``) or the exact top-K (``dpar-nonprivate``); the
   release charges the run's accountant for its M rows.
5. :func:`_propagation_matrix`: Pi over the universe from the release and public ids only
   (the released rows of all M sources, the identity row of every other id), each id's
   occurrences in other rows capped at the public ``max_other`` and columns clipped to
   l1 <= tau (Alg. 2 line 3): post-processing of the release. Presence only selects rows, so
   one node changes at most 1 + ``max_other`` examples.
6. DP-SGD over the present nodes' rows of Pi (Eq. 1 model, Alg. 2); the noise is calibrated
   and the trainer charges the multi-term RDP bound for 1 + ``max_other`` examples per node
   (the public cap, never a count measured on the data).
7. Inference on the test graph by P power-iteration steps (Eq. 4; evaluation).

Accounting (``accounting`` parameter; docs/node-dp.md has the details):

* ``"dpgl"`` (default): noise is calibrated so that *our* verified analysis meets the target
  (eps, delta): Gumbel top-K (+ Laplace values) per vector, optimal (KOV) composition over the
  M vectors, DP-SGD with the multi-term RDP bound, composed, then amplified by the Poisson node
  subsample log(1 + q'(e^eps - 1)). The calibration dry-runs the same charges the run makes.
* ``"paper"``: noise is calibrated with DPAR's own statements (reference-code formulas:
  eps x q', Kairouz-style composition, one gradient term per node) for ``paper_epsilon``, so
  the run is comparable to the paper. Such a run takes no ``--epsilon``; its privacy report
  records what our analysis gives for that noise (far larger); the paper's figure is in
  ``info["paper_epsilon"]``.

``sgd="nonprivate"`` gives the whole budget to DP-APPR and trains without noise (the eps_pr
sweep of Fig. 1); such a run's report says NO PRIVACY for the features and labels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from dpgl.errors import ConfigError
from dpgl.methods.base import Method, MethodOutput, RunContext, register
from dpgl.methods.features_dpsgd import PaperAccountingParams, public_subsample_size
from dpgl.methods.params import Params, Renamed
from dpgl.privacy import Unit
from dpgl.rng import spawn

if TYPE_CHECKING:
    import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp
    import torch
    from torch_geometric.data import Data

    from dpgl.central.dp_appr import DPAPPRExponential, DPAPPRGaussian
    from dpgl.nn.decoupled import DecoupledMLP

__all__ = ["DPARParams", "run_dpar", "train_dpar"]


class DPARParams(PaperAccountingParams):
    """DPAR hyper-parameters (paper Sec. 5 defaults)."""

    renamed: ClassVar[dict[str, Renamed]] = {"alpha": Renamed("teleport")}

    epochs: int = Field(200, ge=1)
    subsample: float = Field(0.09, gt=0, le=1, description="Poisson node-subsampling rate q' of "
                             "the training graph")
    num_sources: int = Field(70, ge=1, description="number M of source nodes whose APPR vector "
                             "is released")
    k: int = Field(2, ge=1, description="entries K kept per released APPR vector (top-K)")
    teleport: float = Field(0.25, gt=0, lt=1, description="PPR teleport probability alpha "
                            "(Eq. 1)")
    rho: float = Field(1e-4, ge=0, description="l1 weight of ISTA's approximate PPR (sparsity)")
    ista_tol: float = Field(1e-4, ge=0, description="relative tolerance of ISTA's stopping rule")
    prop_steps: int = Field(2, ge=0, description="power-iteration steps P at inference (Eq. 4)")
    clip_em: float = Field(1e-3, gt=0, description="clip C2 of the APPR values "
                           "(DP-APPR-EM)")
    clip_gm: float = Field(1e-2, gt=0, description="l2 clip C1 of an APPR vector (DP-APPR-GM)")
    value_share: float = Field(0.5, gt=0, lt=1, description="share of a vector's epsilon for "
                               "the Laplace values (DP-APPR-EM option II)")
    tau: float = Field(1.0, gt=0, description="l1 bound on every column of the propagation "
                       "matrix (Alg. 2 line 3)")
    column_mode: Literal["clip", "normalize"] = Field(
        "clip", description="how a column above tau is brought to tau: clip, or normalize "
        "(DPAR's reference code)")
    max_other: int = Field(2, ge=0, description="cap on a node's occurrences in other nodes' "
                           "rows of the propagation matrix")
    appr_share: float = Field(0.3, gt=0, lt=1, description="share of epsilon for DP-APPR (the "
                              "rest: DP-SGD)")
    sgd: Literal["dp", "nonprivate"] = Field(
        "dp", description="dp: DP-SGD; nonprivate: all of epsilon to DP-APPR and the MLP trains "
        "without noise (Fig. 1)")


# --------------------------------------------------------------------------- steps


@dataclass
class _Setup:
    universe: int               # N: public number of training ids
    n_public: int               # q' N: public expected subsample size
    sources: np.ndarray         # public source ids (sorted)
    q: float                    # DP-SGD sampling rate (public)
    steps: int                  # DP-SGD steps (public)


@dataclass
class _Noise:
    eps_vector: float | None = None     # EM: pure eps of one vector
    value_share: float = 0.5
    sigma_gm: float | None = None       # GM: noise std
    paper: dict[str, float] | None = None


def _setup(universe: int, p: DPARParams, src_rng: np.random.Generator) -> _Setup:
    """Everything public about a run over a universe of ``universe`` training ids."""
    import numpy as np
    if p.num_sources > universe:
        raise ConfigError(f"num_sources={p.num_sources} exceeds the {universe} training ids")
    if universe < p.k:
        raise ConfigError(f"the training universe has {universe} ids < k={p.k}")
    sources = np.sort(src_rng.choice(universe, size=p.num_sources, replace=False))
    n_public = public_subsample_size(universe, p.subsample)
    probe = p.dpsgd_config(public_size=n_public)
    return _Setup(universe, n_public, sources, probe.sampling_rate(n_public),
                  probe.steps(n_public))


def _appr(sub: object, ids: np.ndarray, universe: int, sources: np.ndarray, p: DPARParams
          ) -> sp.csr_matrix:
    """(M, N) APPR of the sample: one row per source id, one column per universe id; rows of
    sources that are not in the sample and columns of absent ids are zero."""
    import numpy as np
    import scipy.sparse as sp

    from dpgl.graph.ppr import adjacency, ista_ppr
    n_sub = int(sub.num_nodes)  # type: ignore[attr-defined]
    adj = adjacency(sub.edge_index, n_sub, self_loops=True)  # type: ignore[attr-defined]
    pos = np.searchsorted(ids, sources)
    present = (pos < ids.size) & (ids[np.minimum(pos, ids.size - 1)] == sources)
    out = sp.lil_matrix((sources.size, universe))
    if present.any():
        local = ista_ppr(adj, pos[present], p.teleport, rho=p.rho, tol=p.ista_tol).tocoo()
        rows = np.flatnonzero(present)[local.row]
        out = sp.csr_matrix((local.data, (rows, ids[local.col])),
                            shape=(sources.size, universe))
    return sp.csr_matrix(out)


def _calibrate(variant: str, p: DPARParams, setup: _Setup, eps: float | None) -> _Noise:
    """DP-APPR noise: verified (``accounting="dpgl"``, a ``share`` of the inner budget) or
    from the paper's statements."""
    from dpgl.central.accounting import kairouz_total_epsilon, paper_gm_vector_epsilon
    from dpgl.central.dp_appr import DPAPPRGaussian
    from dpgl.privacy import gaussian_noise_multiplier, per_release_epsilon, subsampled_inner_target
    m = setup.sources.size
    share = p.appr_share if p.sgd == "dp" else 1.0
    if p.accounting == "dpgl":
        assert eps is not None
        eps_in, delta_in = subsampled_inner_target(eps, p.delta, p.subsample)
        d_half = delta_in / 2
        if variant in ("em0", "em1"):
            return _Noise(eps_vector=per_release_epsilon(share * eps_in, m, delta_slack=d_half,
                                                         composition="optimal"),
                          value_share=p.value_share)
        z_gm = gaussian_noise_multiplier(share * eps_in, d_half, steps=m, method="rdp")
        return _Noise(sigma_gm=z_gm * DPAPPRGaussian(p.k, 1.0, clip=p.clip_gm).sensitivity)
    assert p.paper_epsilon is not None
    delta_m = min(p.delta / p.subsample, 0.5)
    delta0 = delta_m / (2 * m)
    x = share * p.paper_epsilon / p.subsample
    eps_prime = x / (2 * math.sqrt(m * math.log(math.e + x / delta_m)))
    paper = {"appr_epsilon": float(kairouz_total_epsilon(eps_prime, m, delta_m)
                                   * p.subsample)}
    if variant == "em0":
        return _Noise(eps_vector=p.k * _paper_em_step(eps_prime, p.k, delta0), paper=paper)
    if variant == "em1":
        eps_vector = p.k * _paper_em_step(eps_prime / 2, p.k, delta0) + eps_prime / 2
        return _Noise(eps_vector=eps_vector, value_share=(eps_prime / 2) / eps_vector,
                      paper=paper)
    sigma_gm = math.sqrt(2 * math.log(1.25 / delta0)) * p.clip_gm / eps_prime
    paper["appr_epsilon"] = float(kairouz_total_epsilon(
        paper_gm_vector_epsilon(sigma_gm, p.clip_gm, delta0), m, delta_m) * p.subsample)
    return _Noise(sigma_gm=sigma_gm, paper=paper)


def _appr_randomizer(variant: str, p: DPARParams, noise: _Noise, d_half: float
                     ) -> DPAPPRExponential | DPAPPRGaussian:
    from dpgl.central.dp_appr import DPAPPRExponential, DPAPPRGaussian
    if variant in ("em0", "em1"):
        assert noise.eps_vector is not None
        return DPAPPRExponential(p.k, noise.eps_vector, clip=p.clip_em,
                                 values="uniform" if variant == "em0" else "laplace",
                                 value_share=noise.value_share, delta_slack=d_half)
    assert noise.sigma_gm is not None
    return DPAPPRGaussian(p.k, noise.sigma_gm, clip=p.clip_gm)


def _release(variant: str, appr: sp.csr_matrix, p: DPARParams, noise: _Noise, d_half: float,
             rng: np.random.Generator) -> sp.csr_matrix:
    from dpgl.central.dp_appr import topk_nonprivate
    if variant == "nonprivate":
        return topk_nonprivate(appr, p.k)
    return _appr_randomizer(variant, p, noise, d_half).release(appr, rng)


def _propagation_matrix(released: sp.csr_matrix, sources: np.ndarray, universe: int,
                        p: DPARParams, private: bool) -> sp.csr_matrix:
    """Pi over the universe as a function of the release and of public ids only: the released
    rows of all M sources (present in the sample or not), the identity row of every other id;
    each id's occurrences in other rows capped at ``max_other`` and columns clipped to l1 <=
    tau. Which nodes are present then only selects rows (an absent id has no example) and
    zeroes features, so removing node v changes v's own example and the <= ``max_other``
    examples whose rows contain v, and no other (capping or clipping over the present rows
    alone would let v's row decide which other rows keep an entry, or how they are scaled)."""
    import numpy as np
    import scipy.sparse as sp

    from dpgl.central.dp_appr import cap_column_occurrences, clip_columns_l1
    rel = released.tocoo()
    others = np.setdiff1d(np.arange(universe), sources)
    rows = np.concatenate([sources[rel.row], others])
    cols = np.concatenate([rel.col, others])
    vals = np.concatenate([rel.data, np.ones(others.size)])
    pi = sp.csr_matrix((vals, (rows, cols)), shape=(universe, universe))
    if private:
        pi = cap_column_occurrences(pi, p.max_other)
    return clip_columns_l1(pi, p.tau, p.column_mode)


def _examples(pi: sp.csr_matrix, ids: np.ndarray, x: torch.Tensor, y: torch.Tensor,
              universe: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One example per present node: padded (feats [n, S, d], weights [n, S], labels [n]);
    a weight on an absent id multiplies a zero feature row. Padding slots point at universe
    id 0 with weight 0. Features are gathered from ``x`` (row i = universe id ``ids[i]``)
    plus one zero row for absent ids, never through a universe-sized feature matrix."""
    import numpy as np
    import torch

    sub = pi[ids]
    counts = np.diff(sub.indptr)
    s = max(1, int(counts.max(initial=1)))
    row_of = np.full(universe, ids.size, dtype=np.int64)   # absent id -> the zero row
    row_of[ids] = np.arange(ids.size)
    idx = np.full((ids.size, s), row_of[0], dtype=np.int64)
    w = np.zeros((ids.size, s), dtype=np.float32)
    rows = np.repeat(np.arange(ids.size), counts)
    slots = np.arange(sub.nnz) - np.repeat(sub.indptr[:-1], counts)
    idx[rows, slots] = row_of[sub.indices]
    w[rows, slots] = sub.data
    x_pad = torch.cat([x, torch.zeros(1, x.size(1), dtype=x.dtype)])
    return x_pad[torch.from_numpy(idx)], torch.from_numpy(w), y


def _calibrate_sgd(variant: str, p: DPARParams, setup: _Setup, noise: _Noise,
                   eps: float | None) -> tuple[float, dict[str, float]]:
    """DP-SGD noise multiplier: verified (the inner total of the charges the run makes, dry
    run, <= the inner budget) or from the paper's DP-SGD statement."""
    from scipy import optimize

    from dpgl.central.accounting import paper_sgd_epsilon
    from dpgl.central.dp_appr import DPAPPRExponential
    from dpgl.privacy import Accountant, subsampled_inner_target
    from dpgl.privacy.multiterm import quiet_absl
    from dpgl.train.dpsgd import DPSGDAccounting
    if p.accounting == "paper":
        assert p.paper_epsilon is not None
        z = _paper_sgd_z((1 - p.appr_share) * p.paper_epsilon, setup.q, setup.steps, p.delta,
                         p.subsample)
        return z, {"sgd_epsilon": paper_sgd_epsilon(z, setup.q, setup.steps, p.delta,
                                                    p.subsample)}
    assert eps is not None
    eps_in, delta_in = subsampled_inner_target(eps, p.delta, p.subsample)
    d_half = delta_in / 2
    sgd = DPSGDAccounting(Unit.NODE_DP, p.max_other, "DP-SGD")

    def inner_total(z: float) -> float:
        acc = Accountant(delta=d_half)
        with acc.active():
            rand = _appr_randomizer(variant, p, noise, d_half)
            if isinstance(rand, DPAPPRExponential):
                rand.charge(count=setup.sources.size, composition="optimal",
                            delta_slack=d_half)
            else:
                rand.charge(count=setup.sources.size)
        sgd.charge(acc, z, setup.q, setup.steps)
        with quiet_absl():
            total = acc.report().total(Unit.NODE_DP)
        assert total is not None
        return total.epsilon

    def f(z: float) -> float:
        return inner_total(z) - eps_in

    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
        if hi > 1e7:
            raise ConfigError("no DP-SGD noise multiplier up to 1e7 meets the target")
    lo = hi / 2
    while f(lo) <= 0 and lo > 1e-3:
        hi, lo = lo, lo / 2
    z = float(optimize.brentq(f, lo, hi, xtol=1e-6, rtol=1e-5))
    while f(z) > 0:
        z *= 1.0 + 1e-5
    return z, {}


def _paper_em_step(eps_prime: float, k: int, delta0: float) -> float:
    """eps per peeling step such that DPAR's per-vector formula gives ``eps_prime``."""
    from scipy import optimize

    from dpgl.central.accounting import paper_em_vector_epsilon
    f = lambda e: paper_em_vector_epsilon(e, k, delta0) - eps_prime  # noqa: E731
    hi = eps_prime
    while f(hi) < 0:
        hi *= 2
    return float(optimize.brentq(f, 1e-12, hi, xtol=1e-14))


def _paper_sgd_z(target: float, q: float, steps: int, delta: float, sub: float) -> float:
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


# --------------------------------------------------------------------------- the run


def train_dpar(train: Data, train_ids: np.ndarray, universe: int, p: DPARParams,
               variant: str, num_classes: int, epsilon: float | None,
               sub_rng: np.random.Generator, src_rng: np.random.Generator,
               appr_rng: np.random.Generator, sgd_rng: np.random.Generator
               ) -> tuple[DecoupledMLP, dict[str, object], dict[str, object]]:
    """The method's training steps 2-6 on a training graph whose node i is universe id
    ``train_ids[i]`` (sorted) of a public universe of ``universe`` ids; every randomizer
    charges the active accountant. Returns (model, info, evaluation-only diagnostics)."""
    import numpy as np
    import scipy.sparse as sp

    from dpgl.central.dp_appr import max_column_occurrences, topk_nonprivate
    from dpgl.central.inductive import node_subsample
    from dpgl.nn.decoupled import DecoupledMLP, dpar_example_loss
    from dpgl.privacy import current_accountant, subsampled_inner_target
    from dpgl.train.dpsgd import DPSGDAccounting, train_dpsgd
    private = variant != "nonprivate"
    dp_sgd = private and p.sgd == "dp"
    setup = _setup(universe, p, src_rng)
    acc = current_accountant()
    if acc is not None:
        acc.delta = p.delta
    _, delta_in = subsampled_inner_target(1.0, p.delta, p.subsample)
    d_half = delta_in / 2
    info: dict[str, object] = {"public_train_nodes": setup.n_public,
                               "sources": int(setup.sources.size), "sgd_steps": setup.steps,
                               "sgd_sampling_rate": setup.q, "accounting": p.accounting}
    diag: dict[str, object] = {}
    noise = _calibrate(variant, p, setup, epsilon) if private else _Noise()
    z = None
    model = DecoupledMLP(train.x.size(1), num_classes, hidden=p.hidden,
                         num_layers=p.num_layers, dropout=p.dropout)
    with node_subsample(train, p.subsample, sub_rng, name="DPAR on a Poisson node subsample",
                        inner_delta=d_half) as (sub, local):
        ids = np.asarray(train_ids)[local]
        appr = _appr(sub, ids, setup.universe, setup.sources, p)
        released = _release(variant, appr, p, noise, d_half, appr_rng)
        if private:  # evaluation diagnostic (the true APPR; not part of the release)
            exact = topk_nonprivate(appr, p.k) if appr.nnz else appr
            hits = (released > 0).multiply(exact > 0).sum()
            diag["appr_topk_recall"] = float(hits / max(exact.nnz, 1))
        pi = _propagation_matrix(released, setup.sources, setup.universe, p, private)
        # diagnostic only: the noise and the charge use the public cap p.max_other
        info["max_other_occurrences"] = max_column_occurrences(
            sp.diags(np.isin(np.arange(setup.universe), ids).astype(float)) @ pi)
        if dp_sgd:
            z, paper_sgd = _calibrate_sgd(variant, p, setup, noise, epsilon)
            if noise.paper is not None:
                noise.paper.update(paper_sgd)
        feats, weights, labels = _examples(pi, ids, sub.x, sub.y, setup.universe)
        cfg = p.dpsgd_config(public_size=setup.n_public, noise_multiplier=z)
        result = train_dpsgd(model, dpar_example_loss, (feats, weights, labels), cfg,
                             rng=sgd_rng,
                             accounting=DPSGDAccounting(Unit.NODE_DP, p.max_other, "DP-SGD"))
        diag["train_nodes"] = int(ids.size)
    info["train_seconds"] = result.seconds
    info["noise_multiplier"] = z
    info["appr_vector_epsilon"] = noise.eps_vector
    info["sigma_gm"] = noise.sigma_gm
    if noise.paper is not None:
        noise.paper["epsilon"] = noise.paper["appr_epsilon"] + noise.paper.get("sgd_epsilon",
                                                                             0.0)
        info["paper_epsilon"] = noise.paper["epsilon"]
        info["paper_appr_epsilon"] = noise.paper.get("appr_epsilon")
        info["paper_sgd_epsilon"] = noise.paper.get("sgd_epsilon")
    return model, info, diag


def run_dpar(ctx: RunContext, variant: str) -> MethodOutput:
    """Run DPAR ``variant`` in {"em0", "em1", "gm", "nonprivate"} (see module docstring)."""
    import numpy as np
    import torch

    from dpgl.central.inductive import make_inductive
    from dpgl.graph.ppr import adjacency, ppr_power_iteration_logits
    from dpgl.train.metrics import evaluate_logits
    p = ctx.params
    assert isinstance(p, DPARParams)
    private = variant != "nonprivate"
    split_rng, sub_rng, src_rng, appr_rng, sgd_rng = spawn(ctx.rng, 5)
    ind = make_inductive(ctx.dataset, p.inductive_train, split_rng, p.val_fraction)
    universe = int(ind.train.num_nodes)
    model, info, diag = train_dpar(ind.train, np.arange(universe), universe, p, variant,
                                   ind.num_classes, ctx.epsilon, sub_rng, src_rng, appr_rng,
                                   sgd_rng)
    acc = ctx.accountant
    if not private:
        acc.spend_nonprivate("training graph", "true APPR top-K and gradients without noise",
                             Unit.NODE_DP)
    elif p.sgd != "dp":
        acc.spend_nonprivate("features and labels", "MLP trained without DP-SGD (sgd="
                             "'nonprivate', the Fig. 1 eps_pr sweep)", Unit.NODE_DP)
    # inference on the test graph: Eq. 4 power iteration (evaluation)
    with torch.no_grad():
        local = model(ind.test.x)
    test_adj = adjacency(ind.test.edge_index, int(ind.test.num_nodes), self_loops=True)
    logits = ppr_power_iteration_logits(test_adj, local, p.teleport, p.prop_steps)
    metrics = evaluate_logits(logits, ind.test.y, ind.val_idx, ind.test_idx, ind.num_classes)
    return MethodOutput(metrics, info, diag)


class _DPARBase(Method):
    """Zhang, Lee, Ma, Lou, Yang & Xiong, "DPAR: Decoupled Graph Neural Networks with
    Node-Level Differential Privacy", WWW 2024."""

    tasks = ("node",)
    models = ("mlp",)
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": DPARParams}
    variant: ClassVar[str] = ""
    budgets: ClassVar[dict[Unit, str]] = {Unit.NODE_DP: "epsilon"}
    deltas: ClassVar[dict[Unit, str]] = {Unit.NODE_DP: "delta"}
    budget_split = ("after amplification by the q' node subsample: appr_share of the inner "
                    "budget to DP-APPR (M vectors, optimal composition), the rest to DP-SGD "
                    "(1 + max_other examples per node, RDP)")

    def takes_epsilon(self, params: Params) -> bool:
        return self.private and getattr(params, "accounting", "dpgl") == "dpgl"

    def unprotected_by_choice(self, params: Params) -> set[Unit]:
        return {Unit.NODE_DP} if getattr(params, "sgd", "dp") == "nonprivate" else set()

    def fit_node(self, ctx: RunContext) -> MethodOutput:
        return run_dpar(ctx, self.variant)


@register
class DPAREM0(_DPARBase):
    name = "dpar-em0"
    private = True
    variant = "em0"
    summary = "DPAR with DP-APPR-EM option I (Gumbel top-K, values 1/K) + DP-SGD (node DP)"


@register
class DPAREM1(_DPARBase):
    name = "dpar-em1"
    private = True
    variant = "em1"
    summary = "DPAR with DP-APPR-EM option II (Gumbel top-K + Laplace values) + DP-SGD"


@register
class DPARGM(_DPARBase):
    name = "dpar-gm"
    private = True
    variant = "gm"
    summary = "DPAR with DP-APPR-GM (l2 clip, Gaussian noise, top-K) + DP-SGD (node DP)"


@register
class DPARNonPrivate(_DPARBase):
    name = "dpar-nonprivate"
    private = False
    variant = "nonprivate"
    budgets: ClassVar[dict[Unit, str]] = {}
    summary = "DPAR's pipeline without privacy (exact APPR top-K, plain mini-batch Adam)"
