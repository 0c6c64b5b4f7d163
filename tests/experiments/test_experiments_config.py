"""RunConfig / RunResult: validation errors and key stability."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from dpgl.errors import ConfigError
from dpgl.experiments.config import RunConfig, RunResult, canonical_json


def test_key_is_stable_and_canonical():
    a = RunConfig(dataset="cora", method="blink", epsilon=4, seed=3,
                  params={"lr": 0.01, "hidden": 64, "nested": {"b": 1, "a": [1, 2.0]}})
    b = RunConfig(dataset="cora", method="blink", epsilon=4.0, seed=3,
                  params={"nested": {"a": [1.0, 2], "b": 1.0}, "hidden": 64.0, "lr": 0.01})
    assert a.key() == b.key()
    assert len(a.key()) == 64 and int(a.key(), 16) >= 0
    # the key is a pure function of the canonical JSON: pin it so a silent change shows up
    assert a.to_json() == (
        '{"dataset":"cora","epsilon":4,"method":"blink","model":"gcn","params":'
        '{"hidden":64,"lr":0.01,"nested":{"a":[1,2],"b":1}},"seed":3,"task":"node"}'
    )
    # NumPy scalars are the same values
    c = RunConfig(dataset="cora", method="blink", epsilon=np.float64(4), seed=np.int64(3),
                  params={"lr": np.float64(0.01), "hidden": np.int64(64),
                          "nested": {"a": np.array([1, 2]), "b": 1}})
    assert c.key() == a.key()


def test_seed_changes_key_not_hparam_key():
    a = RunConfig(dataset="cora", seed=0, params={"lr": 0.01})
    b = RunConfig(dataset="cora", seed=1, params={"lr": 0.01})
    assert a.key() != b.key()
    assert a.hparam_key() == b.hparam_key()
    c = RunConfig(dataset="cora", seed=0, params={"lr": 0.02})
    assert c.hparam_key() != a.hparam_key()
    d = RunConfig(dataset="cora", seed=0, params={"lr": 0.01}, epsilon=1.0, method="rr")
    assert d.hparam_key() != a.hparam_key()
    assert a != b and a == RunConfig(dataset="cora", seed=0, params={"lr": 0.01})
    assert len({a, b, RunConfig(dataset="cora", seed=1, params={"lr": 0.01})}) == 2


def test_canonical_json_floats():
    assert canonical_json({"x": 1.0, "y": 0.1, "z": [2.0, -0.0]}) == '{"x":1,"y":0.1,"z":[2,0]}'
    assert canonical_json(float("inf")) == "Infinity"


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"dataset": "cora", "epsilon": -1}, "epsilon: must be a finite number > 0"),
        ({"dataset": "cora", "epsilon": 0}, "epsilon: must be a finite number > 0"),
        ({"dataset": "cora", "epsilon": float("inf")}, "epsilon: must be a finite number"),
        ({"dataset": "cora", "epsilon": "abc"}, "epsilon: must be a number > 0 or null"),
        ({"dataset": "cora", "seed": -1}, "seed: Input should be greater than or equal to 0"),
        ({"dataset": "cora", "seed": True}, "seed: must be an integer >= 0"),
        ({"dataset": "cora", "task": "edge"}, "task: Input should be 'node' or 'graph'"),
        ({"dataset": "cora", "color": 1}, "unknown key 'color'; allowed: task, dataset"),
        ({}, "dataset: required field is missing"),
        ({"dataset": " cora"}, "dataset: must be a non-empty name"),
        ({"dataset": "cora", "params": {"seed": 1}}, "'seed' is a run field"),
        ({"dataset": "cora", "params": {"lr": float("nan")}}, "params.lr is NaN"),
        ({"dataset": "cora", "params": {"f": object()}}, "allowed: numbers, strings"),
        ({"dataset": "cora", "params": [1]}, "params: must be a mapping"),
    ],
)
def test_invalid_run_config_is_one_line_config_error(kwargs, fragment):
    with pytest.raises(ConfigError) as info:
        RunConfig(**kwargs)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message
    assert message.startswith("RunConfig: ")


def test_parse_names_the_source():
    with pytest.raises(ConfigError, match=r"^cli: epsilon: must be a number > 0"):
        RunConfig.parse({"dataset": "cora", "epsilon": "x"}, "cli")


def test_run_config_is_frozen():
    cfg = RunConfig(dataset="cora")
    with pytest.raises(Exception, match="frozen"):
        cfg.seed = 3  # type: ignore[misc]


def test_run_result_validation():
    r = RunResult(metrics={"test_accuracy": np.float32(0.5)}, privacy={"eps": np.float64(2)},
                  timing={"total": 1})
    assert r.metrics == {"test_accuracy": 0.5}
    assert r.privacy == {"eps": 2.0} and type(r.privacy["eps"]) is float
    assert r.timing == {"total": 1.0}
    assert math.isnan(RunResult(metrics={"test_auc": None}).metrics["test_auc"])
    with pytest.raises(ConfigError, match="metrics: metrics\\['acc'\\] must be a number"):
        RunResult(metrics={"acc": "high"})
    with pytest.raises(ConfigError, match="metrics: required field is missing"):
        RunResult()


def test_pickle_roundtrip():
    cfg = RunConfig(dataset="cora", method="rr", epsilon=2, seed=1, params={"lr": 0.1})
    back = pickle.loads(pickle.dumps(cfg))
    assert back == cfg and back.key() == cfg.key() and back.params == {"lr": 0.1}
    res = RunResult(metrics={"a": 1.0}, info={"x": [1, 2]})
    assert pickle.loads(pickle.dumps(res)) == res
