"""blink-pp (dpgl's own method, docs/own-method.md) against Blink's three variants on Blink's
protocol: test accuracy per dataset and epsilon (mean ± std over 10 seeds), the margin over the
best Blink variant, and per seed, whether blink-pp beats every Blink variant on that seed's
split and reports. Grids: ``spec.yaml``."""

from __future__ import annotations

import json
from collections import Counter
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


def complete_seeds(frame: pd.DataFrame, selection: Any
                   ) -> tuple[pd.DataFrame, dict[tuple[str, float], list[int]]]:
    """The runs a table may use, in two stages per (dataset, epsilon) point, so that a seed
    still in progress never mixes into a mean, a selection or a margin:

    * **selection seeds**: the seeds on which every configuration with a run at the point
      (any seed) has one. Each method's configuration is chosen on these
      (:func:`~dpgl.experiments.report.summarize` with ``selection``), and the other
      configurations' runs are kept on these seeds only;
    * **evaluation seeds**: the selection seeds, and every other seed on which each method's
      chosen configuration has a run (a seed run after the choice, with that configuration
      only). The chosen configurations' runs are kept on these.

    A configuration without a single run (Blink-Soft on Facebook at small eps fails by design)
    does not hold a seed back. Runs without epsilon (the non-private GNN, the MLP) are kept as
    they are. Returns the kept runs and the selection seeds per (dataset, epsilon)."""
    selection_seeds: dict[tuple[str, float], list[int]] = {}
    if frame.empty:
        return frame, selection_seeds
    keep = frame["epsilon"].isna()
    for (ds, eps), g in frame[~keep].groupby(["dataset", "epsilon"]):
        per_seed = g.groupby("seed")["hparam_key"].nunique()
        full = set(per_seed[per_seed == g["hparam_key"].nunique()].index)
        if not full:
            continue
        on_full = g[g["seed"].isin(full)]
        chosen = set(summarize(on_full, selection=selection)["hparam_key"])
        methods = g[g["hparam_key"].isin(chosen)].groupby("seed")["method"].nunique()
        evaluation = full | set(methods[methods == g["method"].nunique()].index)
        keep |= frame.index.isin(g.index[g["seed"].isin(full)
                                         | (g["hparam_key"].isin(chosen)
                                            & g["seed"].isin(evaluation))])
        selection_seeds[(str(ds), float(eps))] = sorted(int(x) for x in full)
    return frame[keep], selection_seeds


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


def chosen_config(params: str) -> str:
    """blink-pp's configuration in words from its ``params`` JSON: graph, prior covariates
    (kNN size), edge scale."""
    p = json.loads(params)
    cov = p.get("covariates", "both")
    prior = {"both": f"kNN {p.get('knn', 10)} + group", "knn": f"kNN {p.get('knn', 10)}",
             "group": "group", "none": "no covariate"}[cov]
    scale = p.get("edge_scale", 1)
    text = f"{p.get('graph', 'hybrid')}, {prior}, scale {'val' if scale == 'val' else scale}"
    if p.get("public_graph") is not None:
        text += f", public kNN-{p['public_graph']} graph, weight {p.get('public_scale', 1)}"
    return text


def scales_chosen(rows: list[dict[str, Any]]) -> str:
    """How often each edge scale was kept by ``edge_scale: val`` in these runs: ``0.05 x7,
    0.1 x3`` (``-``: no run chose one), then the public graph's weights where runs had one."""
    kept = Counter(r["info"]["edge_scale"] for r in rows if "edge_scale" in r.get("info", {}))
    text = ", ".join(f"{s:g} x{n}" for s, n in sorted(kept.items(), reverse=True)) or "-"
    public = Counter(r["info"]["public_scale"] for r in rows
                     if "public_scale" in r.get("info", {}))
    if public:
        text += "; public graph's weight " + ", ".join(
            f"{s:g} x{n}" for s, n in sorted(public.items(), reverse=True))
    return text


