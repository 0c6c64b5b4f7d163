"""The many-run DP-SGD profile audit (dpgl.audit.profile): its canary is worst case (clipped to
C at every step), it certifies nothing above the charged curve for the shipped trainer, catches
a trainer that skips clipping or draws half its noise, and refuses bad arguments."""

from __future__ import annotations

import pytest

from dpgl.audit.profile import run_profile_audit
from dpgl.errors import ConfigError


def test_skipped_clipping_is_caught() -> None:
    res = run_profile_audit(1.0, runs=200, seed=0, broken="no-clip", epochs=1)
    assert not res.passed
    assert res.name == "dpsgd-profile (no-clip)"
    # the claim is the trainer's own charge at delta 1e-5
    assert res.claimed_epsilon == pytest.approx(1.0, abs=1e-3)
    assert any(p["lower_bound"] > p["claimed"] for p in res.profile)


def test_the_canary_is_worst_case_and_halved_noise_shows() -> None:
    # The audit's power rests on the canary's raw gradient reaching the clipping norm at every
    # step (each run is then a Gaussian mechanism with mu = sqrt(T) / z). Certifying halved
    # noise takes ~2000 runs (the slow test below); with 200 runs the score already separates
    # twice as well (mu -> 2 mu: the noise std, the denominator, is halved).
    ok = run_profile_audit(4.0, runs=200, seed=1, epochs=1)
    half = run_profile_audit(4.0, runs=200, seed=1, epochs=1, broken="noise-halved")
    for res in (ok, half):
        assert res.details["canary_clipped_fraction"] == 1.0
        assert res.details["canary_min_raw_norm"] > 2 * res.details["clip"]
        assert res.details["canary_energy_share"] > 0.98     # c^2 / (1 + c^2), c = 10
    assert ok.passed
    assert half.details["separation"] > 1.5 * ok.details["separation"]


@pytest.mark.slow
def test_halved_noise_is_caught() -> None:
    # eps 4 (T = 3 steps): the halved-noise mechanism's true eps(0.1) is ~3.0, its claim 1.31;
    # 2000 runs certify ~1.8 there (750 runs per side, after a search on 250 per side)
    res = run_profile_audit(4.0, runs=2000, seed=0, broken="noise-halved")
    assert not res.passed
    assert res.details["canary_clipped_fraction"] == 1.0
    assert any(p["lower_bound"] > p["claimed"] for p in res.profile if p["delta"] >= 0.01)


@pytest.mark.slow
@pytest.mark.parametrize("eps", [1.0, 4.0])
def test_the_shipped_trainer_stays_below_its_curve(eps: float) -> None:
    res = run_profile_audit(eps, runs=400, seed=3, epochs=1)
    assert res.passed
    claims = [p["claimed"] for p in res.profile]
    assert claims == sorted(claims, reverse=True)      # eps(delta) falls as delta grows
    assert all(p["lower_bound"] <= p["claimed"] for p in res.profile)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"runs": 100}, "runs"),
    ({"runs": True}, "runs"),
    ({"broken": "typo"}, "broken"),
    ({"confidence": 1.0}, "confidence"),
    ({"search_fraction": 1.0}, "search_fraction"),
    ({"clip": 0.0}, "clip"),
    ({"canary_scale": -1.0}, "canary_scale"),
    ({"features": 0}, "features"),
])
def test_bad_input(kwargs: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        run_profile_audit(1.0, **kwargs)
