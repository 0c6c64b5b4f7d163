"""Reports from stored runs: model selection, mean ± std tables, privacy-utility plots.

Selection rule (:func:`summarize`). Runs are grouped by ``group_by`` (default dataset,
model, method, epsilon). Within a group, each hyper-parameter configuration
(``hparam_key``: the run without its seed) is scored by the MEAN of the selection metric
over its seeds (NaN values skipped); the best mean wins (``mode`` max or min), exact ties go
to the smallest ``hparam_key``. The report metrics are then the mean and the sample standard
deviation (``ddof=1``, the usual "±"; NaN with a single seed) over the chosen configuration's
seeds. Test metrics never influence the choice.

Formats. Markdown (:func:`to_markdown`): metrics in percent with one decimal,
``84.6 ± 0.5`` (just ``84.6`` when there is one seed), epsilon ``-`` for non-private methods.
CSV (:func:`to_csv`): the raw summary (fractions, full precision). PNG
(:func:`plot_privacy_utility`): one panel per (dataset, model), x = epsilon, one line per
private method with std error bars, non-private methods as dashed horizontal lines.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from dpgl.errors import ConfigError
from dpgl.experiments.grid import SelectionSpec
from dpgl.experiments.store import RunStore

DEFAULT_GROUP_BY = ("dataset", "model", "method", "epsilon")


def _check_columns(df: pd.DataFrame, needed: Sequence[str], what: str) -> None:
    for col in needed:
        if col not in df.columns:
            metrics = sorted(c for c in df.columns if c.startswith(("val_", "test_", "train_")))
            hint = f"; metrics in the runs: {', '.join(metrics)}" if metrics else ""
            raise ConfigError(f"{what} {col!r} is not a column of the stored runs{hint}")


def summarize(df: pd.DataFrame, *, metric: str = "val_accuracy",
              mode: Literal["max", "min"] = "max",
              report: Sequence[str] = ("test_accuracy",),
              group_by: Sequence[str] = DEFAULT_GROUP_BY, ddof: int = 1,
              selection: SelectionSpec | None = None) -> pd.DataFrame:
    """Select hyper-parameters on ``metric`` and report ``report`` metrics over seeds.

    ``df`` is :meth:`RunStore.to_frame` output (needs ``hparam_key``, ``seed``, the group
    columns and the metrics). ``selection`` (a grid's :class:`SelectionSpec`) overrides
    ``metric``/``mode``/``report``. Returns one row per group, sorted by the group columns,
    with: the group columns, ``n_seeds``, ``n_configs`` (configurations compared),
    ``<metric>_mean`` of the chosen configuration, ``<m>_mean`` and ``<m>_std`` for each
    report metric, ``hparam_key`` and ``params`` (JSON) of the chosen configuration.

    The configurations are compared on the seeds they all have (a grid still being filled
    never pits one configuration's 10 seeds against another's 3); the chosen one is then
    reported over all its seeds. Configurations that share no seed are compared as they are.
    """
    if selection is not None:
        metric, mode, report = selection.metric, selection.mode, list(selection.report)
    if mode not in ("max", "min"):
        raise ConfigError(f"selection mode must be 'max' or 'min', got {mode!r}")
    report = list(report)
    group_by = list(group_by)
    _check_columns(df, [*group_by, "hparam_key", "seed"], "column")
    _check_columns(df, [metric], "selection metric")
    _check_columns(df, report, "report metric")

    data = df.sort_values([*group_by, "hparam_key", "seed"], kind="mergesort",
                          na_position="first").reset_index(drop=True)
    columns = [*group_by, "n_seeds", "n_configs", f"{metric}_mean"]
    for m in report:
        columns += [f"{m}_mean", f"{m}_std"]
    columns += ["hparam_key", "params"]
    rows: list[dict[str, Any]] = []
    for group_values, g in data.groupby(group_by, dropna=False, sort=True):
        scores = g[g["seed"].isin(_shared_seeds(g))].groupby("hparam_key", sort=True)[
            metric].mean()
        valid = scores.dropna()
        if valid.empty:
            chosen = str(scores.index[0])  # no usable selection metric: first by key
        else:
            best = valid.max() if mode == "max" else valid.min()
            chosen = str(min(valid.index[valid == best]))
        sel = g[g["hparam_key"] == chosen]
        row: dict[str, Any] = dict(zip(group_by, group_values, strict=True))
        row["n_seeds"] = len(sel)
        row["n_configs"] = len(scores)
        row[f"{metric}_mean"] = float(scores[chosen])
        for m in report:
            values = sel[m].astype(float)
            row[f"{m}_mean"] = float(values.mean())
            row[f"{m}_std"] = float(values.std(ddof=ddof)) if values.count() > ddof else math.nan
        row["hparam_key"] = chosen
        row["params"] = str(sel["params"].iloc[0]) if "params" in sel.columns else "{}"
        rows.append(row)
    out = pd.DataFrame(rows, columns=columns)
    if "epsilon" in out.columns:
        out["epsilon"] = out["epsilon"].astype(float)
    return out


def _shared_seeds(group: pd.DataFrame) -> set[Any]:
    """The seeds on which every configuration of ``group`` has a run (all of the group's
    seeds when there are none such)."""
    shared = set.intersection(*group.groupby("hparam_key")["seed"].apply(set))
    return shared or set(group["seed"])


# --------------------------------------------------------------------------------------
# markdown / CSV
# --------------------------------------------------------------------------------------


def _report_metrics(summary: pd.DataFrame) -> list[str]:
    return [c[: -len("_std")] for c in summary.columns if c.endswith("_std")]


def format_value(mean: float, std: float, *, percent: bool = True, digits: int = 1) -> str:
    """``84.6 ± 0.5`` (percent, one decimal by default); ``84.6`` without a std; ``-`` for
    a missing mean."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "-"
    scale = 100.0 if percent else 1.0
    text = f"{mean * scale:.{digits}f}"
    if std is not None and not (isinstance(std, float) and math.isnan(std)):
        text += f" ± {std * scale:.{digits}f}"
    return text


def _format_epsilon(eps: Any) -> str:
    if eps is None or (isinstance(eps, float) and math.isnan(eps)):
        return "-"
    return f"{float(eps):g}"


def _format_params(params: str) -> str:
    try:
        data = json.loads(params)
    except (TypeError, ValueError):
        return str(params)
    return ", ".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}"
                     for k, v in sorted(data.items()))


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(summary: pd.DataFrame, *, metrics: Sequence[str] | None = None,
                percent: bool = True, digits: int = 1, show_params: bool = True) -> str:
    """A GitHub markdown table of a :func:`summarize` result (no ``tabulate`` needed)."""
    metrics = list(metrics) if metrics is not None else _report_metrics(summary)
    group_cols = [c for c in summary.columns
                  if c not in ("n_seeds", "n_configs", "hparam_key", "params")
                  and not c.endswith(("_mean", "_std"))]
    header = [("ε" if c == "epsilon" else c) for c in group_cols]
    header += [f"{m} (%)" if percent else m for m in metrics] + ["seeds"]
    if show_params:
        header.append("params")
    align = ["---"] * len(group_cols) + ["---:"] * (len(metrics) + 1)
    if show_params:
        align.append("---")
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    for _, r in summary.iterrows():
        cells = [(_format_epsilon(r[c]) if c == "epsilon" else str(r[c])) for c in group_cols]
        cells += [format_value(r[f"{m}_mean"], r[f"{m}_std"], percent=percent, digits=digits)
                  for m in metrics]
        cells.append(str(int(r["n_seeds"])))
        if show_params:
            cells.append(_format_params(r["params"]))
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def to_csv(summary: pd.DataFrame, path: str | Path) -> Path:
    """Write the summary as CSV (fractions, full precision; empty cell = NaN)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    summary.to_csv(p, index=False)
    return p


# --------------------------------------------------------------------------------------
# plot
# --------------------------------------------------------------------------------------


def plot_privacy_utility(summary: pd.DataFrame, path: str | Path, *,
                         metric: str = "test_accuracy", percent: bool = True,
                         labels: Mapping[str, str] | None = None,
                         order: Sequence[str] | None = None, ylabel: str | None = None,
                         panel_title: Callable[[str, str], str] | None = None,
                         legend_title: str | None = None, legend_outside: bool = False
                         ) -> Path:
    """Privacy-utility PNG: one panel per (dataset, model), x = epsilon, one line per private
    method with std error bars, non-private methods as dashed horizontal lines.

    Options (the defaults give the plain report): ``labels`` (method -> legend name; default
    the method, "(non-private)" added for a non-private one), ``order`` (the methods' order in
    the legend and colours; default sorted), ``ylabel`` (default the metric's name),
    ``panel_title(dataset, model)``, ``legend_title`` (e.g. what the error bars are) and
    ``legend_outside`` (one legend right of the panels, where it hides no data).

    Uses the object-oriented matplotlib API with the Agg canvas: no pyplot, no global
    backend change.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    mean_col, std_col = f"{metric}_mean", f"{metric}_std"
    _check_columns(summary, ["dataset", "model", "method", "epsilon", mean_col], "column")
    if summary.empty:
        raise ConfigError("nothing to plot: the summary has no rows")
    scale = 100.0 if percent else 1.0
    panels = sorted({(str(d), str(m)) for d, m in zip(summary["dataset"], summary["model"],
                                                       strict=True)})
    methods = sorted({str(m) for m in summary["method"]})
    if order is not None:
        methods = ([m for m in order if m in methods]
                   + [m for m in methods if m not in order])
    # Distinct (color, marker) pairs for 70 methods (10 colours x 7 markers, coprime), so
    # that lines on top of each other stay apart.
    palette = [f"C{i}" for i in range(10)]
    marker_cycle = ["o", "s", "^", "D", "v", "P", "X"]
    colors = {m: palette[i % 10] for i, m in enumerate(methods)}
    markers = {m: marker_cycle[i % len(marker_cycle)] for i, m in enumerate(methods)}
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig = Figure(figsize=(4.6 * ncols + (2.4 if legend_outside else 0.0), 3.6 * nrows),
                 layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (dataset, model) in zip(axes.flat, panels, strict=False):
        sub = summary[(summary["dataset"].astype(str) == dataset)
                      & (summary["model"].astype(str) == model)]
        eps_all = sub["epsilon"].dropna().astype(float)
        for method in methods:
            rows = sub[sub["method"].astype(str) == method]
            if rows.empty:
                continue
            private = rows[rows["epsilon"].notna()].sort_values("epsilon")
            public = rows[rows["epsilon"].isna()]
            for _, r in public.iterrows():
                ax.axhline(float(r[mean_col]) * scale, color=colors[method], linestyle="--",
                           linewidth=1.2, label=(labels or {}).get(method,
                                                                   f"{method} (non-private)"))
            if not private.empty:
                std = (private[std_col].fillna(0.0).to_numpy(float) * scale
                       if std_col in private.columns else None)
                ax.errorbar(private["epsilon"].to_numpy(float),
                            private[mean_col].to_numpy(float) * scale, yerr=std,
                            color=colors[method], marker=markers[method], markersize=5,
                            capsize=3,
                            linewidth=1.4, label=(labels or {}).get(method, method))
        if len(eps_all) and eps_all.min() > 0 and eps_all.max() / eps_all.min() >= 10:
            ax.set_xscale("log")
            ticks = np.unique(eps_all.to_numpy())
            ax.set_xticks(ticks)
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_formatter(NullFormatter())
        elif 0 < eps_all.nunique() <= 6:  # a few budgets: tick exactly those
            ax.set_xticks(np.unique(eps_all.to_numpy()))
        ax.set_title(panel_title(dataset, model) if panel_title else f"{dataset} / {model}")
        ax.set_xlabel("ε (total privacy budget)")
        ax.set_ylabel(ylabel or (f"{metric} (%)" if percent else metric))
        ax.grid(True, alpha=0.3)
        if not legend_outside:
            ax.legend(fontsize="small", title=legend_title, title_fontsize="small")
    if legend_outside:  # one legend for every panel, right of them
        handles: dict[str, Any] = {}
        for ax in axes.flat[:len(panels)]:
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                handles.setdefault(label, handle)
        fig.legend(list(handles.values()), list(handles), loc="outside right upper",
                   fontsize="small", title=legend_title, title_fontsize="small",
                   alignment="left")
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p, dpi=120, format="png")
    return p


# --------------------------------------------------------------------------------------
# everything at once
# --------------------------------------------------------------------------------------


def _selection_text(metric: str, mode: str, group_by: Sequence[str], ddof: int) -> str:
    return (f"Hyper-parameters chosen per ({', '.join(group_by)}) by the best mean "
            f"`{metric}` over seeds ({mode}); values are mean ± std (ddof={ddof}) over the "
            "chosen configuration's seeds, in percent; ε `-` = non-private.")


def write_report(source: RunStore | pd.DataFrame, out_dir: str | Path, *,
                 selection: SelectionSpec | None = None, metric: str = "val_accuracy",
                 mode: Literal["max", "min"] = "max",
                 report: Sequence[str] = ("test_accuracy",),
                 group_by: Sequence[str] = DEFAULT_GROUP_BY, ddof: int = 1,
                 grid: str | None = None, keys: Sequence[str] | None = None,
                 plots: bool = True, title: str = "Results") -> list[Path]:
    """Write ``results.md``, ``results.csv`` and ``privacy_utility_<metric>.png`` (one per
    report metric) into ``out_dir``; returns the paths.

    ``source``: a store or a :meth:`RunStore.to_frame` frame. ``grid`` keeps the runs stored
    under that grid name; ``keys`` keeps only those run keys (e.g. the keys of a grid's
    expansion, which also catches runs first stored by another grid).
    """
    if selection is not None:
        metric, mode, report = selection.metric, selection.mode, list(selection.report)
    if isinstance(source, RunStore):
        df = source.to_frame(**({"grid": grid} if grid is not None else {}))
        where = f"run store {str(source.path)!r}"
    else:
        df = source
        if grid is not None and "grid" in df.columns:
            df = df[df["grid"] == grid]
        where = "the given runs"
    if keys is not None:
        df = df[df["key"].isin(list(keys))]
    if df.empty:
        extra = f" for grid {grid!r}" if grid is not None else ""
        raise ConfigError(f"no finished runs{extra} in {where}; run a grid first")
    summary = summarize(df, metric=metric, mode=mode, report=report, group_by=group_by,
                        ddof=ddof)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = out / "results.md"
    md.write_text(f"# {title}\n\n{_selection_text(metric, mode, group_by, ddof)}\n\n"
                  f"{to_markdown(summary)}", encoding="utf-8")
    paths = [md, to_csv(summary, out / "results.csv")]
    if plots and {"dataset", "model", "method", "epsilon"} <= set(summary.columns):
        for m in report:
            paths.append(plot_privacy_utility(summary, out / f"privacy_utility_{m}.png",
                                              metric=m))
    return paths
