"""blink-pp (dpgl's own method, docs/own-method.md) against Blink's three variants on Blink's
protocol: test accuracy per dataset and epsilon (mean ± std over 10 seeds), the margin over the
best Blink variant, and per seed, whether blink-pp beats every Blink variant on that seed's
split and reports. Grids: ``spec.yaml``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dpgl.experiments.report import summarize
from dpgl.experiments.reproductions._tables import md_table, pm

BLINK = ("blink-hard", "blink-soft", "blink-hybrid")
OURS = "blink-pp"


def _chosen(frame: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, method, epsilon), the runs of the configuration chosen on validation."""
    return frame[frame["hparam_key"].isin(set(summary["hparam_key"]))]


def margin(runs: pd.DataFrame) -> dict[str, Any] | None:
    """blink-pp against the best Blink variant at one (dataset, epsilon) point, over the seeds
    on which blink-pp and every variant that ran at the point have a run (None: blink-pp or
    every variant has none). A variant without a single run there (Blink-Soft on Facebook at
    small eps: more weighted pairs than it may keep) is listed as ``missing``, not compared."""
    acc = runs.pivot_table(index="seed", columns="method", values="test_accuracy")
    ran = [b for b in BLINK if b in acc and acc[b].notna().any()]
    if OURS not in acc or not ran:
        return None
    acc = acc.dropna(subset=[OURS, *ran])
    if acc.empty:
        return None
    best_blink = acc[ran].mean().idxmax()
    ours, other = acc[OURS].mean() * 100, acc[best_blink].mean() * 100
    return {
        "dataset": runs["dataset"].iloc[0], "epsilon": runs["epsilon"].iloc[0],
        "seeds": len(acc), "ours": ours, "missing": [b for b in BLINK if b not in ran],
        "best_blink": best_blink, "blink": other, "margin": ours - other,
        "wins": int((acc[OURS] > acc[ran].max(axis=1)).sum()),
        "paired_std": float(np.std(100 * (acc[OURS] - acc[best_blink]), ddof=1))
        if len(acc) > 1 else float("nan")}


def report(ctx: Any) -> dict[str, Any]:
    configs = ctx.repro.configs(ctx.quick)
    frame = ctx.frame(configs)
    selection = ctx.repro.steps(ctx.quick)[0].grids[0].selection
    tables, margins, written = [], [], []
    if not frame.empty:
        summary = summarize(frame, selection=selection)
        summary.to_csv(ctx.path("results.csv"), index=False)
        written.append(ctx.path("results.csv"))
        runs = _chosen(frame, summary)
        for ds in sorted(summary["dataset"].unique()):
            s = summary[summary["dataset"] == ds]
            eps = sorted(s["epsilon"].dropna().unique())
            rows = []
            for m in ("none", "mlp", *BLINK, OURS):
                g = s[s["method"] == m]
                if g.empty:
                    continue
                if m in ("none", "mlp"):
                    r = g.iloc[0]
                    rows.append([m, *[pm(r["test_accuracy_mean"], r["test_accuracy_std"])
                                      for _ in eps]])
                    continue
                rows.append([m, *[pm(h.iloc[0]["test_accuracy_mean"],
                                     h.iloc[0]["test_accuracy_std"])
                                  if len(h := g[g["epsilon"] == e]) else "-" for e in eps]])
            tables.append({"dataset": ds, "table": md_table(
                ["method", *[f"eps={e:g}" for e in eps]], rows,
                ["---"] + ["---:"] * len(eps))})
            margins += [m for e in eps if (m := margin(
                runs[(runs["dataset"] == ds) & (runs["epsilon"] == e)])) is not None]
    margin_md = md_table(
        ["dataset", "eps", "seeds", "blink-pp", "best Blink variant (mean)", "its mean",
         "margin", "std of paired difference", "seeds where blink-pp beats every variant run",
         "margin >= 2", "variants not run"],
        [[m["dataset"], f"{m['epsilon']:g}", m["seeds"], f"{m['ours']:.1f}",
          m["best_blink"], f"{m['blink']:.1f}", f"{m['margin']:+.2f}",
          f"{m['paired_std']:.1f}", f"{m['wins']}/{m['seeds']}",
          "yes" if m["margin"] >= 2 else "**no**", ", ".join(m["missing"]) or "-"]
         for m in margins],
        ["---", "---:", "---:", "---:", "---", "---:", "---:", "---:", "---:", "---", "---"]
    ) if margins else ""
    completeness = ctx.completeness()
    return {"tables": tables, "margins": margins, "margin_table": margin_md,
            "completeness": completeness, "written": written}
