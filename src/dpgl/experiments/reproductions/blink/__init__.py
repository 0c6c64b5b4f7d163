"""Blink reproduction (Zhu, Tan, Xiao, CCS 2023), Fig. 5: test accuracy vs epsilon of every
edge-LDP method (Cora / CiteSeer / Facebook; GCN, GraphSAGE, GAT; LastFM's features are not
available offline). Quick grid: ``quick.yaml`` (dpgl's protocol, Cora / GCN; the paper's
reference points: ``paper.csv``). Full grid: the authors' protocol, one step per block
(``spec.yaml``), their hyper-parameters per configuration (:mod:`.hparams`, applied by
:func:`prepare`), compared with every Fig. 5 number (``paper_full.csv``,
:mod:`.paper_compare`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from dpgl.experiments.config import RunConfig
from dpgl.experiments.report import summarize, to_csv, write_report
from dpgl.experiments.reproductions._tables import md_table, pm
from dpgl.experiments.reproductions.blink import hparams, paper_compare
from dpgl.experiments.selection import local_at_total_budget, selection_costs

COMPARISON_FILE = "paper_comparison.csv"
#: why a point is more than paper_compare.POINTS from the paper when one std does not cover it
GAP_NOTES = "gap_notes.csv"


def prepare(cfg: RunConfig, repro: Any = None) -> RunConfig:
    """A configuration marked ``hparams: authors`` gets the authors' hyper-parameters for its
    (dataset, model, method, eps) (:func:`.hparams.apply`); others are left as they are."""
    return hparams.apply(cfg)


def _cell(hit: pd.DataFrame) -> str:
    return pm(hit.iloc[0]["test_accuracy_mean"], hit.iloc[0]["test_accuracy_std"]) if len(
        hit) else ""


def _pm_or(mean: float, std: float, missing: str = "not stored") -> str:
    return missing if pd.isna(mean) else pm(mean, std)


def selection(frame: pd.DataFrame, spec: Any) -> dict[str, Any]:
    """Uncharged vs charged selection (docs/privacy.md, "Hyper-parameter selection"): what the
    published selection spends per user, and the accuracy at a total per-user budget with the
    selection charged (one collection per candidate value) or a fixed public default."""
    costs = selection_costs(frame)
    total = local_at_total_budget(frame, selection=spec)
    rows = [[r["method"], f"{r['total_epsilon']:g}",
             _pm_or(r["published_mean"], r["published_std"]),
             _pm_or(r["fixed_mean"], r["fixed_std"]),
             _pm_or(r["charged_mean"], r["charged_std"])] for _, r in total.iterrows()]
    c = int(total["collections"].max()) if len(total) else 1
    table = md_table(["method", "total ε per user",
                      f"as published: chosen on validation at ε per collection ({c}ε spent)",
                      "public default, no selection (ε)",
                      f"chosen on validation, charged: {c} collections at ε/{c}"], rows,
                     ["---", "---:", "---:", "---:", "---:"])
    chosen = costs[costs["cost"] == "collections"]
    free = sorted(costs[(costs["cost"] == "no selection")
                        & costs["epsilon"].notna()]["method"].unique())
    top = total[total["total_epsilon"] == total["total_epsilon"].max()] if len(total) else total
    return {"table": table, "collections": c,
            "selected": sorted(set(chosen["selected"])), "methods": sorted(set(chosen["method"])),
            "default": total["default"].iloc[0] if len(total) else "",
            "single": free, "top": [{k: r[k] for k in ("method", "total_epsilon",
                                                        "published_mean", "published_spent",
                                                        "fixed_mean", "charged_mean",
                                                        "charged_spent")}
                                    for _, r in top.iterrows()]}


def devices_md(rows: list[dict[str, Any]]) -> str:
    """Where these stored runs trained, in words: ``195 on the CPU, 27 on cuda:0`` (each run
    records its device, ``info["device"]``; a run stored before devices were recorded counts
    as the CPU's)."""
    kept = Counter(str(r.get("info", {}).get("device", "cpu")) for r in rows)
    return ", ".join(f"{n} on {'the CPU' if d == 'cpu' else d}"
                     for d, n in sorted(kept.items(), key=lambda kv: (kv[0] != "cpu", kv[0])))


def missing_md(configs: list[Any], runs: Any) -> str:
    """Which runs of a block are not stored, per method in the grid's order: the epsilons at
    which every seed is missing, then those missing some seeds, e.g. ``rr at ε = 1, 2 and
    seeds 0, 2 at ε = 3``."""
    planned: dict[str, dict[float, list[int]]] = {}
    missing: dict[str, dict[float, list[int]]] = {}
    for c in configs:
        planned.setdefault(c.method, {}).setdefault(c.epsilon, []).append(c.seed)
        if runs is None or not runs.count([c]):
            missing.setdefault(c.method, {}).setdefault(c.epsilon, []).append(c.seed)
    parts = []
    for method, by_eps in missing.items():
        whole = [e for e in by_eps if len(by_eps[e]) == len(planned[method][e])]
        some = [e for e in by_eps if e not in whole]
        words = []
        if whole:
            words.append("at ε = " + ", ".join(f"{e:g}" for e in sorted(whole))
                         if whole[0] is not None else "all its runs")
        words += [f"seed{'s' if len(by_eps[e]) > 1 else ''} "
                  f"{', '.join(str(x) for x in sorted(by_eps[e]))} at ε = {e:g}"
                  for e in sorted(some)]
        parts.append(f"{method} {', '.join(words[:-1])}{' and ' if len(words) > 1 else ''}"
                     f"{words[-1]}")
    return "; ".join(parts)


def report(ctx: Any) -> dict[str, Any]:
    return _quick_report(ctx) if ctx.quick else full_report(ctx)


def full_report(ctx: Any) -> dict[str, Any]:
    """The full protocol: per block (step), ours against the paper's Fig. 5 number at every
    point (:mod:`.paper_compare`), the agreement counts per block and overall, and what the
    hyper-parameters were; writes ``paper_comparison.csv`` (and ``results.md`` /
    ``results.csv`` / the plot once runs are stored)."""
    configs = ctx.repro.configs(False)
    frame = ctx.frame(configs)
    spec = ctx.repro.steps(False)[0].grids[0].selection
    written = []
    summary = pd.DataFrame()
    if not frame.empty:
        written = write_report(frame, ctx.out_dir, selection=spec,
                               title="Blink Fig. 5 (full grid, the authors' protocol)")
        summary = summarize(frame, selection=spec)
    paper = paper_compare.read_paper(ctx.repro.dir / "paper_full.csv")
    table = paper_compare.compare(paper_compare.planned_points(configs), summary, paper)
    written.append(to_csv(table, ctx.out_dir / COMPARISON_FILE))
    done = {label: (n, total) for label, n, total in ctx.completeness()}
    blocks = []
    for step in ctx.repro.steps(False):
        grid = step.grids[0]
        expanded = ctx.repro.expand(grid)
        part = table[table["dataset"].isin(grid.datasets) & table["model"].isin(grid.models)]
        blocks.append({"label": step.label, "dataset": grid.datasets[0],
                       "model": grid.models[0], "stored": done.get(step.label, (0, 0))[0],
                       "planned": done.get(step.label, (0, 0))[1],
                       "missing": missing_md(expanded, ctx.runs),
                       "table": paper_compare.block_md(part),
                       "mapped": paper_compare.block_md(part, mapped=True),
                       "notes": paper_compare.hparam_notes(part),
                       "devices": devices_md(ctx.runs.of(expanded)
                                             if ctx.runs is not None else [])})
    count = paper_compare.counts(table)
    own = ctx.frame(ctx.repro.configs(False, "ldpgen-chung-lu"))
    generator = paper_compare.generator_md(summarize(own, selection=spec) if len(own)
                                           else pd.DataFrame(), table)
    over = paper_compare.gaps(table, paper_compare.read_gap_notes(ctx.repro.dir / GAP_NOTES))
    why = over["why"] if len(over) else pd.Series(dtype=str)
    return {"generator": generator,
            "gaps": paper_compare.gaps_md(over) if len(over) else "",
            "gap_counts": {"over": len(over), "std": int((why == "within one std").sum()),
                           "unexplained": int(why.str.startswith("unexplained").sum()),
                           "other_features": int((why == paper_compare.NOT_COMPARABLE).sum())},
            "blocks": blocks, "counts": paper_compare.counts_md(count),
            "overall": count.set_index("block").to_dict("index"),
            "points": paper_compare.POINTS, "stored": ctx.runs.count(configs)
            if ctx.runs is not None else 0, "n_configs": len(configs), "written": written,
            "comparison_file": COMPARISON_FILE}


def _quick_report(ctx: Any) -> dict[str, Any]:
    configs = ctx.repro.configs(ctx.quick)
    frame = ctx.frame(configs)
    selection_spec = ctx.repro.steps(ctx.quick)[0].grids[0].selection
    written = []
    if not frame.empty:
        written = write_report(frame, ctx.out_dir, selection=selection_spec,
                               title=f"Blink Fig. 5 ({'quick' if ctx.quick else 'full'} grid)")
        summary = summarize(frame, selection=selection_spec)
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
    sel = selection(frame, selection_spec) if not frame.empty else None
    return {"paper_rows": paper, "method_table": methods, "stored": stored,
            "n_configs": len(configs), "missing": missing, "written": written,
            "selection": sel}
