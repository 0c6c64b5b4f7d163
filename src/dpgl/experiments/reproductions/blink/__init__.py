"""Blink reproduction (Zhu, Tan, Xiao, CCS 2023), Fig. 5: test accuracy vs epsilon of every
edge-LDP method (Cora / CiteSeer / Facebook; GCN, GraphSAGE, GAT; 2:1:1 random split; LastFM's
features are not available offline). Grids: ``quick.yaml`` / ``full.yaml``; the paper's
reference points (Cora, GCN): ``paper.csv``."""

from __future__ import annotations

from typing import Any

import pandas as pd

from dpgl.experiments.report import summarize, write_report
from dpgl.experiments.reproductions._tables import md_table, pm


def _cell(hit: pd.DataFrame) -> str:
    return pm(hit.iloc[0]["test_accuracy_mean"], hit.iloc[0]["test_accuracy_std"]) if len(
        hit) else ""


def report(ctx: Any) -> dict[str, Any]:
    configs = ctx.repro.configs(ctx.quick)
    frame = ctx.frame(configs)
    written = []
    if not frame.empty:
        selection = ctx.repro.steps(ctx.quick)[0].grids[0].selection
        written = write_report(frame, ctx.out_dir, selection=selection,
                               title=f"Blink Fig. 5 ({'quick' if ctx.quick else 'full'} grid)")
        summary = summarize(frame, selection=selection)
    else:  # no per-run data committed: the summary the runs gave
        summary = pd.read_csv(ctx.path("results.csv"))
    sub = summary[(summary["dataset"] == "cora") & (summary["model"] == "gcn")]
    paper = []
    for _, p in ctx.repro.paper().iterrows():
        hit = sub[(sub["method"] == p["method"])
                  & ((sub["epsilon"] == p["epsilon"]) | pd.isna(p["epsilon"]))]
        r = hit.iloc[0] if len(hit) else None
        paper.append({"method": p["method"], "paper": p["test_accuracy"],
                      "epsilon": "-" if pd.isna(p["epsilon"]) else p["epsilon"],
                      "ours": None if r is None else _cell(hit),
                      "mean": None if r is None else 100 * r["test_accuracy_mean"],
                      "std": None if r is None else 100 * r["test_accuracy_std"]})
    eps = sorted(sub["epsilon"].dropna().unique())
    rows = []
    for method in sorted(sub["method"].unique()):
        m = sub[sub["method"] == method]
        rows.append([method, *[_cell(m[m["epsilon"] == e]) for e in eps],
                     _cell(m[m["epsilon"].isna()])])
    methods = md_table(["method", *[f"eps={e:g}" for e in eps], "non-private"], rows,
                       ["---"] + ["---:"] * (len(eps) + 1))
    stored = ctx.runs.count(configs) if ctx.runs is not None else None
    missing = [c.label() for c in configs if ctx.runs is not None and not ctx.runs.count([c])]
    return {"paper_rows": paper, "method_table": methods, "stored": stored,
            "n_configs": len(configs), "missing": missing, "written": written}
