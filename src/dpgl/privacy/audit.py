"""Statistical privacy audit: an empirical lower bound on epsilon from many runs.

For a mechanism M claiming (eps, delta)-DP, take a worst-case pair of neighbouring inputs
x0, x1 (from the mechanism's proof) and an output event E. Since DP requires
P[M(x1) in E] <= e^eps P[M(x0) in E] + delta (and the same with x0, x1 swapped),

    eps >= log((P1_low - delta) / P0_high)

with one-sided Clopper-Pearson bounds P1_low, P0_high (Jagielski, Ullman & Oprea 2020; Ding
et al. 2018 use the same logic). The audit *fails* when this lower bound exceeds the claim:
then, at the stated confidence, the mechanism does not satisfy it.

**Events are searched, not fixed in advance** (the idea of DP-Sniper, Bichsel et al. 2021):
every trial's output is summarized by a few features (:class:`AuditSetup.sample`); a first,
*search* sample of outputs from both inputs picks the event that gives the largest lower bound
among a family -- thresholds on each feature, on a fitted logistic-regression score of all
features, and, for outputs with few distinct values, the sets of outcomes ordered by their
estimated likelihood ratio -- and a fresh, independent *validation* sample certifies it. The
event is chosen before the validation data exist, so the validation bound holds at the stated
confidence (both probabilities bounded at (1 - confidence) / 2 each).

This module is the engine and the registry of the *primitive* mechanisms; the randomizers the
methods run are audited end to end through their own code path by :mod:`dpgl.audit.local`.
Every setup can be built with ``spend_factor`` = 2: the mechanism then draws with twice the
budget it claims (the power check: the audit must flag it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special, stats

from dpgl import progress
from dpgl.errors import ConfigError, unknown_name
from dpgl.privacy.gaussian import GaussianMechanism
from dpgl.privacy.guarantee import Guarantee, Unit, check_epsilon
from dpgl.privacy.gumbel_topk import GumbelTopK
from dpgl.privacy.laplace import DiscreteLaplace, LaplaceMechanism
from dpgl.privacy.multibit import MultiBit
from dpgl.privacy.one_bit import OneBit
from dpgl.privacy.randomized_response import KRandomizedResponse, RandomizedResponse
from dpgl.privacy.reference_dprr import DegreeRRSampling

__all__ = [
    "AUDITABLE_MECHANISMS",
    "AuditResult",
    "AuditSetup",
    "AuditableMechanism",
    "Event",
    "audit_setup",
    "clopper_pearson",
    "epsilon_lower_bound",
    "list_auditable",
    "parse_audit_params",
    "run_audit",
    "search_event",
]

#: Draws ``trials`` outputs on input 0 or 1; returns a (trials, k) float feature matrix.
Sampler = Callable[[int, int, np.random.Generator], np.ndarray]
#: Share of the trials used to search the event (the rest certify it).
SEARCH_SHARE = 0.3
_QUANTILES = np.unique(np.r_[np.linspace(0.0005, 0.01, 20), np.linspace(0.01, 0.99, 99),
                             np.linspace(0.99, 0.9995, 20)])
_MAX_OUTCOMES = 256


@dataclass(frozen=True)
class AuditSetup:
    """A concrete audit: the claimed guarantee, the neighbouring pair and the sampler."""

    claimed: Guarantee
    pair: str
    feature_names: tuple[str, ...]
    sample: Sampler
    #: groups of feature columns whose joint outcomes the search also ranks by likelihood
    #: ratio (e.g. the audited user's own report, apart from other users' statistics)
    outcome_groups: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True)
class AuditableMechanism:
    """A registry entry: ``build(epsilon, params, spend_factor)`` returns the
    :class:`AuditSetup`; with ``spend_factor`` f the mechanism draws with f times the budget
    it claims."""

    name: str
    description: str
    build: Callable[[float, dict[str, Any], float], AuditSetup]
    shipped: bool = True
    params: dict[str, Any] = field(default_factory=dict)
    kind: str = "primitive"          # "primitive" | "randomizer" (end to end)
    #: trials per input that give the audit its power (Gaussian tails need more)
    trials: int = 20_000


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`run_audit`."""

    mechanism: str
    claimed_epsilon: float
    empirical_lower_bound: float
    passed: bool
    trials: int
    details: dict[str, Any]

    def render(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        d = self.details
        lines = [
            f"audit {self.mechanism}: {verdict}"
            + (f" (variant spending {d['spend_factor']:g}x its claim)"
               if d.get("spend_factor", 1.0) != 1.0 else ""),
            f"  claimed: {d.get('claimed', '')}",
            f"  empirical epsilon lower bound: {self.empirical_lower_bound:.4f} "
            f"({d.get('confidence', 0):.0%} confidence; event searched on "
            f"{d.get('search_trials', 0)} and certified on {d.get('validation_trials', 0)} "
            "trials per input)",
            f"  neighbouring pair: {d.get('pair', '')}",
            f"  event: {d.get('event', '')} "
            f"(p0={d.get('p0', float('nan')):.4g}, p1={d.get('p1', float('nan')):.4g})",
        ]
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        return (f"audit {self.mechanism}: {verdict} (claimed eps={self.claimed_epsilon:g}, "
                f"empirical lower bound {self.empirical_lower_bound:.4f})")


# --------------------------------------------------------------------------- statistics


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """One-sided Clopper-Pearson bounds (lower, upper), each holding with prob. >= 1 - alpha."""
    k, n = int(successes), int(trials)
    if n < 1 or not 0 <= k <= n:
        raise ConfigError(f"need 0 <= successes <= trials and trials >= 1, got {k}/{n}")
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1.0 - alpha, k + 1, n - k))
    return lo, hi


