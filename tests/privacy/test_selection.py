"""Private hyper-parameter selection (Papernot & Steinke 2022; Liu & Talwar 2019): the bounds
against the exact output distribution of the whole selection on small inputs, wrong variants
that the exact computation catches, and the object that draws K and charges.

The base mechanism Q: a candidate j drawn uniformly, then with probability rho_j ("active")
randomized response with eps_j on the input bit x, else a fair coin; Q outputs
(score, j, y, active, noise bit) with a small integer score, totally ordered. The best of K
runs has P[A(x) <= o] = E[F_x(o)^K] = pgf(F_x(o)) (K = 0, Poisson only, releases nothing:
the lowest output), which gives its exact distribution on x = 0 and x = 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy.special import logsumexp

from dpgl.errors import ConfigError, PrivacyError
from dpgl.privacy import (
    Accountant,
    PoissonRepetitions,
    PrivateSelection,
    TruncatedNegativeBinomial,
    Unit,
    pure_rdp,
    selection_rdp,
)
from dpgl.privacy.multiterm import ORDERS, rdp_to_epsilon
from dpgl.privacy.selection import _monotone

Score = Callable[[int, int, int], int]
Candidate = tuple[float, float, Score]   # (eps_j, rho_j, score(y, noise bit, active))

BY_Y: Score = lambda y, b, a: y + 2 * a          # noqa: E731 - the output is the score
BY_NOT_Y: Score = lambda y, b, a: 1 - y + 2 * a  # noqa: E731
NOISY: Score = lambda y, b, a: y + b + 3 * a     # noqa: E731 - a noisy score in {0..4}
LAMBDAS = [int(np.argmin(abs(ORDERS - lam))) for lam in (1.5, 2, 3, 5, 8, 16, 32, 64, 256)]


def base_distribution(x: int, cands: list[Candidate]) -> dict[tuple, float]:
    out: dict[tuple, float] = {}
    for j, (eps, rho, score) in enumerate(cands):
        keep = math.exp(eps) / (1 + math.exp(eps))
        for active, pa in ((1, rho), (0, 1 - rho)):
            for y in (0, 1):
                py = (keep if y == x else 1 - keep) if active else 0.5
                for b in (0, 1):
                    o = (score(y, b, active), j, y, active, b)
                    out[o] = out.get(o, 0.0) + pa * py * 0.5 / len(cands)
    return out


def exact(cands: list[Candidate], reps=None) -> tuple[np.ndarray, np.ndarray]:
    """Q's (reps None) or the selection's exact output distribution on x = 0 and x = 1."""
    d0, d1 = base_distribution(0, cands), base_distribution(1, cands)
    keys = sorted(set(d0) | set(d1))
    q = [np.array([d.get(k, 0.0) for k in keys]) for d in (d0, d1)]
    if reps is None:
        return q[0], q[1]
    out = []
    for qx in q:
        g = np.array([reps.pgf(min(f, 1.0)) for f in np.concatenate([[0.0], np.cumsum(qx)])])
        out.append(np.concatenate([[g[0]], np.diff(g)]))   # nothing released, then outputs
    return out[0], out[1]


def renyi(p: np.ndarray, q: np.ndarray, lam: float) -> float:
    m = p > 0
    return float(logsumexp(lam * np.log(p[m]) + (1 - lam) * np.log(q[m]))) / (lam - 1)


def exact_curve(cands: list[Candidate]) -> np.ndarray:
    """Q's exact RDP curve (both directions), one candidate's."""
    q0, q1 = exact(cands)
    return np.array([max(renyi(q0, q1, lam), renyi(q1, q0, lam)) for lam in ORDERS])


def worst_renyi(a0: np.ndarray, a1: np.ndarray, i: int) -> float:
    return max(renyi(a0, a1, ORDERS[i]), renyi(a1, a0, ORDERS[i]))


def max_log_ratio(a0: np.ndarray, a1: np.ndarray) -> float:
    m = (a0 > 0) | (a1 > 0)
    return float(np.max(np.abs(np.log(a0[m]) - np.log(a1[m]))))


REPETITIONS = [TruncatedNegativeBinomial(1, 0.01), TruncatedNegativeBinomial(1, 0.3),
               TruncatedNegativeBinomial(0, 0.001), TruncatedNegativeBinomial(0.5, 0.05),
               TruncatedNegativeBinomial(2, 0.05), TruncatedNegativeBinomial(-0.5, 1e-6),
               PoissonRepetitions(1), PoissonRepetitions(10), PoissonRepetitions(100)]
CONFIGS = {
    "one RR, score = output": [(1.0, 1.0, BY_Y)],
    "one RR, score = 1 - output": [(2.0, 1.0, BY_NOT_Y)],
    "rarely active RR": [(2.0, 0.001, BY_Y)],
    "two candidates, noisy score": [(0.5, 1.0, NOISY), (3.0, 0.3, NOISY)],
    "three candidates": [(0.3, 1.0, BY_Y), (1.0, 0.1, NOISY), (2.5, 0.5, BY_NOT_Y)],
}


# ------------------------------------------------------------------ distributions of K


@pytest.mark.parametrize("eta", [-0.5, 0.0, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("gamma", [0.05, 0.5])
def test_truncated_negative_binomial_pmf_mean_and_pgf(eta: float, gamma: float) -> None:
    k_dist = TruncatedNegativeBinomial(eta, gamma)
    ks = np.arange(1, 4000)
    pmf = np.array([k_dist.pmf(int(k)) for k in ks])
    assert k_dist.pmf(0) == 0.0
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert (ks * pmf).sum() == pytest.approx(k_dist.mean, rel=1e-10)
    for t in (0.0, 0.3, 0.9, 1.0):
        assert k_dist.pgf(t) == pytest.approx(float((t ** ks * pmf).sum()), abs=1e-12)
    if eta == 0:   # the logarithmic distribution
        assert pmf[:5] == pytest.approx((1 - gamma) ** ks[:5] / (ks[:5] * math.log(1 / gamma)))
    if eta == 1:   # the geometric distribution, E[K] = 1 / gamma
        assert pmf[:5] == pytest.approx(gamma * (1 - gamma) ** (ks[:5] - 1))
        assert k_dist.mean == pytest.approx(1 / gamma)


@pytest.mark.parametrize("eta", [-0.5, 0.0, 1.0, 2.5])
def test_with_mean_solves_for_gamma(eta: float) -> None:
    k_dist = TruncatedNegativeBinomial.with_mean(eta, 10.0)
    assert k_dist.mean == pytest.approx(10.0, rel=1e-9)


def test_poisson_pgf_and_mean() -> None:
    k_dist = PoissonRepetitions(3.0)
    ks = np.arange(0, 200)
    pmf = np.array([k_dist.pmf(int(k)) for k in ks])
    assert pmf.sum() == pytest.approx(1.0)
    assert (ks * pmf).sum() == pytest.approx(3.0)
    assert k_dist.pgf(0.4) == pytest.approx(float((0.4 ** ks * pmf).sum()))


def test_exact_distribution_is_the_mixture_over_k() -> None:
    """The pgf form against the direct mixture over K of the best of K draws."""
    cands = CONFIGS["two candidates, noisy score"]
    reps = TruncatedNegativeBinomial(0.5, 0.2)
    q0, _ = exact(cands)
    a0, _ = exact(cands, reps)
    cdf = np.cumsum(q0)
    direct = sum(reps.pmf(k) * np.diff(np.concatenate([[0.0], cdf ** k])) for k in range(1, 400))
    assert a0[0] == 0.0 and a0.sum() == pytest.approx(1.0)
    assert a0[1:] == pytest.approx(direct, abs=1e-12)


# ------------------------------------------------------------------ exact bounds


@pytest.mark.parametrize("reps", REPETITIONS, ids=str)
@pytest.mark.parametrize("config", list(CONFIGS))
def test_exact_renyi_divergence_is_within_the_bound(config: str, reps) -> None:
    """PS22 Thm 2 (truncated negative binomial) and Thm 6 (Poisson): the selection's exact
    Renyi divergence, both directions, at orders 1.5 .. 256, is at most the curve charged."""
    cands = CONFIGS[config]
    curves = [exact_curve([c]) for c in cands]
    claim = selection_rdp(reps, curves)
    a0, a1 = exact(cands, reps)
    assert a0.sum() == pytest.approx(1.0) and a1.sum() == pytest.approx(1.0)
    for i in LAMBDAS:
        assert worst_renyi(a0, a1, i) <= claim[i] + 1e-9, ORDERS[i]


@pytest.mark.parametrize("eta", [-0.5, 0.0, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("gamma", [0.5, 0.01, 1e-4])
@pytest.mark.parametrize("config", ["one RR, score = output", "two candidates, noisy score",
                                    "three candidates"])
def test_exact_pure_bound(config: str, eta: float, gamma: float) -> None:
    """PS22 Cor. 3: an eps-DP base gives a (2 + eta) eps-DP selection (geometric K: the 3 eps
    of Liu & Talwar 2019, Thm 3.4); eps = the largest candidate's."""
    cands = CONFIGS[config]
    eps = max(c[0] for c in cands)
    reps = TruncatedNegativeBinomial(eta, gamma)
    sel = PrivateSelection(reps, len(cands), base_epsilon=eps, unit=Unit.NODE_DP)
    assert sel.guarantee is not None
    assert sel.guarantee.epsilon == pytest.approx((2 + eta) * eps)
    a0, a1 = exact(cands, reps)
    assert max_log_ratio(a0, a1) <= sel.guarantee.epsilon + 1e-9


