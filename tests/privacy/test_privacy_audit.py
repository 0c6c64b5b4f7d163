"""The statistical audit engine and the primitive mechanisms: events are searched on one sample
and certified on another; every primitive passes, and its twice-the-claim variant is flagged
(eps 0.5 and 2 here; all four budgets in the slow suite)."""

from __future__ import annotations

import pytest
from scipy import stats

from dpgl.errors import ConfigError, PrivacyError
from dpgl.privacy import AUDITABLE_MECHANISMS, list_auditable, run_audit
from dpgl.privacy.audit import clopper_pearson, epsilon_lower_bound, parse_audit_params

SHIPPED = list_auditable()
VECTORIZED_FAST = 20_000


def test_registry() -> None:
    assert "broken-rr" not in SHIPPED
    assert "broken-rr" in list_auditable(include_broken=True)
    for name in ("warner-rr", "krr", "laplace", "discrete-laplace", "gaussian",
                 "gaussian-classic", "gumbel-topk", "one-bit", "multibit", "dprr-style"):
        assert name in SHIPPED
    assert set(AUDITABLE_MECHANISMS) == set(list_auditable(include_broken=True))


def _trials(name: str) -> int | None:
    """The Gaussian audits need their default (many trials) to see the tails."""
    return None if name.startswith("gaussian") else VECTORIZED_FAST


@pytest.mark.parametrize("name", SHIPPED)
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_shipped_mechanisms_pass_and_twice_the_claim_is_flagged(name: str, eps: float) -> None:
    if name == "gaussian-classic" and eps >= 1:
        pytest.skip("classic Gaussian calibration holds for eps < 1 only")
    res = run_audit(name, eps, trials=_trials(name), seed=1)
    assert res.passed, res.render()
    assert 0.0 <= res.empirical_lower_bound <= eps
    assert res.claimed_epsilon == pytest.approx(eps)
    broken = run_audit(name, eps, trials=_trials(name), seed=1, spend_factor=2.0)
    assert not broken.passed, broken.render()


@pytest.mark.slow
@pytest.mark.parametrize("name", SHIPPED)
@pytest.mark.parametrize("eps", [1.0, 4.0])
def test_shipped_mechanisms_at_more_budgets(name: str, eps: float) -> None:
    if name == "gaussian-classic":
        pytest.skip("classic Gaussian calibration holds for eps < 1 only")
    assert run_audit(name, eps, seed=1).passed
    assert not run_audit(name, eps, seed=1, spend_factor=2.0).passed


@pytest.mark.parametrize("name", ["warner-rr", "krr", "discrete-laplace", "multibit",
                                  "one-bit", "laplace", "gumbel-topk"])
def test_audit_is_nearly_tight_for_tight_mechanisms(name: str) -> None:
    """With searched events the lower bound comes close to the claim: the audit has the power
    to see a violation."""
    res = run_audit(name, 1.0, trials=VECTORIZED_FAST, seed=2)
    assert res.empirical_lower_bound > (0.55 if name == "gumbel-topk" else 0.75)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_broken_mechanism_is_flagged(eps: float) -> None:
    res = run_audit("broken-rr", eps, trials=VECTORIZED_FAST, seed=3)
    assert not res.passed
    assert res.empirical_lower_bound > eps
    assert "FAIL" in res.render() and "FAIL" in str(res)


def test_the_event_is_chosen_before_validation() -> None:
    """The certified bound uses only validation counts; the search bound is reported apart."""
    res = run_audit("laplace", 1.0, trials=5000, seed=4)
    d = res.details
    assert d["search_trials"] + d["validation_trials"] == 5000
    assert d["p0"] == d["counts_x0"] / d["validation_trials"]


def test_deterministic_given_seed() -> None:
    a = run_audit("laplace", 1.0, trials=5000, seed=7)
    b = run_audit("laplace", 1.0, trials=5000, seed=7)
    c = run_audit("laplace", 1.0, trials=5000, seed=8)
    assert a == b
    assert a.details["counts_x0"] != c.details["counts_x0"]


def test_params_are_passed_and_checked() -> None:
    res = run_audit("krr", 1.0, trials=2000, k=7)
    assert res.details["params"]["k"] == 7
    res = run_audit("multibit", 6.0, trials=2000, m=2, d=3)
    assert "m=2" in res.details["pair"]
    with pytest.raises(ConfigError, match="unknown parameter"):
        run_audit("warner-rr", 1.0, trials=2000, k=3)
    with pytest.raises(ConfigError, match="unknown auditable mechanism"):
        run_audit("nope", 1.0)
    with pytest.raises(ConfigError, match="trials"):
        run_audit("warner-rr", 1.0, trials=10)
    with pytest.raises(ConfigError, match="confidence"):
        run_audit("warner-rr", 1.0, trials=1000, confidence=1.0)
    with pytest.raises(ConfigError, match="spend_factor"):
        run_audit("warner-rr", 1.0, trials=1000, spend_factor=0.5)
    with pytest.raises(PrivacyError):
        run_audit("warner-rr", -1.0)
    with pytest.raises(PrivacyError):
        run_audit("gaussian-classic", 2.0, trials=1000)


def test_clopper_pearson_matches_scipy() -> None:
    for k, n in [(0, 100), (5, 100), (50, 100), (100, 100), (1234, 20000)]:
        lo, hi = clopper_pearson(k, n, 0.025)
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
        assert lo == pytest.approx(ci.low, abs=1e-12)
        assert hi == pytest.approx(ci.high, abs=1e-12)


def test_epsilon_lower_bound_formula() -> None:
    import math

    n, alpha = 100_000, 0.01
    lb = epsilon_lower_bound(73_000, 27_000, n, 0.0, alpha)
    lo, _ = clopper_pearson(73_000, n, alpha)
    _, hi = clopper_pearson(27_000, n, alpha)
    assert lb == pytest.approx(math.log(lo / hi))
    assert lb < math.log(73 / 27)
    # delta is subtracted from the larger probability
    assert epsilon_lower_bound(73_000, 27_000, n, 0.1, alpha) < lb
    assert epsilon_lower_bound(10, 20, n, 0.0, alpha) == 0.0


def test_parse_cli_params() -> None:
    assert parse_audit_params("krr", ["k=7"]) == {"k": 7}
    assert parse_audit_params("gaussian", ["delta=1e-6"]) == {"delta": 1e-6}
    assert parse_audit_params("multibit", ["m=2", "d=3"]) == {"m": 2, "d": 3}
    assert parse_audit_params("multibit", ["m=max"]) == {"m": "max"}
    assert parse_audit_params("warner-rr", []) == {}
    with pytest.raises(ConfigError, match="key=value"):
        parse_audit_params("krr", ["k"])
    with pytest.raises(ConfigError, match="unknown parameter"):
        parse_audit_params("krr", ["q=1"])
    with pytest.raises(ConfigError, match="bad value"):
        parse_audit_params("krr", ["k=four"])
    with pytest.raises(ConfigError, match="unknown auditable"):
        parse_audit_params("nope", [])
    res = run_audit("krr", 1.0, trials=1000, **parse_audit_params("krr", ["k=3"]))
    assert res.details["params"] == {"k": 3}
