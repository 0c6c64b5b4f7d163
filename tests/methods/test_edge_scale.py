"""Neighbour-weight shrinkage (``edge_scale``) of an estimated graph: the scaled graph, the
selection on validation accuracy, blink-pp's covariate choice and its public kNN graph."""

import functools

import numpy as np
import pytest
import torch

from dpgl.errors import ConfigError
from dpgl.experiments.config import RunConfig
from dpgl.experiments.execute import execute_run, validate_config
from dpgl.methods.edge_scale import EDGE_SCALES, PUBLIC_SCALES, combined_graph, scaled_graph
from dpgl.nn import PreparedGraph

FAST = {"epochs": 15, "patience": 10}


@functools.cache
def _run(method: str, **params):
    return execute_run(RunConfig(dataset="csbm", method=method, epsilon=2.0, seed=0,
                                 params={**FAST, **params}))


def test_scaled_graph_scales_weights_and_leaves_the_input() -> None:
    ei = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    g = PreparedGraph(ei, 3, torch.tensor([1.0, 1.0, 0.5, 0.5]))
    assert scaled_graph(g, 1.0) is g
    half = scaled_graph(g, 0.5)
    assert torch.equal(half.edge_weight, torch.tensor([0.5, 0.5, 0.25, 0.25]))
    assert torch.equal(half.edge_index, ei) and torch.equal(g.edge_weight,
                                                            torch.tensor([1.0, 1.0, 0.5, 0.5]))
    unweighted = scaled_graph(PreparedGraph(ei, 3), 0.1)
    assert torch.allclose(unweighted.edge_weight, torch.full((4,), 0.1))
    none = scaled_graph(g, 0.0)
    assert none.num_edges == 0 and none.num_nodes == 3
    # scale 0: the GCN's propagation is the identity (self-loops only)
    assert np.allclose((none.gcn_adj() @ torch.eye(3)).numpy(), np.eye(3))


def test_val_keeps_the_scale_with_the_best_validation_accuracy() -> None:
    """``edge_scale=val`` trains one model per scale and keeps the best on validation; the
    kept model is exactly the run with that scale given as a number (same estimate, same
    trainer seed)."""
    res = _run("blink-hybrid", edge_scale="val")
    val = res.diagnostics["edge_scale_val_accuracy"]
    assert list(val) == [f"{s:g}" for s in EDGE_SCALES]
    chosen = res.info["edge_scale"]
    assert val[f"{chosen:g}"] == max(val.values())
    assert all(v < max(val.values()) for s, v in val.items() if float(s) > chosen)  # ties: larger
    fixed = _run("blink-hybrid", edge_scale=chosen)
    assert fixed.metrics == res.metrics
    # the privacy report is the randomizer's alone: the selection is post-processing
    assert res.privacy["totals"] == _run("blink-hybrid").privacy["totals"]


def test_scale_one_is_the_unscaled_run_and_scale_changes_the_model() -> None:
    base = _run("blink-soft")
    assert _run("blink-soft", edge_scale=1).metrics == base.metrics
    assert "edge_scale" not in base.info
    zero, half = _run("blink-soft", edge_scale=0), _run("blink-soft", edge_scale=0.5)
    assert zero.info["edge_scale"] == 0.0 and half.info["edge_scale"] == 0.5
    assert zero.metrics != base.metrics and half.metrics != base.metrics
    # scale 0 ignores the estimate: two budgets, one model
    assert execute_run(RunConfig(dataset="csbm", method="blink-soft", epsilon=8.0, seed=0,
                                 params={**FAST, "edge_scale": 0})).metrics == zero.metrics


