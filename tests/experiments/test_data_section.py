"""Issue #12, finding 6: dataset preprocessing is a run's data section, apart from the
method's parameters; -p and older grids that give it among the params still work, and a run's
key does not depend on where it was given."""

from __future__ import annotations

import hashlib
import json

import pytest

from dpgl.errors import ConfigError
from dpgl.experiments.config import RunConfig, canonical_json
from dpgl.experiments.execute import validate_config
from dpgl.experiments.grid import GridSpec
from dpgl.methods.params import DataParams, NodeParams


def test_data_options_are_the_data_params_fields() -> None:
    from dpgl.experiments.config import DATA_OPTIONS

    assert tuple(DataParams.model_fields) == DATA_OPTIONS
    assert not set(DATA_OPTIONS) & set(NodeParams.model_fields)


def test_options_given_as_params_move_to_the_data_section() -> None:
    a = RunConfig(dataset="cora", params={"lr": 0.02, "largest_component": True})
    b = RunConfig(dataset="cora", params={"lr": 0.02}, data={"largest_component": True})
    assert a.params == b.params == {"lr": 0.02}
    assert a.data == b.data == {"largest_component": True}
    assert a.key() == b.key()
    # the key is the one the configuration had before the data section existed
    legacy = {"dataset": "cora", "epsilon": None, "method": "none", "model": "gcn",
              "params": {"largest_component": True, "lr": 0.02}, "seed": 0, "task": "node"}
    assert a.key() == hashlib.sha256(canonical_json(legacy).encode()).hexdigest()
    assert RunConfig(**json.loads(a.to_json())) == a  # a stored config reads back the same
    assert "largest_component=True" in a.label()


def test_data_section_errors() -> None:
    with pytest.raises(ConfigError, match="given in both data and params"):
        RunConfig(dataset="cora", params={"features": "raw"}, data={"features": "raw"})
    with pytest.raises(ConfigError, match="unknown data option 'lr'"):
        RunConfig(dataset="cora", data={"lr": 0.1})
    with pytest.raises(ConfigError, match="method 'none' has no parameter 'features'"):
        NodeParams.parse({"features": "raw"}, "none")  # not a method parameter any more


def test_the_runner_checks_the_data_section() -> None:
    with pytest.raises(ConfigError, match="normalize_features"):
        validate_config(RunConfig(dataset="cora", method="lpgnn", epsilon=1.0,
                                  data={"normalize_features": True}))
    with pytest.raises(ConfigError, match="one-hot-degree"):
        validate_config(RunConfig(dataset="cora", method="blink-hard", epsilon=1.0,
                                  params={"features": "one-hot-degree"}))
    validate_config(RunConfig(dataset="cora", method="none", data={"normalize_features": True}))


def test_grid_data_section_expands_like_params() -> None:
    base = {"name": "g", "datasets": ["cora"], "methods": ["none", "mlp"], "seeds": 2}
    in_params = GridSpec.from_dict({**base, "params": {"largest_component": [True, False],
                                                       "lr": 0.01}})
    in_data = GridSpec.from_dict({**base, "params": {"lr": 0.01},
                                  "data": {"largest_component": [True, False]}})
    a = [c.key() for c in in_params.expand(lambda m: False)]
    b = [c.key() for c in in_data.expand(lambda m: False)]
    assert a == b and len(a) == 8
    with pytest.raises(ConfigError, match="given in both data and params"):
        GridSpec.from_dict({**base, "params": {"features": "raw"},
                            "data": {"features": "raw"}}).expand(lambda m: False)
    with pytest.raises(ConfigError, match="unknown data option"):
        GridSpec.from_dict({**base, "data": {"hidden": 3}})
