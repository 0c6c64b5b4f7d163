"""Mutation closers (docs/mutation.md): the refusals that keep a charge meaningful (no
zero noise, no zero delta for a Gaussian, no sampling rate outside (0, 1]), the unit a composed
guarantee keeps, the caps that keep a delta below 1, and the exact top-k of Gumbel top-k on an
input where selecting around the wrong pivot returns another set."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgl.central.aggregation import AggregationPerturbation
from dpgl.central.dp_appr import DPAPPRGaussian
from dpgl.errors import ConfigError, DpglError
from dpgl.privacy import Accountant, Guarantee, GumbelTopK, Unit
from dpgl.privacy.composition import best_composition, kov_delta
from dpgl.privacy.gaussian import GaussianMechanism, analytic_gaussian_sigma
from dpgl.privacy.multiterm import multiterm_rdp
from dpgl.privacy.randomizer import compose_parts
from dpgl.rng import make_rng


@pytest.mark.parametrize(("sigma", "clip"), [(0.0, 0.01), (1.0, 0.0), (-1.0, 0.01)])
def test_dp_appr_gm_refuses_zero_noise_or_clip(sigma: float, clip: float) -> None:
    with pytest.raises(ConfigError):
        DPAPPRGaussian(3, sigma, clip=clip)


def test_documented_defaults() -> None:
    assert DPAPPRGaussian(3, 1.0).clip == 0.01          # DPAR's C1 (Sec. 5)
    assert GumbelTopK(2, 1.0).sensitivity == 1.0


@pytest.mark.parametrize(("z", "q"), [(0.0, 0.5), (1.0, 0.0), (1.0, 1.5), (1.0, -0.1)])
def test_multiterm_refuses_meaningless_noise_or_rate(z: float, q: float) -> None:
    with pytest.raises(DpglError):
        multiterm_rdp(z, q, 3)


def test_gaussian_refuses_zero_delta() -> None:
    with pytest.raises(DpglError):
        analytic_gaussian_sigma(1.0, 0.0)
    with pytest.raises(DpglError):
        GaussianMechanism(1.0, 0.0)


@pytest.mark.parametrize("rate", [0.0, -0.5, 1.5])
def test_subsampled_scope_refuses_rate_outside_unit_interval(rate: float) -> None:
    acc = Accountant(delta=1e-5)
    with pytest.raises(DpglError), acc.subsampled("sample", rate):
        pass


@pytest.mark.parametrize("unit", [Unit.NODE_DP, Unit.EDGE_LDP, Unit.FEATURE_LDP,
                                  Unit.LABEL_LDP])
@pytest.mark.parametrize("k", [1, 2, 3, 50])
@pytest.mark.parametrize("slack", [0.0, 1e-6])
def test_best_composition_keeps_the_unit(unit: Unit, k: int, slack: float) -> None:
    """With slack 0 the basic rule ties with the optimal one and is chosen."""
    g, rule = best_composition(Guarantee(0.5, 0.0, unit), k, slack)
    assert g.unit is unit
    if slack == 0.0:
        assert rule == "basic" and g == Guarantee(0.5 * k, 0.0, unit)


def test_gumbel_topk_best_composition_is_node_dp() -> None:
    for k in (1, 2, 5):
        for slack in (0.0, 1e-6):
            assert GumbelTopK(k, 1.0).approx_guarantee(slack, composition="best").unit \
                is Unit.NODE_DP


def test_composed_delta_stays_below_one() -> None:
    parts = {"a": Guarantee(1.0, 0.6, Unit.EDGE_LDP), "b": Guarantee(1.0, 0.6, Unit.EDGE_LDP)}
    g = compose_parts(parts, Unit.EDGE_LDP)
    assert g.epsilon == 2.0
    assert 0.999 < g.delta < 1.0


def test_kov_delta_is_a_probability() -> None:
    for k in (1, 5, 200):
        d = kov_delta(3.0, k, 0.0)
        assert 0.0 <= d <= 1.0
    assert kov_delta(3.0, 200, 0.0) == pytest.approx(1.0, abs=1e-9)


def test_aggregation_guarantee_without_noise_or_hops() -> None:
    """No noise: no privacy of its unit; no hops: nothing released, no statement; otherwise
    the statement is of its own unit at the asked delta."""
    none = AggregationPerturbation(2, None, 5).guarantee_at(1e-5)
    assert none == Guarantee(math.inf, 0.0, Unit.BOUNDED_NODE_DP)
    with pytest.raises(DpglError, match="hops=0"):
        AggregationPerturbation(0, 1.0, 5).guarantee_at(1e-5)
    g = AggregationPerturbation(2, 1.0, 5).guarantee_at(1e-5)
    assert g.unit is Unit.BOUNDED_NODE_DP and g.delta == 1e-5 and 0 < g.epsilon < math.inf


def test_gumbel_topk_returns_the_top_k_set_where_a_wrong_pivot_does_not() -> None:
    """numpy's introselect around pivot k - 2 instead of k - 1 returns another set on this
    input (found by search): the release must be exactly the k largest noisy scores."""
    rng = np.random.default_rng(0)
    n = int(rng.integers(100, 300))
    k = int(rng.integers(2, n))
    scores = rng.permutation(n).astype(float)
    assert (n, k) == (270, 172)
    mech = GumbelTopK(k, 1e6 * k)                        # scale 2e-6: order kept
    got = mech.select(scores, make_rng(0))
    assert set(got.tolist()) == set(np.argsort(-scores)[:k].tolist())
    assert np.array_equal(got, np.argsort(-scores)[:k])
    rows = mech.select(np.stack([scores, scores[::-1]]), make_rng(1))
    assert set(rows[0].tolist()) == set(np.argsort(-scores)[:k].tolist())
    assert set(rows[1].tolist()) == set(np.argsort(-scores[::-1])[:k].tolist())
    assert not math.isnan(mech.scale)
