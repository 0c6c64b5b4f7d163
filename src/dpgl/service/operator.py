"""The operator's side of a round (issue #14): open it from a spec (:func:`open_round`) and
close it (:func:`close_round`): stop the reports, run the mechanism's estimator on the stored
reports, train the round's model, and store the result with its privacy report.

Estimators (the ones the simulations use, fed with the collected reports):

* neighbour lists: RR as reported or symmetrized; DPRR as reported (after
  Defense(theta) when the round asks for it); Blink's beta-model posterior (hard, soft or
  hybrid graph, :class:`dpgl.estimators.blink.BlinkServer`); LocalLap / L-DpGCN top-T
  (:func:`dpgl.estimators.toptt.top_t_reports`);
* features: LPGNN's rectifier (Eq. 4), then KProp over the graph (Alg. 2) with the round's
  step count;
* labels: KProp label propagation of the reported labels (LPGNN Sec. 4.3) as training
  targets.

What the round does not collect comes from the public dataset the round names
(``train.dataset``), as in each method's setting; its labels also evaluate the model (a real
deployment evaluates on labels it holds, e.g. a consented panel). Users who did not report
are left out (no reported edges; centre features; no training label).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpgl import progress
from dpgl.collection.round import Round
from dpgl.collection.spec import RoundSpec, parse_round_spec
from dpgl.errors import ConfigError

if TYPE_CHECKING:
    from dpgl.service.db import Database

__all__ = ["close_round", "estimate_graph", "open_round"]


def _database(db: str | Database) -> tuple[Database, bool]:
    from dpgl.service.db import Database
    return (Database(db), True) if isinstance(db, str) else (db, False)


def open_round(db: str | Database, spec: RoundSpec) -> dict[str, tuple[float, float]]:
    """Open ``spec`` in the database: the per-member charge is the guarantee of the
    randomizers the devices will run (:meth:`Round.charge`). Returns that charge."""
    database, own = _database(db)
    try:
        rnd = Round(spec)
        charge = rnd.charge()
        database.open_round(spec.round_id, spec.model_dump(mode="json"), rnd.users, charge,
                            deadline=spec.deadline_ts())
        return charge
    finally:
        if own:
            database.close()


def estimate_graph(rnd: Round, edges: Any, spec: RoundSpec) -> tuple[Any, Any, dict[str, Any]]:
    """The server's graph from the assembled neighbour reports: (edge_index, edge_weight or
    None, information)."""
    import numpy as np

    from dpgl.estimators.blink import BlinkServer
    from dpgl.estimators.dprr import dprr_graph
    from dpgl.estimators.toptt import top_t_reports
    from dpgl.graph.symmetrize import symmetrize_pairs
    from dpgl.mechanisms.neighbor_list import edge_index_from_pairs
    from dpgl.mechanisms.poisoning import apply_defense
    item = rnd.items["neighbors"]
    ns = spec.neighbors
    assert ns is not None
    n = len(rnd)
    info: dict[str, Any] = {}
    if item.kind == "lap":
        deg = None if edges.degrees is None else np.nan_to_num(edges.degrees, nan=0.0)
        a, b, info = top_t_reports(edges.dense, deg)
        ei, w = edge_index_from_pairs(a, b)
        return ei, w, info
    reports = edges.reports
    info["reported_pairs"] = len(reports)
    if item.kind == "blink":
        server = BlinkServer(item.randomizer.eps_a).fit(
            reports, np.nan_to_num(edges.degrees, nan=0.0))
        variant = ns.mechanism.split("-", 1)[1]
        est = server.hard() if variant == "hard" else server.hybrid() if variant == "hybrid" \
            else server.soft()
        info.update({k: v for k, v in est.info.items() if isinstance(v, (int, float, str))})
        ei, w = est.edge_index()
        return ei, w, info
    if item.kind == "dprr" and spec.defence is not None:
        _, eps2 = item.randomizer.budget(n)
        reports, flagged = apply_defense(reports, eps2, spec.defence.theta)
        info["defence_flagged_users"] = int(flagged.sum())
    if item.kind == "dprr":
        ei, w = dprr_graph(reports, ns.symmetrize)
        return ei, w, info
    if ns.symmetrize == "directed":
        return reports.edge_index(), None, info
    a, b = symmetrize_pairs(reports.user, reports.neighbor, n, ns.symmetrize)
    ei, w = edge_index_from_pairs(a, b)
    return ei, w, info


def _privacy(rnd: Round) -> tuple[Any, dict[str, dict[str, float]]]:
    """The round's privacy report: every item's parts as its randomizer states them (the
    same objects whose guarantee the devices checked and charged), and what the round used
    as is."""
    from dpgl.privacy import Accountant, Unit
    acc = Accountant()
    for item in rnd.items.values():
        for name, g in item.parts().items():
            acc.spend(f"{item.key}: {name}", g, mechanism=repr(item.randomizer))
    public = {"neighbors": (Unit.EDGE_LDP, "graph"), "features": (Unit.FEATURE_LDP,
              "node features"), "labels": (Unit.LABEL_LDP, "training labels")}
    for key, (unit, what) in public.items():
        if key not in rnd.items and rnd.spec.train is not None:
            acc.spend_nonprivate(what, f"public in this round (dataset "
                                 f"{rnd.spec.train.dataset})", unit)
    report = acc.report()
    charge = {str(u): {"epsilon": g.epsilon, "delta": g.delta}
              for u, g in report.protected.items()}
    return report, charge


def _train(rnd: Round, inputs: dict[str, Any], data_dir: str | Path | None
           ) -> tuple[dict[str, float], dict[str, Any]]:
    """Estimate every collected item and train the round's model on the public rest."""
    import numpy as np
    import torch

    from dpgl.datasets import load_dataset
    from dpgl.estimators.smoothing import denoise_labels
    from dpgl.graph.kprop import kprop, kprop_matrix
    from dpgl.graph.splits import random_node_split
    from dpgl.methods.base import RunContext
    from dpgl.methods.common import train_node_model
    from dpgl.methods.params import NodeParams
    from dpgl.nn import PreparedGraph
    from dpgl.privacy import Accountant
    spec = rnd.spec
    ts = spec.train
    assert ts is not None
    data = load_dataset(ts.dataset, data_dir, **ts.options)
    n = int(data.num_nodes)
    if n != len(rnd):
        raise ConfigError(f"round {spec.round_id!r}: dataset {ts.dataset!r} has {n} nodes, "
                          f"the population {len(rnd)} users")
    info: dict[str, Any] = {}
    edge_index, edge_weight = data.edge_index, None
    if "neighbors" in inputs:
        with progress.step("the server estimates the graph"):
            edge_index, edge_weight, est = estimate_graph(rnd, inputs["neighbors"], spec)
        info.update({f"estimator_{k}": v for k, v in est.items()})
        info["estimated_edges"] = int(edge_index.size(1))
    x = data.x
    if "features" in inputs:
        fs = spec.features
        assert fs is not None
        x_hat = rnd.items["features"].randomizer.decode(inputs["features"])
        adj = kprop_matrix(edge_index, n, aggregator="gcn", edge_weight=edge_weight)
        x = kprop(torch.as_tensor(x_hat, dtype=torch.float32), adj, fs.kprop_steps)
        info["kprop_steps"] = fs.kprop_steps
    params = NodeParams(epochs=ts.epochs)
    rng = np.random.default_rng(ts.seed)
    ctx = RunContext(task="node", dataset=data, model=ts.model, params=params, epsilon=None,
                     seed=ts.seed, rng=rng, accountant=Accountant())
    split = random_node_split(n, params.train_ratio, params.val_ratio, params.test_ratio,
                              rng=rng)
    train, val, test = split.train, split.val, split.test
    y_eval = data.y.clone()
    targets = None
    if "labels" in inputs:
        ls = spec.labels
        assert ls is not None
        y_rep = torch.as_tensor(inputs["labels"], dtype=torch.long)
        # only reported labels train and select the model; the test labels evaluate it
        train = train[y_rep[train] >= 0]
        val = val[y_rep[val] >= 0]
        y_eval[val] = y_rep[val]
        labelled = torch.cat([train, val])
        filled = torch.where(y_rep >= 0, y_rep, torch.zeros_like(y_rep))
        adj = kprop_matrix(edge_index, n, aggregator="gcn", edge_weight=edge_weight,
                           operator=True) if ls.denoise_steps > 0 else None
        targets = denoise_labels(filled, labelled, ls.classes, adj, ls.denoise_steps)
        info["label_denoise_steps"] = ls.denoise_steps
    graph = PreparedGraph(edge_index, n, edge_weight)
    with progress.step(f"training {ts.model} ({ts.epochs} epochs)"):
        out = train_node_model(ctx, x, y_eval, (train, val, test), graph,
                               train_targets=targets)
    info.update({k: v for k, v in out.info.items() if isinstance(v, (int, float, str))})
    metrics = {k: float(v) for k, v in out.metrics.items()}
    return metrics, info


