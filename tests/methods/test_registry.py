import pytest

from dpgl.errors import ConfigError
from dpgl.methods import get_method, list_methods
from dpgl.methods.params import GraphParams, NodeParams


def test_builtin_methods_are_registered() -> None:
    assert {"none", "mlp"} <= set(list_methods("node"))
    assert "none" in list_methods("graph")
    assert "mlp" not in list_methods("graph")
    assert get_method("none").private is False


def test_unknown_method_lists_allowed_names() -> None:
    with pytest.raises(ConfigError, match=r"unknown method 'blinkk'; choose one of: .*none"):
        get_method("blinkk")


def test_params_validation_messages() -> None:
    with pytest.raises(ConfigError, match=r"no parameter 'learning_rate'; allowed: .*lr"):
        NodeParams.parse({"learning_rate": 0.1}, "none")
    with pytest.raises(ConfigError, match="parameter 'dropout'"):
        NodeParams.parse({"dropout": 1.5}, "none")
    with pytest.raises(ConfigError, match="exceeds 1"):
        NodeParams.parse({"train_ratio": 0.8, "val_ratio": 0.2, "test_ratio": 0.2}, "none")
    assert NodeParams.parse({"lr": 0.05}, "none").lr == 0.05
    assert GraphParams.parse({}, "none").batch_size == 64
