"""Solitude reproduction (Lin, Li & Wang, "Towards Private Learning on Decentralized Graphs
with Local Differential Privacy", IEEE TIFS 2022): Table 3 (Base / LPGNN-adapted / Solitude
at eps_x = 1 and eps_a in {7.0, ..., 8.0}, GCN and GraphSAGE, Cora and CiteSeer's largest
component), Fig. 5 (label rate) and ``solitude-link`` (the edge part alone, Blink's protocol);
privacy variants at eps_a = 8 without published numbers: the feature budget eps_x (``xeps``) and
k-RR labels (``yeps``). Grids: ``spec.yaml``; the paper's Table 3 values: ``paper.csv``."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from dpgl.experiments.report import summarize
from dpgl.experiments.reproductions._tables import line_plot, md_table, pivot_md, pm

_BY = ["dataset", "model", "epsilon", "param_variant"]


def _table3_md(s: pd.DataFrame, paper: pd.DataFrame) -> str:
    eps = sorted(s["epsilon"].unique())
    rows = []
    for (ds, model, variant), g in s.groupby(["dataset", "model", "param_variant"], sort=True):
        p = paper[(paper["dataset"] == ds) & (paper["model"] == model)
                  & (paper["variant"] == variant)]["test_accuracy"].tolist()
        rows.append([ds, model, variant, *[pm(r.iloc[0]["test_accuracy_mean"],
                                              r.iloc[0]["test_accuracy_std"])
                                           if len(r := g[g["epsilon"] == e]) else "-"
                                           for e in eps],
                     f"{p[0]} → {p[-1]}" if p else "-"])
    return md_table(["dataset", "model", "variant", *[f"ε_a={e:g}" for e in eps],
                     "paper (ε_a=7.0 → 8.0)"], rows) + "\n"


def _percent(s: pd.DataFrame, **rename: str) -> pd.DataFrame:
    s = s.rename(columns={"test_accuracy_mean": "mean", "test_accuracy_std": "std", **rename})
    return s.assign(mean=s["mean"] * 100, std=s["std"] * 100)


def _variant_tables(s: pd.DataFrame, column: str, head: str) -> list[tuple[str, str]]:
    """One table per (dataset, model): a row per variant, a column per value of ``column``."""
    def title(v: float) -> str:
        return f"{head}=∞" if math.isinf(v) else f"{head}={v:g}"
    return [(f"{ds}, {model}", pivot_md(g, "param_variant", column,
                                         lambda r: pm(r["mean"], r["std"], 100), head=title,
                                         corner="variant"))
            for (ds, model), g in s.groupby(["dataset", "model"], sort=True)]


def privacy_variants(ctx: Any) -> tuple[dict[str, Any], list[Any]]:
    """The ``xeps`` (eps_x) and ``yeps`` (eps_y, with the labels-as-is runs of ``xeps`` at
    eps_x = 1 as eps_y = infinity) tables at eps_a = 8; their csv files."""
    repro, quick, written = ctx.repro, ctx.quick, []
    out: dict[str, Any] = {"xeps": None, "yeps": None}
    dfx = ctx.frame(repro.configs(quick, "xeps"))
    if not dfx.empty:
        fe = dfx.get("param_feature_epsilon")
        dfx["eps_x"] = 1.0 if fe is None else fe.astype(float).fillna(1.0)  # the default
        sx = _percent(summarize(dfx, group_by=["dataset", "model", "epsilon", "param_variant",
                                               "eps_x"]))
        sx.to_csv(ctx.path("xeps.csv"), index=False, float_format="%.4g")
        written.append(ctx.path("xeps.csv"))
        out["xeps"] = _variant_tables(sx, "eps_x", "ε_x")
    dfy = ctx.frame(repro.configs(quick, "yeps"))
    if not dfy.empty:
        ref = dfx[dfx["eps_x"] == 1.0] if not dfx.empty else dfx
        both = pd.concat([dfy, ref], ignore_index=True)
        both["eps_y"] = both["param_label_epsilon"].astype(float).fillna(math.inf)
        sy = _percent(summarize(both, group_by=["dataset", "model", "epsilon", "param_variant",
                                                "eps_y"]))
        sy.to_csv(ctx.path("yeps.csv"), index=False, float_format="%.4g")
        written.append(ctx.path("yeps.csv"))
        out["yeps"] = _variant_tables(sy, "eps_y", "ε_y")
    return out, written


def report(ctx: Any) -> dict[str, Any]:
    """Tables and plots from the stored runs when there are any; the README reads the
    tables (the committed ones when the runs were not kept)."""
    repro, quick, paper, written = ctx.repro, ctx.quick, ctx.repro.paper(), []
    df3 = ctx.frame(repro.configs(quick, "table3"))
    if not df3.empty:
        s3 = summarize(df3, group_by=_BY)
        s3.to_csv(ctx.path("table3.csv"), index=False)
        ctx.path("table3.md").write_text(_table3_md(s3, paper), encoding="utf-8")
        p3 = _percent(s3)
        written += [ctx.path("table3.csv"), ctx.path("table3.md"),
                    line_plot(p3.assign(dataset=p3["dataset"] + "/" + p3["model"]), "epsilon",
                              "param_variant", ctx.path("table3.png"),
                              "Solitude Table 3: accuracy vs eps_a (eps_x = 1)")]
    raw = ctx.frame(repro.configs(quick, "unstandardized")) if quick else pd.DataFrame()
    if not raw.empty:  # the first quick run, before feature standardization
        ctx.path("table3_unstandardized.md").write_text(
            _table3_md(summarize(raw, group_by=_BY), paper), encoding="utf-8")
        written.append(ctx.path("table3_unstandardized.md"))
    df5 = ctx.frame(repro.configs(quick, "fig5"))
    if not df5.empty:
        s5 = _percent(summarize(df5, group_by=["dataset", "param_variant", "param_label_rate"]),
                      param_label_rate="label_rate")
        s5.to_csv(ctx.path("fig5_label_rate.csv"), index=False)
        written += [ctx.path("fig5_label_rate.csv"),
                    line_plot(s5, "label_rate", "param_variant", ctx.path("fig5_label_rate.png"),
                              "Solitude Fig. 5: accuracy vs label rate (eps_a=8, eps_x=1)")]
    df = ctx.frame(repro.configs(quick, "link"))
    if not df.empty:
        df["structure_learning"] = df.get("param_structure_learning",
                                          pd.Series(None, index=df.index)).astype(str)
        summarize(df, group_by=["dataset", "method", "epsilon", "structure_learning"]).to_csv(
            ctx.path("link.csv"), index=False)
        written.append(ctx.path("link.csv"))

    def read(name: str) -> Any:
        p = ctx.path(name)
        return None if not p.exists() else (
            pd.read_csv(p) if name.endswith(".csv") else p.read_text(encoding="utf-8"))

    s3, f5 = read("table3.csv"), read("fig5_label_rate.csv")
    versus = []
    for _, p in paper.iterrows():
        row = pd.DataFrame() if s3 is None else s3[
            (s3["dataset"] == p["dataset"]) & (s3["model"] == p["model"])
            & (s3["param_variant"] == p["variant"]) & (s3["epsilon"] == p["epsilon"])]
        versus.append({**p, "ours": float(row.iloc[0]["test_accuracy_mean"]) * 100
                       if len(row) else None})
    variants, more = privacy_variants(ctx)
    written += more
    return {"written": written, "table3": read("table3.md"), "versus": versus, **variants,
            "unstandardized": read("table3_unstandardized.md"),
            "fig5": None if f5 is None else pivot_md(
                f5, "label_rate", "param_variant", lambda r: f"{r['mean']:.1f}",
                label=lambda v: f"{v:g}", corner="label rate"),
            "link": read("link.csv")}
