"""One-run privacy audits of the central (node-level) DP methods, through their own training
code (Steinke, Nasr & Jagielski 2023; the bound is in :mod:`dpgl.audit.one_run`).

An audit, for a registry entry ``name`` and a target ``epsilon``:

1. **Base graph** (public, always present): a small csbm graph (``base_nodes`` nodes,
   ``num_features`` features). For the bounded-degree methods (GAP, DP-SAGE) its edges are
   pruned so every degree stays within the declared ``max_degree``.
2. **Canaries**: m extra feature columns, zero for every base node. Canary i is a node whose
   features are ``canary_scale * e_{d+i}`` (only it has a non-zero value in column d + i)
   with a random label; it has no edges, except for DP-SAGE where it has ``max_degree``
   out-edges to its own *helper* nodes (base nodes with zero features that aggregate it;
   see below). Every canary is included by a fair coin, exactly 1/2, independently.
3. **Training**: the training graph is the base nodes plus the included canaries (ids
   relabelled; for DPAR the universe holds every canary id, so universe ids do not depend on
   the coins). The public universe size is N = base nodes + m, whatever the coins. The
   method's own training step runs under an active :class:`~dpgl.privacy.Accountant` and
   :func:`~dpgl.train.dpsgd.observe_dpsgd`. The **claim** is what that run charged:
   ``report.total(unit)`` (its epsilon *and* delta).
4. **Scores** (white-box, matched filter): at every observed step of the DP-SGD run that sees
   the canaries' own examples, the auditor computes canary i's clipped per-example gradient
   g_{i,t} at the step's parameters (``per_sample_gradients`` and the clip factor of
   ``clip_and_sum``) and keeps only the coordinates that no other example can touch (the
   first-layer weight column d + i; for DP-SAGE also the neighbour-weight column d + i,
   through which the helpers carry the canary). With s = that restricted gradient (scaled by
   the number of identical examples carrying it) and y the released noisy sum on the same
   coordinates, step t adds ``<y, s>`` (``score="sum"``) or the log-likelihood ratio of the
   Poisson-sampled Gaussian, ``log(1 - q + q exp((<y, s> - |s|^2 / 2) / sigma^2))``
   (``score="lr"``, default; with q = 1 it is the matched filter minus the canary's own
   signal energy |s|^2 / 2, over sigma^2). Scores use only the released noisy sums, the
   parameters (themselves computed from earlier releases), the public settings and the
   canaries themselves: never the coins or the training graph.
5. **Guesses**: +1 for the k highest scores and -1 for the k lowest, for each of a small set
   of fixed abstention rules (``guess_fractions``: r / m, fixed before the run); the bound of
   each rule is computed at beta / (number of rules) (Bonferroni) and the largest is reported.
   The result holds at ``confidence`` over the coins and the run's randomness.

Defaults are chosen for audit power within the methods' own parameter space: full-batch
DP-SGD (batch = N, so q = 1: Poisson subsampling only weakens a one-run audit), a few epochs,
``subsample=1`` for DPAR and delta = 1e-5 (the bound's delta term is 2 m delta).

Deliberately broken variants (not shipped; :func:`list_central_audits` leaves them out unless
asked) temporarily monkeypatch :mod:`dpgl.train.dpsgd` inside the audit only:

* ``dpsgd-noise-halved``: the trainer draws noise of std sigma / 2 but the run charges the
  full claim (wraps the private DP-SGD loop, halving its ``sigma`` argument);
* ``dpsgd-no-clip``: per-example gradients are summed without clipping (wraps
  ``clip_and_sum``); the charge is unchanged.

A lower bound at or below the claim is consistent with the claim, not a proof of it; the
one-run bound is far from tight for Gaussian noise (see :mod:`dpgl.audit.one_run`).
"""

from __future__ import annotations

import contextlib
import inspect
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import numpy as np
import torch
from torch_geometric.data import Data

