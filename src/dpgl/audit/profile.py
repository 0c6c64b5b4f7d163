"""A many-run, white-box audit of DP-SGD's whole privacy profile, through the method's code.

One-run audits (:mod:`dpgl.audit.central`) cannot certify much for Gaussian noise: even with
half the noise, a DP-SGD run claiming eps = 1 shows a one-run lower bound well below 1. This
audit runs the training step of ``features-dpsgd`` (:func:`dpgl.methods.features_dpsgd.
train_features`) ``runs`` times, half with one canary node and half without, on a tiny public
graph, with full-batch DP-SGD (q = 1; Poisson sampling only weakens an audit). The canary is a
node whose features are c e_j in a column j no other node uses. The auditor is the strongest
white-box one: it sees every released noisy sum (:func:`dpgl.train.dpsgd.observe_dpsgd`),
knows the public examples and subtracts their clipped gradients, so what remains is the
canary's clipped gradient (when present) plus the noise; a run's score is the Gaussian
log-likelihood ratio of that residual, summed over the steps.

**What is tested is the whole charge, not one point of it.** The trainer charges the run's
accountant with a Gaussian event (noise multiplier, steps); that event implies an
(eps(delta), delta) guarantee for *every* delta (the accountant's RDP conversion). For several
deltas the audit compares the claimed eps(delta) with the lower bound
log((P_in_low - delta) / P_out_high) of the best threshold event on the score (chosen on half
of the runs, certified on the other half, Clopper-Pearson with a Bonferroni correction over
the deltas and both directions). At larger deltas a Gaussian mechanism's curve is far from
vacuous with a few thousand runs, so halving the noise, which the point (1, 1e-5) cannot
reveal with so few runs, violates the claimed curve visibly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data

from dpgl.audit.central import _broken
from dpgl.errors import ConfigError
from dpgl.methods.features_dpsgd import FeaturesDPSGDParams, train_features
from dpgl.privacy import Accountant, Unit, check_epsilon
from dpgl.privacy.audit import _lb_vectorized, epsilon_lower_bound
from dpgl.privacy.multiterm import quiet_absl
from dpgl.rng import make_rng, spawn
from dpgl.train.dpsgd import DPSGDStep, clip_and_sum, observe_dpsgd, per_sample_gradients

__all__ = ["ProfileAuditResult", "run_profile_audit"]

DELTAS = (1e-5, 1e-3, 1e-2, 0.05, 0.1)
BROKEN = (None, "noise-halved", "no-clip")


@dataclass(frozen=True)
class ProfileAuditResult:
    """Outcome of :func:`run_profile_audit`: per delta, the claimed eps(delta) (from the run's
    own charge) and the certified lower bound. ``passed``: no lower bound above its claim."""

    name: str
    claimed_epsilon: float
    claimed_delta: float
    empirical_lower_bound: float
    passed: bool
    runs: int
    profile: list[dict[str, float]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def render(self) -> str:
        verdict = "PASS" if self.passed else "FAIL (a lower bound exceeds the claimed curve)"
        lines = [f"profile audit {self.name}: {verdict}",
                 f"  claimed: ({self.claimed_epsilon:.4g}, {self.claimed_delta:.3g})-node-DP "
                 f"and the curve its Gaussian charge implies; {self.runs} runs "
                 f"({self.details.get('confidence', 0):.0%} confidence)",
                 "  delta       claimed eps(delta)   empirical lower bound"]
        for row in self.profile:
            mark = "  <- above the claim" if row["lower_bound"] > row["claimed"] + 1e-12 else ""
            lines.append(f"  {row['delta']:<10.3g}  {row['claimed']:<19.4f}  "
                         f"{row['lower_bound']:.4f}{mark}")
        if self.details.get("breakage"):
            lines.append(f"  BROKEN ON PURPOSE: {self.details['breakage']}")
        return "\n".join(lines) + "\n"


def _base(nodes: int, features: int, classes: int, rng: np.random.Generator
          ) -> tuple[torch.Tensor, torch.Tensor]:
    """The tiny public graph's features (one extra all-zero column for the canary) and
    labels."""
    x = rng.standard_normal((nodes, features + 1)).astype(np.float32)
    x[:, -1] = 0.0
    y = rng.integers(0, classes, nodes)
    return torch.from_numpy(x), torch.from_numpy(y)


def _run_once(include: bool, x: torch.Tensor, y: torch.Tensor, canary: torch.Tensor,
              p: FeaturesDPSGDParams, epsilon: float, classes: int, rng: np.random.Generator,
              broken: str | None) -> tuple[float, Accountant]:
    """One training run; returns the canary's white-box score and the run's accountant."""
    if include:
        x = torch.cat([x, canary[None]])
        y = torch.cat([y, torch.tensor([0])])
    train = Data(x=x, y=y, edge_index=torch.zeros(2, 0, dtype=torch.long),
                 num_nodes=int(x.size(0)))
    universe = int(x.size(0)) + (0 if include else 1)
    score = [0.0]

    base_x, base_y = (x[:-1], y[:-1]) if include else (x, y)

    def clipped(step: DPSGDStep, xs: torch.Tensor, ys: torch.Tensor
                ) -> dict[str, torch.Tensor]:
        """Sum of the clipped per-example gradients of (xs, ys) at the step's parameters
        (the observer runs before the update, so the model still holds them)."""
        grads = per_sample_gradients(step.model, step.example_loss, (xs, ys))
        return clip_and_sum(grads, step.clip)[0]

    def observe(step: DPSGDStep) -> None:
        # the strongest white-box auditor: it knows every public example and subtracts their
        # clipped gradients (full batch: all are in every step), leaving the canary's clipped
        # gradient (if present) plus the noise; the score is the Gaussian log likelihood ratio
        params = step.params
        known = clipped(step, base_x, base_y)
        sig = clipped(step, canary[None], torch.tensor([0]))
        dot = sum(float(((step.noisy_sum[k] - known[k]) * sig[k]).sum()) for k in params)
        energy = sum(float((sig[k] ** 2).sum()) for k in params)
        score[0] += (dot - 0.5 * energy) / step.sigma ** 2

    acc = Accountant()
    sub_rng, sgd_rng = spawn(rng, 2)
    with acc.active(), observe_dpsgd(observe), _broken(broken), quiet_absl():
        train_features(train, universe, p, classes, epsilon, True, sub_rng, sgd_rng)
    return score[0], acc


def run_profile_audit(epsilon: float, *, runs: int = 4000, seed: int = 0,
                      confidence: float = 0.95, broken: str | None = None,
                      deltas: tuple[float, ...] = DELTAS, epochs: int = 3,
                      base_nodes: int = 30, canary_scale: float = 30.0) -> ProfileAuditResult:
    """Audit ``features-dpsgd``'s training step at ``epsilon`` (delta 1e-5) over ``runs``
    runs (half with the canary). ``broken`` = "noise-halved" or "no-clip" audits a
    deliberately broken trainer (it must FAIL). Deterministic given ``seed``."""
    eps = check_epsilon(epsilon)
    if broken not in BROKEN:
        raise ConfigError(f"broken must be one of {BROKEN}, got {broken!r}")
    if isinstance(runs, bool) or int(runs) < 200:
        raise ConfigError(f"runs must be an integer >= 200, got {runs!r}")
    if not 0.5 <= confidence < 1:
        raise ConfigError(f"confidence must be in [0.5, 1), got {confidence!r}")
    rng = make_rng(seed)
    data_rng, run_rng = spawn(rng, 2)
    classes = 3
    x, y = _base(base_nodes, 4, classes, data_rng)
    canary = torch.zeros(x.size(1))
    canary[-1] = float(canary_scale)
    p = FeaturesDPSGDParams(epochs=epochs, batch_size=base_nodes + 1, subsample=1.0,
                            delta=1e-5, hidden=8, lr=0.05)
    half = int(runs) // 2
    scores = {True: np.empty(half), False: np.empty(half)}
    acc: Accountant | None = None
    for i, child in enumerate(spawn(run_rng, 2 * half)):
        include = i % 2 == 0
        s, acc = _run_once(include, x, y, canary, p, eps, classes, child, broken)
        scores[include][i // 2] = s
    assert acc is not None
    with quiet_absl():
        claims = [acc.report(delta=d).total(Unit.NODE_DP) for d in deltas]
    point = acc.report(delta=1e-5).total(Unit.NODE_DP)
    assert point is not None
    # search on the first half of the runs, certify on the second
    m = half // 2
    s_in, s_out = scores[True][:m], scores[False][:m]
    v_in, v_out = scores[True][m:], scores[False][m:]
    n_val = v_in.size
    alpha = (1.0 - confidence) / (2.0 * len(deltas))
    thresholds = np.unique(np.quantile(np.r_[s_in, s_out], np.linspace(0.01, 0.99, 99)))
    profile = []
    worst_gap = -math.inf
    for d, claim in zip(deltas, claims, strict=True):
        assert claim is not None
        c_in = (s_in[None, :] > thresholds[:, None]).sum(1)
        c_out = (s_out[None, :] > thresholds[:, None]).sum(1)
        lbs = _lb_vectorized(c_in, c_out, m, d, 1e-3)
        t = float(thresholds[int(np.argmax(lbs))])
        lb = epsilon_lower_bound(int((v_in > t).sum()), int((v_out > t).sum()), n_val, d, alpha)
        profile.append({"delta": float(d), "claimed": float(claim.epsilon),
                        "lower_bound": float(lb), "threshold": t,
                        "p_in": float((v_in > t).mean()), "p_out": float((v_out > t).mean())})
        worst_gap = max(worst_gap, lb - claim.epsilon)
    best = max(profile, key=lambda r: r["lower_bound"] - r["claimed"])
    details = {
        "confidence": confidence, "seed": seed, "epochs": epochs, "base_nodes": base_nodes,
        "canary_scale": canary_scale, "steps": epochs, "search_runs_per_side": m,
        "validation_runs_per_side": n_val,
        "separation": float((scores[True].mean() - scores[False].mean())
                            / max(scores[False].std(), 1e-12)),
        "breakage": {"noise-halved": "the trainer draws half the noise std it charges for",
                     "no-clip": "per-example gradients are summed unclipped"}.get(broken or "",
                                                                               ""),
        "best_delta": best["delta"],
    }
    name = "dpsgd-profile" + (f" ({broken})" if broken else "")
    return ProfileAuditResult(name, float(point.epsilon), float(point.delta),
                              float(best["lower_bound"]), bool(worst_gap <= 1e-12),
                              2 * half, profile, details)
