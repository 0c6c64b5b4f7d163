"""fit_graph_ldp: the five methods of the DPRR paper, the customized setting and accounting."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from dpgl.datasets.base import GraphDataset
from dpgl.errors import ConfigError
from dpgl.methods import get_method
from dpgl.methods.base import RunContext, list_methods
from dpgl.methods.graph_ldp import GraphLDPParams, fit_graph_ldp, graph_randomizer, randomize_graphs
from dpgl.privacy import Accountant
from dpgl.rng import make_rng


def _graph(n: int, half: int, label: int) -> Data:
    i = np.repeat(np.arange(n), half)
    j = (i + np.tile(np.arange(1, half + 1), n)) % n
    u, v = np.minimum(i, j), np.maximum(i, j)
    ei = torch.from_numpy(np.stack([np.r_[u, v], np.r_[v, u]]))
    return Data(edge_index=ei, y=torch.tensor([label]), num_nodes=n)


def _dataset() -> GraphDataset:
    graphs = [_graph(20 + (k % 7), 1 + 3 * (k % 2), k % 2) for k in range(40)]
    return GraphDataset("toy", graphs, 2)


def _ctx(eps: float | None, **params: object) -> RunContext:
    p = GraphLDPParams.parse({"epochs": 2, "patience": None, "hidden": 8, "num_layers": 2,
                              "batch_size": 16, **params}, "test")
    return RunContext(task="graph", dataset=_dataset(), model="gin", params=p, epsilon=eps,
                      seed=0, rng=make_rng(0), accountant=Accountant())


def _fit(method: str, ctx: RunContext):
    with ctx.accountant.active():  # the randomizers charge the active accountant
        return fit_graph_ldp(method, ctx)


def test_registered_graph_methods() -> None:
    names = list_methods("graph")
    for m in ("locallap", "nonpriv-part", "nonpriv-full"):
        assert m in names
        assert get_method(m).tasks == ("graph",)
    assert get_method("locallap").private
    assert not get_method("nonpriv-full").private


@pytest.mark.parametrize("method", ["dprr", "rr", "locallap"])
def test_private_methods_run_and_account(method: str) -> None:
    ctx = _ctx(1.0)
    out = _fit(method, ctx)
    assert 0.0 <= out.metrics["test_accuracy"] <= 1.0
    report = ctx.accountant.report()
    assert report.totals["edge-LDP"].epsilon == pytest.approx(1.0)
    entries = [e for e in report.entries if e.kind != "nonprivate"]
    # every graph's users charged once; graphs are disjoint users: parallel composition
    assert all("in 40 of 40 disjoint groups" in e.details for e in entries)
    if method == "dprr":  # eps1 (degree) + eps2 (RR) recorded separately
        assert len(entries) == 2
        assert out.info["eps1"] + out.info["eps2"] == pytest.approx(1.0)
        assert out.info["dprr_n_max"] == 26
    assert not any(e.kind == "nonprivate" for e in report.entries)


def test_customized_setting_records_no_privacy_for_lambda_users() -> None:
    ctx = _ctx(1.0, non_private_fraction=0.2)
    _fit("dprr", ctx)
    report = ctx.accountant.report()
    nonpriv = [e for e in report.entries if e.kind == "nonprivate"]
    assert len(nonpriv) == 1 and "no privacy" in nonpriv[0].mechanism
    assert "for the users whose reports are randomized" in report.headline


def test_nonprivate_methods_account_and_edges() -> None:
    ctx = _ctx(None)
    out = _fit("nonpriv-full", ctx)
    assert out.info["mean_reported_pairs"] == out.info["mean_true_pairs"]
    assert ctx.accountant.report().totals["edge-LDP"].epsilon == float("inf")  # no privacy
    ctx = _ctx(None)
    out = _fit("nonpriv-part", ctx)  # lambda = 0: every list dropped
    assert out.info["mean_reported_pairs"] == 0


def test_customized_lists_are_true_for_nonprivate_users() -> None:
    g = _graph(60, 4, 0)
    p = GraphLDPParams(non_private_fraction=0.5)
    true = {(int(a), int(b)) for a, b in g.edge_index.t().tolist()}
    for method in ("dprr", "rr", "nonpriv-part", "locallap"):
        rg = graph_randomizer(method, 1.0 if method != "nonpriv-part" else None, p,
                              n_max=60)(g, make_rng(4))
        assert rg.private is not None and (~rg.private).sum() == 30
        nonpriv = np.flatnonzero(~rg.private)
        mask = np.isin(rg.reports.user, nonpriv)
        sent = set(zip(rg.reports.user[mask].tolist(), rg.reports.neighbor[mask].tolist(),
                       strict=True))
        assert sent == {(a, b) for a, b in true if a in set(nonpriv.tolist())}, method
        if method == "nonpriv-part":
            assert mask.all()  # private users' lists dropped


def test_rr_refuses_huge_outputs() -> None:
    graphs = [_graph(400, 2, 0)] * 3
    with pytest.raises(ConfigError, match="max_total_edges"):
        randomize_graphs("rr", graphs, 0.5, GraphLDPParams(max_total_edges=10_000), make_rng(0))


def test_poison_and_defense_need_noisy_lists() -> None:
    graphs = [_graph(30, 2, 0)] * 2
    with pytest.raises(ConfigError, match="defense_theta"):
        randomize_graphs("locallap", graphs, 1.0, GraphLDPParams(defense_theta=0.05),
                         make_rng(0))
    with pytest.raises(ConfigError, match="poisoning"):
        randomize_graphs("nonpriv-full", graphs, None,
                         GraphLDPParams(poison="random", poison_fraction=0.1), make_rng(0))


def test_deterministic() -> None:
    a = fit_graph_ldp("dprr", _ctx(1.0)).metrics
    b = fit_graph_ldp("dprr", _ctx(1.0)).metrics
    assert a == b


def test_undefended_poisoning_refuses_huge_outputs() -> None:
    graphs = [_graph(400, 2, 0)] * 3
    p = GraphLDPParams(poison="all-ones", poison_fraction=0.5, max_total_edges=100_000)
    with pytest.raises(ConfigError, match="Poison"):
        randomize_graphs("dprr", graphs, 1.0, p, make_rng(0), poison_graphs=frozenset({0, 1}))
    # with the defense the all-ones lists are dropped per graph: allowed
    p = GraphLDPParams(poison="all-ones", poison_fraction=0.5, max_total_edges=100_000,
                       defense_theta=0.05)
    _, info = randomize_graphs("dprr", graphs, 1.0, p, make_rng(0),
                                 poison_graphs=frozenset({0, 1}))
    assert info["defense_tpr"] == 1.0
