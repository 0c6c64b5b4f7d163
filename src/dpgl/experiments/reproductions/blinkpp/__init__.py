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
            for e in eps:
                r = runs[(runs["dataset"] == ds) & (runs["epsilon"] == e)]
                acc = r.pivot_table(index="seed", columns="method", values="test_accuracy")
                if OURS not in acc or not set(BLINK) <= set(acc.columns):
                    continue
                acc = acc.dropna(subset=[OURS, *BLINK])
                best_blink = acc[list(BLINK)].mean().idxmax()
                ours, other = acc[OURS].mean() * 100, acc[best_blink].mean() * 100
                per_seed_best = acc[list(BLINK)].max(axis=1)
                margins.append({
                    "dataset": ds, "epsilon": e, "seeds": len(acc), "ours": ours,
                    "best_blink": best_blink, "blink": other, "margin": ours - other,
                    "wins": int((acc[OURS] > per_seed_best).sum()),
                    "paired_std": float(np.std(100 * (acc[OURS] - acc[best_blink]), ddof=1))
                    if len(acc) > 1 else float("nan")})
    margin_md = md_table(
        ["dataset", "eps", "seeds", "blink-pp", "best Blink variant (mean)", "its mean",
         "margin", "std of paired difference", "seeds where blink-pp beats all 3 variants",
         "margin >= 2"],
        [[m["dataset"], f"{m['epsilon']:g}", m["seeds"], f"{m['ours']:.1f}",
          m["best_blink"], f"{m['blink']:.1f}", f"{m['margin']:+.2f}",
          f"{m['paired_std']:.1f}", f"{m['wins']}/{m['seeds']}",
          "yes" if m["margin"] >= 2 else "**no**"] for m in margins],
        ["---", "---:", "---:", "---:", "---", "---:", "---:", "---:", "---:", "---"]
    ) if margins else ""
    completeness = ctx.completeness()
    return {"tables": tables, "margins": margins, "margin_table": margin_md,
            "completeness": completeness, "written": written}
