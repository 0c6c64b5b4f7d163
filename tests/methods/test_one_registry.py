"""Issue #12, finding 1: one registry for both tasks. A method declares its tasks; the graph
task's per-graph randomizer is an object the method holds (no table of graph methods)."""

from __future__ import annotations

from typing import ClassVar

import pytest

from dpgl.methods import get_method, list_methods
from dpgl.methods.base import _REGISTRY, Method, register
from dpgl.methods.graph_ldp import GraphLDPParams, GraphRandomizer, graph_randomizer
from dpgl.methods.params import Params


def test_graph_methods_come_from_the_one_registry() -> None:
    assert set(list_methods("graph")) == {"dprr", "rr", "locallap", "nonpriv-part",
                                          "nonpriv-full", "none"}
    for name in list_methods("graph"):
        holder = get_method(name).graph_randomizer
        if name == "none":  # the non-private baseline trains on the true graphs itself
            assert holder is None
        else:
            assert issubclass(holder, GraphRandomizer), name


def test_graph_randomizer_is_the_one_the_method_holds() -> None:
    for name in ("dprr", "rr", "locallap"):
        rand = graph_randomizer(name, 1.0, GraphLDPParams(), n_max=10)
        assert type(rand) is get_method(name).graph_randomizer


def test_a_graph_task_needs_a_randomizer() -> None:
    with pytest.raises(ValueError, match="graph_randomizer"):
        @register
        class _Broken(Method):
            name = "broken-graph-method"
            tasks = ("graph",)
            private = False
            params_for_task: ClassVar[dict[str, type[Params]]] = {"graph": GraphLDPParams}
    assert "broken-graph-method" not in _REGISTRY


def test_a_task_needs_its_params() -> None:
    with pytest.raises(ValueError, match="params_for_task"):
        @register
        class _Broken(Method):
            name = "broken-params-method"
            tasks = ("node",)
            private = False
    assert "broken-params-method" not in _REGISTRY


def test_non_graph_method_refuses_the_graph_task() -> None:
    from dpgl.errors import ConfigError

    with pytest.raises(ConfigError, match="does not support task 'graph'"):
        graph_randomizer("blink-hard", 1.0, GraphLDPParams())


def test_a_private_method_declares_its_unit_and_split() -> None:
    from dpgl.methods.params import NodeParams

    with pytest.raises(ValueError, match="budget_split"):
        @register
        class _Broken(Method):
            name = "broken-private-method"
            private = True
            params_for_task: ClassVar[dict[str, type[Params]]] = {"node": NodeParams}
    assert "broken-private-method" not in _REGISTRY