@pytest.mark.parametrize("params, model, msg", [
    ({"edge_scale": 1.5}, "gcn", r"must be a number in \[0, 1\] or val, got 1.5"),
    ({"edge_scale": "best"}, "gcn", "or val, got 'best'"),
    ({"edge_scale": "val"}, "sage", "model 'sage' does not use edge weights"),
    ({"edge_scale": 0.5}, "gat", "model 'gat' does not use edge weights"),
])
def test_bad_edge_scale(params: dict, model: str, msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        validate_config(RunConfig(dataset="csbm", method="blink-hybrid", model=model,
                                  epsilon=1.0, params=params))
    validate_config(RunConfig(dataset="csbm", method="blink-hybrid", model=model, epsilon=1.0,
                              params={"edge_scale": 1}))


@pytest.mark.parametrize("covariates, knn_theta, group_theta", [
    ("both", True, True), ("knn", True, False), ("group", False, True), ("none", False, False)])
def test_blink_pp_covariates_enter_the_prior_only_when_chosen(
        covariates: str, knn_theta: bool, group_theta: bool) -> None:
    info = _run("blink-pp", covariates=covariates).info
    assert (info["estimator_theta_knn"] != 0.0) == knn_theta
    assert (info["estimator_theta_group"] != 0.0) == group_theta


def test_combined_graph_sums_the_scaled_weights_of_shared_pairs() -> None:
    est = PreparedGraph(torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]]), 4,
                        torch.tensor([1.0, 1.0, 0.5, 0.5]))
    pub = PreparedGraph(torch.tensor([[0, 1, 2, 3], [1, 0, 3, 2]]), 4)
    g = combined_graph(est, 0.5, pub, 0.1)
    w = {(int(a), int(b)): float(c) for a, b, c in zip(*g.edge_index, g.edge_weight, strict=True)}
    assert w == pytest.approx({(0, 1): 0.6, (1, 0): 0.6, (1, 2): 0.25, (2, 1): 0.25,
                               (2, 3): 0.1, (3, 2): 0.1})
    only_public = combined_graph(est, 0.0, pub, 0.25)
    assert torch.equal(only_public.edge_index, torch.tensor([[0, 1, 2, 3], [1, 0, 3, 2]]))
    assert torch.allclose(only_public.edge_weight, torch.full((4,), 0.25))
    assert combined_graph(est, 0.0, pub, 0.0).num_edges == 0
    assert torch.equal(est.edge_weight, torch.tensor([1.0, 1.0, 0.5, 0.5]))  # inputs untouched


def test_blink_pp_public_graph_selection_and_its_privacy() -> None:
    """``public_graph`` adds the feature kNN graph: every (edge scale, public scale) pair is
    trained with one seed and the best on validation kept, and the kept pair given as
    numbers is the same model. The privacy report does not move: the kNN graph is a
    function of the public features alone, and the reports are the same draw."""
    res = _run("blink-pp", covariates="none", edge_scale="val", public_graph=5,
               public_scale="val")
    val = res.diagnostics["scale_val_accuracy"]
    assert list(val) == [f"{s:g},{t:g}" for s in EDGE_SCALES for t in PUBLIC_SCALES]
    s, t = res.info["edge_scale"], res.info["public_scale"]
    assert val[f"{s:g},{t:g}"] == max(val.values())
    first = next(k for k, v in val.items() if v == max(val.values()))
    assert first == f"{s:g},{t:g}"  # ties: the first in order
    fixed = _run("blink-pp", covariates="none", edge_scale=s, public_graph=5, public_scale=t)
    assert fixed.metrics == res.metrics
    base = _run("blink-pp", covariates="none")
    assert res.privacy == base.privacy
    assert res.info["estimated_edges"] == base.info["estimated_edges"]  # the same reports
    assert res.info["public_edges"] > 0 and "public_edges" not in base.info
    # with the estimate at weight 0 the reports no longer reach the model: two budgets, one
    # model (the public graph alone)
    alone = [execute_run(RunConfig(dataset="csbm", method="blink-pp", epsilon=e, seed=0,
                                   params={**FAST, "covariates": "none", "edge_scale": 0,
                                           "public_graph": 5, "public_scale": 0.25}))
             for e in (1.0, 8.0)]
    assert alone[0].metrics == alone[1].metrics
    # and a positive public weight changes the model
    assert _run("blink-pp", covariates="none", edge_scale=0, public_graph=5,
                public_scale=0.0).metrics != alone[0].metrics


@pytest.mark.parametrize("params, model, msg", [
    ({"public_graph": 0}, "gcn", "greater than or equal to 1"),
    ({"public_graph": 5, "public_scale": 2}, "gcn", r"must be a number in \[0, 1\] or val"),
    ({"public_graph": 5}, "sage", "public_graph weighs a public kNN graph"),
    ({"public_scale": "val"}, "gcn", "but there is none: set public_graph"),
])
def test_bad_public_graph(params: dict, model: str, msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        validate_config(RunConfig(dataset="csbm", method="blink-pp", model=model,
                                  epsilon=1.0, params=params))
