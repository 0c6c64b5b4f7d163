"""The one-run bound (Steinke, Nasr & Jagielski 2023): reference values, monotonicity,
validity on a mechanism that attains its claim, guessing rules and bad input."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpgl.audit.one_run import (
    EPS_CAP,
    best_guess_bound,
    epsilon_lower_bound,
    make_guesses,
    p_value,
    raw_tail_bound,
)
from dpgl.errors import ConfigError


@pytest.mark.parametrize(("m", "r", "delta", "expected"), [
    (1000, 100, 0.0, 3.49), (1000, 100, 1e-5, 3.47),
    (1000, 1000, 0.0, 5.81), (1000, 1000, 1e-5, 5.78),
    (5000, 5000, 0.0, 7.42), (5000, 5000, 1e-5, 7.28),
])
def test_reference_values_all_guesses_correct(m: int, r: int, delta: float,
                                              expected: float) -> None:
    assert epsilon_lower_bound(m, r, r, delta, 0.95) == pytest.approx(expected, abs=0.01)


def test_pure_dp_closed_form() -> None:
    # delta = 0 and all r correct: p = q^r, so the bound solves q^r = beta exactly
    r, beta = 50, 0.05
    q = beta ** (1 / r)
    assert epsilon_lower_bound(500, r, r, 0.0, 1 - beta) == pytest.approx(
        math.log(q / (1 - q)), abs=1e-5)
    assert p_value(500, r, r, 0.0, 0.0) == pytest.approx(0.5 ** r)


def test_p_value_is_monotone() -> None:
    m, r = 1000, 200
    for delta in (0.0, 1e-5, 1e-3):
        for v in (110, 150, 190):
            ps = [p_value(m, r, v, e, delta) for e in np.linspace(0, 6, 25)]
            assert all(b >= a - 1e-15 for a, b in itertools.pairwise(ps))
        pv = [p_value(m, r, v, 1.0, delta) for v in range(0, r + 1, 10)]
        assert all(b <= a + 1e-15 for a, b in itertools.pairwise(pv))
    # and the delta term only adds
    assert p_value(m, r, 160, 1.0, 1e-3) >= p_value(m, r, 160, 1.0, 0.0)
    assert raw_tail_bound(m, r, 160, 1.0, 1e-3) >= p_value(m, r, 160, 1.0, 1e-3)


def test_lower_bound_moves_the_right_way() -> None:
    lbs = [epsilon_lower_bound(1000, 200, v, 1e-5) for v in (100, 130, 160, 190, 200)]
    assert lbs[0] == 0.0
    assert all(b > a for a, b in itertools.pairwise(lbs[1:]))
    assert epsilon_lower_bound(1000, 200, 180, 1e-3) < epsilon_lower_bound(1000, 200, 180, 0)
    assert epsilon_lower_bound(1000, 200, 180, 0, 0.99) < epsilon_lower_bound(1000, 200, 180, 0)
    assert epsilon_lower_bound(1000, 0, 0, 0.0) == 0.0


def test_rejects_exactly_the_claims_below_the_bound() -> None:
    m, r, v, delta = 1000, 300, 250, 1e-5
    lb = epsilon_lower_bound(m, r, v, delta)
    assert 0 < lb < EPS_CAP
    assert p_value(m, r, v, lb - 1e-3, delta) <= 0.05
    assert p_value(m, r, v, lb + 1e-3, delta) > 0.05


def test_bound_is_valid_for_a_mechanism_attaining_its_claim() -> None:
    """eps-randomized response on every canary: each guess is right with probability
    exactly e^eps / (1 + e^eps), the worst case the bound allows; the lower bound exceeds eps
    in at most about 5% of runs (would fail for an invalid, too-optimistic bound)."""
    rng = np.random.default_rng(0)
    eps, m, trials = 1.0, 100, 100
    q = math.exp(eps) / (1 + math.exp(eps))
    over = sum(epsilon_lower_bound(m, m, int(rng.binomial(m, q)), 0.0) > eps
               for _ in range(trials))
    assert over <= 12  # Binomial(100, 0.05) exceeds 12 with probability < 0.001


def test_make_guesses() -> None:
    s = np.array([0.3, -2.0, 5.0, 1.0, -1.0, 0.0])
    g = make_guesses(s, 2, 1)
    assert g.guesses.tolist() == [0, -1, 1, 1, 0, 0]
    assert g.r == 3
    assert make_guesses(s, 0, 0).r == 0
    assert make_guesses(s, 3, 3).r == 6


def test_best_guess_bound_bonferroni() -> None:
    rng = np.random.default_rng(1)
    m = 400
    truth = rng.choice([-1, 1], size=m)
    scores = truth * 3.0 + rng.normal(size=m)
    one = best_guess_bound(scores, truth, [(50, 50)], 1e-5)
    g = make_guesses(scores, 50, 50)
    v = int(((g.guesses == truth) & (g.guesses != 0)).sum())
    assert one.epsilon_lower_bound == epsilon_lower_bound(m, 100, v, 1e-5, 0.95)
    many = best_guess_bound(scores, truth, [(10, 10), (50, 50), (100, 100)], 1e-5)
    assert many.confidence_per_rule == pytest.approx(1 - 0.05 / 3)
    assert len(many.per_rule) == 3
    assert many.epsilon_lower_bound == max(x["epsilon_lower_bound"] for x in many.per_rule)
    # the same rule at the corrected confidence is weaker than alone
    same = next(x for x in many.per_rule if x["k_plus"] == 50)
    assert same["epsilon_lower_bound"] < one.epsilon_lower_bound


@pytest.mark.parametrize(("call", "match"), [
    (lambda: epsilon_lower_bound(0, 0, 0, 0.0), "m >= 1"),
    (lambda: epsilon_lower_bound(10, 11, 5, 0.0), "r <= m"),
    (lambda: epsilon_lower_bound(10, 5, 6, 0.0), "v <= r"),
    (lambda: epsilon_lower_bound(10, 5, -1, 0.0), "v <= r"),
    (lambda: epsilon_lower_bound(10.5, 5, 5, 0.0), "integer"),
    (lambda: epsilon_lower_bound(10, 5, 5, -1e-5), "delta"),
    (lambda: epsilon_lower_bound(10, 5, 5, 1.0), "delta"),
    (lambda: epsilon_lower_bound(10, 5, 5, 0.0, 1.0), "confidence"),
    (lambda: epsilon_lower_bound(10, 5, 5, 0.0, "high"), "confidence"),
    (lambda: p_value(10, 5, 5, -1.0, 0.0), "epsilon"),
    (lambda: p_value(10, 5, 5, float("nan"), 0.0), "epsilon"),
    (lambda: make_guesses(np.zeros(3), 2, 2), "exceeds"),
    (lambda: make_guesses(np.zeros(3), -1, 0), "k_plus"),
    (lambda: make_guesses(np.array([0.0, np.nan]), 1, 0), "NaN"),
    (lambda: best_guess_bound(np.zeros(3), np.array([1, 0, -1]), [(1, 1)], 0.0), "truth"),
    (lambda: best_guess_bound(np.zeros(3), np.array([1, 1, -1]), [], 0.0), "rule"),
])
def test_bad_input_is_a_one_line_config_error(call, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as err:
        call()
    assert "\n" not in str(err.value)