def test_pure_rdp_bounds_randomized_response() -> None:
    for eps in (0.1, 1.0, 4.0):
        exact_rr = exact_curve([(eps, 1.0, BY_Y)])
        assert np.all(exact_rr <= pure_rdp(eps) + 1e-12)
        assert exact_rr[-1] > 0.9 * min(eps, ORDERS[-1] * eps**2 / 2)  # the bound is not slack


@pytest.mark.parametrize("shape, mean", [(0.0, 5.0), (1.0, 5.0), (0.5, 10.0), (2.0, 3.0),
                                         (math.inf, 1.0), (math.inf, 5.0), (math.inf, 30.0)])
def test_agrees_with_dp_accounting_repeat_and_select(shape: float, mean: float) -> None:
    """An independent implementation of PS22 Thm 2 / Thm 6 (dp-accounting's
    RepeatAndSelectDpEvent) gives the same curve on a DP-SGD base (made nondecreasing in the
    order, as ours is; dp-accounting does that for the negative binomial only)."""
    import dp_accounting
    from dp_accounting import dp_event, rdp

    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(0.02, dp_accounting.GaussianDpEvent(1.0)), 600)
    base_acc = rdp.RdpAccountant(orders=list(ORDERS))
    base_acc.compose(event)
    theirs = rdp.RdpAccountant(orders=list(ORDERS))
    theirs.compose(dp_event.RepeatAndSelectDpEvent(event, mean, shape))
    reps = (PoissonRepetitions(mean) if math.isinf(shape)
            else TruncatedNegativeBinomial.with_mean(shape, mean))
    ours = selection_rdp(reps, np.asarray(base_acc._rdp))
    assert ours == pytest.approx(_monotone(np.asarray(theirs._rdp)), rel=1e-9)


