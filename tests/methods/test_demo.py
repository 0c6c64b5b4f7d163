"""The default demo: what it runs (fast) and that it writes its table and plot (slow)."""

import json
from pathlib import Path

import pandas as pd
import pytest

from dpgl.experiments.demo import DEMO_EPSILONS, demo_grid, run_demo, write_demo_report
from dpgl.methods import get_method


def test_demo_grid_compares_private_methods_with_both_baselines() -> None:
    configs = demo_grid(seeds=2).expand(lambda m: get_method(m).private)
    methods = {c.method for c in configs}
    assert {"none", "mlp", "rr", "blink-hard"} <= methods
    assert all(c.dataset == "csbm" for c in configs)  # no files, no network
    private = [c for c in configs if get_method(c.method).private]
    assert {c.epsilon for c in private} == set(DEMO_EPSILONS)
    assert len(configs) == 2 * (2 + (len(methods) - 2) * len(DEMO_EPSILONS))


@pytest.mark.slow
def test_demo_writes_table_and_plot(tmp_path: Path) -> None:
    paths = run_demo(tmp_path, seeds=1)
    names = {p.name for p in paths}
    assert {"results.md", "results.csv", "privacy_utility_test_accuracy.png"} <= names
    assert "| Blink-Hard | GCN |" in (tmp_path / "results.md").read_text()


def test_demo_table_baselines_first_shared_params_once_and_trained_models(tmp_path: Path
                                                                          ) -> None:
    """The demo's table from stored runs (a stand-in frame, no training): the non-private
    baselines first with the model each trained, one column per epsilon, the parameters
    every run shares said once above the table; the CSV says which model each row trained."""
    spec = demo_grid(seeds=2)
    configs = spec.expand(lambda m: get_method(m).private)
    params = json.dumps({"epochs": 60, "patience": 20}, sort_keys=True)
    frame = pd.DataFrame([{
        "key": c.key(), "hparam_key": c.method + str(c.epsilon), "dataset": c.dataset,
        "model": c.model, "method": c.method, "seed": c.seed, "params": params,
        "epsilon": float("nan") if c.epsilon is None else c.epsilon,
        "val_accuracy": 0.5, "test_accuracy": 0.5 + 0.01 * c.seed + (c.epsilon or 0) / 100,
    } for c in configs])
    paths = write_demo_report(frame, tmp_path, spec)
    assert [p.name for p in paths] == ["results.md", "results.csv",
                                       "privacy_utility_test_accuracy.png"]
    text = paths[0].read_text(encoding="utf-8")
    assert "Every run: epochs=60, patience=20, the other hyper-parameters" in text
    assert "mean ± std over 2 seeds" in text and "epochs=60" not in text.split("| method")[1]
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert rows[0] == "| method | model | non-private | ε = 1 | ε = 4 | ε = 8 |"
    assert rows[1].startswith("| GCN on the true graph | GCN | 50.5 ± 0.7 |")
    assert rows[2].startswith("| MLP, no edges | MLP | 50.5 ± 0.7 |")
    assert rows[3] == "| RR | GCN |  | 51.5 ± 0.7 | 54.5 ± 0.7 | 58.5 ± 0.7 |"
    csv = pd.read_csv(paths[1])
    assert set(csv.loc[csv["method"] == "mlp", "model"]) == {"mlp"}
    assert set(csv.loc[csv["method"] == "rr", "model"]) == {"gcn"}