def epsilon_lower_bound(count_hi: int, count_lo: int, trials: int, delta: float,
                        alpha: float) -> float:
    """log((CP_low(p_hi) - delta) / CP_up(p_lo)); 0 when the bound says nothing."""
    p_hi_low, _ = clopper_pearson(count_hi, trials, alpha)
    _, p_lo_up = clopper_pearson(count_lo, trials, alpha)
    num = p_hi_low - delta
    if num <= 0 or p_lo_up <= 0:
        return 0.0
    return max(0.0, math.log(num / p_lo_up))


def _lb_vectorized(c_hi: np.ndarray, c_lo: np.ndarray, n: int, delta: float,
                   alpha: float) -> np.ndarray:
    """:func:`epsilon_lower_bound` for arrays of counts (the search)."""
    c_hi = np.asarray(c_hi, dtype=float)
    c_lo = np.asarray(c_lo, dtype=float)
    lo = np.where(c_hi > 0, stats.beta.ppf(alpha, np.maximum(c_hi, 1), n - c_hi + 1), 0.0)
    hi = np.where(c_lo < n, stats.beta.ppf(1 - alpha, c_lo + 1, np.maximum(n - c_lo, 1)), 1.0)
    num = lo - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where((num > 0) & (hi > 0), np.log(num / hi), 0.0)
    return np.maximum(out, 0.0)


# --------------------------------------------------------------------------- event search


@dataclass(frozen=True)
class Event:
    """An output event chosen on the search sample: ``mask(features) -> bool array``.
    ``high`` is the input (0 or 1) under which the event is more likely."""

    description: str
    high: int
    mask: Callable[[np.ndarray], np.ndarray]


def _logistic_direction(f0: np.ndarray, f1: np.ndarray) -> np.ndarray | None:
    """Weights of a logistic regression separating the two samples (standardized features;
    a few Newton steps with a small ridge). None when it cannot be fitted."""
    x = np.vstack([f0, f1])
    y = np.r_[np.zeros(len(f0)), np.ones(len(f1))]
    mu, sd = x.mean(axis=0), x.std(axis=0)
    keep = sd > 0
    if keep.sum() < 2:
        return None
    z = np.c_[np.ones(len(x)), (x[:, keep] - mu[keep]) / sd[keep]]
    w = np.zeros(z.shape[1])
    for _ in range(25):
        p = special.expit(z @ w)
        g = z.T @ (p - y) + 1e-3 * w
        h = (z * (p * (1 - p))[:, None]).T @ z + 1e-3 * np.eye(z.shape[1])
        try:
            step = np.linalg.solve(h, g)
        except np.linalg.LinAlgError:
            return None
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    full = np.zeros(x.shape[1])
    full[keep] = w[1:] / sd[keep]
    return full


