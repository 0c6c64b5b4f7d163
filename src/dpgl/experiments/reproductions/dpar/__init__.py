"""DPAR reproduction (Zhang et al., WWW 2024): Table 1 (test accuracy at eps in {1, 8}) with
its baselines (Features, GAP, DP-SAGE) and non-private counterparts, Fig. 1 (accuracy vs the
DP-APPR budget eps_pr, training without noise) and the budget split of Figs. 2-6. Grids:
``spec.yaml``; the paper's Table 1 values at eps = 1: ``paper.csv``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from dpgl.experiments.config import RunConfig
from dpgl.experiments.report import format_value, summarize, to_csv
from dpgl.experiments.reproductions._tables import curve, line_plot, md_table, pivot_md, pm
from dpgl.experiments.selection import (
    selection_costs,
    simulate_private_selection,
    stored_curves,
)

BEFORE_FILE = "before-issue-11.csv"

# Why a row's number moved between the code before issue #11 (commit 6de0c0a) and now, by
# method-name prefix; the first prefix that matches wins (so "dpar" comes last).
_CHANGE_REASON = {
    "dpar-nonprivate": "same pipeline without noise; sources drawn from the public universe",
    "gap-ndp": "bounded-degree node-DP with the declared degree bound D (every edge kept; "
               "sensitivity sqrt(D + D^2) per hop) instead of random top-D bounding with an "
               "unproved sqrt(D)",
    "sage-ndp": "bounded-degree node-DP with the declared degree bound D (every in-edge "
                "kept) instead of random top-D bounding",
    "gap-nonprivate": "every edge kept (no random top-D bounding)",
    "sage-nonprivate": "every edge kept (no random top-D bounding)",
    "features-dpsgd": "node subsample size and q' from the public N",
    "features-nonprivate": "none: identical",
    "dpar": "DP-APPR over the public universe, sources from it, q' and T from the public N "
            "(below)",
}


def prepare(cfg: RunConfig, repro: Any = None) -> RunConfig:
    """A paper-calibrated run takes no --epsilon: its target goes to ``paper_epsilon``."""
    if cfg.params.get("accounting") == "paper" and cfg.epsilon is not None:
        return cfg.model_copy(update={"epsilon": None,
                                      "params": {**cfg.params, "paper_epsilon": cfg.epsilon}})
    return cfg


def _variant(df: pd.DataFrame) -> pd.Series:
    acc = df["param_accounting"] if "param_accounting" in df else pd.Series("", index=df.index)
    return df["method"] + acc.map(lambda a: f" ({a})" if isinstance(a, str) and a else "")


def _target(df: pd.DataFrame) -> pd.Series:
    """The target eps of a run: --epsilon, or paper_epsilon for a paper-calibrated run."""
    target = df["epsilon"].astype(float)
    if "param_paper_epsilon" in df:
        target = target.fillna(df["param_paper_epsilon"].astype(float))
    return target


def table(df: pd.DataFrame) -> pd.DataFrame:
    """Test accuracy per (dataset, variant, target eps) with the verified node-DP epsilon of
    the noise the runs used (the bounded-degree one for GAP / DP-SAGE)."""
    df = df.assign(variant=_variant(df), epsilon=_target(df))
    summary = summarize(df, group_by=("dataset", "variant", "epsilon"), report=["test_accuracy"])
    cols = [c for c in ("privacy_total_node-DP_epsilon",
                        "privacy_total_bounded-degree node-DP_epsilon") if c in df]
    df["verified"] = df[cols[0]]
    if len(cols) == 2:
        df["verified"] = df["verified"].fillna(df[cols[1]])
    eps = df.groupby(["dataset", "variant", "epsilon"], dropna=False).agg(
        verified_epsilon=("verified", "max"))
    return summary.merge(eps.reset_index(), on=["dataset", "variant", "epsilon"], how="left")


def _markdown(summary: pd.DataFrame) -> str:
    rows = []
    for _, r in summary.iterrows():
        ver = r.get("verified_epsilon")
        private = not (pd.isna(ver) or math.isinf(ver) or pd.isna(r["epsilon"]))
        rows.append([r["dataset"], r["variant"], "-" if pd.isna(r["epsilon"]) else
                     f"{r['epsilon']:g}", pm(r["test_accuracy_mean"], r["test_accuracy_std"]),
                     int(r["n_seeds"]), f"{ver:.3g}" if private else "no privacy"])
    return md_table(["dataset", "method (noise calibrated with)", "target ε",
                     "test accuracy (%)", "seeds", "verified node-DP ε of the run"], rows) + "\n"


def _best(frame: pd.DataFrame, pattern: str) -> str:
    part = frame[frame["variant"].str.contains(pattern, regex=False)]
    if part.empty:
        return "not run"
    r = part.sort_values("test_accuracy_mean", ascending=False).iloc[0]
    return f"{format_value(r['test_accuracy_mean'], r['test_accuracy_std'])} ({r['variant']})"


def _comparison(summary: pd.DataFrame, paper: pd.DataFrame) -> list[list[str]]:
    rows = []
    for _, p in paper.iterrows():
        sub = summary[(summary["dataset"] == p["dataset"]) & (summary["epsilon"] == 1.0)]
        dpar = sub[sub["variant"].str.startswith("dpar")]
        rows.append([p["dataset"], _best(dpar, "(paper)"), f"{100 * p['dpar']:.2f}",
                     _best(dpar, "(dpgl)"), _best(sub, "features-dpsgd (paper)"),
                     _best(sub, "features-dpsgd (dpgl)"), f"{100 * p['features']:.2f}"]
                    if len(sub) else [p["dataset"], "not run", f"{100 * p['dpar']:.2f}",
                                      "not run", "not run", "not run",
                                      f"{100 * p['features']:.2f}"])
    return rows


def before_after(summary: pd.DataFrame, before_csv: Path) -> list[list[str]]:
    """Old (before issue #11, committed table) and new test accuracy side by side."""
    if not before_csv.exists():
        return []
    key = ["dataset", "variant", "epsilon"]
    merged = summary.merge(pd.read_csv(before_csv)[[*key, "test_accuracy_mean"]], on=key,
                           how="outer", suffixes=("", "_before"))
    rows = []
    for _, r in merged.sort_values(key).iterrows():
        now, was = r["test_accuracy_mean"], r["test_accuracy_mean_before"]
        reason = next((why for prefix, why in _CHANGE_REASON.items()
                       if str(r["variant"]).startswith(prefix)), "")
        rows.append([r["dataset"], r["variant"], "-" if pd.isna(r["epsilon"]) else
                     f"{r['epsilon']:g}", *["not run" if pd.isna(v) else f"{100 * v:.1f}"
                                           for v in (was, now)],
                     "" if pd.isna(now) or pd.isna(was) else f"{100 * (now - was):+.1f}",
                     reason])
    return rows


def _curve_md(c: pd.DataFrame, x: str, label: str) -> str:
    """Per dataset, a table of the curves (series x ``x``), mean ± std in %."""
    return "\n\n".join(f"{ds}:\n\n" + pivot_md(sub, "series", x, lambda r: pm(
        r["mean"], r["std"], 100), head=lambda v: f"{label}={v:g}")
        for ds, sub in c.groupby("dataset")) + "\n"


def figures(df: pd.DataFrame, fig1: list[RunConfig], split: list[RunConfig],
            out_dir: Path) -> tuple[dict[str, Any], list[Path]]:
    """Fig. 1 and Figs. 2-6: markdown tables per dataset (for the template) and plots."""
    out: dict[str, Any] = {"fig1": None, "recall": None, "split": None}
    paths: list[Path] = []
    f1 = df[df["key"].isin([c.key() for c in fig1])]
    if not f1.empty:
        f1 = f1.assign(epsilon=_target(f1))
        series = f1["method"] + " (" + f1["param_accounting"] + ")"
        c = curve(f1, "epsilon", series)
        paths.append(line_plot(c, "epsilon", "series", out_dir / "fig1_eps_pr.png",
                               "DPAR Fig. 1: DP-APPR alone (eps_pr), MLP trained without noise",
                               logx=True))
        out["fig1"] = _curve_md(c, "epsilon", "eps_pr")
        if "appr_topk_recall" in f1 and f1["appr_topk_recall"].notna().any():
            out["recall"] = _curve_md(curve(f1, "epsilon", series, "appr_topk_recall"),
                                      "epsilon", "eps_pr")
    sp = df[df["key"].isin([c.key() for c in split])]
    if not sp.empty:
        sp = sp.assign(epsilon=_target(sp))
        series = ("eps=" + sp["epsilon"].map(lambda e: f"{e:g}") + " ("
                  + sp["param_accounting"] + ")")
        c = curve(sp, "param_appr_share", series)
        paths.append(line_plot(c, "param_appr_share", "series",
                               out_dir / "figs2-6_budget_split.png",
                               "DPAR Figs. 2-6: share of eps given to DP-APPR (dpar-em0)"))
        out["split"] = _curve_md(c, "param_appr_share", "share")
    return out, paths


#: what a private selection on these runs is charged under, by the unit each method protects
_UNITS = ("node-DP", "bounded-degree node-DP")


def selection(df: pd.DataFrame, rows: list[dict[str, Any]], *, delta: float = 1e-4,
              seed: int = 0) -> dict[str, Any]:
    """Uncharged vs charged selection (docs/privacy.md, "Hyper-parameter selection") of the
    runs in ``df`` grouped like the table (dataset, variant, target eps): a group with one
    configuration selects nothing; a group with several is a central-model selection, replayed
    as Papernot & Steinke's (logarithmic K, E[K] = the candidates) and charged from the runs'
    stored RDP curves (``rows``: their stored records)."""
    if df.empty:
        return {"groups": 0, "single": 0, "table": "", "missing_curves": []}
    df = df.assign(variant=_variant(df), epsilon=_target(df))
    by = ("dataset", "variant", "epsilon")
    costs = selection_costs(df, group_by=by)
    several = costs[costs["n_configs"] > 1]
    out_rows, missing = [], []
    for unit in _UNITS:
        curves = stored_curves(rows, unit)
        part = df[df["key"].isin(list(curves))]
        sim = simulate_private_selection(part, curves, unit=unit, delta=delta, seed=seed,
                                         group_by=by)
        if len(sim):
            published = summarize(part, group_by=by, report=["test_accuracy"])
            sim = sim.merge(published[[*by, "test_accuracy_mean", "test_accuracy_std"]],
                            on=list(by), suffixes=("", "_published"))
            out_rows += [[r["dataset"], r["variant"], f"{r['epsilon']:g}",
                          str(r["n_configs"]), pm(r["test_accuracy_mean_published"],
                                                  r["test_accuracy_std_published"]),
                          f"{r['mean_runs']:.3g}", f"{r['charged_epsilon']:.3g}",
                          pm(r["test_accuracy_mean"], r["test_accuracy_std"])]
                         for _, r in sim.iterrows()]
    for _, r in several.iterrows():
        if not any(o[:3] == [r["dataset"], r["variant"], f"{r['epsilon']:g}"]
                   for o in out_rows):
            missing.append(f"{r['dataset']} / {r['variant']} / eps {r['epsilon']:g}")
    table = md_table(["dataset", "method", "target ε", "candidates",
                      "uncharged (chosen on validation, target ε)", "E[K]",
                      f"charged ε (δ = {delta:g})", "charged (Papernot & Steinke)"],
                     out_rows, ["---"] * 3 + ["---:"] * 5) if out_rows else ""
    return {"groups": len(costs), "single": int((costs["n_configs"] == 1).sum()),
            "table": table, "missing_curves": missing}


def report(ctx: Any) -> dict[str, Any]:
    repro, quick = ctx.repro, ctx.quick
    configs = repro.configs(quick)
    tab, fig1, split = (repro.configs(quick, s) for s in ("table", "fig1", "split"))
    df = ctx.frame(configs)
    if ctx.runs is not None:
        recall = {r["key"]: r["diagnostics"].get("appr_topk_recall") for r in ctx.runs.of(fig1)}
        df["appr_topk_recall"] = df["key"].map(recall)
    figs, paths = figures(df, fig1, split, ctx.out_dir)
    summary = table(df[df["key"].isin([c.key() for c in tab])])
    csv = to_csv(summary, ctx.path("results.csv"))
    md = _markdown(summary)
    ctx.path("results.md").write_text("# DPAR reproduction: test accuracy\n\n" + md,
                                      encoding="utf-8")
    rows = ctx.runs.of(tab) if ctx.runs is not None else []
    sel = selection(df[df["key"].isin([c.key() for c in tab])], rows)
    sweep = df[df["key"].isin([c.key() for c in split])]
    return {"written": [ctx.path("results.md"), csv, *paths], "table": md, **figs,
            "selection": sel, "sweep_curves": sum(
                any(u in (r["privacy"].get("rdp") or {}) for u in _UNITS)
                for r in (ctx.runs.of(split) if ctx.runs is not None else [])),
            "sweep_runs": len(sweep),
            "minutes": float(df["time_total"].sum()) / 60 if len(df) else 0.0,
            "stored": ctx.runs.count(configs) if ctx.runs else 0, "planned": len(configs),
            "comparison": _comparison(summary, repro.paper()),
            "before_after": before_after(summary, ctx.path(BEFORE_FILE))}
