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
