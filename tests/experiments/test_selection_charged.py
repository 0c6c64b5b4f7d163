"""Charged hyper-parameter selection from stored runs (dpgl.experiments.selection): what each
selection costs, the local model's accuracy at a total per-user budget, and Papernot &
Steinke's selection replayed on stored central runs."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest

from dpgl.errors import ConfigError
from dpgl.experiments.selection import (
    local_at_total_budget,
    per_seed_selection,
    selection_costs,
    simulate_private_selection,
    stored_curves,
)
from dpgl.privacy import PrivateSelection, TruncatedNegativeBinomial, Unit, pure_rdp


def _runs(method: str, eps: float | None, grid: dict[str, list], seeds: int, score) -> list[dict]:
    rows = []
    names = sorted(grid)
    combos = [dict(zip(names, values, strict=True))
              for values in itertools.product(*(grid[n] for n in names))]
    for params in combos:
        hk = f"{method}-{eps}-{json.dumps(params, sort_keys=True)}"
        for seed in range(seeds):
            val, test = score(params, eps, seed)
            rows.append({"dataset": "d", "model": "gcn", "method": method, "epsilon":
                         math.nan if eps is None else eps, "seed": seed, "hparam_key": hk,
                         "key": f"{hk}-{seed}", "params": json.dumps(params, sort_keys=True),
                         "val_accuracy": val, "test_accuracy": test,
                         # what the run's report recorded (the method's unit)
                         "privacy_total_edge-LDP_epsilon": eps, "privacy_total_edge-LDP_delta":
                         0.0, "privacy_total_node-DP_epsilon": eps,
                         "privacy_total_node-DP_delta": 1e-4})
    return rows


def _blink_score(params: dict, eps: float, seed: int) -> tuple[float, float]:
    share = params["degree_share"]
    base = 0.5 + 0.04 * eps + (0.03 if (share == 0.5) == (seed % 2 == 0) else 0.0)
    return base, base - 0.01


def test_selection_costs_by_setting() -> None:
    frame = pd.DataFrame(
        _runs("blink-hard", 2.0, {"degree_share": [0.1, 0.5]}, 2, _blink_score)
        + _runs("blink-hard", 4.0, {"degree_share": [0.1], "lr": [0.01, 0.05]}, 2,
                lambda p, e, s: (0.7, 0.7))
        + _runs("rr", 2.0, {}, 2, lambda p, e, s: (0.5, 0.5))
        + _runs("dpar-em0", 1.0, {"appr_share": [0.1, 0.3, 0.5]}, 1,
                lambda p, e, s: (p["appr_share"], 0.6))
        + _runs("none", None, {"lr": [0.01, 0.1]}, 1, lambda p, e, s: (0.8, 0.8)))
    c = selection_costs(frame).set_index(["method", "epsilon"])
    assert c.loc[("blink-hard", 2.0), ["cost", "collections", "spent_epsilon"]].tolist() == [
        "collections", 2, 4.0]
    assert c.loc[("blink-hard", 2.0), "selected"] == "degree_share"
    assert c.loc[("blink-hard", 4.0), ["cost", "spent_epsilon"]].tolist() == [
        "post-processing", 4.0]
    assert c.loc[("rr", 2.0), ["cost", "n_configs"]].tolist() == ["no selection", 1]
    assert c.loc[("dpar-em0", 1.0), "cost"] == "private selection"
    assert math.isnan(c.loc[("dpar-em0", 1.0), "spent_epsilon"])
    assert c.xs("none", level="method")["cost"].tolist() == ["none"]


def test_spent_epsilon_comes_from_the_recorded_totals() -> None:
    frame = pd.DataFrame(_runs("blink-hard", 2.0, {"degree_share": [0.1, 0.5]}, 2,
                               _blink_score))
    frame.loc[frame["params"].str.contains("0.5"),
              "privacy_total_edge-LDP_epsilon"] = 2.5     # one collection recorded more
    assert selection_costs(frame)["spent_epsilon"].tolist() == [4.5]
    with pytest.raises(ConfigError, match="no finite edge-LDP total"):
        selection_costs(frame.drop(columns=["privacy_total_edge-LDP_epsilon"]))


def test_per_seed_selection_chooses_on_each_seeds_validation() -> None:
    frame = pd.DataFrame(_runs("blink-hard", 2.0, {"degree_share": [0.1, 0.5]}, 4,
                               _blink_score))
    s = per_seed_selection(frame).iloc[0]
    # every seed finds its better share: 0.5 + 0.08 + 0.03 - 0.01 on every seed
    assert s["test_accuracy_mean"] == pytest.approx(0.6)
    assert s["test_accuracy_std"] == pytest.approx(0.0, abs=1e-12)
    assert (s["n_seeds"], s["n_configs"]) == (4, 2)


def test_local_at_total_budget_uses_the_collections_at_a_fraction() -> None:
    frame = pd.DataFrame([r for e in (1.0, 2.0, 4.0)
                          for r in _runs("blink-hard", e, {"degree_share": [0.1, 0.5]}, 4,
                                         _blink_score)])
    t = local_at_total_budget(frame).set_index("total_epsilon")
    assert t.index.tolist() == [1.0, 2.0, 4.0] and set(t["collections"]) == {2}
    assert t.loc[4.0, "default"] == "degree_share=0.1"
    # published at 4 (by the mean over seeds: the shares tie, the first key wins)
    assert t.loc[4.0, "published_mean"] == pytest.approx(0.5 + 0.16 + 0.015 - 0.01)
    # the public default at 4: half the seeds have the bonus
    assert t.loc[4.0, "fixed_mean"] == pytest.approx(0.5 + 0.16 + 0.015 - 0.01)
    # charged at a total of 4: each seed chooses among two collections at 2 each
    assert t.loc[4.0, "charged_mean"] == pytest.approx(0.5 + 0.08 + 0.03 - 0.01)
    assert math.isnan(t.loc[1.0, "charged_mean"])          # would need runs at 0.5
    # what each selection spends, from the runs' recorded totals: 2 collections
    assert (t.loc[4.0, "published_spent"], t.loc[4.0, "charged_spent"]) == (8.0, 4.0)


def _central(curves_eps: dict[float, float]) -> tuple[pd.DataFrame, dict]:
    rows = _runs("dpar-em0", 1.0, {"appr_share": sorted(curves_eps)}, 5,
                 lambda p, e, s: (p["appr_share"] + 0.01 * s, 1.0 - p["appr_share"]))
    frame = pd.DataFrame(rows)
    curves = {r["key"]: pure_rdp(curves_eps[json.loads(r["params"])["appr_share"]])
              for r in rows}
    return frame, curves


def test_private_selection_replay_charges_from_the_stored_curves() -> None:
    frame, curves = _central({0.1: 0.5, 0.3: 1.0, 0.5: 0.8})
    out = simulate_private_selection(frame, curves, unit="node-DP", delta=1e-5, seed=3)
    assert len(out) == 1
    r = out.iloc[0]
    reps = TruncatedNegativeBinomial.with_mean(0.0, 3)
    expected = PrivateSelection(reps, 3, base_curve=[pure_rdp(e) for e in (0.5, 1.0, 0.8)],
                                unit=Unit.NODE_DP).epsilon(1e-5)
    assert r["charged_epsilon"] == pytest.approx(expected)
    assert r["charged_epsilon"] > 1.0 and r["mean_runs"] == pytest.approx(3.0)
    # the chosen runs are the best of the drawn ones: test = 1 - share, share in the grid
    assert 0.5 <= r["test_accuracy_mean"] <= 0.9 and r["n_seeds"] == 5
    again = simulate_private_selection(frame, curves, unit="node-DP", delta=1e-5, seed=3)
    pd.testing.assert_frame_equal(out, again)                  # seeded: the same draws
    many = simulate_private_selection(frame, curves, unit="node-DP", delta=1e-5, seed=3,
                                      eta=1.0, mean_runs=200)
    assert many.iloc[0]["test_accuracy_mean"] == pytest.approx(0.5)  # ~200 runs find 0.5
    assert many.iloc[0]["charged_epsilon"] > r["charged_epsilon"]


def test_private_selection_replay_needs_curves_and_keys() -> None:
    frame, curves = _central({0.1: 0.5, 0.3: 1.0})
    partial = dict(list(curves.items())[1:])
    assert simulate_private_selection(frame, partial, unit="node-DP", delta=1e-5).empty
    with pytest.raises(ConfigError, match="keys"):
        simulate_private_selection(frame.drop(columns=["key"]), curves, unit="node-DP",
                                   delta=1e-5)


def test_stored_curves_reads_the_privacy_reports() -> None:
    rows = [{"key": "a", "privacy": {"rdp": {"node-DP": list(pure_rdp(1.0))}}},
            {"key": "b", "privacy": {"totals": {}}}]
    curves = stored_curves(rows, "node-DP")
    assert list(curves) == ["a"] and np.allclose(curves["a"], pure_rdp(1.0))


def test_dpar_readme_section_charges_several_candidates_and_nothing_for_one() -> None:
    """The DPAR reproduction's section: a row with one configuration selects nothing; a row
    with several is replayed as a private selection charged from the stored curves; a row
    whose runs have no curve is named, not charged."""
    from dpgl.experiments.reproductions.dpar import selection

    one = _runs("features-dpsgd", 1.0, {"accounting": ["dpgl"]}, 2, lambda p, e, s: (0.5, 0.5))
    frame, curves = _central({0.1: 0.5, 0.3: 1.0})
    frame = frame.assign(param_accounting="dpgl")
    rows = [{"key": k, "privacy": {"rdp": {"node-DP": list(c)}}} for k, c in curves.items()]
    only_one = selection(pd.DataFrame(one).assign(param_accounting="dpgl"), [])
    assert (only_one["groups"], only_one["single"], only_one["table"]) == (1, 1, "")
    both = selection(pd.concat([pd.DataFrame(one).assign(param_accounting="dpgl"), frame]),
                     rows)
    assert (both["groups"], both["single"]) == (2, 1) and not both["missing_curves"]
    assert "dpar-em0 (dpgl)" in both["table"] and "charged ε (δ = 0.0001)" in both["table"]
    no_curves = selection(frame, [])
    assert no_curves["table"] == "" and no_curves["missing_curves"] == [
        "d / dpar-em0 (dpgl) / eps 1"]