def _row_keys(f: np.ndarray) -> np.ndarray:
    """One hashable key per row (exact values)."""
    arr = np.ascontiguousarray(f, dtype=np.float64)
    return arr.view(np.dtype((np.void, arr.dtype.itemsize * arr.shape[1]))).ravel()


def _candidates(f0: np.ndarray, f1: np.ndarray, names: tuple[str, ...],
                outcome_groups: tuple[tuple[int, ...], ...] = ()
                ) -> list[tuple[str, Callable[[np.ndarray], np.ndarray]]]:
    """Scores whose upper (or lower) sets are the candidate events, built from the first half
    of the search sample: each feature, a logistic-regression score of all features, and, for
    outputs with few distinct values, the estimated log likelihood ratio of each outcome."""
    scores: list[tuple[str, Callable[[np.ndarray], np.ndarray]]] = []
    for j, nm in enumerate(names):
        scores.append((nm, lambda x, j=j: x[:, j]))
    if f0.shape[1] > 1:
        w = _logistic_direction(f0, f1)
        if w is not None:
            label = " + ".join(f"{c:.3g}*{nm}" for c, nm in zip(w, names, strict=True))
            scores.append((f"logistic score ({label})", lambda x, w=w: x @ w))
    pooled = np.vstack([f0, f1])
    discrete = [j for j in range(pooled.shape[1]) if np.unique(pooled[:, j]).size <= 16]
    groups = [list(range(pooled.shape[1]))]
    if discrete and len(discrete) < pooled.shape[1]:
        groups.append(discrete)     # the discrete part of the output on its own
    groups += [list(g) for g in outcome_groups if list(g) not in groups]
    for cols in groups:
        llr_score = _outcome_llr(f0[:, cols], f1[:, cols], cols)
        if llr_score is not None:
            what = "the outcome" if len(cols) == pooled.shape[1] else \
                "the outcome of " + ", ".join(names[j] for j in cols)
            scores.append((f"estimated log likelihood ratio of {what}", llr_score))
    return scores


def _outcome_llr(f0: np.ndarray, f1: np.ndarray, cols: list[int]
                 ) -> Callable[[np.ndarray], np.ndarray] | None:
    """Each outcome's estimated log likelihood ratio (outputs with few distinct values)."""
    n = len(f0)
    keys, inverse = np.unique(np.concatenate([_row_keys(f0), _row_keys(f1)]),
                              return_inverse=True)
    if keys.size > _MAX_OUTCOMES:
        return None
    c0 = np.bincount(inverse[:n], minlength=keys.size).astype(float)
    c1 = np.bincount(inverse[n:], minlength=keys.size).astype(float)
    llr = np.log((c1 + 0.5) / (c0 + 0.5))   # keys are sorted by np.unique

    def score(x: np.ndarray) -> np.ndarray:
        k = _row_keys(x[:, cols])
        pos = np.minimum(np.searchsorted(keys, k), keys.size - 1)
        return np.where(keys[pos] == k, llr[pos], 0.0)

    return score