# ------------------------------------------------------------------ wrong variants are caught


def test_charging_only_the_base_mechanism_is_violated() -> None:
    """Releasing the best of K runs costs more than one run: the base curve alone (and the
    base epsilon alone) is exceeded by the exact selection."""
    cands = CONFIGS["one RR, score = output"]
    reps = TruncatedNegativeBinomial(1, 0.01)   # geometric, E[K] = 100
    base = exact_curve(cands)
    a0, a1 = exact(cands, reps)
    assert any(worst_renyi(a0, a1, i) > base[i] + 0.1 for i in LAMBDAS)
    assert max_log_ratio(a0, a1) > 1.9 * cands[0][0]          # ~2 eps > eps


def test_dropping_the_log_mean_term_is_violated() -> None:
    """Thm 2 without log(E[K]) / (lambda - 1): a rarely active RR (subsampled) chosen among
    ~500 runs (eta = -0.5) exceeds it; the full bound holds."""
    cands = CONFIGS["rarely active RR"]
    reps = TruncatedNegativeBinomial(-0.5, 1e-6)
    base = exact_curve(cands)
    aux = (1 + reps.eta) * np.min((1 - 1 / ORDERS) * base + math.log(1 / reps.gamma) / ORDERS)
    no_log = _monotone(base + aux)
    full = selection_rdp(reps, base)
    a0, a1 = exact(cands, reps)
    gaps = [worst_renyi(a0, a1, i) - no_log[i] for i in LAMBDAS]
    assert max(gaps) > 0.1
    assert all(worst_renyi(a0, a1, i) <= full[i] for i in LAMBDAS)


