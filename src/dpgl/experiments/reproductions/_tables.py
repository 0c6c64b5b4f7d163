"""The report and plot layer every reproduction shares: stored runs (a store or its committed
export), mean/std curves, markdown tables, line plots and the README template."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dpgl.experiments.config import RunConfig
from dpgl.experiments.report import format_value
from dpgl.experiments.store import RunStore, rows_to_frame

EXPORT = "runs.jsonl"
#: Fields of a stored run kept in the export (the privacy report without its per-mechanism
#: entries and notes: its totals, per-user values and summary are what reports read), and
#: ``data`` where the configuration has data options.
_FIELDS = ("key", "hparam_key", "grid", "task", "dataset", "method", "model", "epsilon", "seed",
           "params", "metrics", "privacy", "timing", "info", "diagnostics", "created_at",
           "dpgl_version")


class Runs:
    """Finished runs of a reproduction, read from ``runs.sqlite`` or from its export
    ``runs.jsonl`` (one JSON object per run, in the store's order)."""

    def __init__(self, rows: list[dict[str, Any]], exported: Path | None = None) -> None:
        self.rows = rows
        self.exported = exported
        self._by_key = {r["key"]: r for r in rows}

    @classmethod
    def load(cls, out_dir: Path, configs: Iterable[RunConfig]) -> Runs | None:
        """The stored runs of ``configs``: from ``out_dir/runs.sqlite`` if it exists (then
        written to ``runs.jsonl``), else from ``runs.jsonl``; None when neither exists."""
        store, export = out_dir / "runs.sqlite", out_dir / EXPORT
        if store.exists():
            with RunStore(store) as s:
                rows = [_compact(r) for r in s.rows(keys=[c.key() for c in configs])]
            export.write_text("".join(_dumps(r) + "\n" for r in rows), encoding="utf-8")
            return cls(rows, export)
        if export.exists():
            lines = export.read_text(encoding="utf-8").splitlines()
            return cls([json.loads(line) for line in lines if line])
        return None

    def of(self, configs: Iterable[RunConfig]) -> list[dict[str, Any]]:
        """The stored rows of these configurations, in the store's order."""
        wanted = {c.key() for c in configs}
        return [r for r in self.rows if r["key"] in wanted]

    def frame(self, configs: Iterable[RunConfig]) -> pd.DataFrame:
        """:meth:`RunStore.to_frame` of the stored runs of these configurations."""
        return rows_to_frame(self.of(configs))

    def count(self, configs: Iterable[RunConfig]) -> int:
        return sum(c.key() in self._by_key for c in configs)

    def last_stored(self) -> str:
        """When the newest run was stored, ``YYYY-MM-DD HH:MM UTC`` (a date that comes from the
        data, so the README regenerates identically)."""
        last = max((r["created_at"] for r in self.rows), default="")
        return f"{last[:10]} {last[11:16]} UTC" if last else "-"


def restore(store: Path, source: Path, configs: Iterable[RunConfig]) -> int:
    """Copy the runs of ``configs`` stored in the export ``source`` (a ``runs.jsonl``: this
    reproduction's own, committed, or one written by another machine) into the run store
    ``store`` (created if needed), with their results, time and dpgl version as stored; a run
    already in the store is kept. Returns how many runs were added. A clean checkout so
    resumes where the committed runs end, and several machines fill one grid."""
    from dpgl.errors import ConfigError, DpglError
    from dpgl.experiments.config import RunResult
    from dpgl.experiments.execute import check_stored_report
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read stored runs {str(source)!r}: {e}") from None
    rows: dict[str, dict[str, Any]] = {}
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            rows[str(row["key"])] = row
        except (ValueError, TypeError, KeyError):
            raise ConfigError(f"{str(source)!r} line {i} is not a stored run (one JSON object "
                              "with a key per line, as runs.jsonl holds)") from None
    added = 0
    with RunStore(store) as s:
        have = s.finished_keys()
        todo = []  # every run is checked before any is stored: a bad file adds nothing
        for c in configs:
            row = rows.get(c.key())
            if row is None or c.key() in have:
                continue
            result = RunResult.parse({k: row.get(k) or {} for k in
                                      ("metrics", "privacy", "timing", "info", "diagnostics")},
                                     f"stored run {c.key()} in {source}")
            try:
                check_stored_report(c, result.privacy)
            except DpglError as e:
                raise ConfigError(f"{str(source)!r}: stored run {c.key()[:12]} ({c.method} on "
                                  f"{c.dataset}, eps {c.epsilon}) fails the privacy check of "
                                  f"a run: {e}") from None
            todo.append((c, result, row))
        for c, result, row in todo:
            added += s.put(c, result, row.get("grid"), created_at=row.get("created_at"),
                           version=row.get("dpgl_version"))
    return added


def _compact(row: dict[str, Any]) -> dict[str, Any]:
    """A stored run as exported: the fields above, and the configuration's data options
    (``data``, e.g. Blink's ``normalize_rows``) when it has any, so that every exported row
    names its whole configuration (its fields rebuild a :class:`RunConfig` with its key)."""
    out = {k: row[k] for k in _FIELDS}
    if row["config"].data:
        out["data"] = dict(row["config"].data)
    out["privacy"] = {k: v for k, v in row["privacy"].items() if k not in ("entries", "notes")}
    return out


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=True,
                      ensure_ascii=False)


