"""A method's declared models (Method.models) are enforced when a config is validated, before
any data is loaded, and a grid leaves out the (method, model) pairs a method does not train."""

from __future__ import annotations

import pytest

from dpgl.errors import ConfigError
from dpgl.experiments.config import RunConfig
from dpgl.experiments.execute import validate_config
from dpgl.experiments.grid import GridSpec
from dpgl.methods import get_method


@pytest.mark.parametrize(("method", "model", "eps"), [
    ("lpgnn", "gat", 1.0), ("dpar-em0", "gcn", 1.0), ("gap-ndp", "gcn", 1.0),
    ("sage-nonprivate", "sage", None), ("features-dpsgd", "gat", 1.0),
    ("solitude", "gat", 8.0)])
def test_a_model_the_method_does_not_train_is_refused(method: str, model: str,
                                                      eps: float | None) -> None:
    cfg = RunConfig(dataset="csbm", method=method,
                    model=model, epsilon=eps, seed=0)
    allowed = get_method(method).models
    assert allowed is not None and model not in allowed
    with pytest.raises(ConfigError, match=f"use --model {allowed[0]}"):
        validate_config(cfg)


@pytest.mark.parametrize(("method", "model", "eps"), [
    ("lpgnn", "gcn", 1.0), ("lpgnn", "graphsage", 1.0), ("dpar-em0", "mlp", 1.0),
    ("rr", "gat", 1.0)])
def test_a_model_the_method_trains_is_accepted(method: str, model: str, eps: float) -> None:
    validate_config(RunConfig(dataset="csbm", method=method, model=model, epsilon=eps, seed=0))


def test_a_grid_leaves_out_pairs_a_method_does_not_train() -> None:
    spec = GridSpec.from_dict({"name": "models", "datasets": ["csbm"],
                               "models": ["gcn", "gat", "mlp"], "seeds": 1, "epsilons": [1.0],
                               "methods": ["rr", "lpgnn", "dpar-em0"]}, source="test")
    pairs = {(c.method, c.model) for c in spec.expand()}
    assert pairs == {("rr", "gcn"), ("rr", "gat"), ("rr", "mlp"), ("lpgnn", "gcn"),
                     ("dpar-em0", "mlp")}