def _split_ablation(ctx: Any) -> tuple[list[Any], list[Any]]:
    """The main comparison's configurations and the ablation grids' (``*-ablation-*``)."""
    ablation = {c.key() for st in ctx.repro.steps(ctx.quick) for g in st.grids
                if "-ablation-" in g.name for c in ctx.repro.expand(g)}
    configs = ctx.repro.configs(ctx.quick)
    return ([c for c in configs if c.key() not in ablation],
            [c for c in configs if c.key() in ablation])


def report(ctx: Any) -> dict[str, Any]:
    configs, ablation_configs = _split_ablation(ctx)
    selection = ctx.repro.steps(ctx.quick)[0].grids[0].selection
    frame, selection_seeds = complete_seeds(ctx.frame(configs), selection)
    tables, margins, written, ablation = [], [], [], []
    ablation_gap: dict[str, float] = {}  # per dataset: the largest |scaled Hybrid - blink-pp|
    if not frame.empty:
        summary = summarize(frame, selection=selection)
        summary.to_csv(ctx.path("results.csv"), index=False)
        written.append(ctx.path("results.csv"))
        runs = _chosen(frame, summary)
        by_key = {r["key"]: r for r in ctx.runs.rows}
        abl = ctx.frame(ablation_configs)
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
                point = runs[(runs["dataset"] == ds) & (runs["epsilon"] == e)]
                if (m := margin(point)) is None:
                    continue
                ours = point[point["method"] == OURS]
                m["config"] = chosen_config(ours["params"].iloc[0])
                m["selection_seeds"] = len(selection_seeds[(ds, float(e))])
                m["scales"] = scales_chosen([by_key[k] for k in ours["key"]])
                margins.append(m)
                hyb = point[point["method"] == "blink-hybrid"]
                here = abl[(abl["dataset"] == ds) & (abl["epsilon"] == e)
                           & abl["seed"].isin(set(hyb["seed"]))] if not abl.empty else abl
                if here.empty or hyb.empty:
                    continue
                scaled = here[here["method"] == "blink-hybrid"]
                public = here[here["method"] == OURS]
                scaled_mean = 100 * scaled["test_accuracy"].mean()
                ablation.append([ds, f"{e:g}", f"{100 * hyb['test_accuracy'].mean():.1f}",
                                 f"{scaled_mean:.1f}",
                                 scales_chosen([by_key[k] for k in scaled["key"]]),
                                 f"{100 * public['test_accuracy'].mean():.1f} ({len(public)})"
                                 if len(public) else "not run",
                                 f"{m['ours']:.1f}", len(scaled)])
                ablation_gap[ds] = max(ablation_gap.get(ds, 0.0), abs(scaled_mean - m["ours"]))
    margin_md = md_table(
        ["dataset", "eps", "seeds", "selection seeds", "blink-pp", "best Blink variant (mean)",
         "its mean", "margin", "std of paired difference",
         "seeds where blink-pp beats every variant run",
         "margin >= 2", "variants not run", "blink-pp's configuration (chosen on validation)",
         "edge scales kept"],
        [[m["dataset"], f"{m['epsilon']:g}", m["seeds"], m["selection_seeds"], f"{m['ours']:.1f}",
          m["best_blink"], f"{m['blink']:.1f}", f"{m['margin']:+.2f}",
          f"{m['paired_std']:.1f}", f"{m['wins']}/{m['seeds']}",
          "yes" if m["margin"] >= 2 else "**no**", ", ".join(m["missing"]) or "-",
          m["config"], m["scales"]]
         for m in margins],
        ["---", "---:", "---:", "---:", "---:", "---", "---:", "---:", "---:", "---:", "---",
         "---", "---", "---"]
    ) if margins else ""
    ablation_md = md_table(
        ["dataset", "eps", "Blink-Hybrid", "Blink-Hybrid, edge scale on validation",
         "edge scales kept", "public kNN graph alone (runs)", "blink-pp", "runs"], ablation,
        ["---", "---:", "---:", "---:", "---", "---:", "---:", "---:"]) if ablation else ""
    completeness = ctx.completeness()
    return {"tables": tables, "margins": margins, "margin_table": margin_md,
            "ablation_table": ablation_md, "ablation_gap": ablation_gap,
            "completeness": completeness, "written": written}
