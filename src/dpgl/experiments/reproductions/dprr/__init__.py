"""DPRR reproduction (Hidano & Murakami, "Degree-Preserving Randomized Response for Graph
Neural Networks under Local Differential Privacy", arXiv 2202.10209): GIN-0 graph
classification under edge LDP. Figs. 4, 5, 6 and 10 from the grids of ``spec.yaml``; Fig. 7
(noisy vs original degrees, no training) by :func:`fig7`. The per-run table ``runs.csv`` (the
figure axes as columns) is what the report reads. Timing / memory (Figs. 8/9):
``benchmarks/graph_ldp.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpgl.datasets import load_dataset
from dpgl.experiments.reproductions._tables import line_plot, md_table, pivot_md, pm
from dpgl.rng import make_rng, spawn

PRIVATE = ["dprr", "rr", "locallap"]
LABEL = {"dprr": "DPRR", "rr": "RR", "locallap": "LocalLap", "nonpriv-part": "NonPriv-Part",
         "nonpriv-full": "NonPriv-Full"}


def runs_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per stored run with the figure axes as columns (``runs.csv``)."""
    out = []
    for rec in rows:
        p, m, info = rec["params"], rec["metrics"], rec["info"]
        out.append({
            "grid": rec["grid"], "dataset": rec["dataset"], "method": rec["method"],
            "epsilon": rec["epsilon"], "seed": rec["seed"], "hparam_key": rec["hparam_key"],
            "lambda": p.get("non_private_fraction", 0.0),
            "alpha": round(1.0 - p.get("degree_share", 0.1), 12),  # the paper's (Eq. 8)
            "allocation": p.get("allocation", "eq8"), "poison": p.get("poison", "none"),
            "beta": p.get("poison_fraction", 0.0), "defense": p.get("defense_theta") is not None,
            "val_accuracy": m.get("val_accuracy"), "test_accuracy": m.get("test_accuracy"),
            "test_auc": m.get("test_auc"),
            **{k: info.get(k) for k in ("epochs_run", "defense_fpr", "defense_tpr",
                                        "mean_reported_pairs", "mean_true_pairs",
                                        "train_seconds")}})
    return pd.DataFrame(out)


