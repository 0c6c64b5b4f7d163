"""DPAR (Zhang, Lee, Ma, Lou, Yang & Xiong, "DPAR: Decoupled Graph Neural Networks with
Node-Level Differential Privacy", WWW 2024): node-level DP by a differentially private
approximate PPR (top-K neighbours per source node) followed by DP-SGD on a decoupled MLP.

Pipeline (one run): inductive split (train/test graphs, cross edges removed) -> Poisson node
subsample of the training graph with rate q' -> ISTA APPR for M random source nodes ->
DP-APPR-EM (option I ``dpar-em0`` / option II ``dpar-em1``) or DP-APPR-GM (``dpar-gm``) or the
exact top-K (``dpar-nonprivate``) -> the matrix Pi (source rows = released top-K, other rows =
the node itself) -> cap each node's occurrences and clip columns to l1 <= tau (Alg. 2 line 3)
-> DP-SGD over the rows of Pi (Eq. 1 model, Alg. 2) -> inference on the test graph by P
power-iteration steps (Eq. 4). ``sgd="nonprivate"`` gives the whole budget to DP-APPR and trains
without noise (the eps_pr sweep of Fig. 1; such a run is reported as not private).

Accounting (``accounting`` parameter; docs/node-dp.md has the details):

* ``"dpgl"`` (default): noise is calibrated so that *our* verified analysis meets the target
  (eps, delta): Gumbel top-K (+ Laplace values) per vector, optimal (KOV) composition over the
  M vectors, DP-SGD with the multi-term RDP bound (a node changes its own gradient and the
  gradients of the <= ``max_other`` rows that selected it), basic composition, then
  amplification by Poisson node subsampling log(1 + q'(e^eps - 1)).
* ``"paper"``: noise is calibrated with DPAR's own statements (reference-code formulas: eps x q',
  Kairouz-style composition, one gradient term per node) so the run is comparable to the
  paper. The run's privacy report still records what *our* analysis gives for that noise (a
  larger epsilon); the paper's figure is in ``info["paper_epsilon"]``.
"""

from __future__ import annotations

import math
from typing import ClassVar, Literal

import numpy as np
import scipy.sparse as sp
import torch
from pydantic import Field
from scipy import optimize

from dpgl.central.accounting import (
    amplify_by_subsampling,
    calibrate_multiterm,
    kairouz_total_epsilon,
    multiterm_epsilon,
    paper_em_vector_epsilon,
    paper_gm_vector_epsilon,
    paper_sgd_epsilon,
    subsampled_inner_target,
)
from dpgl.central.dp_appr import (
    DPAPPRExponential,
    DPAPPRGaussian,
    cap_column_occurrences,
    clip_columns_l1,
    max_column_occurrences,
    topk_nonprivate,
)
from dpgl.central.inductive import evaluate_logits, make_inductive, poisson_node_subsample
from dpgl.errors import ConfigError
from dpgl.graph.ppr import adjacency, ista_ppr, ppr_power_iteration_logits
from dpgl.methods.base import Method, MethodOutput, RunContext, register
from dpgl.methods.params import NodeDPParams, Params
from dpgl.nn.decoupled import DecoupledMLP, dpar_example_loss
from dpgl.privacy import (
    Accountant,
    Guarantee,
    Unit,
    gaussian_noise_multiplier,
    per_release_epsilon,
)
from dpgl.rng import spawn
from dpgl.train.dpsgd import DPSGDConfig, train_dpsgd

__all__ = ["DPARParams", "run_dpar"]