import dpgl.train.dpsgd as _dpsgd
from dpgl.audit.one_run import best_guess_bound, epsilon_lower_bound
from dpgl.datasets import load_dataset
from dpgl.errors import ConfigError, unknown_name
from dpgl.methods.dpar import DPARParams, train_dpar
from dpgl.methods.features_dpsgd import (
    FeaturesDPSGDParams,
    public_subsample_size,
    train_features,
)
from dpgl.methods.gap import GAPParams, train_gap
from dpgl.methods.params import Params
from dpgl.methods.sage_ndp import SAGEParams, train_sage
from dpgl.privacy import Accountant, Unit
from dpgl.privacy.multiterm import quiet_absl
from dpgl.rng import make_rng, spawn

__all__ = [
    "AUDIT_OPTIONS",
    "CENTRAL_AUDITS",
    "CentralAudit",
    "CentralAuditResult",
    "list_central_audits",
    "run_central_audit",
]

#: the clip-and-sum of the trainer as shipped (the auditor always uses it, even while a broken
#: variant has replaced the module attribute)
_CLIP_AND_SUM = _dpsgd.clip_and_sum
_PRIVATE_STEPS = _dpsgd._private_steps

#: audit options (everything else passed to :func:`run_central_audit` is a method parameter)
AUDIT_OPTIONS: dict[str, Any] = {
    "base_nodes": 200,          # public base graph (csbm)
    "num_features": 16,
    "num_classes": 4,
    "avg_degree": 3.0,
    "canary_scale": 100.0,      # c: canary i's features are c * e_{d+i}
    "score": "lr",              # "lr" (log-likelihood ratio) or "sum" (matched filter)
    #: fixed abstention rules r / m (half +1 guesses, half -1); Bonferroni over them
    "guess_fractions": (0.05, 0.1, 0.2, 0.5, 1.0),
    "helpers": True,            # DP-SAGE: max_degree helper nodes per canary
}

_CHUNK = 256


# --------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class CentralAudit:
    """A registry entry: which method's training step is audited, which DP-SGD run the
    canaries are scored on, and the broken variant (if any) applied during the run."""

    name: str
    method: str                  # "features", "dpar", "gap" or "sage"
    description: str
    unit: Unit
    observed: str                # label of the DP-SGD run that sees the canaries' examples
    defaults: dict[str, Any] = field(default_factory=dict)
    breakage: str | None = None  # None, "noise-halved" or "no-clip"

    @property
    def shipped(self) -> bool:
        return self.breakage is None


_FEATURES_DEFAULTS: dict[str, Any] = {"epochs": 3, "subsample": 1.0, "delta": 1e-5}

CENTRAL_AUDITS: dict[str, CentralAudit] = {
    a.name: a for a in (
        CentralAudit("dpsgd", "features",
                     "features-dpsgd's training step (MLP, DP-SGD, subsample=1)",
                     Unit.NODE_DP, "DP-SGD (features MLP)", dict(_FEATURES_DEFAULTS)),
        CentralAudit("dpar-em0", "dpar",
                     "DPAR (DP-APPR-EM option I + multi-term DP-SGD), subsample=1",
                     Unit.NODE_DP, "DP-SGD",
                     {"epochs": 3, "subsample": 1.0, "delta": 1e-5, "num_sources": 70}),
        CentralAudit("gap-ndp", "gap",
                     "GAP under bounded-degree node-DP (canaries scored on the encoder "
                     "DP-SGD)", Unit.BOUNDED_NODE_DP, "encoder DP-SGD",
                     {"encoder_epochs": 3, "epochs": 3, "delta": 1e-5, "max_degree": 10}),
        CentralAudit("sage-ndp", "sage",
                     "DP-SAGE under bounded-degree node-DP (multi-term DP-SGD; canary "
                     "carried by max_degree helper out-neighbours)", Unit.BOUNDED_NODE_DP,
                     "DP-SGD (1-layer GNN)", {"epochs": 3, "delta": 1e-5, "max_degree": 3}),
        CentralAudit("dpsgd-noise-halved", "features",
                     "BROKEN on purpose: dpsgd with noise std halved, full claim charged",
                     Unit.NODE_DP, "DP-SGD (features MLP)", dict(_FEATURES_DEFAULTS),
                     breakage="noise-halved"),
        CentralAudit("dpsgd-no-clip", "features",
                     "BROKEN on purpose: dpsgd without per-example clipping",
                     Unit.NODE_DP, "DP-SGD (features MLP)", dict(_FEATURES_DEFAULTS),
                     breakage="no-clip"),
    )
}


