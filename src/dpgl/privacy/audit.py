"""Statistical privacy audit: an empirical lower bound on epsilon from many runs.

For a mechanism M claiming (eps, delta)-DP, pick a worst-case pair of neighbouring inputs
x0, x1 and a few output events E. Run M ``trials`` times on each input, count how often each
event occurs, and bound the true probabilities with Clopper-Pearson intervals. Since DP
requires P[M(x1) in E] <= e^eps P[M(x0) in E] + delta (and the same with x0, x1 swapped),

    eps >= log((P1_low - delta) / P0_high)

holds for every event and both directions simultaneously with probability >= ``confidence``
(one-sided Clopper-Pearson bounds at level (1 - confidence) / (2 x number of tests), Bonferroni
over events and directions). The audit *fails* when this lower bound exceeds the claimed eps:
then, at that confidence, the mechanism does not satisfy its claim (Jagielski, Ullman & Oprea
2020; Ding et al. 2018 "Detecting violations of differential privacy" use the same logic).

Registry: :data:`AUDITABLE_MECHANISMS` maps a name to an :class:`AuditableMechanism`;
``broken-rr`` is a deliberately wrong randomized response kept to show the audit catches bugs;
it is not "shipped" and :func:`list_auditable` leaves it out unless asked.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special, stats

from dpgl.errors import ConfigError, unknown_name
from dpgl.privacy.composed import DegreeRRSampling
from dpgl.privacy.gaussian import GaussianMechanism
from dpgl.privacy.guarantee import Guarantee, Unit, check_epsilon
from dpgl.privacy.gumbel_topk import GumbelTopK
from dpgl.privacy.laplace import DiscreteLaplace, LaplaceMechanism
from dpgl.privacy.multibit import MultiBit
from dpgl.privacy.one_bit import OneBit
from dpgl.privacy.randomized_response import KRandomizedResponse, RandomizedResponse

__all__ = [
    "AUDITABLE_MECHANISMS",
    "AuditResult",
    "AuditSetup",
    "AuditableMechanism",
    "clopper_pearson",
    "epsilon_lower_bound",
    "list_auditable",
    "parse_audit_params",
    "run_audit",
]

#: Draws ``trials`` outputs on input 0 or 1 and returns a (trials, n_events) bool matrix.
Sampler = Callable[[int, int, np.random.Generator], np.ndarray]


@dataclass(frozen=True)
class AuditSetup:
    """A concrete audit: the claimed guarantee, the neighbouring pair and the events."""

    claimed: Guarantee
    pair: str
    event_names: tuple[str, ...]
    sample: Sampler


@dataclass(frozen=True)
class AuditableMechanism:
    """A registry entry: ``build(epsilon, params)`` returns the :class:`AuditSetup`."""

    name: str
    description: str
    build: Callable[[float, dict[str, Any]], AuditSetup]
    shipped: bool = True
    params: dict[str, Any] = field(default_factory=dict)


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
            f"audit {self.mechanism}: {verdict}",
            f"  claimed: {d.get('claimed', '')}",
            f"  empirical epsilon lower bound: {self.empirical_lower_bound:.4f} "
            f"({d.get('confidence', 0):.0%} confidence, {self.trials} trials per input)",
            f"  neighbouring pair: {d.get('pair', '')}",
            f"  strongest event: {d.get('best_event', '')} "
            f"(p0={d.get('best_p0', float('nan')):.4g}, p1={d.get('best_p1', float('nan')):.4g})",
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


def run_audit(name: str, epsilon: float, *, trials: int = 100_000, confidence: float = 0.95,
              seed: int = 0, **params: Any) -> AuditResult:
    """Audit mechanism ``name`` at its claimed ``epsilon`` (see the module docstring).

    ``params`` are mechanism-specific (e.g. ``k`` for k-RR, ``delta`` for Gaussian, ``m`` and
    ``d`` for multi-bit); unknown ones are refused. Deterministic given ``seed``.
    """
    if name not in AUDITABLE_MECHANISMS:
        raise unknown_name("auditable mechanism", name, list(AUDITABLE_MECHANISMS))
    eps = check_epsilon(epsilon)
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 100:
        raise ConfigError(f"trials must be an integer >= 100, got {trials!r}")
    conf = float(confidence)
    if not 0.5 <= conf < 1.0:
        raise ConfigError(f"confidence must be in [0.5, 1), got {confidence!r}")
    spec = AUDITABLE_MECHANISMS[name]
    unknown = set(params) - set(spec.params)
    if unknown:
        allowed = ", ".join(sorted(spec.params)) or "none"
        raise ConfigError(f"unknown parameter(s) for {name}: {', '.join(sorted(unknown))}; "
                          f"allowed: {allowed}")
    merged = {**spec.params, **params}
    setup = spec.build(eps, merged)
    from dpgl.rng import make_rng  # deferred: dpgl.rng imports torch

    rng = make_rng(seed)
    rng0, rng1 = rng.spawn(2)
    ev0 = np.asarray(setup.sample(int(trials), 0, rng0), dtype=bool)
    ev1 = np.asarray(setup.sample(int(trials), 1, rng1), dtype=bool)
    c0, c1 = ev0.sum(axis=0), ev1.sum(axis=0)
    n_tests = 2 * len(setup.event_names)
    alpha = (1.0 - conf) / (2.0 * n_tests)
    delta = setup.claimed.delta
    best, best_name, best_counts = 0.0, setup.event_names[0], (int(c0[0]), int(c1[0]))
    for i, ev_name in enumerate(setup.event_names):
        for hi, lo, label in ((c1[i], c0[i], ev_name), (c0[i], c1[i], f"{ev_name} [x0 vs x1]")):
            lb = epsilon_lower_bound(int(hi), int(lo), int(trials), delta, alpha)
            if lb > best:
                best, best_name, best_counts = lb, label, (int(c0[i]), int(c1[i]))
    details = {
        "claimed": str(setup.claimed),
        "claimed_delta": delta,
        "pair": setup.pair,
        "events": list(setup.event_names),
        "counts_x0": [int(c) for c in c0],
        "counts_x1": [int(c) for c in c1],
        "best_event": best_name,
        "best_p0": best_counts[0] / trials,
        "best_p1": best_counts[1] / trials,
        "confidence": conf,
        "seed": seed,
        "params": {k: v for k, v in merged.items()},
    }
    return AuditResult(name, eps, float(best), bool(best <= eps), int(trials), details)


def parse_audit_params(name: str, items: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Parse CLI ``key=value`` strings for mechanism ``name``; values take the type of the
    registry default (int, float or str). Unknown keys and malformed items are refused."""
    if name not in AUDITABLE_MECHANISMS:
        raise unknown_name("auditable mechanism", name, list(AUDITABLE_MECHANISMS))
    defaults = AUDITABLE_MECHANISMS[name].params
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