def close_round(db: str | Database, round_id: str, *, data_dir: str | Path | None = None
                ) -> dict[str, Any]:
    """Close ``round_id``, estimate, train, store and return the result."""
    database, own = _database(db)
    try:
        with progress.step(f"closing round {round_id!r}"):
            database.close_round(round_id)
            spec = parse_round_spec(database.round(round_id)["spec"])
            rnd = Round(spec)
            stored = database.reports(round_id)
            parsed = {}
            for s in stored:
                i = rnd.index_of(s.user_id)
                parsed[i] = rnd.parse_report(json.loads(s.payload), i)
        rate = len(parsed) / len(rnd)
        report, charge = _privacy(rnd)
        result: dict[str, Any] = {
            "round_id": round_id, "closed_at": time.time(),
            "participation": {"reports": len(parsed), "population": len(rnd), "rate": rate},
            "collected": {k: v.model_dump(mode="json") for k, v in spec.items().items()},
            "privacy": {"text": report.render(), "summary": str(report), "per_user": charge},
            "train": None if spec.train is None else spec.train.model_dump(mode="json"),
        }
        if rate < spec.min_participation:
            result.update(status="failed", reason=f"participation {100 * rate:.1f}% is below "
                          f"the round's minimum {100 * spec.min_participation:.1f}%")
        elif spec.train is None:
            result.update(status="failed", reason="the round names no model to train")
        else:
            with progress.step("assembling the estimator input"):
                inputs = rnd.assemble(parsed)
            metrics, info = _train(rnd, inputs, data_dir)
            result.update(status="done", reason=None, metrics=metrics, info=info)
        database.store_result(round_id, result)
        return result
    finally:
        if own:
            database.close()