class DPARParams(NodeDPParams):
    """DPAR hyper-parameters (paper Sec. 5 defaults)."""

    epochs: int = Field(200, ge=1)
    subsample: float = Field(0.09, gt=0, le=1)           # q'
    num_sources: int = Field(70, ge=1)                     # M
    k: int = Field(2, ge=1)                                # top-K
    alpha: float = Field(0.25, gt=0, lt=1)
    rho: float = Field(1e-4, ge=0)
    ista_tol: float = Field(1e-4, ge=0)
    prop_steps: int = Field(2, ge=0)                       # P (inference)
    clip_em: float = Field(1e-3, gt=0)                     # C2
    clip_gm: float = Field(1e-2, gt=0)                     # C1
    value_share: float = Field(0.5, gt=0, lt=1)            # option II: share of a vector's eps
    tau: float = Field(1.0, gt=0)
    column_mode: Literal["clip", "normalize"] = "clip"
    max_other: int = Field(2, ge=0)                        # occurrences of a node in other rows
    appr_share: float = Field(0.3, gt=0, lt=1)             # share of eps for DP-APPR
    accounting: Literal["dpgl", "paper"] = "dpgl"
    #: "dp": DP-SGD (the method). "nonprivate": the whole eps goes to DP-APPR and the MLP is
    #: trained without noise -- the eps_pr sweep of the paper's Fig. 1 (the run's privacy
    #: report then says NO PRIVACY for the features and labels).
    sgd: Literal["dp", "nonprivate"] = "dp"


# --------------------------------------------------------------------------- calibration


def _paper_em_step(eps_prime: float, k: int, delta0: float) -> float:
    """eps per peeling step such that DPAR's per-vector formula gives ``eps_prime``."""
    f = lambda e: paper_em_vector_epsilon(e, k, delta0) - eps_prime  # noqa: E731
    hi = eps_prime
    while f(hi) < 0:
        hi *= 2
    return float(optimize.brentq(f, 1e-12, hi, xtol=1e-14))


def _paper_sgd_z(target: float, q: float, steps: int, delta: float, sub: float) -> float:
    f = lambda z: paper_sgd_epsilon(z, q, steps, delta, sub) - target  # noqa: E731
    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
    lo = hi / 2
    while f(lo) <= 0 and lo > 1e-3:
        hi, lo = lo, lo / 2
    return float(optimize.brentq(f, lo, hi, xtol=1e-6))


# --------------------------------------------------------------------------- pipeline


def _release(variant: str, appr: sp.csr_matrix, p: DPARParams, eps_vector: float | None,
             value_share: float, sigma_gm: float | None, rng: np.random.Generator
             ) -> sp.csr_matrix:
    if variant == "nonprivate":
        return topk_nonprivate(appr, p.k)
    if variant in ("em0", "em1"):
        assert eps_vector is not None
        mech = DPAPPRExponential(p.k, eps_vector, clip=p.clip_em,
                                 values="uniform" if variant == "em0" else "laplace",
                                 value_share=value_share)
        return mech.release(appr, rng)
    assert sigma_gm is not None
    return DPAPPRGaussian(p.k, sigma_gm, clip=p.clip_gm).release(appr, rng)


