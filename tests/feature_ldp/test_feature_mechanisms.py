"""Feature and label collection: unbiasedness, report reuse, no mutation, guarantees."""

import math

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from dpgl.errors import ConfigError
from dpgl.mechanisms.features import FeatureRandomizer, FeatureRange
from dpgl.mechanisms.labels import LabelRR
from dpgl.privacy import Unit, multibit_variance
from dpgl.transforms import CollectFeatures, CollectLabels


def _data(n: int = 50, d: int = 8, seed: int = 0) -> Data:
    g = torch.Generator().manual_seed(seed)
    return Data(x=torch.rand(n, d, generator=g), y=torch.randint(0, 3, (n,), generator=g),
                edge_index=torch.tensor([[0, 1], [1, 0]]), num_nodes=n)


@pytest.mark.parametrize("mechanism", ["multibit", "1bit", "gaussian", "laplace"])
def test_rectified_reports_are_unbiased(mechanism: str) -> None:
    d, n, eps = 6, 40000, 2.0
    x = np.tile(np.array([0.0, 0.1, 0.3, 0.5, 0.9, 1.0]), (n, 1))
    rand = FeatureRandomizer(eps, d, mechanism, delta=1e-4)
    est, clipped = rand.privatize(x, np.random.default_rng(1))
    assert clipped == 0
    mean = est.mean(axis=0)
    std = est.std(axis=0) / math.sqrt(n)
    # within 5 standard errors of the truth, and the noise is real (not a copy of x)
    assert np.all(np.abs(mean - x[0]) < 5 * std)
    assert np.all(est.std(axis=0) > 0.1)


def test_multibit_variance_matches_eq5() -> None:
    d, n, eps = 10, 60000, 1.0
    x = np.full((n, d), 0.25)
    rand = FeatureRandomizer(eps, d, "multibit")
    assert rand.m == 1  # m* = max(1, min(d, floor(1 / 2.18)))
    est, _ = rand.privatize(x, np.random.default_rng(2))
    expected = multibit_variance(0.25, eps, 1, d)
    assert est[:, 0].var() == pytest.approx(float(expected), rel=0.05)


def test_guarantees_and_sensitivities() -> None:
    d = 16
    assert FeatureRandomizer(1.0, d, "multibit").guarantee.unit is Unit.FEATURE_LDP
    g = FeatureRandomizer(1.0, d, "gaussian", delta=1e-4)
    assert g.guarantee.delta == 1e-4 and g.guarantee.epsilon == 1.0
    assert g._impl.sensitivity == pytest.approx(4.0)  # sqrt(d) (beta - alpha)
    lap = FeatureRandomizer(0.5, d, "laplace")
    assert lap._impl.scale == pytest.approx(d / 0.5)
    with pytest.raises(ConfigError, match="feature mechanism"):
        FeatureRandomizer(1.0, d, "nope")
    with pytest.raises(ConfigError, match="low < high"):
        FeatureRandomizer(1.0, d, feature_range=FeatureRange(1.0, 0.0))


def test_collect_features_never_mutates_and_reuses_reports() -> None:
    data = _data()
    x_before = data.x.clone()
    t = CollectFeatures(1.0, seed=3)
    out1 = t(data)
    out2 = t(data)
    assert out1 is not data and torch.equal(data.x, x_before)
    assert not torch.equal(out1.x, data.x)
    assert torch.equal(out1.x, out2.x)  # a repeated query returns the same report
    assert out1.edge_index is data.edge_index and torch.equal(out1.y, data.y)
    other = CollectFeatures(1.0, seed=4)(data)
    assert not torch.equal(other.x, out1.x)
    # per user: generated once, then reused even if asked again
    r1 = t.user_report(5, data.x[5].numpy())
    r2 = t.user_report(5, data.x[5].numpy())
    assert np.array_equal(r1, r2) and r1.shape == (8,)
    assert t.guarantee(8).epsilon == 1.0


def test_label_rr_transition_and_reuse() -> None:
    rr = LabelRR(1.0, 4)
    t = rr.transition_matrix()
    assert torch.allclose(t.sum(1), torch.ones(4))
    assert t[0, 0].item() == pytest.approx(math.e / (math.e + 3), rel=1e-6)
    y = torch.zeros(20000, dtype=torch.long)
    noisy = rr.randomize(y, np.random.default_rng(0))
    assert (noisy == 0).float().mean().item() == pytest.approx(t[0, 0].item(), abs=0.015)
    data = _data()
    col = CollectLabels(1.0, 3, seed=0)
    a, b = col(data), col(data)
    assert torch.equal(a.y, b.y) and a is not data
    assert col.guarantee.unit is Unit.LABEL_LDP
    assert col.user_report(1, 2) == col.user_report(1, 2)
