"""LPGNN reproduction (Sajadmanesh & Gatica-Perez, "Locally Private Graph Neural Networks",
CCS 2021): Table 3 (``lpgnn`` vs GCN+Raw / +RND / +OHD, K chosen on validation), RQ2 / Fig. 5
(aggregation error, no training: :func:`measure`), RQ3 / Fig. 6 (K, self-loops), RQ4 / Fig. 7
(label rate) and a control at eps = 0.001. Grids: ``spec.yaml``; the paper's Table 3 values
at eps = 1: ``paper.csv``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from dpgl.datasets import load_dataset
from dpgl.experiments.report import summarize
from dpgl.experiments.reproductions._tables import line_plot, md_table, pivot_md, pm
from dpgl.experiments.selection import per_seed_selection, selection_costs
from dpgl.graph.kprop import kprop_matrix
from dpgl.mechanisms.features import FeatureRandomizer, public_feature_range
from dpgl.rng import make_rng

BASELINES = ["gcn-raw", "gcn-rnd", "gcn-ohd"]


def aggregation_error(dataset: str, data_dir: Path | None, epsilons: list[float],
                      seeds: int) -> pd.DataFrame:
    """Mean absolute error |AGG(x') - AGG(x)| per entry, one aggregation step over N(v) - {v}
    (LPGNN RQ2, Fig. 5)."""
    data = load_dataset(dataset, data_dir)
    frange = public_feature_range(data)
    x = data.x.double()
    n, d = x.shape
    rows = []
    adjs = {a: kprop_matrix(data.edge_index, n, aggregator=a) for a in ("gcn", "mean")}
    true = {a: (adj.to(torch.float64) @ x) for a, adj in adjs.items()}
    for eps in epsilons:
        for mech, agg in (("multibit", "mean"), ("1bit", "mean"), ("gaussian", "mean"),
                          ("multibit", "gcn")):
            errs = []
            for s in range(seeds):
                rand = FeatureRandomizer(eps, d, mech, delta=1e-4, feature_range=frange)
                xp = torch.from_numpy(rand.privatize(x.numpy(), make_rng(1000 + s))[0])
                errs.append(float((adjs[agg].to(torch.float64) @ xp - true[agg]).abs().mean()))
            rows.append({"dataset": dataset, "epsilon": eps, "mechanism": mech,
                         "aggregator": agg, "series": f"{mech} / {agg}",
                         "mean": float(np.mean(errs)), "std": float(np.std(errs))})
    return pd.DataFrame(rows)


def report_correlation(dataset: str, data_dir: Path | None, epsilons: list[float],
                       seed: int = 0) -> dict[str, float]:
    """Pearson correlation between the true features and the multi-bit reports the server
    rectifies, per eps (how much feature information survives)."""
    data = load_dataset(dataset, data_dir)
    x = data.x.double().numpy()
    rand = {e: FeatureRandomizer(e, x.shape[1], feature_range=public_feature_range(data))
            for e in epsilons}
    return {f"{e:g}": float(np.corrcoef(x.ravel(), r.privatize(x, make_rng(seed))[0].ravel())
                            [0, 1]) for e, r in rand.items()}


def measure(repro: Any, out_dir: Path, quick: bool, data_dir: Path | None) -> None:
    """The computations without training: the control's report correlation and RQ2."""
    s = repro.settings
    corr = report_correlation(s["correlation"]["dataset"], data_dir,
                              s["correlation"]["epsilons"])
    (out_dir / "control_correlation.json").write_text(json.dumps(corr, indent=2),
                                                      encoding="utf-8")
    rq2 = s["rq2"]["quick" if quick else "full"]
    errs = pd.concat([aggregation_error(ds, data_dir, s["rq2"]["epsilons"], rq2["draws"])
                      for ds in rq2["datasets"]])
    errs.to_csv(out_dir / "fig5_aggregation_error.csv", index=False)
    line_plot(errs, "epsilon", "series", out_dir / "fig5_aggregation_error.png",
              "LPGNN RQ2: MAE of the first-layer aggregation", ylabel="mean absolute error",
              logy=True)


def _table3_md(s: pd.DataFrame, paper: pd.DataFrame, eps: list[float]) -> str:
    rows = []
    for ds in sorted(s["dataset"].unique()):
        sub = s[s["dataset"] == ds]
        lp = [sub[(sub["method"] == "lpgnn") & np.isclose(sub["epsilon"], e)] for e in eps]
        cells = [pm(r.iloc[0]["test_accuracy_mean"], r.iloc[0]["test_accuracy_std"])
                 if len(r) else "-" for r in lp]
        ks = [str(json.loads(r.iloc[0]["params"]).get("feature_steps", "-")) if len(r) else "-"
              for r in lp]
        cells += [pm(r.iloc[0]["test_accuracy_mean"], r.iloc[0]["test_accuracy_std"])
                  if len(r := sub[sub["method"] == b]) else "-" for b in BASELINES]
        p = paper[paper["dataset"] == ds]
        ref = f"{p.iloc[0]['lpgnn']} ({p.iloc[0]['gcn_raw']})" if len(p) else "- (-)"
        rows.append([ds, *cells, "/".join(ks), ref])
    return md_table(["dataset", *[f"LPGNN ε={e:g}" for e in eps], "GCN+Raw", "GCN+RND",
                     "GCN+OHD", "K chosen (ε=0.1/0.5/1/2)", "paper ε=1 (Raw)"], rows) + "\n"


def _curves(ctx: Any) -> list[Path]:
    written = []
    df3 = ctx.frame(ctx.repro.configs(ctx.quick, "rq3"))
    if not df3.empty:
        if "param_self_loops" not in df3.columns:
            df3["param_self_loops"] = False
        df3["self_loops"] = df3["param_self_loops"].fillna(False).astype(bool)
        g3 = summarize(df3, group_by=["dataset", "param_feature_steps", "self_loops"]).rename(
            columns={"test_accuracy_mean": "mean", "test_accuracy_std": "std",
                     "param_feature_steps": "K"})
        g3 = g3.assign(mean=g3["mean"] * 100, std=g3["std"] * 100, K=g3["K"].astype(int))
        g3.to_csv(ctx.path("fig6_steps_selfloops.csv"), index=False)
        written += [ctx.path("fig6_steps_selfloops.csv"),
                    line_plot(g3, "K", "self_loops", ctx.path("fig6_steps_selfloops.png"),
                              "LPGNN RQ3: accuracy vs K (eps=1)", logx=True)]
    df4 = ctx.frame(ctx.repro.configs(ctx.quick, "rq4"))
    if not df4.empty:
        g4 = summarize(df4, group_by=["dataset", "method", "param_label_rate"]).rename(
            columns={"test_accuracy_mean": "mean", "test_accuracy_std": "std",
                     "param_label_rate": "label_rate"})
        g4 = g4.assign(mean=g4["mean"] * 100, std=g4["std"] * 100)
        g4.to_csv(ctx.path("fig7_label_rate.csv"), index=False)
        written += [ctx.path("fig7_label_rate.csv"),
                    line_plot(g4, "label_rate", "method", ctx.path("fig7_label_rate.png"),
                              "LPGNN RQ4: accuracy vs label rate (eps=1)")]
    return written


def selection(df: pd.DataFrame) -> dict[str, Any]:
    """Uncharged vs charged selection of Table 3 (docs/privacy.md, "Hyper-parameter
    selection"): what is chosen, what it costs per user, the published number (chosen by the
    mean over seeds) and the charged one (each seed chooses on its own validation)."""
    costs = selection_costs(df)
    published, charged = summarize(df), per_seed_selection(df)
    key = ["dataset", "method", "epsilon"]
    merged = costs.merge(published[[*key, "test_accuracy_mean", "test_accuracy_std"]], on=key
                         ).merge(charged[[*key, "test_accuracy_mean", "test_accuracy_std"]],
                                 on=key, suffixes=("", "_charged"))
    chosen = merged[merged["n_configs"] > 1]
    rows = [[r["dataset"], r["method"], f"{r['epsilon']:g}", r["selected"],
             str(r["n_configs"]), r["cost"], f"{r['spent_epsilon']:g}",
             pm(r["test_accuracy_mean"], r["test_accuracy_std"]),
             pm(r["test_accuracy_mean_charged"], r["test_accuracy_std_charged"])]
            for _, r in chosen.iterrows()]
    return {"table": md_table(["dataset", "method", "ε", "selected", "candidates", "cost",
                               "feature ε per user (both)", "as published (mean over seeds)",
                               "charged (per seed, own validation)"], rows,
                              ["---"] * 6 + ["---:"] * 3),
            "costs": sorted(set(chosen["cost"])),
            "single": sorted(set(merged[merged["n_configs"] == 1]["method"]))}


def report(ctx: Any) -> dict[str, Any]:
    paper, written = ctx.repro.paper(), []
    df = ctx.frame(ctx.repro.configs(ctx.quick, "table3"))
    sel = selection(df) if not df.empty else None
    if not df.empty:
        s3 = summarize(df, report=["test_accuracy"])
        s3.to_csv(ctx.path("table3.csv"), index=False)
        eps = ctx.repro.steps(ctx.quick)[0].grids[0].epsilons
        ctx.path("table3.md").write_text(_table3_md(s3, paper, eps), encoding="utf-8")
        written += [ctx.path("table3.csv"), ctx.path("table3.md")]
    written += _curves(ctx)
    out: dict[str, Any] = {"written": written, "versus": [], "figures": [], "wins": None,
                           "completeness": ctx.completeness(),
                           "table3": ctx.path("table3.md").read_text(encoding="utf-8")
                           if ctx.path("table3.md").exists() else "",
                           "rq3": [], "control": None, "correlation": {}, "timings": None,
                           "selection": sel}
    if ctx.path("table3.csv").exists():
        s3 = pd.read_csv(ctx.path("table3.csv"))
        for ds in sorted(s3["dataset"].unique()):
            lp = s3[(s3["dataset"] == ds) & (s3["method"] == "lpgnn")
                    & np.isclose(s3["epsilon"].fillna(-1), 1.0)]
            raw = s3[(s3["dataset"] == ds) & (s3["method"] == "gcn-raw")]
            p = paper[paper["dataset"] == ds]
            out["versus"].append({
                "dataset": ds, "seeds": int(lp.iloc[0]["n_seeds"]) if len(lp) else 0,
                "ours": [float(f.iloc[0]["test_accuracy_mean"]) * 100 if len(f) else np.nan
                         for f in (lp, raw)],
                "paper": [p.iloc[0][c] if len(p) else np.nan for c in ("lpgnn", "gcn_raw")]})
    for name, idx, col, digits in (("fig5_aggregation_error", "epsilon", "series", 3),
                                   ("fig6_steps_selfloops", "K", "self_loops", 1),
                                   ("fig7_label_rate", "label_rate", "method", 1)):
        p = ctx.path(name + ".csv")
        f = pd.read_csv(p) if p.exists() else None
        out["figures"].append({"name": name, "tables": None if f is None else [
            (ds, pivot_md(f[f["dataset"] == ds], idx, col, lambda r, d=digits:
                          f"{r['mean']:.{d}f}")) for ds in sorted(f["dataset"].unique())]})
    if ctx.path("fig5_aggregation_error.csv").exists():
        err = pd.read_csv(ctx.path("fig5_aggregation_error.csv"))
        piv = err[err["aggregator"] == "mean"].pivot_table(
            index=["dataset", "epsilon"], columns="mechanism", values="mean")
        mg = err[err["mechanism"] == "multibit"].pivot_table(
            index=["dataset", "epsilon"], columns="aggregator", values="mean")
        out["wins"] = (int((piv["multibit"] < piv[["1bit", "gaussian"]].min(axis=1)).sum()),
                       len(piv), int((mg["mean"] < mg["gcn"]).sum()), len(mg))
    if ctx.path("fig6_steps_selfloops.csv").exists():
        g = pd.read_csv(ctx.path("fig6_steps_selfloops.csv"))
        for ds in sorted(g["dataset"].unique()):
            pv = g[g["dataset"] == ds].pivot_table(index="K", columns="self_loops",
                                                   values="mean")
            if pv.shape[1] == 2:
                diff = pv[False] - pv[True]
                out["rq3"].append({"dataset": ds, "k0": pv.index.min(), "a0": pv[False].iloc[0],
                                   "k1": pv[False].idxmax(), "a1": pv[False].max(),
                                   "lo": diff.min(), "hi": diff.max()})
    ctl = ctx.frame(ctx.repro.configs(ctx.quick, "control"))
    if not ctl.empty:
        out["control"] = ctl.groupby(["dataset", "param_feature_steps"])["test_accuracy"].agg(
            ["mean", "std"])
    for key, name in (("correlation", "control_correlation.json"), ("timings", "timings.json")):
        if ctx.path(name).exists():
            out[key] = json.loads(ctx.path(name).read_text(encoding="utf-8"))
    return out