def search_event(f0: np.ndarray, f1: np.ndarray, names: tuple[str, ...], delta: float,
                 alpha: float = 1e-5, outcome_groups: tuple[tuple[int, ...], ...] = ()
                 ) -> tuple[Event, float]:
    """The event with the largest lower bound on the search sample (``f0`` from input 0,
    ``f1`` from input 1, same size), and that bound. Two stages against overfitting: the
    candidate scores are built on the first half, the threshold and direction are chosen on
    the second half (the validation sample is separate again, in :func:`run_audit`). The
    search ranks events by a Clopper-Pearson bound at a small ``alpha`` (about 0.05 over the
    ~10^4 events it compares, Bonferroni), so thin events whose ratio is luck lose to events
    with enough mass."""
    half = len(f0) // 2
    scores = _candidates(f0[:half], f1[:half], names, outcome_groups)
    g0, g1 = f0[half:], f1[half:]
    n = len(g0)
    best: tuple[float, Event] | None = None
    for label, fn in scores:
        s0, s1 = fn(g0), fn(g1)
        pooled = np.concatenate([s0, s1])
        if not np.all(np.isfinite(pooled)) or pooled.min() == pooled.max():
            continue
        thresholds = np.unique(np.r_[np.quantile(pooled, _QUANTILES), np.unique(pooled)[:256]])
        s0s, s1s = np.sort(s0), np.sort(s1)
        above0 = n - np.searchsorted(s0s, thresholds, side="right")
        above1 = n - np.searchsorted(s1s, thresholds, side="right")
        for side in ("above", "below"):
            c0 = above0 if side == "above" else n - above0
            c1 = above1 if side == "above" else n - above1
            for high, (ch, cl) in ((1, (c1, c0)), (0, (c0, c1))):
                lbs = _lb_vectorized(ch, cl, n, delta, alpha)
                i = int(np.argmax(lbs))
                if best is not None and lbs[i] <= best[0]:
                    continue
                thr = float(thresholds[i])
                if side == "above":
                    ev = Event(f"{label} > {thr:.6g}", high, lambda x, fn=fn, t=thr: fn(x) > t)
                else:
                    ev = Event(f"{label} <= {thr:.6g}", high,
                               lambda x, fn=fn, t=thr: fn(x) <= t)
                best = (float(lbs[i]), ev)
    if best is None:
        return Event("never", 1, lambda x: np.zeros(len(x), dtype=bool)), 0.0
    return best[1], best[0]


# --------------------------------------------------------------------------- running


