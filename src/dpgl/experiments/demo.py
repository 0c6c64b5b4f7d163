"""The default demo (the README's main job): a small privacy-utility comparison on the
built-in synthetic graph (contextual SBM) — no dataset files, no network, under 2 minutes
on 2 cores. It runs a grid through the same runner, store and report as ``dpgl run``."""

from __future__ import annotations

import functools
import json
import re
import time
from pathlib import Path
from typing import Any

import pandas as pd

from dpgl.datasets import dataset_info, resolve_data_dir
from dpgl.errors import ConfigError
from dpgl.experiments.execute import execute_run
from dpgl.experiments.grid import GridSpec
from dpgl.experiments.report import format_value, plot_privacy_utility, summarize, to_csv
from dpgl.experiments.runner import run_grid
from dpgl.experiments.store import RunStore
from dpgl.methods import get_method, list_methods
from dpgl.methods.params import NodeParams

#: Private edge-LDP methods shown in the demo when they are registered.
DEMO_PRIVATE = ("rr", "dprr", "ldpgcn", "blink-hard", "blink-hybrid")
DEMO_EPSILONS = (1.0, 4.0, 8.0)


def demo_grid(seeds: int = 3) -> GridSpec:
    available = set(list_methods("node"))
    methods: list[Any] = ["none", "mlp"] + [m for m in DEMO_PRIVATE if m in available]
    return GridSpec.from_dict(
        {
            "name": "demo",
            "task": "node",
            "datasets": ["csbm"],
            "models": ["gcn"],
            "seeds": seeds,
            "epsilons": list(DEMO_EPSILONS),
            "methods": methods,
            "params": {"epochs": 60, "patience": 20},
            "selection": {"metric": "val_accuracy", "mode": "max", "report": ["test_accuracy"]},
        },
        source="demo",
    )


def run_demo(output: Path, *, seeds: int = 3, console: Any = None,
             device: Any = "cpu") -> list[Path]:
    """Run the demo grid into ``output/demo.sqlite`` and write the table and plot there
    (training on ``device``, :mod:`dpgl.device`)."""
    output.mkdir(parents=True, exist_ok=True)
    spec = demo_grid(seeds)
    configs = spec.expand(lambda m: get_method(m).private)
    start = time.perf_counter()
    with RunStore(output / "demo.sqlite") as store:
        outcome = run_grid(
            configs, store, functools.partial(execute_run, device=device),
            progress=console is not None, grid_name="demo"
        )
        frame = store.to_frame()
    frame = frame[frame["key"].isin([c.key() for c in configs])]
    if frame.empty:
        raise ConfigError(f"no finished demo runs in {output / 'demo.sqlite'}")
    paths = write_demo_report(frame, output, spec)
    if console is not None:
        console.print(outcome.summary())
        console.print(paths[0].read_text(encoding="utf-8"), markup=False)
        for p in paths:
            console.print(f"wrote {p}")
        console.print(f"demo finished in {time.perf_counter() - start:.1f} s")
    return paths