def list_auditable(include_broken: bool = False) -> list[str]:
    """Names of auditable mechanisms; the deliberately broken ones only if asked."""
    return [n for n, s in AUDITABLE_MECHANISMS.items() if s.shipped or include_broken]


# --------------------------------------------------------------------------- setups


def _rr(eps: float, p: dict[str, Any]) -> AuditSetup:
    mech = RandomizedResponse(eps)

    def sample(n: int, which: int, rng: np.random.Generator) -> np.ndarray:
        y = mech.randomize(np.full(n, which, dtype=bool), rng)
        return np.stack([y, ~y], axis=1)

    return AuditSetup(mech.guarantee, "bit 0 vs bit 1", ("y=1", "y=0"), sample)


def _broken_rr(eps: float, p: dict[str, Any]) -> AuditSetup:
    """Claims eps but keeps the bit with probability e^{2 eps}/(1 + e^{2 eps}): a 2 eps RR."""
    flip = float(special.expit(-2.0 * eps))

    def sample(n: int, which: int, rng: np.random.Generator) -> np.ndarray:
        y = (np.full(n, which, dtype=bool)) ^ (rng.random(n) < flip)
        return np.stack([y, ~y], axis=1)

    return AuditSetup(Guarantee.pure(eps, Unit.EDGE_LDP), "bit 0 vs bit 1", ("y=1", "y=0"),
                      sample)


