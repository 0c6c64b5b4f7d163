"""Helpers shared by the reproduction modules (not itself a reproduction)."""

from __future__ import annotations

import functools
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
