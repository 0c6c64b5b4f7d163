"""The device path's output law (issue #14): what :meth:`Round.device_report` sends follows
the randomizer's exact law at the charged epsilon, and the test tells it apart from a device
running at twice the budget (power shown)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgl.collection import PrivateData, Round, parse_round_spec, user_rng

TRIALS = 4000


def _label_keep_rate(eps: float, k: int = 4) -> float:
    rnd = Round(parse_round_spec({"round_id": "l", "population": {"size": 2},
                                  "labels": {"epsilon": eps, "classes": k}}))
    kept = sum(rnd.device_report(PrivateData(label=2), 0, user_rng(t, 0))["labels"]["label"]
               == 2 for t in range(TRIALS))
    return kept / TRIALS


def _feature_plus_rate(eps: float, x: float, d: int = 4) -> float:
    """P(sign = +1 | dimension sampled) for a vector of value ``x`` in [0, 1]."""
    rnd = Round(parse_round_spec({"round_id": "f", "population": {"size": 2},
                                  "features": {"epsilon": eps, "dim": d, "m": 1}}))
    plus = 0
    for t in range(TRIALS):
        rep = rnd.device_report(PrivateData(features=np.full(d, x)), 0, user_rng(t, 0))
        assert len(rep["features"]["indices"]) == 1
        plus += rep["features"]["signs"][0] == 1
    return plus / TRIALS


def _within(rate: float, p: float) -> bool:
    return abs(rate - p) <= 4 * math.sqrt(p * (1 - p) / TRIALS)


@pytest.mark.parametrize("eps", [0.5, 1.0])
def test_label_reports_follow_k_rr(eps: float) -> None:
    k = 4
    keep = math.exp(eps) / (math.exp(eps) + k - 1)
    rate = _label_keep_rate(eps, k)
    assert _within(rate, keep)
    twice = math.exp(2 * eps) / (math.exp(2 * eps) + k - 1)
    assert not _within(rate, twice)          # a 2x-over-budget device would be caught


@pytest.mark.parametrize("eps", [0.5, 1.0])
def test_feature_signs_follow_the_multibit_encoder(eps: float) -> None:
    """LPGNN Alg. 1 with m = 1: P(+1) = 1/(e^eps + 1) + x (e^eps - 1)/(e^eps + 1)."""
    x = 1.0
    p = 1 / (math.exp(eps) + 1) + x * (math.exp(eps) - 1) / (math.exp(eps) + 1)
    rate = _feature_plus_rate(eps, x)
    assert _within(rate, p)
    p2 = 1 / (math.exp(2 * eps) + 1) + x * (math.exp(2 * eps) - 1) / (math.exp(2 * eps) + 1)
    assert not _within(rate, p2)
