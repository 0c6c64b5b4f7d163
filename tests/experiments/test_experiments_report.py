"""Reports: selection on mean validation metric, mean ± std, markdown, CSV, PNG."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpgl.errors import ConfigError
from dpgl.experiments.config import RunConfig, RunResult
from dpgl.experiments.grid import SelectionSpec
from dpgl.experiments.report import (
    format_value,
    plot_privacy_utility,
    summarize,
    to_csv,
    to_markdown,
    write_report,
)
from dpgl.experiments.store import RunStore

# (method, epsilon, lr) -> per-seed (val, test). For rr eps=1: lr=0.1 has the best single
# seed (0.95) but lr=0.01 has the best MEAN validation (0.70 vs 0.65): lr=0.01 must win.
DATA = {
    ("rr", 1.0, 0.1): [(0.95, 0.90), (0.50, 0.50), (0.50, 0.52)],
    ("rr", 1.0, 0.01): [(0.70, 0.80), (0.70, 0.82), (0.70, 0.84)],
    ("rr", 4.0, 0.1): [(0.80, 0.85), (0.82, 0.87), (0.84, 0.89)],
    ("rr", 4.0, 0.01): [(0.60, 0.99), (0.60, 0.99), (0.60, 0.99)],
    ("none", None, 0.1): [(0.90, 0.91), (0.90, 0.93), (0.90, 0.95)],
    ("none", None, 0.01): [(0.80, 0.97), (0.80, 0.97), (0.80, 0.97)],
}


def fill(store: RunStore, data=DATA, dataset="cora") -> None:
    for (method, eps, lr), seeds in data.items():
        for seed, (val, test) in enumerate(seeds):
            cfg = RunConfig(dataset=dataset, method=method, epsilon=eps, seed=seed,
                            params={"lr": lr, "hidden": 16})
            store.put(cfg, RunResult(metrics={"val_accuracy": val, "test_accuracy": test,
                                              "val_loss": 1 - val}), grid="g")


@pytest.fixture
def frame(tmp_path):
    with RunStore(tmp_path / "r.db") as store:
        fill(store)
        return store.to_frame()


def test_selection_uses_mean_validation_and_reports_mean_std(frame):
    s = summarize(frame)
    assert list(s["method"]) == ["none", "rr", "rr"]
    assert math.isnan(s["epsilon"].iloc[0]) and list(s["epsilon"].iloc[1:]) == [1.0, 4.0]
    rows = {(m, e): r for m, e, r in zip(s["method"], s["epsilon"].fillna(-1),
                                         s.to_dict("records"), strict=True)}
    r1 = rows[("rr", 1.0)]
    assert r1["params"] == '{"hidden":16,"lr":0.01}'  # best mean, not best single seed
    assert r1["hparam_key"] == RunConfig(dataset="cora", method="rr", epsilon=1.0,
                                         params={"lr": 0.01, "hidden": 16}).hparam_key()
    assert r1["n_seeds"] == 3 and r1["n_configs"] == 2
    assert r1["val_accuracy_mean"] == pytest.approx(0.70, abs=1e-12)
    assert r1["test_accuracy_mean"] == pytest.approx(0.82, abs=1e-12)
    assert r1["test_accuracy_std"] == pytest.approx(0.02, abs=1e-12)  # ddof=1
    r4 = rows[("rr", 4.0)]  # selection ignores the (better) test accuracy of lr=0.01
    assert r4["params"] == '{"hidden":16,"lr":0.1}'
    assert r4["test_accuracy_mean"] == pytest.approx(0.87, abs=1e-12)
    assert r4["test_accuracy_std"] == pytest.approx(0.02, abs=1e-12)
    r0 = rows[("none", -1)]
    assert r0["params"] == '{"hidden":16,"lr":0.1}'
    assert r0["test_accuracy_mean"] == pytest.approx(0.93, abs=1e-12)
    s0 = summarize(frame, ddof=0)
    assert s0["test_accuracy_std"].iloc[1] == pytest.approx(np.std([0.80, 0.82, 0.84]), abs=1e-12)


def test_selection_mode_min_and_selection_spec(frame):
    s = summarize(frame, selection=SelectionSpec(metric="val_loss", mode="min",
                                                 report=["test_accuracy", "val_accuracy"]))
    assert list(s["params"]) == ['{"hidden":16,"lr":0.1}', '{"hidden":16,"lr":0.01}',
                                 '{"hidden":16,"lr":0.1}']
    assert "val_accuracy_std" in s.columns and "val_loss_mean" in s.columns
    s_max = summarize(frame, metric="val_loss", mode="max")  # the worst configurations
    assert s_max["params"].iloc[1] == '{"hidden":16,"lr":0.1}'


def test_ties_go_to_the_smallest_hparam_key(tmp_path):
    data = {("rr", 1.0, 0.1): [(0.5, 0.1), (0.7, 0.1)],
            ("rr", 1.0, 0.2): [(0.7, 0.2), (0.5, 0.2)],
            ("rr", 1.0, 0.3): [(0.6, 0.3), (0.6, 0.3)]}
    with RunStore(tmp_path / "t.db") as store:
        fill(store, data)
        df = store.to_frame()
    keys = {lr: RunConfig(dataset="cora", method="rr", epsilon=1.0,
                          params={"lr": lr, "hidden": 16}).hparam_key() for lr in (0.1, 0.2, 0.3)}
    means = df.groupby("hparam_key")["val_accuracy"].mean()
    best = means.max()
    tied = sorted(k for k, v in means.items() if v == best)
    assert len(tied) >= 2  # the data really has an exact tie
    s = summarize(df)
    assert s["hparam_key"].iloc[0] == tied[0] and tied[0] in keys.values()
    # row order in the input does not matter
    s2 = summarize(df.sample(frac=1.0, random_state=3))
    pd.testing.assert_frame_equal(s, s2)


def test_configurations_are_compared_on_the_seeds_they_share(tmp_path):
    # lr=0.1 has 3 seeds, lr=0.01 only seed 0 so far (a grid being filled). Over all their
    # seeds lr=0.1 looks better (0.70 vs 0.60), but on the shared seed 0 lr=0.01 wins
    # (0.60 vs 0.50): the selection must compare like with like, and then report the chosen
    # configuration over all its seeds.
    data = {("rr", 1.0, 0.1): [(0.50, 0.30), (0.80, 0.31), (0.80, 0.32)],
            ("rr", 1.0, 0.01): [(0.60, 0.90)]}
    with RunStore(tmp_path / "p.db") as store:
        fill(store, data)
        df = store.to_frame()
    s = summarize(df).iloc[0]
    assert s["params"] == '{"hidden":16,"lr":0.01}'
    assert s["val_accuracy_mean"] == pytest.approx(0.60)
    assert s["n_seeds"] == 1 and s["n_configs"] == 2
    # once lr=0.01 has every seed, the comparison is over all of them
    with RunStore(tmp_path / "p.db") as store:
        fill(store, {("rr", 1.0, 0.01): [(0.60, 0.90), (0.55, 0.91), (0.55, 0.92)]})
        full = summarize(store.to_frame()).iloc[0]
    assert full["params"] == '{"hidden":16,"lr":0.1}'
    assert full["n_seeds"] == 3 and full["test_accuracy_mean"] == pytest.approx(0.31)
    # configurations with no seed in common fall back to their own means
    with RunStore(tmp_path / "q.db") as store:
        fill(store, {("rr", 1.0, 0.1): [(0.50, 0.30)]})
        cfg = RunConfig(dataset="cora", method="rr", epsilon=1.0, seed=1,
                        params={"lr": 0.01, "hidden": 16})
        store.put(cfg, RunResult(metrics={"val_accuracy": 0.4, "test_accuracy": 0.9,
                                          "val_loss": 0.6}), grid="g")
        apart = summarize(store.to_frame()).iloc[0]
    assert apart["params"] == '{"hidden":16,"lr":0.1}' and apart["n_configs"] == 2


def test_single_seed_has_nan_std_and_no_plus_minus(tmp_path):
    with RunStore(tmp_path / "s.db") as store:
        fill(store, {("none", None, 0.1): [(0.5, 0.8461)]})
        s = summarize(store.to_frame())
    assert s["n_seeds"].iloc[0] == 1 and math.isnan(s["test_accuracy_std"].iloc[0])
    assert "| 84.6 | 1 |" in to_markdown(s)


def test_format_value():
    assert format_value(0.8461, 0.0049) == "84.6 ± 0.5"
    assert format_value(0.8461, float("nan")) == "84.6"
    assert format_value(float("nan"), 0.1) == "-"
    assert format_value(1.23456, 0.01, percent=False, digits=3) == "1.235 ± 0.010"


def test_markdown_table(frame):
    md = to_markdown(summarize(frame))
    assert md == (
        "| dataset | model | method | ε | test_accuracy (%) | seeds | params |\n"
        "|---|---|---|---|---:|---:|---|\n"
        "| cora | gcn | none | - | 93.0 ± 2.0 | 3 | hidden=16, lr=0.1 |\n"
        "| cora | gcn | rr | 1 | 82.0 ± 2.0 | 3 | hidden=16, lr=0.01 |\n"
        "| cora | gcn | rr | 4 | 87.0 ± 2.0 | 3 | hidden=16, lr=0.1 |\n"
    )
    assert "params" not in to_markdown(summarize(frame), show_params=False)


def test_csv_roundtrip(frame, tmp_path):
    s = summarize(frame)
    path = to_csv(s, tmp_path / "out" / "results.csv")
    back = pd.read_csv(path)
    assert list(back.columns) == list(s.columns)
    assert back["test_accuracy_mean"].tolist() == s["test_accuracy_mean"].tolist()
    assert back["test_accuracy_std"].tolist() == s["test_accuracy_std"].tolist()
    assert math.isnan(back["epsilon"].iloc[0]) and back["epsilon"].iloc[2] == 4.0


def _is_png(path) -> bool:
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_privacy_utility_plot(frame, tmp_path):
    import matplotlib.image

    # a second dataset so the figure has two panels
    with RunStore(tmp_path / "two.db") as store:
        fill(store)
        fill(store, dataset="citeseer")
        s = summarize(store.to_frame())
    path = plot_privacy_utility(s, tmp_path / "p.png")
    assert path.stat().st_size > 5000 and _is_png(path)
    img = matplotlib.image.imread(path)
    assert img.shape[1] > img.shape[0] > 300  # two panels side by side
    assert img.std() > 0.01  # not a blank canvas
    with pytest.raises(ConfigError, match="'nope_mean' is not a column"):
        plot_privacy_utility(s, tmp_path / "q.png", metric="nope")


def test_write_report_from_store_and_frame(tmp_path):
    with RunStore(tmp_path / "r.db") as store:
        fill(store)
        paths = write_report(store, tmp_path / "rep")
        assert [p.name for p in paths] == ["results.md", "results.csv",
                                           "privacy_utility_test_accuracy.png"]
        md = paths[0].read_text()
        assert md.startswith("# Results\n\nHyper-parameters chosen per (dataset, model, "
                             "method, epsilon) by the best mean `val_accuracy`")
        assert "| cora | gcn | rr | 1 | 82.0 ± 2.0 | 3 | hidden=16, lr=0.01 |" in md
        assert _is_png(paths[2])
        with pytest.raises(ConfigError, match="no finished runs for grid 'other'"):
            write_report(store, tmp_path / "x", grid="other")
        keys = [r["key"] for r in store.rows(method="none")]
        df = store.to_frame()
    paths = write_report(df, tmp_path / "rep2", keys=keys, plots=False)
    assert len(paths) == 2
    assert pd.read_csv(paths[1])["method"].tolist() == ["none"]


def test_missing_metric_is_a_config_error(frame):
    with pytest.raises(ConfigError, match=r"selection metric 'val_f1' is not a column of the "
                                          r"stored runs; metrics in the runs: test_accuracy, "
                                          r"val_accuracy, val_loss"):
        summarize(frame, metric="val_f1")
    with pytest.raises(ConfigError, match="report metric 'test_auc'"):
        summarize(frame, report=["test_auc"])