def _agg(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Mean and std over seeds of the configuration with the best mean validation accuracy
    (the quick protocol has one configuration per point)."""
    if df.empty:
        return df
    best = (df.groupby([*keys, "hparam_key"], dropna=False)["val_accuracy"].mean()
            .reset_index().sort_values("val_accuracy", ascending=False)
            .drop_duplicates(keys).drop(columns="val_accuracy"))
    return df.merge(best, on=[*keys, "hparam_key"]).groupby(keys, dropna=False).agg(
        acc=("test_accuracy", "mean"), acc_std=("test_accuracy", "std"),
        auc=("test_auc", "mean"), auc_std=("test_auc", "std"), seeds=("seed", "nunique"),
        fpr=("defense_fpr", "mean"), tpr=("defense_tpr", "mean"),
        pairs=("mean_reported_pairs", "mean")).reset_index()


def _table(agg: pd.DataFrame, row: str, col: str, what: str = "acc") -> str:
    return pivot_md(agg, row, col, lambda r: pm(r[what], r[what + "_std"]),
                    head=lambda c: f"{col}={c:g}" if isinstance(c, float) else str(c),
                    label=lambda r: LABEL.get(r, r), row_key=str) + "\n"


def _figures(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Fig. 4 / 5 / 6 / 10 aggregates, selected by parameters (a run shared by two figures
    is stored once)."""
    plain = ((df["poison"] == "none") & ~df["defense"] & np.isclose(df["alpha"], 0.9)
             & (df["allocation"] == "eq8"))
    f5 = df[plain & (df["lambda"] == 0)]
    f10 = df[(df["method"] == "dprr") & np.isclose(df["epsilon"], 1.0) & (df["lambda"] == 0)
             & np.isclose(df["alpha"], 0.9) & (df["allocation"] == "eq8")].copy()
    attack = f10["poison"].map({"all-ones": "Poison(1,1)", "random": "Poison(0.5,0.5)"})
    f10["series"] = np.where(f10["defense"], "Defense(0.05) ", "") + attack.fillna("no attack")
    base = f10[f10["poison"] == "none"]  # beta = 0 is the same run for both attacks
    f10 = pd.concat([f10[f10["poison"] != "none"], *[
        base.assign(series=base["series"].str.replace("no attack", a))
        for a in ("Poison(1,1)", "Poison(0.5,0.5)")]], ignore_index=True)
    return {
        "fig4": _agg(df[plain & np.isclose(df["epsilon"].fillna(1.0), 1.0)],
                     ["dataset", "method", "lambda"]),
        "fig5": _agg(f5[f5["method"].isin(PRIVATE)], ["dataset", "method", "epsilon"]),
        "const": _agg(f5[~f5["method"].isin(PRIVATE)], ["dataset", "method"]),
        "fig6": _agg(df[(df["method"] == "dprr") & np.isclose(df["epsilon"], 0.2)
                        & (df["poison"] == "none") & ~df["defense"]
                        & (df["grid"] == "dprr-fig6")], ["dataset", "allocation", "alpha"]),
        "fig10": _agg(f10, ["dataset", "series", "beta"])}


def _plot(agg: pd.DataFrame, x: str, series: str, path: Path, title: str, what: str = "acc",
          const: pd.DataFrame | None = None) -> Path:
    def pct(a: pd.DataFrame, by: str) -> pd.DataFrame:
        return a.assign(mean=a[what], std=a[what + "_std"],
                        series=a[by].map(lambda v: LABEL.get(v, v)))

    return line_plot(pct(agg, series), x, "series", path, title,
                     ylabel="test " + ("accuracy" if what == "acc" else "AUC"),
                     hlines=None if const is None else pct(const, "method"))


def _sections(a: dict[str, pd.DataFrame], datasets: list[str]) -> list[dict[str, Any]]:
    out = []
    for ds in datasets:
        s = {k: v[v["dataset"] == ds] if not v.empty else v for k, v in a.items()}
        s10 = s["fig10"]
        defended = s10[s10["series"].str.startswith("Defense")] if not s10.empty else s10
        out.append({
            "dataset": ds,
            "fig4": None if s["fig4"].empty else (_table(s["fig4"], "method", "lambda"),
                                                  _table(s["fig4"], "method", "lambda", "auc")),
            "fig5": None if s["fig5"].empty else _table(s["fig5"], "method", "epsilon"),
            "const": [(LABEL[r["method"]], pm(r["acc"], r["acc_std"]), pm(r["auc"], r["auc_std"]))
                      for _, r in s["const"].iterrows()] if not s["const"].empty else [],
            "fig6": None if s["fig6"].empty else _table(s["fig6"], "allocation", "alpha"),
            "fig10": _table(s10, "series", "beta") if not s10.empty and (s10["beta"] > 0).any()
            else None,
            "defense": md_table(["series", "beta", "FPR", "TPR"], [
                [r["series"], f"{r['beta']:g}", f"{r['fpr']:.4f}", f"{r['tpr']:.3f}"]
                for _, r in defended.iterrows()]) if len(defended) else None})
    return out


def report(ctx: Any) -> dict[str, Any]:
    csv, written = ctx.path("runs.csv"), []
    plan = ctx.repro.configs(ctx.quick)
    if ctx.runs is not None:
        runs_frame(ctx.runs.of(plan)).to_csv(csv, index=False)
        written.append(csv)
    df = pd.read_csv(csv) if csv.exists() else pd.DataFrame()
    done = set(zip(df["hparam_key"], df["seed"], strict=True)) if len(df) else set()
    steps = [(s.label, sum((c.hparam_key(), c.seed) in done for c in cs), len(cs))
             for s in ctx.repro.steps(ctx.quick) if s.grids
             for cs in [list({c.key(): c for g in s.grids for c in ctx.repro.expand(g)}
                             .values())]]
    if df.empty:
        return {"written": written, "steps": steps, "sections": [], "fig7": None}
    a = _figures(df)
    for name in ("fig4", "fig5", "fig6", "fig10"):
        if not a[name].empty:
            a[name].to_csv(ctx.path(f"{name}.csv"), index=False)
            written.append(ctx.path(f"{name}.csv"))
    plots = [("fig4", "lambda", "method", "fig4_accuracy", "Fig. 4: accuracy vs lambda (eps = 1)",
              "acc", None),
             ("fig4", "lambda", "method", "fig4_auc", "Fig. 4: AUC vs lambda (eps = 1)", "auc",
              None),
             ("fig5", "epsilon", "method", "fig5_accuracy", "Fig. 5: accuracy vs eps (lambda = 0)",
              "acc", a["const"]),
             ("fig5", "epsilon", "method", "fig5_auc", "Fig. 5: AUC vs eps (lambda = 0)", "auc",
              a["const"]),
             ("fig6", "alpha", "allocation", "fig6", "Fig. 6: Eq. 8 vs split (eps = 0.2)", "acc",
              None),
             ("fig10", "beta", "series", "fig10", "Fig. 10: DPRR (eps = 1) under poisoning", "acc",
              None)]
    for name, x, series, png, title, what, const in plots:
        if not a[name].empty:
            written.append(_plot(a[name], x, series, ctx.path(png + ".png"), title, what, const))
    f7 = ctx.path("fig7_degrees.csv")
    return {"written": written, "steps": steps,
            "sections": _sections(a, sorted(df["dataset"].unique())),
            "fig7": pd.read_csv(f7) if f7.exists() else None, "label": LABEL}


# ------------------------------------------------------------------------------ Fig. 7


def degree_study(dataset: str, eps: float, num_graphs: int, seed: int = 0,
                 max_nodes: int = 1500, data_dir: Path | None = None) -> pd.DataFrame:
    """Per user: original degree and the degree in each method's server graph (DPRR: her
    sampled list size; RR: her RR list size; LocalLap: her degree in the top-T graph), on
    ``num_graphs`` random graphs with at most ``max_nodes`` nodes."""
    from dpgl.methods.graph_ldp import GraphLDPParams, graph_randomizer

    ds = load_dataset(dataset, data_dir)
    n_max = max(int(g.num_nodes) for g in ds.graphs)
    ok = [i for i, g in enumerate(ds.graphs) if int(g.num_nodes) <= max_nodes]
    pick = sorted(make_rng(seed).choice(ok, size=min(num_graphs, len(ok)),
                                        replace=False).tolist())
    rows = []
    for m in PRIVATE:
        rand = graph_randomizer(m, eps, GraphLDPParams(), n_max=n_max)
        for i, child in zip(pick, spawn(make_rng(seed + 1), len(pick)), strict=True):
            g = ds.graphs[i]
            n = int(g.num_nodes)
            rows.append(pd.DataFrame({
                "method": m, "graph": i, "label": int(g.y.item()),
                "degree": np.bincount(g.edge_index[0].numpy(), minlength=n),
                "noisy_degree": np.bincount(rand(g, child).reports.user, minlength=n)}))
    return pd.concat(rows, ignore_index=True)


def fig7(repro: Any, out_dir: Path, quick: bool, data_dir: Path | None) -> None:
    """Noisy vs original degree per user (scatter) and per-class degree distributions."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    s = repro.settings["fig7"]
    eps = s["epsilon"]
    df = degree_study(s["dataset"], eps, s["graphs"]["quick" if quick else "full"],
                      data_dir=data_dir)
    df.groupby("method").apply(
        lambda g: pd.Series({"users": len(g), "mean_degree": g["degree"].mean(),
                             "mean_noisy_degree": g["noisy_degree"].mean(),
                             "mae": (g["noisy_degree"] - g["degree"]).abs().mean(),
                             "corr": np.corrcoef(g["degree"], g["noisy_degree"])[0, 1]}),
        include_groups=False).reset_index().to_csv(out_dir / "fig7_degrees.csv", index=False)
    fig = Figure(figsize=(13, 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    for ax, m in zip(fig.subplots(1, 3), PRIVATE, strict=True):
        sub = df[df["method"] == m]
        ax.scatter(sub["degree"], sub["noisy_degree"], s=3, alpha=0.3)
        lim = max(sub["degree"].max(), 1)
        ax.plot([0, lim], [0, lim], "k--", lw=1)
        ax.set_xscale("symlog")
        ax.set_yscale("symlog")
        ax.set(title=f"{LABEL[m]} (eps={eps:g})", xlabel="original degree",
               ylabel="noisy degree")
    fig.savefig(out_dir / "fig7_scatter.png", dpi=110)
    fig = Figure(figsize=(16, 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    series = [("original", df[df["method"] == "dprr"], "degree")] + [
        (LABEL[m], df[df["method"] == m], "noisy_degree") for m in PRIVATE]
    for ax, (title, sub, col) in zip(fig.subplots(1, 4), series, strict=True):
        for lab, g in sub.groupby("label"):
            vals = g[col].to_numpy()
            bins = np.unique(np.logspace(0, np.log10(max(vals.max(), 2) + 1), 30).astype(int))
            ax.hist(vals, bins=bins, histtype="step", density=True, label=f"class {lab}")
        ax.set_xscale("log")
        ax.set(title=title, xlabel="degree")
        ax.legend(fontsize=7)
    fig.savefig(out_dir / "fig7_class_degree.png", dpi=110)
