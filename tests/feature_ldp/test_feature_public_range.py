"""Finding 1 of issue #11: nothing computed from other users' data reaches a user's feature
randomizer. The exact privacy loss of *all* users' reports about one user's change stays
within eps through the collection path LPGNN and Solitude run; the old pipeline (min-max over
all users, then the encoder) is shown to break it on the same pair."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from dpgl.datasets import load_dataset
from dpgl.datasets.transforms import NormalizeFeatures01
from dpgl.errors import ConfigError
from dpgl.experiments.config import RunConfig
from dpgl.experiments.execute import execute_run, validate_config
from dpgl.mechanisms.features import FeatureRange, public_feature_range
from dpgl.privacy import MultiBit
from dpgl.transforms import CollectFeatures

EPS = 1.0
D = 3


def _users(outlier: float) -> np.ndarray:
    """2,000 users, 3 continuous features in [0, 1]; user 0 holds ``outlier``."""
    rng = np.random.default_rng(0)
    x = rng.random((2000, D)) * 0.8 + 0.1
    x[0] = outlier
    return x


def _max_loss(inputs_a: np.ndarray, inputs_b: np.ndarray, mech: MultiBit) -> float:
    """Exact max over all outputs of |log P(reports | a) - log P(reports | b)| for independent
    per-user reports: the sum over users of each user's own exact maximum (every output of
    the multi-bit encoder enumerated)."""
    m = mech.resolve_m(D)
    outputs = []
    for dims in itertools.combinations(range(D), m):
        for signs in itertools.product((-1, 1), repeat=m):
            y = np.zeros(D, dtype=np.int8)
            y[list(dims)] = signs
            outputs.append(y)
    ys = np.stack(outputs)
    total = 0.0
    changed = np.flatnonzero(np.any(inputs_a != inputs_b, axis=1))
    for u in changed:
        la = mech.log_prob(ys, np.tile(inputs_a[u], (len(ys), 1)))
        lb = mech.log_prob(ys, np.tile(inputs_b[u], (len(ys), 1)))
        total += float(np.max(np.abs(la - lb)))
    return total


def _collector_inputs(x: np.ndarray) -> np.ndarray:
    """What every user's encoder receives in the shipped collection (the public range)."""
    col = CollectFeatures(EPS, feature_range=FeatureRange(0.0, 1.0), seed=0)
    return col.randomizer_for(D).client_inputs(x)[0]


def test_a_users_change_costs_at_most_eps_over_all_reports() -> None:
    a, b = _collector_inputs(_users(0.0)), _collector_inputs(_users(100.0))
    assert np.array_equal(a[1:], b[1:])            # no other user's input moves
    loss = _max_loss(a, b, MultiBit(EPS))
    assert loss <= EPS + 1e-9
    assert loss == pytest.approx(EPS, abs=1e-9)    # tight: the corners of the range


def test_the_old_global_min_max_pipeline_breaks_the_claim() -> None:
    """Negative control (the code before the fix): normalization over all users moves every
    other user's input when user 0 moves, and the loss of all reports is far above eps."""
    def old_inputs(x: np.ndarray) -> np.ndarray:
        data = NormalizeFeatures01()(Data(x=torch.tensor(x, dtype=torch.float32)))
        return data.x.double().numpy()

    a, b = old_inputs(_users(0.0)), old_inputs(_users(100.0))
    assert np.count_nonzero(np.any(a[1:] != b[1:], axis=1)) > 1000
    assert _max_loss(a, b, MultiBit(EPS)) > 20 * EPS


def test_continuous_features_need_a_public_range() -> None:
    """csbm declares its range from the generator; a dataset without one (keyword counts)
    is refused, and so is min-max normalization over all users for feature-LDP methods."""
    csbm = load_dataset("csbm", num_nodes=200)
    fr = public_feature_range(csbm)
    assert fr.low < 0 < fr.high and "generator" in fr.source
    with pytest.raises(ConfigError, match="no public feature range"):
        public_feature_range(Data(x=torch.zeros(3, 2)))
    declared = public_feature_range(Data(x=torch.zeros(3, 2)), -1.0, 2.0)
    assert (declared.low, declared.high) == (-1.0, 2.0)
    for method in ("lpgnn", "solitude"):
        with pytest.raises(ConfigError, match="normalize_features"):
            validate_config(RunConfig(dataset="csbm", method=method, epsilon=1.0,
                                      params={"normalize_features": True}))


def test_users_clip_themselves_and_the_count_is_a_diagnostic() -> None:
    r = execute_run(RunConfig(dataset="csbm", method="lpgnn", epsilon=1.0, seed=0,
                              params={"epochs": 2, "feature_steps": 1}))
    assert r.diagnostics["feature_values_clipped"] > 0         # Gaussian tails beyond 3 sd
    assert "feature_values_clipped" not in r.info
    assert "generator" in r.info["feature_range"]
    assert math.isclose(r.privacy["totals"]["feature-LDP"]["epsilon"], 1.0)