def run_audit(name: str, epsilon: float, *, trials: int | None = None,
              confidence: float = 0.95,
              seed: int = 0, spend_factor: float = 1.0,
              registry: dict[str, AuditableMechanism] | None = None,
              **params: Any) -> AuditResult:
    """Audit mechanism ``name`` at its claimed ``epsilon`` (see the module docstring).

    ``trials`` outputs per input (default: the mechanism's own, enough for the power check; a
    share :data:`SEARCH_SHARE` searches the event, the rest certify it); ``params`` are
    mechanism-specific (unknown ones are refused);
    ``spend_factor`` 2 audits the variant that draws with twice its claim (it should FAIL).
    ``registry`` defaults to the primitives; :mod:`dpgl.audit` passes the end-to-end one.
    Deterministic given ``seed``.
    """
    reg = AUDITABLE_MECHANISMS if registry is None else registry
    if name not in reg:
        raise unknown_name("auditable mechanism", name, list(reg))
    eps = check_epsilon(epsilon)
    spec = reg[name]
    if trials is None:
        trials = spec.trials
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 100:
        raise ConfigError(f"trials must be an integer >= 100, got {trials!r}")
    conf = float(confidence)
    if not 0.5 <= conf < 1.0:
        raise ConfigError(f"confidence must be in [0.5, 1), got {confidence!r}")
    factor = float(spend_factor)
    if not (math.isfinite(factor) and factor >= 1.0):
        raise ConfigError(f"spend_factor must be >= 1, got {spend_factor!r}")
    unknown = set(params) - set(spec.params)
    if unknown:
        allowed = ", ".join(sorted(spec.params)) or "none"
        raise ConfigError(f"unknown parameter(s) for {name}: {', '.join(sorted(unknown))}; "
                          f"allowed: {allowed}")
    merged = {**spec.params, **params}
    setup = spec.build(eps, merged, factor)
    from dpgl.rng import make_rng  # deferred: dpgl.rng imports torch

    rng = make_rng(seed)
    r_s0, r_s1, r_v0, r_v1 = rng.spawn(4)
    n_search = max(50, round(SEARCH_SHARE * int(trials)))
    n_val = max(50, int(trials) - n_search)
    delta = setup.claimed.delta
    with progress.step(f"audit {name}: outputs on both inputs",
                       total=2 * (n_search + n_val)) as bar:
        s0 = np.asarray(setup.sample(n_search, 0, r_s0), dtype=np.float64).reshape(n_search, -1)
        bar.advance(n_search)
        s1 = np.asarray(setup.sample(n_search, 1, r_s1), dtype=np.float64).reshape(n_search, -1)
        bar.advance(n_search)
        event, search_lb = search_event(s0, s1, setup.feature_names, delta,
                                        outcome_groups=setup.outcome_groups)
        v0 = np.asarray(setup.sample(n_val, 0, r_v0), dtype=np.float64).reshape(n_val, -1)
        bar.advance(n_val)
        v1 = np.asarray(setup.sample(n_val, 1, r_v1), dtype=np.float64).reshape(n_val, -1)
        bar.advance(n_val)
    c0, c1 = int(event.mask(v0).sum()), int(event.mask(v1).sum())
    hi, lo = (c1, c0) if event.high == 1 else (c0, c1)
    lb = epsilon_lower_bound(hi, lo, n_val, delta, (1.0 - conf) / 2.0)
    claimed = setup.claimed.epsilon
    details = {
        "claimed": str(setup.claimed),
        "claimed_delta": delta,
        "pair": setup.pair,
        "features": list(setup.feature_names),
        "event": event.description + ("" if event.high == 1 else " [x0 vs x1]"),
        "search_lower_bound": search_lb,
        "search_trials": n_search,
        "validation_trials": n_val,
        "counts_x0": c0,
        "counts_x1": c1,
        "p0": c0 / n_val,
        "p1": c1 / n_val,
        "confidence": conf,
        "seed": seed,
        "spend_factor": factor,
        "params": dict(merged),
    }
    return AuditResult(name, claimed, float(lb), bool(lb <= claimed + 1e-12),
                       int(trials), details)


def parse_audit_params(name: str, items: list[str] | tuple[str, ...],
                       registry: dict[str, AuditableMechanism] | None = None
                       ) -> dict[str, Any]:
    """Parse CLI ``key=value`` strings for mechanism ``name``; values take the type of the
    registry default (int, float or str). Unknown keys and malformed items are refused."""
    reg = AUDITABLE_MECHANISMS if registry is None else registry
    if name not in reg:
        raise unknown_name("auditable mechanism", name, list(reg))
    defaults = reg[name].params
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"audit parameters are key=value, got {item!r}")
        if key not in defaults:
            allowed = ", ".join(sorted(defaults)) or "none"
            raise ConfigError(f"unknown parameter {key!r} for {name}; allowed: {allowed}")
        default = defaults[key]
        try:
            if isinstance(default, bool):
                raise ValueError
            if isinstance(default, int):
                out[key] = int(raw)
            elif isinstance(default, float):
                out[key] = float(raw)
            else:   # e.g. multibit's m: "best", "max" or an integer
                out[key] = int(raw) if raw.strip().lstrip("-").isdigit() else raw.strip()
        except ValueError:
            raise ConfigError(f"bad value {raw!r} for {key} "
                              f"(expected {type(default).__name__})") from None
    return out


def list_auditable(include_broken: bool = False,
                   registry: dict[str, AuditableMechanism] | None = None) -> list[str]:
    """Names of auditable mechanisms; the deliberately broken ones only if asked."""
    reg = AUDITABLE_MECHANISMS if registry is None else registry
    return [n for n, s in reg.items() if s.shipped or include_broken]


