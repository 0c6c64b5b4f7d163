"""Closing a round (issue #14): the stored reports go through the method's estimator, the
round's model is trained, and the result with its privacy report is stored."""

from __future__ import annotations

import numpy as np
import pytest

from dpgl.collection import PrivateData, Round, canonical_json, parse_round_spec, user_rng
from dpgl.datasets import load_dataset
from dpgl.mechanisms.neighbor_list import neighbor_csr, undirected_pairs
from dpgl.service.db import Database
from dpgl.service.operator import close_round, open_round

OPTIONS = {"num_nodes": 400, "avg_degree": 8}


@pytest.fixture(scope="module")
def csbm():
    data = load_dataset("csbm", **OPTIONS)
    n = int(data.num_nodes)
    indptr, ind = neighbor_csr(*undirected_pairs(data.edge_index, n), n)
    return data, [ind[indptr[i]:indptr[i + 1]] for i in range(n)]


def _round(tmp_path, csbm, items: dict, *, skip=frozenset(), poison=(), **extra):
    data, lists = csbm
    n = int(data.num_nodes)
    db = Database(f"sqlite:///{tmp_path / 'c.db'}")
    for i in range(n):
        db.enroll(str(i))
    spec = parse_round_spec({"round_id": "r", "population": {"size": n},
                             "train": {"dataset": "csbm", "options": OPTIONS,
                                                       "epochs": 60}, **items, **extra})
    open_round(db, spec)
    rnd = Round(spec)
    x = data.x.numpy()
    for i in range(n):
        if i in skip:
            continue
        if i in poison:  # a malicious user: a fabricated list of every other user
            report = {"neighbors": {"neighbors": [j for j in range(n) if j != i]}}
        else:
            p = PrivateData(neighbors=lists[i], features=x[i], label=int(data.y[i]))
            report = rnd.device_report(p, i, user_rng(0, i))
        db.submit("r", str(i), canonical_json(report))
    return db


def _test_accuracy(result: dict) -> float:
    assert result["status"] == "done", result.get("reason")
    return result["metrics"]["test_accuracy"]


@pytest.mark.parametrize("mechanism", [
    "rr", "dprr", "blink-hard", "blink-hybrid", "ldpgcn",
    # the exact soft posterior (n^2 pairs) and the dense LocalLap reports take longer
    pytest.param("blink-soft", marks=pytest.mark.slow),
    pytest.param("locallap", marks=pytest.mark.slow)])
def test_close_estimates_and_trains(tmp_path, csbm, mechanism: str) -> None:
    db = _round(tmp_path, csbm, {"neighbors": {"mechanism": mechanism, "epsilon": 4.0}})
    result = close_round(db, "r")
    assert db.round("r")["status"] == "closed"
    assert _test_accuracy(result) > 0.3  # 4 classes: above chance
    assert result["info"]["estimated_edges"] > 0
    assert result["privacy"]["per_user"]["edge-LDP"]["epsilon"] == pytest.approx(4.0)
    assert "eps = 4 edge-LDP" in result["privacy"]["text"]
    assert db.result("r") == result  # stored as returned


def test_close_features_and_labels(tmp_path, csbm) -> None:
    data, _ = csbm
    lo, hi, _ = data.feature_range
    db = _round(tmp_path, csbm, {
        "features": {"epsilon": 4.0, "dim": int(data.x.size(1)), "low": lo, "high": hi},
        "labels": {"epsilon": 3.0, "classes": int(data.y.max()) + 1}})
    result = close_round(db, "r")
    assert _test_accuracy(result) > 0.4
    per_user = result["privacy"]["per_user"]
    assert per_user["feature-LDP"]["epsilon"] == pytest.approx(4.0)
    assert per_user["label-LDP"]["epsilon"] == pytest.approx(3.0)
    assert "graph" in result["privacy"]["text"]  # used as is, and said so


def test_the_poisoning_defence_drops_fabricated_lists(tmp_path, csbm) -> None:
    # Defense(theta)'s threshold tau is above n - 1 when eps2 is large: at eps = 1 it is
    # about 340 of 399 possible ids here
    poison = set(range(0, 20))
    db = _round(tmp_path, csbm, {"neighbors": {"mechanism": "dprr", "epsilon": 1.0}},
                poison=poison, defence={"theta": 1e-6})
    result = close_round(db, "r")
    assert result["info"]["estimator_defence_flagged_users"] >= len(poison)
    # without the defence the same reports are used as they are
    (tmp_path / "b").mkdir()
    db2 = _round(tmp_path / "b", csbm, {"neighbors": {"mechanism": "dprr", "epsilon": 1.0}},
                 poison=poison)
    plain = close_round(db2, "r")
    assert "estimator_defence_flagged_users" not in plain["info"]
    assert plain["info"]["estimated_edges"] > result["info"]["estimated_edges"]


def test_below_minimum_participation_nothing_is_estimated(tmp_path, csbm) -> None:
    n = int(csbm[0].num_nodes)
    db = _round(tmp_path, csbm, {"neighbors": {"mechanism": "rr", "epsilon": 4.0}},
                skip=frozenset(range(n // 2)), min_participation=0.9)
    result = close_round(db, "r")
    assert result["status"] == "failed" and "below" in result["reason"]
    assert result["participation"]["rate"] == pytest.approx(0.5, abs=0.001)
    assert "metrics" not in result


def test_missing_users_are_left_out(tmp_path, csbm) -> None:
    n = int(csbm[0].num_nodes)
    db = _round(tmp_path, csbm, {"neighbors": {"mechanism": "blink-hybrid", "epsilon": 4.0},
                                 "labels": {"epsilon": 4.0, "classes": 4}},
                skip=frozenset(range(0, n, 3)))
    result = close_round(db, "r")
    assert result["participation"]["reports"] == n - len(range(0, n, 3))
    assert _test_accuracy(result) > 0.4
    assert np.isfinite(result["metrics"]["test_loss"])
