"""Solitude reproduction (Lin, Li & Wang, "Towards Private Learning on Decentralized Graphs
with Local Differential Privacy", IEEE TIFS 2022).

* Table 3: test accuracy at eps_x = 1 and eps_a in {7.0, 7.3, 7.5, 7.7, 7.9, 8.0} on Cora
  and CiteSeer (largest connected component), 50/25/25 split, for Base (no calibration),
  LPGNN-adapted (feature/label smoothing on the noisy graph) and Solitude (plus structure
  learning), GCN and GraphSAGE backbones.
* Fig. 5: accuracy vs label rate (eps_a = 8, eps_x = 1).
* ``solitude-link`` (edge part only, Blink's protocol: true features and labels) next to the
  non-private GCN, for the edge-LDP comparison.

``dpgl reproduce solitude --quick`` regenerates everything into ``results/solitude``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from dpgl.experiments.config import RunConfig
from dpgl.experiments.grid import GridSpec
from dpgl.experiments.report import format_value, summarize
from dpgl.experiments.reproductions._common import (
    is_private,
    line_plot,
    run_timed,
    save_timings,
    stored_frame,
)
from dpgl.experiments.store import RunStore

NAME = "solitude"
SUMMARY = "Solitude (TIFS 2022): Table 3 (Base / LPGNN / Solitude vs eps_a), Fig. 5, link part"

EPS_A = [7.0, 7.3, 7.5, 7.7, 7.9, 8.0]
VARIANTS = ["base", "lpgnn", "solitude"]
#: Paper values (Solitude Table 3, GCN, Cora), eps_a = 7.0 and 8.0.
PAPER = {("cora", "gcn", "base"): (60.8, 68.6), ("cora", "gcn", "solitude"): (68.4, 77.8)}



ISSUE11_NOTE = (
    "Privacy fix (issue #11): features used to be min-max normalized with the minimum and "
    "maximum of all users' features before each user's report (other users' reports then "
    "depended on her data); each user now clips her own vector into a public range, [0, 1] "
    "for Cora's binary features, and each user's label and feature report is drawn once. On "
    "binary features the old normalization was the identity: re-running Table 3 "
    "configurations with the new code (eps_a = 8, eps_x = 1, seeds 0 and 1; "
    "`benchmarks/feature_range_fix.py`) gives accuracies identical to the last digit, so the "
    "stored runs above were not recomputed. Where features are continuous the numbers do "
    "change; see ../lpgnn/feature_range_fix.md.")

def table3_configs(quick: bool, standardize: bool = True) -> list[RunConfig]:
    """Quick: eps_a in {7.0, 7.5, 8.0}, 3 seeds; GCN on Cora and CiteSeer first, then
    GraphSAGE on Cora. Full: all six eps_a, 5 seeds, both backbones on both datasets."""
    eps = [7.0, 7.5, 8.0] if quick else EPS_A
    order = [("cora", "gcn"), ("citeseer", "gcn"), ("cora", "sage")]
    if not quick:
        order.append(("citeseer", "sage"))
    configs: list[RunConfig] = []
    for ds, model in order:
        params: dict[str, Any] = {"variant": VARIANTS}
        if standardize:
            params["standardize_features"] = True
        if ds == "citeseer":
            params["largest_component"] = True
        spec = GridSpec.from_dict({
            "name": "solitude-table3", "datasets": [ds], "models": [model],
            "seeds": 3 if quick else 5, "epsilons": eps,
            "methods": [{"name": "solitude", "params": params}],
        }, source="solitude-table3")
        configs += spec.expand(is_private)
    return configs


def label_rate_configs(quick: bool) -> list[RunConfig]:
    spec = GridSpec.from_dict({
        "name": "solitude-fig5", "datasets": ["cora"], "models": ["gcn"],
        "seeds": 2 if quick else 5, "epsilons": [8.0],
        "methods": [{"name": "solitude", "params": {
            "variant": ["base", "solitude"], "standardize_features": True,
            "label_rate": [0.1, 0.3, 0.5] if quick else [0.1, 0.2, 0.3, 0.4, 0.5]}}],
    }, source="solitude-fig5")
    return spec.expand(is_private)


def link_configs(quick: bool) -> list[RunConfig]:
    spec = GridSpec.from_dict({
        "name": "solitude-link", "datasets": ["cora"], "models": ["gcn"],
        "seeds": 2 if quick else 5, "epsilons": [4.0, 6.0, 8.0],
        "methods": [{"name": "solitude-link", "params": {"structure_learning": [True, False]}},
                    "none"],
    }, source="solitude-link")
    return spec.expand(is_private)


def _table3_markdown(s: pd.DataFrame) -> str:
    eps = sorted(s["epsilon"].unique())
    lines = ["| dataset | model | variant | " + " | ".join(f"ε_a={e:g}" for e in eps)
             + " | paper (ε_a=7.0 → 8.0) |", "|---" * (len(eps) + 4) + "|"]
    for (ds, model, variant), g in s.groupby(["dataset", "model", "param_variant"], sort=True):
        cells = []
        for e in eps:
            row = g[g["epsilon"] == e]
            cells.append("-" if row.empty else format_value(row.iloc[0]["test_accuracy_mean"],
                                                            row.iloc[0]["test_accuracy_std"]))
        paper = PAPER.get((ds, model, variant))
        ptxt = f"{paper[0]} → {paper[1]}" if paper else "-"
        lines.append(f"| {ds} | {model} | {variant} | " + " | ".join(cells) + f" | {ptxt} |")
    return "\n".join(lines) + "\n"


def write_outputs(out_dir: Path, quick: bool) -> list[Path]:
    """Tables, plots and README from whatever is stored (end of :func:`run`, or to report a
    partially finished reproduction)."""
    paths: list[Path] = []
    with RunStore(out_dir / "runs.sqlite") as store:
        df3 = stored_frame(store, table3_configs(quick))
        if not df3.empty:
            s3 = summarize(df3, group_by=["dataset", "model", "epsilon", "param_variant"])
            s3.to_csv(out_dir / "table3.csv", index=False)
            (out_dir / "table3.md").write_text(_table3_markdown(s3), encoding="utf-8")
            p3 = s3.rename(columns={"test_accuracy_mean": "mean", "test_accuracy_std": "std"})
            p3 = p3.assign(mean=p3["mean"] * 100, std=p3["std"] * 100,
                           dataset=p3["dataset"] + "/" + p3["model"])
            paths += [out_dir / "table3.csv", out_dir / "table3.md",
                      line_plot(p3, "epsilon", "param_variant", out_dir / "table3.png",
                                 "Solitude Table 3: accuracy vs eps_a (eps_x = 1)")]
        raw = stored_frame(store, table3_configs(quick, standardize=False))
        if not raw.empty:  # the first quick run, before feature standardization
            sr = summarize(raw, group_by=["dataset", "model", "epsilon", "param_variant"])
            (out_dir / "table3_unstandardized.md").write_text(_table3_markdown(sr),
                                                              encoding="utf-8")
            paths.append(out_dir / "table3_unstandardized.md")
        df5 = stored_frame(store, label_rate_configs(quick))
        if not df5.empty:
            s5 = summarize(df5, group_by=["dataset", "param_variant", "param_label_rate"])
            s5 = s5.rename(columns={"test_accuracy_mean": "mean", "test_accuracy_std": "std",
                                    "param_label_rate": "label_rate"})
            s5["mean"] *= 100
            s5["std"] *= 100
            s5.to_csv(out_dir / "fig5_label_rate.csv", index=False)
            paths += [out_dir / "fig5_label_rate.csv",
                      line_plot(s5, "label_rate", "param_variant",
                                 out_dir / "fig5_label_rate.png",
                                 "Solitude Fig. 5: accuracy vs label rate (eps_a=8, eps_x=1)")]
        df = stored_frame(store, link_configs(quick))
        if not df.empty:
            df["structure_learning"] = df.get("param_structure_learning",
                                              pd.Series(None, index=df.index)).astype(str)
            sl = summarize(df, group_by=["dataset", "method", "epsilon", "structure_learning"])
            sl.to_csv(out_dir / "link.csv", index=False)
            paths.append(out_dir / "link.csv")
    return [*paths, write_readme(out_dir, quick)]


def run(out_dir: Path, *, quick: bool, data_dir: Path | None, console: Any) -> list[Path]:
    torch.set_num_threads(1)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    timings: dict[str, float] = {}
    with RunStore(out_dir / "runs.sqlite") as store:
        run_timed((("table3", table3_configs(quick), "solitude-table3"),
                   ("fig5", label_rate_configs(quick), "solitude-fig5"),
                   ("link", link_configs(quick), "solitude-link")),
                  store, data_dir, console, timings)
    return [save_timings(out_dir, quick, started, timings), *write_outputs(out_dir, quick)]


# ---------------------------------------------------------------------------- README


def write_readme(out_dir: Path, quick: bool) -> Path:
    """``README.md``: command, date, grids, measured tables next to the paper's numbers and
    the explanation of the gaps."""
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    parts = [
        "# Solitude reproduction (Lin, Li & Wang, IEEE TIFS 2022)", "",
        "Command (offline dataset copies):", "", "```",
        "DPGL_DATA_DIR=/work/shared/datasets dpgl reproduce solitude "
        + ("--quick" if quick else "--full"), "```", "",
        f"Generated {date}. Runs are stored in `runs.sqlite` (resumable).", "",
        "## Setting", "",
        "* Users: RR on every neighbor-list bit (eps_a, `dpgl.mechanisms.rr.RRTransform`, "
        "directed reports), multi-bit features (eps_x = 1); labels used as is (as in the "
        "paper's experiments), so the per-user total is eps_a + eps_x for edges and features "
        "and the labels are recorded as non-private.",
        "* Variants: **base** = GNN on the raw reports (no calibration); **lpgnn** = LPGNN's "
        "calibration adapted to the noisy graph (feature smoothing l_x = 4 over A~); "
        "**solitude** = plus structure learning (Eq. 14, symmetric A^c on the candidate set, "
        "lambda1 = lambda2 = 5, Adam lr 0.01 on the GNN loss + exact prox of the regulariser). "
        "In all variants the server standardizes the (calibrated) features per column before "
        "training (post-processing, no privacy cost; `standardize_features`, see below).",
        "* Cora (2,708 nodes) and CiteSeer's largest connected component (2,120 nodes here; "
        "the paper reports 2,110), 50/25/25 random split per seed, two layers, hidden 16, "
        "SeLU, dropout 0.5, Adam lr 0.01, weight decay 5e-4, 200 epochs, patience 50, "
        "model selection on validation accuracy. No hyper-parameter search.",
        "* Quick: eps_a in {7.0, 7.5, 8.0}, 3 seeds, GCN on Cora and CiteSeer, GraphSAGE on "
        "Cora; Fig. 5 with label rates {0.1, 0.3, 0.5} and 2 seeds; link part eps_a in "
        "{4, 6, 8}, 2 seeds. Full: eps_a in {7.0, 7.3, 7.5, 7.7, 7.9, 8.0}, 5 seeds, both "
        "backbones, label rates 0.1..0.5.", "",
        "## Table 3: test accuracy (%), mean ± std over seeds", "",
    ]
    t3 = out_dir / "table3.md"
    parts.append(t3.read_text(encoding="utf-8") if t3.exists() else "(not run yet)")
    if (out_dir / "table3.png").exists():
        parts += ["", "![table3](table3.png)"]
    csv3 = out_dir / "table3.csv"
    if csv3.exists():
        s3 = pd.read_csv(csv3)
        parts += ["", "### Paper vs ours (GCN, Cora)", "",
                  "| variant | eps_a | paper | ours | gap |", "|---|---|---|---|---|"]
        for (ds, model, variant), (p7, p8) in PAPER.items():
            for e, pv in ((7.0, p7), (8.0, p8)):
                row = s3[(s3["dataset"] == ds) & (s3["model"] == model)
                         & (s3["param_variant"] == variant) & (s3["epsilon"] == e)]
                if row.empty:
                    parts.append(f"| {variant} | {e:g} | {pv} | - | - |")
                    continue
                ours = float(row.iloc[0]["test_accuracy_mean"]) * 100
                parts.append(f"| {variant} | {e:g} | {pv} | {ours:.1f} | {ours - pv:+.1f} |")
    parts += [
        "", "### Why we are above the paper's numbers", "",
        "* **Solitude** (gaps in the table above; without standardization +8.3 at eps_a = 7 "
        "and +2.8 at eps_a = 8): under RR with eps_a >= 7 the flip "
        "probability is below 1e-3, so a fake edge is almost always reported by one endpoint "
        "only, while a true edge is reported by both. Our structure learner is symmetric (one "
        "weight per unordered pair, its two A~ entries in the Frobenius term), which starts "
        "fake pairs at 1/2 and true pairs at 1, and the exact prox of the regulariser then "
        "removes the one-way pairs; this denoises the graph much more than the reference "
        "implementation (a dense, non-symmetric estimator the GNN never reads).",
        "* **Base and LPGNN-adapted** (+5 to +7 points with standardization): the server-side "
        "feature standardization below (post-processing, not in the paper). Without it, "
        "our first quick run (same grid otherwise) gave the table below; there Base on Cora "
        "(GCN) is 56.8 ± 2.0 at eps_a = 7 and 67.1 ± 4.0 at eps_a = 8 (paper 60.8 and 68.6: "
        "-4.0 with our 3-seed std 2.0, and -1.5), i.e. the paper's Base is reproduced "
        "within about two of our standard deviations; Solitude without standardization is "
        "76.7 ± 1.2 and 80.6 ± 1.2 (paper 68.4 and 77.8).",
        "* **LPGNN-adapted vs Base**: with a fixed l_x = 4 (not tuned, the paper tunes it) "
        "feature smoothing over the noisy graph averages in the reports of fake neighbours "
        "(about 40% of Cora's directed reports are fake at eps_a = 7); with standardized "
        "features it does not beat Base here (CiteSeer: below Base), while without "
        "standardization it did on Cora (see the first-run table).", "",
        "First quick run, without feature standardization (test accuracy %, 3 seeds; "
        "CiteSeer unstable, see below):", "",
        ((out_dir / "table3_unstandardized.md").read_text(encoding="utf-8")
         if (out_dir / "table3_unstandardized.md").exists() else "(not stored)"), "",
        "### Feature standardization (CiteSeer)", "",
        "Rectified multi-bit reports have magnitude about d coth(eps_x / 2m) / 2m: ~1,550 "
        "on Cora and ~4,000 on CiteSeer (d = 3,703) at eps_x = 1, and Solitude's backbone has "
        "no normalization layer. Our first quick run without standardization (3 seeds, "
        "eps_a = 7, CiteSeer LCC, GCN) was unstable: base 51.1 ± 0.8, lpgnn 43.5 ± 10.0, "
        "solitude 54.0 ± 11.3 (seed 2: solitude 42.6, lpgnn 31.9). Standardizing the "
        "features per column on the server (post-processing) fixed it (solitude 68.9 and "
        "71.7 on the first two seeds), so `standardize_features=True` is the method's "
        "default and the table above uses it. Those unstandardized runs remain in "
        "`runs.sqlite` under different run keys and are not part of the table.", "",
    ]
    f5 = out_dir / "fig5_label_rate.csv"
    parts += ["## Fig. 5: test accuracy (%) vs label rate (eps_a = 8, eps_x = 1, Cora, GCN)", ""]
    if f5.exists():
        df = pd.read_csv(f5)
        pv = df.pivot_table(index="label_rate", columns="param_variant", values="mean")
        parts += ["| label rate | " + " | ".join(pv.columns) + " |",
                  "|---" * (len(pv.columns) + 1) + "|"]
        for idx, row in pv.iterrows():
            parts.append(f"| {idx:g} | " + " | ".join(f"{v:.1f}" for v in row) + " |")
        parts += ["", "![fig5](fig5_label_rate.png)", ""]
    else:
        parts += ["(not run yet)", ""]
    lk = out_dir / "link.csv"
    parts += ["## solitude-link (edge part only, Blink's protocol: true features and labels), "
              "Cora, GCN", ""]
    if lk.exists():
        df = pd.read_csv(lk)
        parts += ["| method | structure learning | eps_a | test accuracy (%) | seeds |",
                  "|---|---|---|---|---|"]
        for _, r in df.iterrows():
            eps = "-" if pd.isna(r["epsilon"]) else f"{r['epsilon']:g}"
            parts.append(f"| {r['method']} | {r['structure_learning']} | {eps} | "
                         f"{format_value(r['test_accuracy_mean'], r['test_accuracy_std'])} | "
                         f"{int(r['n_seeds'])} |")
        parts.append("")
    else:
        parts += ["(not run yet)", ""]
    parts.append("Timings (`timings.json`) are wall-clock on 2 cores shared with other jobs "
                 "(load average 5-7 during these runs).")
    parts += ["", ISSUE11_NOTE]
    readme = out_dir / "README.md"
    readme.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return readme
