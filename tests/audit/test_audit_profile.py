"""The many-run DP-SGD profile audit (dpgl.audit.profile): it certifies nothing above the
charged curve for the shipped trainer, catches a trainer that skips clipping, and refuses bad
arguments."""

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
])
def test_bad_input(kwargs: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        run_profile_audit(1.0, **kwargs)
