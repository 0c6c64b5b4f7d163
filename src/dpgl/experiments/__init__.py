"""Experiments: grids (YAML) -> runs -> SQLite run store -> reports (tables, plots).

* :mod:`~dpgl.experiments.config`: :class:`RunConfig` (one run, with a stable ``key()``) and
  :class:`RunResult`.
* :mod:`~dpgl.experiments.grid`: :func:`load_grid` / :class:`GridSpec` (``expand()``).
* :mod:`~dpgl.experiments.store`: :class:`RunStore`, one row per finished run.
* :mod:`~dpgl.experiments.runner`: :func:`run_grid`, resumable, Ctrl-C safe.
* :mod:`~dpgl.experiments.report`: :func:`summarize` (selection on validation, mean ± std over
  seeds), markdown/CSV tables, privacy-utility plots, :func:`write_report`.

The single-run executor (``execute.py``) plugs into :func:`run_grid` as ``run_fn``.
See docs/experiments.md.
"""

from typing import TYPE_CHECKING

from dpgl._lazy import attach

if TYPE_CHECKING:
    from dpgl.experiments.config import RunConfig, RunResult
    from dpgl.experiments.grid import GridSpec, MethodSpec, SelectionSpec, load_grid
    from dpgl.experiments.report import (
        plot_privacy_utility,
        summarize,
        to_csv,
        to_markdown,
        write_report,
    )
    from dpgl.experiments.runner import GridInterrupted, GridOutcome, RunFailure, run_grid
    from dpgl.experiments.store import RunStore

__getattr__, __dir__ = attach(__name__, __file__)

__all__ = [
    "GridInterrupted",
    "GridOutcome",
    "GridSpec",
    "MethodSpec",
    "RunConfig",
    "RunFailure",
    "RunResult",
    "RunStore",
    "SelectionSpec",
    "load_grid",
    "plot_privacy_utility",
    "run_grid",
    "summarize",
    "to_csv",
    "to_markdown",
    "write_report",
]