def audit_setup(name: str, epsilon: float, spend_factor: float = 1.0,
                registry: dict[str, AuditableMechanism] | None = None,
                **params: Any) -> AuditSetup:
    """The :class:`AuditSetup` of ``name`` (for tests and custom analyses)."""
    reg = AUDITABLE_MECHANISMS if registry is None else registry
    if name not in reg:
        raise unknown_name("auditable mechanism", name, list(reg))
    spec = reg[name]
    return spec.build(check_epsilon(epsilon), {**spec.params, **params}, float(spend_factor))


# --------------------------------------------------------------------------- primitives


def _rr(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    claim = RandomizedResponse(eps).guarantee
    mech = RandomizedResponse(f * eps)

    def sample(n: int, which: int, rng: np.random.Generator) -> np.ndarray:
        return mech.randomize(np.full(n, which, dtype=bool), rng)[:, None]

    return AuditSetup(claim, "bit 0 vs bit 1", ("y",), sample)


def _broken_rr(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    """Claims eps but keeps the bit with probability e^{2 eps}/(1 + e^{2 eps}): a 2 eps RR."""
    flip = float(special.expit(-2.0 * f * eps))

    def sample(n: int, which: int, rng: np.random.Generator) -> np.ndarray:
        return ((np.full(n, which, dtype=bool)) ^ (rng.random(n) < flip))[:, None]

    return AuditSetup(Guarantee.pure(eps, Unit.EDGE_LDP), "bit 0 vs bit 1", ("y",), sample)


def _krr(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    k = int(p["k"])
    claim = KRandomizedResponse(eps, k).guarantee
    mech = KRandomizedResponse(f * eps, k)

    def sample(n: int, which: int, rng: np.random.Generator) -> np.ndarray:
        return mech.randomize(np.full(n, which), rng)[:, None]

    return AuditSetup(claim, f"value 0 vs value 1 (k={k})", ("y",), sample)


def _laplace(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    claim = LaplaceMechanism(eps, 1.0).guarantee
    mech = LaplaceMechanism(f * eps, 1.0)

    def sample(n: int, which: int, rng: np.random.Generator) -> np.ndarray:
        return mech.randomize(np.full(n, float(which)), rng)[:, None]

    return AuditSetup(claim, "0 vs 1 (sensitivity 1)", ("y",), sample)


def _discrete_laplace(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    claim = DiscreteLaplace(eps, 1).guarantee
    mech = DiscreteLaplace(f * eps, 1)

    def sample(n: int, which: int, rng: np.random.Generator) -> np.ndarray:
        return mech.randomize(np.full(n, which), rng)[:, None]

    return AuditSetup(claim, "0 vs 1 (sensitivity 1)", ("y",), sample)


def _gaussian(calibration: str) -> Callable[[float, dict[str, Any], float], AuditSetup]:
    def build(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
        delta = float(p["delta"])
        claim = GaussianMechanism(eps, delta, 1.0, calibration=calibration).guarantee
        mech = GaussianMechanism(f * eps, delta, 1.0, calibration="analytic"
                                 if f * eps >= 1 else calibration)

        def sample(n: int, which: int, rng: np.random.Generator) -> np.ndarray:
            return mech.randomize(np.full(n, float(which)), rng)[:, None]

        return AuditSetup(claim, f"0 vs 1 (L2 sensitivity 1, sigma={mech.sigma:.4g})", ("y",),
                          sample)

    return build


def _gumbel(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    k, items = int(p["k"]), int(p["items"])
    if items <= k:
        raise ConfigError(f"gumbel-topk audit needs items > k, got items={items}, k={k}")
    claim = GumbelTopK(k, eps, sensitivity=1.0).guarantee
    mech = GumbelTopK(k, f * eps, sensitivity=1.0)
    u0 = np.zeros(items)
    u1 = np.where(np.arange(items) < k, 1.0, -1.0)   # every entry moves by the sensitivity

    def sample(n: int, which: int, rng: np.random.Generator) -> np.ndarray:
        return mech.select(np.broadcast_to(u1 if which else u0, (n, items)), rng)

    return AuditSetup(claim, f"scores 0 vs +-1 ({items} items; first {k} up, rest down)",
                      tuple(f"selection[{i}]" for i in range(k)), sample)


def _feature_pair(mech: MultiBit, d: int) -> tuple[str, Sampler]:
    def sample(n: int, which: int, rng: np.random.Generator) -> np.ndarray:
        return mech.randomize(np.full((n, d), 1.0 if which else 0.0), rng)

    return f"x = (0,..,0) vs (1,..,1), d={d}, range [0, 1]", sample


def _multibit(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    d = int(p["d"])
    claim = MultiBit(eps, m=p["m"]).guarantee
    mech = MultiBit(f * eps, m=p["m"])
    pair, sample = _feature_pair(mech, d)
    return AuditSetup(claim, pair + f", m={mech.resolve_m(d)}",
                      tuple(f"y[{i}]" for i in range(d)), sample)


def _one_bit(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    d = int(p["d"])
    claim = OneBit(eps).guarantee
    pair, sample = _feature_pair(OneBit(f * eps), d)
    return AuditSetup(claim, pair, tuple(f"y[{i}]" for i in range(d)), sample)


def _dprr(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    n, share = int(p["n"]), float(p["degree_share"])
    if not 0 < share < 1:
        raise ConfigError(f"degree_share must be in (0, 1), got {share}")
    if n < 2:
        raise ConfigError(f"n must be >= 2, got {n}")

    def q(deg: np.ndarray, length: int) -> np.ndarray:
        return np.clip((deg + 1.0) / (length + 1.0), 0.0, 1.0)

    claim = DegreeRRSampling(share * eps, (1.0 - share) * eps, q).guarantee
    mech = DegreeRRSampling(share * f * eps, (1.0 - share) * f * eps, q)
    x0 = np.zeros(n, dtype=bool)
    x1 = x0.copy()
    x1[0] = True

    def sample(size: int, which: int, rng: np.random.Generator) -> np.ndarray:
        return mech.randomize(np.broadcast_to(x1 if which else x0, (size, n)), rng)

    return AuditSetup(claim, f"empty list vs one edge (n={n}; eps1={share * eps:.3g} degree, "
                             f"eps2={(1 - share) * eps:.3g} RR)",
                      tuple(f"y[{i}]" for i in range(n)), sample)


AUDITABLE_MECHANISMS: dict[str, AuditableMechanism] = {
    m.name: m for m in (
        AuditableMechanism("warner-rr", "Warner randomized response on one bit", _rr),
        AuditableMechanism("krr", "k-ary randomized response", _krr, params={"k": 4}),
        AuditableMechanism("laplace", "Laplace mechanism, sensitivity 1", _laplace),
        AuditableMechanism("discrete-laplace", "discrete Laplace (exact sampler), sensitivity 1",
                           _discrete_laplace),
        AuditableMechanism("gaussian", "analytic Gaussian mechanism (Balle & Wang 2018)",
                           _gaussian("analytic"), params={"delta": 1e-5}, trials=2_000_000),
        AuditableMechanism("gaussian-classic", "classic Gaussian mechanism (eps < 1)",
                           _gaussian("classic"), params={"delta": 1e-5}, trials=2_000_000),
        AuditableMechanism("gumbel-topk", "one-shot Gumbel top-k (Durfee & Rogers 2019)",
                           _gumbel, params={"k": 2, "items": 6}),
        AuditableMechanism("one-bit", "1-bit mechanism per dimension (LPGNN's 1BM baseline)",
                           _one_bit, params={"d": 2}),
        AuditableMechanism("multibit", "LPGNN multi-bit encoder (Alg. 1)", _multibit,
                           params={"d": 3, "m": "best"}),
        AuditableMechanism("dprr-style", "noisy degree + RR + degree-based sampling (DPRR "
                                         "reference)", _dprr,
                           params={"n": 4, "degree_share": 0.5}),
        AuditableMechanism("broken-rr", "DELIBERATELY BROKEN: claims eps, runs 2 eps RR",
                           _broken_rr, shipped=False),
    )
}
