"""End-to-end audits of every shipped randomizer, through the code path the methods run: each
passes at its charged epsilon, and the variant that draws with twice its claim is flagged
(fast at eps = 1; eps = 0.5, 2 and 4 in the slow suite)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from dpgl.audit.local import LOCAL_AUDITS, claim_of
from dpgl.audit.registry import list_audits, run_named_audit
from dpgl.datasets.transforms import NormalizeFeatures01
from dpgl.errors import ConfigError
from dpgl.mechanisms.features import FeatureRange
from dpgl.privacy import Unit
from dpgl.privacy.audit import AuditSetup, audit_setup, run_audit
from dpgl.transforms import CollectFeatures

SHIPPED = [n for n, a in LOCAL_AUDITS.items() if a.shipped]


def _trials(name: str, fast: bool) -> int | None:
    """Per-trial code paths (one population per call) run fewer trials in the fast suite."""
    spec = LOCAL_AUDITS[name]
    return 3000 if fast and spec.trials == 8000 else None


def test_every_shipped_randomizer_is_listed_end_to_end() -> None:
    names = {a.name for a in list_audits() if a.kind == "randomizer"}
    for n in ("rr", "symrr", "dprr", "dprr-graph", "blink", "locallap", "ldpgcn", "ldpgen",
              "lpgnn-features", "solitude-features", "label-krr", "dp-appr-em", "dp-appr-gm",
              "aggregation"):
        assert n in names


@pytest.mark.parametrize("name", SHIPPED)
def test_randomizer_passes_and_twice_the_claim_is_flagged(name: str) -> None:
    ok = run_audit(name, 1.0, trials=_trials(name, True), seed=1, registry=LOCAL_AUDITS)
    assert ok.passed, ok.render()
    assert ok.claimed_epsilon <= 1.0 + 1e-9
    broken = run_audit(name, 1.0, trials=_trials(name, True), seed=1, spend_factor=2.0,
                       registry=LOCAL_AUDITS)
    assert not broken.passed, broken.render()
    assert broken.empirical_lower_bound > ok.claimed_epsilon


@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.5, 2.0, 4.0])
@pytest.mark.parametrize("name", SHIPPED)
def test_randomizer_audits_at_other_budgets(name: str, eps: float) -> None:
    ok = run_audit(name, eps, seed=1, registry=LOCAL_AUDITS)
    assert ok.passed, ok.render()
    broken = run_audit(name, eps, seed=1, spend_factor=2.0, registry=LOCAL_AUDITS)
    assert not broken.passed, broken.render()


def test_the_claim_is_what_the_code_path_charges() -> None:
    """Blink's claim is the composition of what its two parts charged: eps_a (RR) + eps_d
    (discrete Laplace, rate rounded down) <= eps; LDPGen's two phases add up."""
    blink = audit_setup("blink", 2.0, registry=LOCAL_AUDITS, degree_share=0.3)
    assert blink.claimed.unit is Unit.EDGE_LDP
    assert 2.0 - 1e-6 <= blink.claimed.epsilon <= 2.0 + 1e-12
    gm = audit_setup("dp-appr-gm", 1.0, registry=LOCAL_AUDITS)
    assert gm.claimed.delta > 0 and gm.claimed.epsilon <= 1.0 + 1e-9
    with pytest.raises(ConfigError, match="charged nothing"):
        claim_of(lambda: None, Unit.EDGE_LDP)


def test_cli_named_audit_and_spend_twice() -> None:
    res = run_named_audit("label-krr", 1.0, trials=2000, seed=0)
    assert res.passed
    assert not run_named_audit("label-krr", 1.0, trials=2000, seed=0, spend_twice=True).passed
    with pytest.raises(ConfigError, match="unknown audit"):
        run_named_audit("nope", 1.0)


def _legacy_global_minmax(eps: float, p: dict, f: float) -> AuditSetup:
    """The feature pipeline before the fix: min-max over *all* users, then each user's
    multi-bit report over [0, 1] (finding 1 of issue #11). User 0 moves from 0 to 100."""
    def run(e: float, which: int, rng: np.random.Generator) -> np.ndarray:
        x = np.tile(np.array([[0.2, 0.8, 0.5, 0.4]]), (6, 1))
        x[1:] += np.linspace(-0.15, 0.15, 5)[:, None]
        x[0] = 100.0 if which else 0.0
        data = NormalizeFeatures01()(Data(x=torch.tensor(x, dtype=torch.float32)))
        out = CollectFeatures(e, feature_range=FeatureRange(0, 1), seed=rng)(data).x.numpy()
        return np.r_[out[0], out[1:].sum(axis=0), out[1:].sum()]

    def sample(n: int, which: int, rng: np.random.Generator) -> np.ndarray:
        return np.stack([run(eps, which, rng) for _ in range(n)])

    claim = claim_of(lambda: run(eps, 1, np.random.default_rng(0)), Unit.FEATURE_LDP)
    return AuditSetup(claim, "legacy", tuple(f"f{i}" for i in range(9)), sample,
                      outcome_groups=((0, 1, 2, 3),))


def test_the_audit_sees_a_leak_through_other_users_reports() -> None:
    """Power against finding 1: with global min-max normalization, user 0's outlier changes
    every other user's input, so the *others'* reports leak about her; the end-to-end feature
    audit, whose features include the other users' reports, flags it at eps = 1, while the
    shipped collection (public range, each user clips herself) passes on the same pair."""
    from dpgl.privacy.audit import AuditableMechanism

    reg = {"legacy": AuditableMechanism("legacy", "legacy", _legacy_global_minmax,
                                        shipped=False)}
    legacy = run_audit("legacy", 1.0, trials=3000, seed=2, registry=reg)
    assert not legacy.passed and legacy.empirical_lower_bound > 1.5, legacy.render()
    fixed = run_audit("lpgnn-features", 1.0, trials=3000, seed=2, registry=LOCAL_AUDITS)
    assert fixed.passed