def test_poisson_bound_fails_below_mean_one() -> None:
    """Why PoissonRepetitions needs mu >= 1: Thm 6's formula at mu = 0.5 (log(mu) < 0) is
    exceeded by the exact selection near lambda = 1."""
    from dp_accounting.rdp.rdp_privacy_accountant import compute_delta

    cands = CONFIGS["one RR, score = output"]
    base = exact_curve(cands)
    mu = 0.5
    formula = np.array([base[i] + mu * compute_delta(ORDERS, base, math.log1p(1 / (lam - 1)))[0]
                        + math.log(mu) / (lam - 1) for i, lam in enumerate(ORDERS)])
    k_dist = PoissonRepetitions.__new__(PoissonRepetitions)
    object.__setattr__(k_dist, "mu", mu)          # bypass the constructor's refusal
    a0, a1 = exact(cands, k_dist)
    assert any(worst_renyi(a0, a1, i) > max(formula[i], 0.0) + 0.1 for i in LAMBDAS)
    with pytest.raises(PrivacyError, match=">= 1"):
        PoissonRepetitions(mu)


def test_the_maximum_over_candidates_is_needed() -> None:
    """The curve of the candidate that happens to be drawn is not enough: charging the
    cheaper candidate's curve for a two-candidate selection is violated."""
    cands = [(0.2, 1.0, BY_Y), (3.0, 1.0, BY_Y)]
    reps = TruncatedNegativeBinomial(1, 0.2)
    cheap = selection_rdp(reps, exact_curve([cands[0]]))
    a0, a1 = exact(cands, reps)
    assert any(worst_renyi(a0, a1, i) > cheap[i] for i in LAMBDAS)


# ------------------------------------------------------------------ the object


def test_draw_charges_once_with_the_curve_it_used() -> None:
    base = pure_rdp(1.0) * 2
    reps = TruncatedNegativeBinomial(1, 0.2)
    sel = PrivateSelection(reps, 4, base_curve=base, unit=Unit.NODE_DP)
    acc = Accountant(delta=1e-5)
    with acc.active():
        runs = sel.draw(np.random.default_rng(0))
    assert len(acc) == 1 and runs.size >= 1 and set(runs) <= {0, 1, 2, 3}
    part = acc._parts[0]
    assert part.entry.name == "hyper-parameter selection" and part.entry.unit is Unit.NODE_DP
    assert np.array_equal(part.curve, selection_rdp(reps, base))
    assert acc.report().total(Unit.NODE_DP).epsilon == pytest.approx(sel.epsilon(1e-5))
    assert sel.epsilon(1e-5) > rdp_to_epsilon(base, 1e-5)    # the selection costs more
    assert np.all(sel.curve >= base)


def test_pure_selection_charges_its_pure_guarantee() -> None:
    sel = PrivateSelection(TruncatedNegativeBinomial(1, 0.1), 2, base_epsilon=0.5,
                           unit="node-DP")
    acc = Accountant()
    with acc.active():
        sel.draw(np.random.default_rng(1))
    assert len(acc) == 1
    assert acc.report().total(Unit.NODE_DP).epsilon == pytest.approx(1.5)   # 3 eps


def test_no_active_accountant_no_charge_and_per_candidate_curves() -> None:
    curves = [pure_rdp(0.5), pure_rdp(2.0)]
    sel = PrivateSelection(PoissonRepetitions(3), 2, base_curve=curves, unit=Unit.NODE_DP)
    assert np.array_equal(sel.curve, selection_rdp(PoissonRepetitions(3), pure_rdp(2.0)))
    assert sel.draw(np.random.default_rng(0)).dtype.kind == "i"   # no accountant: no error