def _krr(eps: float, p: dict[str, Any]) -> AuditSetup:
    mech = KRandomizedResponse(eps, int(p["k"]))

    def sample(n: int, which: int, rng: np.random.Generator) -> np.ndarray:
        y = mech.randomize(np.full(n, which), rng)
        return np.stack([y == 1, y == 0], axis=1)

    return AuditSetup(mech.guarantee, f"value 0 vs value 1 (k={mech.k})", ("y=1", "y=0"), sample)


def _laplace(eps: float, p: dict[str, Any]) -> AuditSetup:
    mech = LaplaceMechanism(eps, 1.0)
    thresholds = (0.5, 1.0, 1.5)

    def sample(n: int, which: int, rng: np.random.Generator) -> np.ndarray:
        y = mech.randomize(np.full(n, float(which)), rng)
        return np.stack([y > t for t in thresholds], axis=1)

    return AuditSetup(mech.guarantee, "0 vs 1 (sensitivity 1)",
                      tuple(f"y>{t:g}" for t in thresholds), sample)


def _discrete_laplace(eps: float, p: dict[str, Any]) -> AuditSetup:
    mech = DiscreteLaplace(eps, 1)

    def sample(n: int, which: int, rng: np.random.Generator) -> np.ndarray:
        y = mech.randomize(np.full(n, which), rng)
        return np.stack([y >= 1, y >= 2], axis=1)

    return AuditSetup(mech.guarantee, "0 vs 1 (sensitivity 1)", ("y>=1", "y>=2"), sample)


def _gaussian(calibration: str) -> Callable[[float, dict[str, Any]], AuditSetup]:
    def build(eps: float, p: dict[str, Any]) -> AuditSetup:
        mech = GaussianMechanism(eps, float(p["delta"]), 1.0, calibration=calibration)
        s = mech.sigma
        # Thresholds around the boundary of the optimal (privacy-loss > eps) event.
        t_star = s * s * eps + 0.5
        thresholds = (0.5 + 0.5 * s, 0.5 + s, t_star - s, t_star)

        def sample(n: int, which: int, rng: np.random.Generator) -> np.ndarray:
            y = mech.randomize(np.full(n, float(which)), rng)
            return np.stack([y > t for t in thresholds], axis=1)

        return AuditSetup(mech.guarantee, f"0 vs 1 (L2 sensitivity 1, sigma={s:.4g})",
                          tuple(f"y>{t:.3g}" for t in thresholds), sample)

    return build


def _gumbel(eps: float, p: dict[str, Any]) -> AuditSetup:
    k, items = int(p["k"]), int(p["items"])
    if items <= k:
        raise ConfigError(f"gumbel-topk audit needs items > k, got items={items}, k={k}")
    mech = GumbelTopK(k, eps, sensitivity=1.0)
    u0 = np.zeros(items)
    u1 = np.where(np.arange(items) < k, 1.0, -1.0)   # every entry moves by the sensitivity
    favoured = np.arange(k)

    def sample(n: int, which: int, rng: np.random.Generator) -> np.ndarray:
        scores = np.broadcast_to(u1 if which else u0, (n, items))
        sel = mech.select(scores, rng)
        exact = np.all(sel == favoured, axis=1)
        as_set = np.all(np.sort(sel, axis=1) == favoured, axis=1)
        first = sel[:, 0] < k
        return np.stack([exact, as_set, first], axis=1)

    return AuditSetup(mech.guarantee,
                      f"scores 0 vs +-1 ({items} items; first {k} up, rest down)",
                      ("ordered output = favoured", "set = favoured", "first in favoured"),
                      sample)