# ------------------------------------------------------------------------------ tables


def curve(df: pd.DataFrame, x: str, series: pd.Series | str,
          value: str = "test_accuracy") -> pd.DataFrame:
    """Mean / std / count of ``value`` in % per (dataset, series, x) (seeds and anything else
    not named are averaged over)."""
    d = df.assign(series=df[series] if isinstance(series, str) else series,
                  acc=100 * df[value].astype(float))
    g = d.groupby(["dataset", "series", x], dropna=False)["acc"]
    return g.agg(mean="mean", std="std", n="count").reset_index()


def md_table(header: Sequence[Any], rows: Iterable[Sequence[Any]],
             align: Sequence[str] | None = None) -> str:
    """A GitHub markdown table (no trailing newline); ``align`` gives each column's separator
    (``---`` by default, ``---:`` for right-aligned numbers)."""
    align = list(align) if align is not None else ["---"] * len(header)
    lines = ["| " + " | ".join(str(h) for h in header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def pivot_md(df: pd.DataFrame, index: str, columns: str, cell: Callable[[pd.Series], str], *,
             head: Callable[[Any], str] = str, label: Callable[[Any], str] = str,
             corner: str | None = None, missing: str = "-",
             row_key: Callable[[Any], Any] | None = None) -> str:
    """One row per value of ``index`` (sorted), one column per value of ``columns`` (sorted,
    missing values left out); ``cell(row)`` formats the first matching row."""
    cols = sorted(df[columns].dropna().unique())
    rows = []
    for r in sorted(df[index].unique(), key=row_key):
        sub = df[df[index] == r]
        rows.append([label(r), *[cell(h.iloc[0]) if len(h := sub[sub[columns] == c]) else missing
                                 for c in cols]])
    return md_table([corner or index, *[head(c) for c in cols]], rows)


def pm(mean: Any, std: Any = math.nan, per: float = 1.0) -> str:
    """``mean ± std`` in percent of fractions (:func:`format_value`); ``per=100`` for values
    already in percent."""
    return format_value(float(mean) / per, float(std) / per)


# ------------------------------------------------------------------------------ plots


def line_plot(df: pd.DataFrame, x: str, series: str, path: Path, title: str,
              ylabel: str = "test accuracy (%)", logx: bool = False, logy: bool = False,
              hlines: pd.DataFrame | None = None) -> Path:
    """One panel per dataset; one line per value of ``series`` (columns ``x``, ``mean``,
    ``std``) with error bars; ``hlines`` (columns dataset, series, mean) are dashed
    horizontal lines (a reference without the x axis, e.g. a non-private baseline)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    panels = sorted(df["dataset"].unique())
    fig = Figure(figsize=(max(4.4 * len(panels), 6.5), 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, max(len(panels), 1), squeeze=False)[0]
    for ax, ds in zip(axes, panels, strict=False):
        sub = df[df["dataset"] == ds]
        for name, g in sub.groupby(series, sort=True):
            g = g.sort_values(x)
            ax.errorbar(g[x], g["mean"], yerr=g["std"], marker="o", capsize=3, label=str(name))
        if hlines is not None:
            for _, r in hlines[hlines["dataset"] == ds].iterrows():
                ax.axhline(r["mean"], ls="--", color="k", lw=1, label=str(r["series"]))
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


# ------------------------------------------------------------------------------ README


def render_readme(template: Path, **variables: Any) -> str:
    """Render a reproduction's ``README.md.j2`` (Jinja2, undefined names are errors; the
    table helpers above and ``g`` (``{:g}``) are available as functions and filters)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(template.parent),
                             extensions=["jinja2.ext.do"],
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True, autoescape=False)
    helpers = {"pm": pm, "md_table": md_table, "g": lambda v: f"{float(v):g}",
               "fmt": lambda v, spec: format(v, spec)}
    env.filters.update(helpers)
    env.globals.update(helpers)
    return env.get_template(template.name).render(**variables)