@pytest.mark.parametrize("reps", [TruncatedNegativeBinomial(1, 0.25),
                                  TruncatedNegativeBinomial(0, 0.1),
                                  TruncatedNegativeBinomial(-0.5, 0.01),
                                  PoissonRepetitions(4.0)], ids=str)
def test_empirical_mean_of_k(reps) -> None:
    rng = np.random.default_rng(7)
    ks = np.array([reps.sample(rng) for _ in range(20000)])
    se = ks.std() / math.sqrt(ks.size)
    assert abs(ks.mean() - reps.mean) < 4 * se
    assert ks.min() >= (0 if isinstance(reps, PoissonRepetitions) else 1)


def test_same_seed_same_draws() -> None:
    sel = PrivateSelection(TruncatedNegativeBinomial(1, 0.1), 5, base_epsilon=1.0,
                           unit=Unit.NODE_DP)
    a = [sel.draw(np.random.default_rng(3)) for _ in range(2)]
    assert np.array_equal(a[0], a[1])
    others = [sel.draw(np.random.default_rng(s)) for s in range(4, 12)]
    assert any(not np.array_equal(a[0], o) for o in others)


def test_run_selects_the_best_and_refuses_a_run_over_its_curve() -> None:
    from dpgl.privacy import current_accountant

    declared = pure_rdp(1.0)
    sel = PrivateSelection(TruncatedNegativeBinomial(1, 0.3), 3, base_curve=declared,
                           unit=Unit.NODE_DP)

    def honest(j: int, rng: np.random.Generator) -> tuple[float, str]:
        current_accountant().spend_rdp("run", pure_rdp(1.0), unit=Unit.NODE_DP)
        return float(j), f"model {j}"

    acc = Accountant(delta=1e-5)
    with acc.active():
        j, out = sel.run(honest, np.random.default_rng(5))
    assert out == f"model {j}" and len(acc) == 1      # the runs' own charges are replaced

    def greedy(j: int, rng: np.random.Generator) -> tuple[float, str]:
        current_accountant().spend_rdp("run", pure_rdp(2.0), unit=Unit.NODE_DP)
        return 0.0, ""

    with pytest.raises(PrivacyError, match="more than its declared"):
        sel.run(greedy, np.random.default_rng(5))


def test_repr_shows_the_arguments() -> None:
    sel = PrivateSelection(TruncatedNegativeBinomial(1, 0.5), 2, base_epsilon=1.0,
                           unit=Unit.NODE_DP)
    assert repr(sel) == ("PrivateSelection(repetitions=TruncatedNegativeBinomial(eta=1.0, "
                         "gamma=0.5), candidates=2, base_epsilon=1, unit='node-DP')")
    assert str(sel.repetitions) == "geometric (eta=1, gamma=0.5, E[K]=2)"


@pytest.mark.parametrize("make, match", [
    (lambda: TruncatedNegativeBinomial(-1, 0.5), "eta must be"),
    (lambda: TruncatedNegativeBinomial(1, 1.0), "gamma must be in"),
    (lambda: TruncatedNegativeBinomial.with_mean(1, 0.5), "mean number of runs"),
    (lambda: PoissonRepetitions(0.5), "mu must be a finite number >= 1"),
    (lambda: PrivateSelection(PoissonRepetitions(1), 0, base_epsilon=1, unit="node-DP"),
     "candidates must be"),
    (lambda: PrivateSelection(PoissonRepetitions(1), 2, unit="node-DP"), "exactly one"),
    (lambda: PrivateSelection(PoissonRepetitions(1), 2, base_curve=np.ones(3),
                              unit="node-DP"), "must hold"),
    (lambda: PrivateSelection(PoissonRepetitions(1), 2, base_curve=[pure_rdp(1)] * 3,
                              unit="node-DP"), "3 curves for 2"),
    (lambda: PrivateSelection(3, 2, base_epsilon=1, unit="node-DP"), "repetitions must"),
    (lambda: PrivateSelection(PoissonRepetitions(1), 2, base_epsilon=1, unit="none"),
     "protects some unit"),
    (lambda: PrivateSelection.best([1.0, float("nan")]), "NaN"),
])
def test_bad_input_is_one_line(make, match: str) -> None:
    with pytest.raises((ConfigError, PrivacyError), match=match) as err:
        make()
    assert "\n" not in str(err.value)