def _examples(pi: sp.csr_matrix, x: torch.Tensor, y: torch.Tensor
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-row padded (feats [N, S, d], weights [N, S], labels [N])."""
    n = pi.shape[0]
    counts = np.diff(pi.indptr)
    s = max(1, int(counts.max(initial=1)))
    idx = np.zeros((n, s), dtype=np.int64)
    w = np.zeros((n, s), dtype=np.float32)
    for i in range(n):
        a, b = pi.indptr[i], pi.indptr[i + 1]
        idx[i, : b - a] = pi.indices[a:b]
        w[i, : b - a] = pi.data[a:b]
    idx_t = torch.from_numpy(idx)
    return x[idx_t], torch.from_numpy(w), y


def run_dpar(ctx: RunContext, variant: str) -> MethodOutput:
    """Run DPAR ``variant`` in {"em0", "em1", "gm", "nonprivate"} (see module docstring)."""
    p = ctx.params
    assert isinstance(p, DPARParams)
    private = variant != "nonprivate"
    dp_sgd = private and p.sgd == "dp"
    share = p.appr_share if dp_sgd else 1.0  # share of the budget for DP-APPR
    split_rng, sub_rng, src_rng, appr_rng, sgd_rng = spawn(ctx.rng, 5)
    ind = make_inductive(ctx.dataset, p.inductive_train, split_rng, p.val_fraction)
    sub = poisson_node_subsample(ind.train, p.subsample, sub_rng)
    n = int(sub.num_nodes)
    if n < p.k:
        raise ConfigError(f"the subsampled training graph has {n} nodes < k={p.k}")
    adj = adjacency(sub.edge_index, n, self_loops=True)
    m = min(p.num_sources, n)
    sources = np.sort(src_rng.choice(n, size=m, replace=False))
    appr = ista_ppr(adj, sources, p.alpha, rho=p.rho, tol=p.ista_tol)

    cfg_probe = DPSGDConfig(lr=p.lr, epochs=p.epochs, batch_size=p.batch_size, clip=p.clip)
    q = cfg_probe.sampling_rate(n)
    steps = cfg_probe.steps(n)
    info: dict[str, object] = {"train_nodes": n, "sources": m, "sgd_steps": steps,
                               "sgd_sampling_rate": q, "accounting": p.accounting}
    eps = ctx.epsilon
    eps_vector = sigma_gm = None
    value_share = p.value_share
    paper: dict[str, float] = {}
    if private:
        assert eps is not None
        # inner target before amplification by the q' node subsample; delta split in halves
        eps_in, delta_in = subsampled_inner_target(eps, p.delta, p.subsample)
        d_half = delta_in / 2
        if p.accounting == "dpgl":
            eps_appr = share * eps_in
            if variant in ("em0", "em1"):
                eps_vector = per_release_epsilon(eps_appr, m, delta_slack=d_half,
                                                 composition="optimal")
            else:
                z_gm = gaussian_noise_multiplier(eps_appr, d_half, steps=m, method="rdp")
                sigma_gm = z_gm * 2 * p.clip_gm
        else:
            delta_m = min(p.delta / p.subsample, 0.5)
            delta0 = delta_m / (2 * m)
            x = share * eps / p.subsample
            eps_prime = x / (2 * math.sqrt(m * math.log(math.e + x / delta_m)))
            if variant == "em0":
                step = _paper_em_step(eps_prime, p.k, delta0)
                eps_vector = p.k * step
            elif variant == "em1":
                step = _paper_em_step(eps_prime / 2, p.k, delta0)
                eps_vector = p.k * step + eps_prime / 2
                value_share = (eps_prime / 2) / eps_vector
            else:
                sigma_gm = math.sqrt(2 * math.log(1.25 / delta0)) * p.clip_gm / eps_prime
            paper["appr_epsilon"] = float(kairouz_total_epsilon(eps_prime, m, delta_m)
                                          * p.subsample)
            if variant == "gm":
                assert sigma_gm is not None
                paper["appr_epsilon"] = float(kairouz_total_epsilon(
                    paper_gm_vector_epsilon(sigma_gm, p.clip_gm, delta0), m, delta_m)
                    * p.subsample)
    released = _release(variant, appr, p, eps_vector, value_share, sigma_gm, appr_rng)
    if private:  # evaluation diagnostic (uses the true APPR; not part of the release)
        exact = topk_nonprivate(appr, p.k)
        hits = (released > 0).multiply(exact > 0).sum()
        info["appr_topk_recall"] = float(hits / max(exact.nnz, 1))
    # Pi: released rows for the sources, identity rows for every other training node
    others = np.setdiff1d(np.arange(n), sources)
    pi = sp.csr_matrix(sp.vstack([released, sp.csr_matrix(
        (np.ones(others.size), (np.arange(others.size), others)), shape=(others.size, n))]))
    order = np.argsort(np.concatenate([sources, others]))
    pi = sp.csr_matrix(pi[order])
    if private:
        pi = cap_column_occurrences(pi, p.max_other)
    pi = clip_columns_l1(pi, p.tau, p.column_mode)
    max_other = max_column_occurrences(pi)
    info["max_other_occurrences"] = max_other

    z = None
    if dp_sgd:
        assert eps is not None
        if p.accounting == "dpgl":
            z = calibrate_multiterm((1 - p.appr_share) * eps_in, d_half, q, steps, max_other)
        else:
            z = _paper_sgd_z((1 - p.appr_share) * eps, q, steps, p.delta, p.subsample)
            paper["sgd_epsilon"] = paper_sgd_epsilon(z, q, steps, p.delta, p.subsample)
            paper["epsilon"] = paper["appr_epsilon"] + paper["sgd_epsilon"]
    elif private and paper:
        paper["epsilon"] = paper["appr_epsilon"]  # sgd="nonprivate": DP-APPR only

    feats, weights, labels = _examples(pi, sub.x, sub.y)
    model = DecoupledMLP(sub.x.size(1), ind.num_classes, hidden=p.hidden,
                         num_layers=p.num_layers, dropout=p.dropout)
    cfg = DPSGDConfig(lr=p.lr, epochs=p.epochs, batch_size=p.batch_size, clip=p.clip,
                      noise_multiplier=z, weight_decay=p.weight_decay)
    result = train_dpsgd(model, dpar_example_loss, (feats, weights, labels), cfg, rng=sgd_rng)
    info["train_seconds"] = result.seconds
    info["noise_multiplier"] = z

    # inference on the test graph: Eq. 4 power iteration
    with torch.no_grad():
        local = model(ind.test.x)
    test_adj = adjacency(ind.test.edge_index, int(ind.test.num_nodes), self_loops=True)
    logits = ppr_power_iteration_logits(test_adj, local, p.alpha, p.prop_steps)
    metrics = evaluate_logits(logits, ind.test.y, ind.val_idx, ind.test_idx, ind.num_classes)

    # ------------------------------------------------------------------ accounting
    acc = ctx.accountant
    if not private:
        acc.spend_nonprivate("training graph", "true APPR top-K and gradients without noise",
                             Unit.NODE_DP)
        return MethodOutput(metrics, info)
    inner = Accountant(delta=d_half)
    if variant in ("em0", "em1"):
        assert eps_vector is not None
        inner.spend("DP-APPR-EM", Guarantee.pure(eps_vector, Unit.NODE_DP),
                    mechanism="Gumbel top-K" + (" + Laplace values" if variant == "em1" else ""),
                    count=m, composition="optimal", delta_slack=d_half)
    else:
        assert sigma_gm is not None
        inner.spend_gaussian("DP-APPR-GM", noise_multiplier=sigma_gm / (2 * p.clip_gm),
                             steps=m, unit=Unit.NODE_DP,
                             sensitivity_note="l2 clip C1, sensitivity 2 C1 per vector")
    eps_sgd = None
    if dp_sgd:
        assert z is not None
        eps_sgd = multiterm_epsilon(z, q, steps, max_other, d_half)
        inner.spend("DP-SGD", Guarantee(eps_sgd, d_half, Unit.NODE_DP),
                    mechanism=f"multi-term DP-SGD (1 + {max_other} terms per node)")
    inner_total = inner.report().total(Unit.NODE_DP)
    assert inner_total is not None
    eps_out, delta_out = amplify_by_subsampling(inner_total.epsilon, inner_total.delta,
                                                p.subsample)
    parts = "; ".join(f"{e.name}: {e.guarantee_text}" for e in inner.report().entries)
    acc.spend("DPAR on a Poisson node subsample", Guarantee(eps_out, delta_out, Unit.NODE_DP),
              mechanism=f"amplification by subsampling q'={p.subsample:g} of ({parts}; "
                        f"inner total eps={inner_total.epsilon:.4g})")
    info["inner_epsilon"] = inner_total.epsilon
    info["appr_vector_epsilon"] = eps_vector
    info["sigma_gm"] = sigma_gm
    info["sgd_inner_epsilon"] = eps_sgd
    info["dpgl_epsilon"] = eps_out
    if not dp_sgd:
        acc.spend_nonprivate("features and labels", "MLP trained without DP-SGD (sgd="
                             "'nonprivate', the Fig. 1 eps_pr sweep)", Unit.NODE_DP)
    if paper:
        info["paper_epsilon"] = paper.get("epsilon")
        info["paper_appr_epsilon"] = paper.get("appr_epsilon")
        info["paper_sgd_epsilon"] = paper.get("sgd_epsilon")
    return MethodOutput(metrics, info)


class _DPARBase(Method):
    tasks = ("node",)
    models = ("mlp",)
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": DPARParams}
    variant: ClassVar[str] = ""

    def fit(self, ctx: RunContext) -> MethodOutput:
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
    summary = "DPAR's pipeline without privacy (exact APPR top-K, plain mini-batch Adam)"