def list_central_audits(include_broken: bool = False) -> list[str]:
    """Names of the central audits; the deliberately broken variants only if asked."""
    return [n for n, a in CENTRAL_AUDITS.items() if a.shipped or include_broken]


# --------------------------------------------------------------------------- broken variants


class _Breakage:
    """Counts how often a broken replacement ran (an audit of a broken variant whose patch
    never ran would silently audit the correct code: it is refused)."""

    def __init__(self) -> None:
        self.calls = 0


@contextlib.contextmanager
def _broken(kind: str | None) -> Iterator[_Breakage]:
    """DELIBERATELY BROKEN DP-SGD, for audits that must be caught. Patches
    :mod:`dpgl.train.dpsgd` for the duration of the block only."""
    state = _Breakage()
    if kind is None:
        yield state
        return
    if kind == "noise-halved":
        sig = inspect.signature(_PRIVATE_STEPS)

        def private_steps_half_noise(*args: Any, **kwargs: Any) -> Any:
            # BROKEN ON PURPOSE: the noise std drawn is half the calibrated one; the trainer
            # still charges the accountant for the full noise multiplier.
            bound = sig.bind(*args, **kwargs)
            bound.arguments["sigma"] = 0.5 * float(bound.arguments["sigma"])
            state.calls += 1
            return _PRIVATE_STEPS(*bound.args, **bound.kwargs)

        with mock.patch.object(_dpsgd, "_private_steps", private_steps_half_noise):
            yield state
        return
    if kind == "no-clip":
        def clip_and_sum_without_clipping(grads: dict[str, torch.Tensor], clip: float
                                          ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
            # BROKEN ON PURPOSE: per-example gradients are summed unclipped.
            _, norms = _CLIP_AND_SUM(grads, clip)
            state.calls += 1
            return {k: g.sum(0) for k, g in grads.items()}, norms

        with mock.patch.object(_dpsgd, "clip_and_sum", clip_and_sum_without_clipping):
            yield state
        return
    raise ConfigError(f"unknown breakage {kind!r}")


# --------------------------------------------------------------------------- result


@dataclass(frozen=True)
class CentralAuditResult:
    """Outcome of :func:`run_central_audit`. ``passed``: the empirical lower bound does not
    exceed the epsilon the run claimed (consistent with the claim; not a proof of it)."""

    name: str
    claimed_epsilon: float
    claimed_delta: float
    empirical_lower_bound: float
    m: int
    r: int
    correct: int
    passed: bool
    details: dict[str, Any]

    def render(self) -> str:
        d = self.details
        verdict = "PASS" if self.passed else "FAIL (lower bound above the claim)"
        lines = [
            f"central audit {self.name}: {verdict}",
            f"  claimed: ({self.claimed_epsilon:.4g}, {self.claimed_delta:.3g})-DP "
            f"[{d.get('unit', '')}], from the run's own report (target eps "
            f"{d.get('target_epsilon', float('nan')):g})",
            f"  empirical epsilon lower bound: {self.empirical_lower_bound:.4f} "
            f"({d.get('confidence', 0):.0%} confidence, Bonferroni over "
            f"{len(d.get('rules', []))} guessing rules)",
            f"  canaries: m={self.m} ({d.get('included', 0)} included), guesses r={self.r} "
            f"(k+={d.get('k_plus', 0)}, k-={d.get('k_minus', 0)}), correct={self.correct}",
            f"  ceiling (every guess right, best rule): {d.get('ceiling', float('nan')):.3f}",
            f"  observed run: {d.get('observed', '')} ({d.get('steps_observed', 0)} steps, "
            f"q={d.get('sampling_rate', float('nan')):.3g}, "
            f"noise multiplier {d.get('noise_multiplier', float('nan')):.4g})",
        ]
        if d.get("breakage"):
            lines.append(f"  BROKEN ON PURPOSE: {d['breakage']}")
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        return (f"central audit {self.name}: {verdict} (claimed eps="
                f"{self.claimed_epsilon:.4g}, empirical lower bound "
                f"{self.empirical_lower_bound:.4f})")


# --------------------------------------------------------------------------- set-up


def _check_options(spec: CentralAudit, overrides: dict[str, Any]
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    opts = dict(AUDIT_OPTIONS)
    params = dict(spec.defaults)
    for k, v in overrides.items():
        if k in AUDIT_OPTIONS:
            opts[k] = v
        else:
            params[k] = v
    for k in ("base_nodes", "num_features", "num_classes"):
        v = opts[k]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 2:
            raise ConfigError(f"{k} must be an integer >= 2, got {v!r}")
    if not float(opts["canary_scale"]) > 0:
        raise ConfigError(f"canary_scale must be > 0, got {opts['canary_scale']!r}")
    if opts["score"] not in ("lr", "sum"):
        raise ConfigError(f"score must be 'lr' or 'sum', got {opts['score']!r}")
    fr = tuple(float(f) for f in opts["guess_fractions"])
    if not fr or any(not 0 < f <= 1 for f in fr):
        raise ConfigError(f"guess_fractions must be fractions in (0, 1], got {fr!r}")
    opts["guess_fractions"] = fr
    return opts, params


def _cap_degree(edge_index: torch.Tensor, n: int, cap: int) -> torch.Tensor:
    """Keep undirected pairs (in id order) while both endpoints have degree < ``cap``: a
    symmetric graph with every degree <= cap."""
    ei = edge_index.numpy()
    pairs = np.unique(np.sort(ei.T, axis=1), axis=0)
    deg = np.zeros(n, dtype=np.int64)
    keep = []
    for u, v in pairs:
        if u != v and deg[u] < cap and deg[v] < cap:
            deg[u] += 1
            deg[v] += 1
            keep.append((u, v))
    if not keep:
        return torch.zeros((2, 0), dtype=torch.long)
    k = np.asarray(keep, dtype=np.int64).T
    return torch.from_numpy(np.concatenate([k, k[::-1]], axis=1).copy())


@dataclass
class _Probe:
    """Canary examples for the observed model, and the coordinates only canary i touches:
    column ``cols[i]`` of parameter ``param``. ``mult``: identical examples carrying it."""

    batch: tuple[torch.Tensor, ...]
    param: str
    cols: torch.Tensor
    mult: float = 1.0


@dataclass
class _Scorer:
    """Accumulates every canary's score over the observed steps (the matched filter of the
    module docstring); never sees the coins."""

    observed: str
    probes: list[_Probe]
    q: float
    kind: str
    m: int
    scores: np.ndarray = field(init=False)
    steps: int = 0
    other_labels: set[str] = field(default_factory=set)
    mean_signal: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.scores = np.zeros(self.m)

    def __call__(self, step: _dpsgd.DPSGDStep) -> None:
        if step.label != self.observed:
            self.other_labels.add(step.label)
            return
        self.steps += 1
        params = dict(step.model.named_parameters())
        for k, v in step.params.items():  # the trainer calls us before it updates the model
            if not torch.equal(params[k].detach(), v):
                raise RuntimeError("DP-SGD observer: model parameters differ from the step's")
        dot = torch.zeros(self.m, dtype=torch.float64)
        norm2 = torch.zeros(self.m, dtype=torch.float64)
        for probe in self.probes:
            noisy = step.noisy_sum[probe.param]
            for a in range(0, self.m, _CHUNK):
                b = min(self.m, a + _CHUNK)
                grads = _dpsgd.per_sample_gradients(
                    step.model, step.example_loss, tuple(x[a:b] for x in probe.batch))
                _, norms = _CLIP_AND_SUM(grads, step.clip)
                factor = (step.clip / (norms + 1e-12)).clamp(max=1.0)
                cols = probe.cols[a:b]
                g = grads[probe.param][torch.arange(b - a), :, cols]      # [b, rows]
                s = (probe.mult * factor[:, None] * g).double()
                y = noisy[:, cols].T.double()                              # [b, rows]
                dot[a:b] += (s * y).sum(1)
                norm2[a:b] += (s * s).sum(1)
        dot_np, n2 = dot.numpy(), norm2.numpy()
        self.mean_signal.append(float(np.sqrt(n2).mean() / step.clip))
        if self.kind == "sum":
            self.scores += dot_np
            return
        llr = (dot_np - n2 / 2.0) / (step.sigma ** 2)
        if self.q >= 1.0:
            self.scores += llr
        else:
            self.scores += np.logaddexp(math.log1p(-self.q), math.log(self.q) + llr)


_METHODS: dict[str, tuple[str, type[Params]]] = {
    "features": ("features-dpsgd", FeaturesDPSGDParams),
    "dpar": ("dpar-em0", DPARParams),
    "gap": ("gap-ndp", GAPParams),
    "sage": ("sage-ndp", SAGEParams),
}


def _parse_params(spec: CentralAudit, params: dict[str, Any]) -> Any:
    """The audited method's validated parameters (one-line ConfigError otherwise)."""
    method, cls = _METHODS[spec.method]
    try:
        return cls.parse(params, method)
    except ConfigError as e:
        raise ConfigError(f"{e} (or an audit option: {', '.join(AUDIT_OPTIONS)})") from None


def run_central_audit(name: str, epsilon: float, *, canaries: int = 500, seed: int = 0,
                      confidence: float = 0.95, **overrides: Any) -> CentralAuditResult:
    """One-run audit of central method ``name`` (see :data:`CENTRAL_AUDITS`) calibrated to
    ``epsilon``, with ``canaries`` canaries. ``overrides``: audit options
    (:data:`AUDIT_OPTIONS`) or the method's parameters (e.g. ``epochs``, ``batch_size``,
    ``delta``, ``max_degree``); the batch size defaults to the public universe size (full
    batch). Deterministic given ``seed``."""
    if name not in CENTRAL_AUDITS:
        raise unknown_name("central audit", name, list(CENTRAL_AUDITS))
    spec = CENTRAL_AUDITS[name]
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        raise ConfigError(f"epsilon must be a number > 0, got {epsilon!r}") from None
    if not 0 < eps < math.inf:
        raise ConfigError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    if isinstance(canaries, bool) or not isinstance(canaries, (int, np.integer)) \
            or canaries < 2:
        raise ConfigError(f"canaries must be an integer >= 2, got {canaries!r}")
    m = int(canaries)
    conf = float(confidence)
    if not 0.5 <= conf < 1.0:
        raise ConfigError(f"confidence must be in [0.5, 1), got {confidence!r}")
    opts, params = _check_options(spec, overrides)
    p: Any = _parse_params(spec, params)
    if float(p.dropout) > 0:
        # the observer's per-example gradients would draw dropout masks from the trainer's
        # torch RNG stream (and be random): refused
        raise ConfigError("central audits need dropout=0 (the auditor recomputes the "
                          "canaries' gradients at every step)")
    start = time.perf_counter()

    rng = make_rng(seed)
    coin_rng, label_rng, method_rng = spawn(rng, 3)
    base = load_dataset("csbm", seed=int(rng.integers(0, 2**31 - 1)),
                        num_nodes=int(opts["base_nodes"]),
                        num_features=int(opts["num_features"]),
                        num_classes=int(opts["num_classes"]),
                        avg_degree=float(opts["avg_degree"]))
    assert isinstance(base, Data)
    num_classes = int(opts["num_classes"])
    coins = coin_rng.integers(0, 2, size=m)           # exactly 1/2 each, independent
    truth = np.where(coins == 1, 1, -1)
    canary_y = torch.from_numpy(label_rng.integers(0, num_classes, size=m))
    helper_y = torch.from_numpy(label_rng.integers(0, num_classes, size=m))
    included = np.flatnonzero(coins == 1)

    n0, d = int(base.num_nodes), int(base.x.size(1))
    dd = d + m
    c = float(opts["canary_scale"])
    cols = torch.arange(d, d + m)
    canary_x = torch.zeros(m, dd)
    canary_x[torch.arange(m), cols] = c
    base_x = torch.cat([base.x.float(), torch.zeros(n0, m)], dim=1)
    base_y = base.y.long()
    edges = base.edge_index

    max_degree = int(p.max_degree) if spec.method in ("gap", "sage") else 0
    if max_degree:
        edges = _cap_degree(edges, n0, max_degree)
    helpers = spec.method == "sage" and bool(opts["helpers"])
    h_per = max_degree if helpers else 0
    n_base = n0 + m * h_per                           # helpers are always-present base nodes
    if h_per:
        base_x = torch.cat([base_x, torch.zeros(m * h_per, dd)])
        base_y = torch.cat([base_y, helper_y.repeat_interleave(h_per)])
    universe = n_base + m                             # public, whatever the coins

    # training graph: base nodes, then the included canaries (in canary order)
    k = included.size
    x = torch.cat([base_x, canary_x[torch.from_numpy(included)]])
    y = torch.cat([base_y, canary_y[torch.from_numpy(included)]])
    ei = [edges]
    if h_per and k:
        src = torch.arange(n_base, n_base + k).repeat_interleave(h_per)
        dst = (n0 + torch.from_numpy(included).repeat_interleave(h_per) * h_per
               + torch.arange(h_per).repeat(k))
        ei.append(torch.stack([src, dst]))
    train = Data(x=x, y=y, edge_index=torch.cat(ei, dim=1), num_nodes=n_base + k)
    train_ids = np.concatenate([np.arange(n_base), n_base + included]).astype(np.int64)

    # the public size of DP-SGD's data set (full batch unless a batch size is given) and the
    # canary probes
    n_pub = universe
    if spec.method in ("features", "dpar"):
        n_pub = public_subsample_size(universe, float(p.subsample))
    if "batch_size" not in params:
        p = p.model_copy(update={"batch_size": int(n_pub)})
    method_rngs = spawn(method_rng, 4)
    probes: list[_Probe]
    if spec.method == "features":
        probes = [_Probe((canary_x, canary_y), "net.0.weight", cols)]
    elif spec.method == "dpar":
        probes = [_Probe((canary_x[:, None, :], torch.ones(m, 1), canary_y), "net.0.weight",
                         cols)]
    elif spec.method == "gap":
        probes = [_Probe((canary_x, canary_y), "body.0.weight", cols)]
    else:
        own = (canary_x, torch.zeros(m, max_degree, dd), torch.zeros(m, max_degree),
               canary_y)
        probes = [_Probe(own, "root.weight", cols)]
        if h_per:
            nb = torch.zeros(m, max_degree, dd)
            nb[:, 0, :] = canary_x
            mask = torch.zeros(m, max_degree)
            mask[:, 0] = 1.0
            probes.append(_Probe((torch.zeros(m, dd), nb, mask, helper_y), "neigh.weight",
                                 cols, mult=float(h_per)))
    q = min(1.0, int(p.batch_size) / n_pub)
    scorer = _Scorer(spec.observed, probes, q, str(opts["score"]), m)

    acc = Accountant(delta=float(p.delta))
    with acc.active(), _dpsgd.observe_dpsgd(scorer), _broken(spec.breakage) as broken, \
            quiet_absl():
        info = _train(spec.method, train, train_ids, universe, p, num_classes, eps,
                      method_rngs)
    if spec.breakage is not None and broken.calls == 0:
        raise RuntimeError(f"audit {name}: the deliberate breakage never ran; the DP-SGD "
                           "code path changed and the broken variant would audit correct code")
    if scorer.steps == 0:
        raise RuntimeError(f"audit {name}: no step of {spec.observed!r} was observed "
                           f"(saw {sorted(scorer.other_labels)})")
    with quiet_absl():
        total = acc.report().total(spec.unit)
    if total is None:
        raise RuntimeError(f"audit {name}: the run charged nothing under {spec.unit}")
    claimed_eps, claimed_delta = float(total.epsilon), float(total.delta)

    rules = []
    for f in opts["guess_fractions"]:
        half = max(1, round(f * m / 2))
        rules.append((half, min(half, m - half)))
    rules = list(dict.fromkeys(rules))
    res = best_guess_bound(scorer.scores, truth, rules, claimed_delta, conf)
    ceiling = max(epsilon_lower_bound(m, kp + km, kp + km, claimed_delta,
                                      res.confidence_per_rule) for kp, km in rules)
    inc = truth > 0
    details: dict[str, Any] = {
        "unit": str(spec.unit),
        "target_epsilon": eps,
        "description": spec.description,
        "breakage": (None if spec.breakage is None else CENTRAL_AUDITS[name].description),
        "breakage_calls": broken.calls,
        "confidence": conf,
        "confidence_per_rule": res.confidence_per_rule,
        "rules": res.per_rule,
        "k_plus": res.k_plus,
        "k_minus": res.k_minus,
        "ceiling": ceiling,
        "included": int(inc.sum()),
        "observed": spec.observed,
        "steps_observed": scorer.steps,
        "other_runs": sorted(scorer.other_labels),
        "sampling_rate": q,
        "noise_multiplier": _as_float(info.get("noise_multiplier")),
        "mean_signal_over_clip": float(np.mean(scorer.mean_signal)),
        "score": opts["score"],
        "score_mean_included": float(scorer.scores[inc].mean()) if inc.any() else math.nan,
        "score_mean_excluded": float(scorer.scores[~inc].mean()) if (~inc).any()
        else math.nan,
        # evaluation diagnostic (uses the coins; not part of the guesses): d' of the scores
        "score_separation": _separation(scorer.scores, inc),
        "canary_scale": c,
        "base_nodes": n0,
        "helper_nodes": m * h_per,
        "universe": universe,
        "method_params": p.model_dump(),
        "audit_options": {k2: (list(v) if isinstance(v, tuple) else v)
                          for k2, v in opts.items()},
        "seed": seed,
        "seconds": time.perf_counter() - start,
    }
    lb = float(res.epsilon_lower_bound)
    return CentralAuditResult(name, claimed_eps, claimed_delta, lb, m, res.r, res.correct,
                              bool(lb <= claimed_eps), details)


def _separation(scores: np.ndarray, inc: np.ndarray) -> float:
    """(mean included - mean excluded) / pooled standard deviation of the scores."""
    if inc.sum() < 2 or (~inc).sum() < 2:
        return math.nan
    a, b = scores[inc], scores[~inc]
    pooled = math.sqrt(0.5 * (a.var(ddof=1) + b.var(ddof=1)))
    return float((a.mean() - b.mean()) / pooled) if pooled > 0 else math.nan


def _as_float(v: object) -> float:
    return math.nan if v is None else float(v)  # type: ignore[arg-type]


def _train(method: str, train: Data, train_ids: np.ndarray, universe: int, p: Any,
           num_classes: int, eps: float, rngs: Sequence[np.random.Generator]
           ) -> dict[str, object]:
    """The method's own training step (charges the active accountant)."""
    if method == "features":
        _, info = train_features(train, universe, p, num_classes, eps, True, rngs[0], rngs[1])
    elif method == "dpar":
        _, info, _ = train_dpar(train, train_ids, universe, p, "em0", num_classes, eps,
                                rngs[0], rngs[1], rngs[2], rngs[3])
    elif method == "gap":
        _, info = train_gap(train, universe, p, num_classes, eps, True, rngs[0], rngs[1],
                            rngs[2])
    else:
        _, info = train_sage(train, universe, p, num_classes, eps, True, rngs[0])
    return dict(info)