def write_demo_report(frame: pd.DataFrame, output: Path, spec: GridSpec) -> list[Path]:
    """``results.md`` (baselines first, one row per method, one column per epsilon, the
    parameters every run shares said once above the table), ``results.csv`` (the raw
    summary, each row with the model it trained) and ``privacy_utility_test_accuracy.png``
    (plain names, the legend right of the axes, the error bars explained)."""
    summary = summarize(frame, selection=spec.selection)
    methods = {m: get_method(m) for m in summary["method"].astype(str).unique()}
    trained = summary.assign(model=[  # the model each run trained (mlp ignores --model)
        methods[m].trained_model(model)
        for m, model in zip(summary["method"], summary["model"], strict=True)])
    listed = [s.name for s in spec.methods if s.name in methods]  # the grid's order
    order = ([m for m in listed if not methods[m].private]       # the baselines first
             + [m for m in listed if methods[m].private])
    names = {m: methods[m].display(str(trained.loc[trained["method"] == m, "model"].iloc[0]))
             for m in order}
    metric = spec.selection.report[0]
    n_seeds = int(summary["n_seeds"].max())

    epsilons = sorted(e for e in summary["epsilon"].dropna().unique())
    shared, varying = _shared_params(summary["params"])
    header = ["method", "model", "non-private", *[f"ε = {e:g}" for e in epsilons]]
    if varying:
        header.append("params")
    lines = ["| " + " | ".join(header) + " |",
             "|---|---|" + "---:|" * (1 + len(epsilons)) + ("---|" if varying else "")]
    for m in order:
        rows = trained[trained["method"] == m]
        cells = {("-" if pd.isna(e) else float(e)): format_value(r[f"{metric}_mean"],
                                                                  r[f"{metric}_std"])
                 for e, (_, r) in zip(rows["epsilon"], rows.iterrows(), strict=True)}
        line = [names[m], str(rows["model"].iloc[0]).upper(), cells.get("-", ""),
                *[cells.get(float(e), "") for e in epsilons]]
        if varying:
            line.append(", ".join(sorted({_params_text(p, varying) for p in rows["params"]})))
        lines.append("| " + " | ".join(line) + " |")
    data = {d: _dataset_words(d) for d in spec.datasets}
    md = output / "results.md"
    md.write_text(
        f"# dpgl demo: privacy vs. accuracy on a synthetic graph\n\n"
        f"Dataset {'; '.join(f'`{d}` ({w})' for d, w in data.items())}; "
        f"{_split_words(shared)}; {n_seeds} seeds. Private methods: "
        "every user randomizes her neighbour list (edge-LDP, ε = the total per user); the "
        "server trains the model on the graph it estimates from the reports (node features "
        "and labels are public in this setting). Every run: "
        + (", ".join(f"{k}={v}" for k, v in shared.items()) or "default parameters")
        + ", the other hyper-parameters at their defaults (`dpgl methods NAME`).\n\n"
        f"{_metric_words(metric)} (%), mean ± std over {n_seeds} seeds:\n\n"
        + "\n".join(lines) + "\n", encoding="utf-8")
    plot = plot_privacy_utility(
        summary, output / f"privacy_utility_{metric}.png", metric=metric, labels=names,
        order=order, ylabel=f"{_metric_words(metric)} (%)",
        panel_title=lambda d, m: f"{d}, {m.upper()}",
        legend_title=f"bars: std over {n_seeds} seeds\ndashed: non-private",
        legend_outside=True)
    return [md, to_csv(trained, output / "results.csv"), plot]


def _shared_params(params: pd.Series) -> tuple[dict[str, Any], list[str]]:
    """The parameters every row sets to the same value, and the names of the others."""
    rows = [json.loads(p) for p in params]
    names = sorted({k for r in rows for k in r})
    shared = {k: rows[0][k] for k in names
              if all(k in r and r[k] == rows[0][k] for r in rows)}
    return shared, [k for k in names if k not in shared]


def _params_text(params: str, names: list[str]) -> str:
    data = json.loads(params)
    return " ".join(f"{k}={data[k]}" for k in names if k in data)


def _metric_words(metric: str) -> str:
    """``test_accuracy`` -> ``Test accuracy``."""
    return metric.replace("_", " ").capitalize()


def _dataset_words(name: str) -> str:
    """``contextual stochastic block model: 2,000 nodes, 4 classes`` (from the registry)."""
    info = dataset_info(name, resolve_data_dir(None))
    what = re.sub(r"\s*\(.*?\)", "", (info.note or info.kind).split(";")[0]).strip()
    return f"{what}: {info.nodes or 0:,} nodes, {info.classes} classes"


def _split_words(shared: dict[str, Any]) -> str:
    """``50/25/25 random node split`` from the split every run used."""
    ratios = [shared.get(k, NodeParams.model_fields[k].default)
              for k in ("train_ratio", "val_ratio", "test_ratio")]
    return "/".join(f"{100 * r:g}" for r in ratios) + " random node split (train/val/test)"