def _feature_pair(mech: MultiBit, d: int) -> tuple[str, Callable[..., np.ndarray]]:
    def sample(n: int, which: int, rng: np.random.Generator) -> np.ndarray:
        x = np.full((n, d), 1.0 if which else 0.0)
        y = mech.randomize(x, rng)
        nz = y != 0
        all_plus = np.all(~nz | (y == 1), axis=1)
        all_minus = np.all(~nz | (y == -1), axis=1)
        return np.stack([all_plus, all_minus], axis=1)

    return f"x = (0,..,0) vs (1,..,1), d={d}, range [0, 1]", sample


def _multibit(eps: float, p: dict[str, Any]) -> AuditSetup:
    d = int(p["d"])
    mech = MultiBit(eps, m=p["m"])
    pair, sample = _feature_pair(mech, d)
    return AuditSetup(mech.guarantee, pair + f", m={mech.resolve_m(d)}",
                      ("all sampled bits +1", "all sampled bits -1"), sample)


def _one_bit(eps: float, p: dict[str, Any]) -> AuditSetup:
    d = int(p["d"])
    mech = OneBit(eps)
    pair, sample = _feature_pair(mech, d)
    return AuditSetup(mech.guarantee, pair, ("all bits +1", "all bits -1"), sample)


def _dprr(eps: float, p: dict[str, Any]) -> AuditSetup:
    n, share = int(p["n"]), float(p["degree_share"])
    if not 0 < share < 1:
        raise ConfigError(f"degree_share must be in (0, 1), got {share}")
    if n < 2:
        raise ConfigError(f"n must be >= 2, got {n}")

    def q(deg: np.ndarray, length: int) -> np.ndarray:
        return np.clip((deg + 1.0) / (length + 1.0), 0.0, 1.0)

    mech = DegreeRRSampling(share * eps, (1.0 - share) * eps, q)
    x0 = np.zeros(n, dtype=bool)
    x1 = x0.copy()
    x1[0] = True

    def sample(size: int, which: int, rng: np.random.Generator) -> np.ndarray:
        y = mech.randomize(np.broadcast_to(x1 if which else x0, (size, n)), rng)
        return np.stack([y[:, 0], y[:, 0] & (y.sum(axis=1) == 1), y.sum(axis=1) >= 2], axis=1)

    return AuditSetup(mech.guarantee,
                      f"empty list vs one edge (n={n}; eps1={share * eps:.3g} degree, "
                      f"eps2={(1 - share) * eps:.3g} RR)",
                      ("y_0=1", "y = e_0", "sum(y)>=2"), sample)


AUDITABLE_MECHANISMS: dict[str, AuditableMechanism] = {
    m.name: m for m in (
        AuditableMechanism("rr", "Warner randomized response on one bit", _rr),
        AuditableMechanism("krr", "k-ary randomized response", _krr, params={"k": 4}),
        AuditableMechanism("laplace", "Laplace mechanism, sensitivity 1", _laplace),
        AuditableMechanism("discrete-laplace", "discrete Laplace (exact sampler), sensitivity 1",
                           _discrete_laplace),
        AuditableMechanism("gaussian", "analytic Gaussian mechanism (Balle & Wang 2018)",
                           _gaussian("analytic"), params={"delta": 1e-5}),
        AuditableMechanism("gaussian-classic", "classic Gaussian mechanism (eps < 1)",
                           _gaussian("classic"), params={"delta": 1e-5}),
        AuditableMechanism("gumbel-topk", "one-shot Gumbel top-k (Durfee & Rogers 2019)",
                           _gumbel, params={"k": 2, "items": 6}),
        AuditableMechanism("one-bit", "1-bit mechanism per dimension (LPGNN's 1BM baseline)",
                           _one_bit, params={"d": 2}),
        AuditableMechanism("multibit", "LPGNN multi-bit encoder (Alg. 1)", _multibit,
                           params={"d": 3, "m": "best"}),
        AuditableMechanism("dprr-style", "noisy degree + RR + degree-based sampling (DPRR)",
                           _dprr, params={"n": 4, "degree_share": 0.5}),
        AuditableMechanism("broken-rr", "DELIBERATELY BROKEN: claims eps, runs 2 eps RR",
                           _broken_rr, shipped=False),
    )
}
