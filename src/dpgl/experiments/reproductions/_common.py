"""Helpers shared by the reproduction modules (not itself a reproduction)."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from dpgl.experiments.config import RunConfig
from dpgl.experiments.execute import execute_run
from dpgl.experiments.runner import run_grid
from dpgl.experiments.store import RunStore
from dpgl.methods import get_method


def is_private(name: str) -> bool:
    """Whether method ``name`` takes an epsilon (the grid-expansion predicate)."""
    return bool(get_method(name).private)


def run_configs(configs: list[RunConfig], store: RunStore, data_dir: Path | None, name: str,
                console: Any) -> None:
    """Run the configurations not yet in ``store`` (resumable) and print the outcome."""
    fn = functools.partial(execute_run, data_dir=data_dir)
    outcome = run_grid(configs, store, fn, progress=console is not None, grid_name=name,
                       console=console)
    if console is not None:
        console.print(outcome.summary())


def run_timed(steps: Iterable[tuple[str, list[RunConfig], str]], store: RunStore,
              data_dir: Path | None, console: Any, timings: dict[str, float]) -> None:
    """Run each ``(label, configs, grid name)`` step with :func:`run_configs`, adding its wall
    time to ``timings[label]``."""
    for label, configs, grid in steps:
        t0 = time.perf_counter()
        run_configs(configs, store, data_dir, grid, console)
        timings[label] = timings.get(label, 0.0) + time.perf_counter() - t0


def save_timings(out_dir: Path, quick: bool, started: str, timings: dict[str, float], *,
                 recomputed: tuple[str, ...] = ()) -> Path:
    """Write ``timings.json``, adding the times already recorded there by earlier
    invocations of the same protocol (a resumed run adds the time of the runs it added);
    ``recomputed`` steps are redone every time and keep only this invocation's time. Other
    keys of an earlier file of the same protocol are kept."""
    path = out_dir / "timings.json"
    before = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    if before.get("quick") != quick:
        before = {}
    for k, v in before.get("seconds", {}).items():
        if k not in recomputed:
            timings[k] = timings.get(k, 0.0) + float(v)
    # other keys written earlier (e.g. a note on how the store was filled) are kept
    saved = {**before, "started": before.get("started", started), "quick": quick,
             "seconds": timings}
    path.write_text(json.dumps(saved, indent=2), encoding="utf-8")
    return path


def stored_frame(store: RunStore, configs: list[RunConfig]) -> pd.DataFrame:
    """The stored runs of exactly these configurations."""
    df = store.to_frame()
    return df[df["key"].isin([c.key() for c in configs])].copy()


def line_plot(df: pd.DataFrame, x: str, series: str, path: Path, title: str,
              ylabel: str = "test accuracy (%)", logx: bool = False,
              logy: bool = False) -> Path:
    """One panel per dataset; one line per value of ``series`` (columns ``x``, ``mean``,
    ``std``) with error bars."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    panels = sorted(df["dataset"].unique())
    fig = Figure(figsize=(max(4.4 * len(panels), 6.5), 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, ds in zip(axes, panels, strict=True):
        sub = df[df["dataset"] == ds]
        for name, g in sub.groupby(series, sort=True):
            g = g.sort_values(x)
            ax.errorbar(g[x], g["mean"], yerr=g["std"], marker="o", capsize=3, label=str(name))
        ax.set_title(ds)
        ax.set_xlabel(x)
        ax.set_ylabel(ylabel)
        if logx:
            ax.set_xscale("log", base=2)
        if logy:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.savefig(path, dpi=110)
    return path
