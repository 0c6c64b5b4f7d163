"""Reproduction of DPAR (Zhang et al., WWW 2024) Table 1 (test accuracy at eps in {1, 8}) with
its baselines (Features, GAP, DP-SAGE) and the non-private counterparts, Fig. 1 (accuracy vs
the DP-APPR budget eps_pr, training without noise) and the budget-split sweep of Figs. 2-6.

``dpgl reproduce dpar --quick`` runs a reduced grid (see ``QUICK`` below and the README it
writes); ``--full`` runs the paper's grid (10 seeds, 200 epochs, three datasets, all methods,
both accountings) and is many CPU-hours on one core.
"""

from __future__ import annotations

import datetime as _dt
import logging
import math
import os
import time
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from dpgl.experiments.config import RunConfig
from dpgl.experiments.execute import execute_run
from dpgl.experiments.grid import GridSpec
from dpgl.experiments.report import format_value, summarize, to_csv
from dpgl.experiments.reproductions._common import line_plot
from dpgl.experiments.runner import run_grid
from dpgl.experiments.store import RunStore
from dpgl.methods import get_method

NAME = "dpar"
SUMMARY = "DPAR Table 1: node-level DP (DPAR, Features, GAP, DP-SAGE) at eps 1 and 8"

#: Paper values (best DPAR variant and Features) at eps = 1, as given in the issue (Table 1).
PAPER_EPS1 = {
    "coauthor-cs": {"dpar": 0.8569, "features": 0.83},
    "coauthor-physics": {"dpar": 0.8948, "features": 0.8412},
}
PAPER_NOTE = ("The issue lists MS Academic 0.8569 / CS 0.8927 / Physics 0.8948 (DPAR) and "
              "0.83 / 0.8344 / 0.8412 (Features); we map MS Academic to coauthor-cs (PPNP's "
              "ms_academic.npz is Coauthor CS) and could not verify which graph the paper's "
              "separate 'CS' column uses.")

DELTA = 1e-4        # DPAR reference code's default delta (per-dataset deltas not verifiable)

DPAR_PRIVATE = ("dpar-em0", "dpar-em1", "dpar-gm")

#: GAP and DP-SAGE state bounded-degree node-DP: the declared public bound D must cover the
#: training graph's degrees. We declare each dataset's maximum degree (Cora-ML 246, Coauthor
#: CS 136, Coauthor Physics 382): the bound is then read off the data, which a deployment
#: would have to justify as public knowledge (docs/node-dp.md).
MAX_DEGREE = {"cora-ml": 246, "coauthor-cs": 136, "coauthor-physics": 382}


def _spec(name: str, datasets: list[str], seeds: int, epsilons: list[float],
          methods: list[dict[str, Any]], params: dict[str, Any]) -> GridSpec:
    return GridSpec.from_dict({
        "name": name, "task": "node", "datasets": datasets, "models": ["mlp"],
        "seeds": seeds, "epsilons": epsilons, "methods": methods, "params": params,
        "selection": {"metric": "val_accuracy", "mode": "max",
                      "report": ["test_accuracy"]},
    }, source=name)


def _methods(dpar_variants: tuple[str, ...], accountings: list[str], baselines: bool,
             epochs: int, gap_epochs: int, sage_epochs: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in dpar_variants:
        out.append({"name": m, "params": {"accounting": accountings, "epochs": epochs}})
    out.append({"name": "dpar-nonprivate", "params": {"epochs": epochs}})
    out.append({"name": "features-dpsgd", "params": {"subsample": 0.09, "epochs": epochs,
                                                     "accounting": accountings}})
    out.append({"name": "features-nonprivate", "params": {"subsample": 0.09,
                                                          "epochs": epochs}})
    if baselines:
        g = {"epochs": gap_epochs, "encoder_epochs": gap_epochs}
        out.append({"name": "gap-ndp", "params": g})
        out.append({"name": "gap-nonprivate", "params": g})
        out.append({"name": "sage-ndp", "params": {"epochs": sage_epochs}})
        out.append({"name": "sage-nonprivate", "params": {"epochs": sage_epochs}})
    return out


def _paper_runs(cfg: RunConfig) -> RunConfig:
    """A paper-calibrated run takes no --epsilon: its target goes to ``paper_epsilon`` (the
    run's report still says what the noise spends); GAP / DP-SAGE get the degree bound."""
    params = dict(cfg.params)
    if params.get("accounting") == "paper" and cfg.epsilon is not None:
        params["paper_epsilon"] = cfg.epsilon
        return cfg.model_copy(update={"epsilon": None, "params": params})
    if cfg.method in ("gap-ndp", "gap-nonprivate", "sage-ndp", "sage-nonprivate"):
        params["max_degree"] = MAX_DEGREE[cfg.dataset]
        return cfg.model_copy(update={"params": params})
    return cfg


#: Fig. 1: eps_pr (the DP-APPR budget, SGD without noise); Figs. 2-6: share of eps for DP-APPR.
FIG1_EPSILONS = [0.1, 0.5, 1.0, 2.0, 4.0, 8.0, 64.0, 1024.0]
SPLIT_SHARES = [0.1, 0.3, 0.5, 0.7, 0.9]


def grids(quick: bool) -> list[GridSpec]:
    """Table 1 grids (Coauthor Physics last: the most expensive)."""
    common = {"delta": DELTA}
    if quick:
        return [
            _spec("dpar-quick-cora", ["cora-ml"], 2, [1.0, 8.0],
                  _methods(DPAR_PRIVATE, ["paper", "dpgl"], True, 200, 30, 20), common),
            _spec("dpar-quick-cs", ["coauthor-cs"], 1, [1.0],
                  _methods(("dpar-em0", "dpar-gm"), ["paper", "dpgl"], False, 50, 0, 0),
                  common),
            _spec("dpar-quick-physics", ["coauthor-physics"], 1, [1.0],
                  _methods(("dpar-em0",), ["paper", "dpgl"], False, 50, 0, 0), common),
        ]
    return [_spec("dpar-full", ["cora-ml", "coauthor-cs", "coauthor-physics"], 10, [1.0, 8.0],
                  _methods(DPAR_PRIVATE, ["paper", "dpgl"], True, 200, 100, 100), common)]


def figure_grids(quick: bool) -> tuple[GridSpec, GridSpec]:
    """Fig. 1 (accuracy vs eps_pr: DP-APPR alone, the MLP trained without noise) and Figs. 2-6
    (accuracy vs the share of eps given to DP-APPR, at eps 1 and 8). Quick: Coauthor CS, 1
    seed, 50 epochs (Fig. 1) / 20 epochs (Figs. 2-6)."""
    common = {"delta": DELTA}
    datasets = ["coauthor-cs"] if quick else ["cora-ml", "coauthor-cs", "coauthor-physics"]
    seeds = 1 if quick else 10
    fig1 = _spec("dpar-fig1", datasets, seeds, FIG1_EPSILONS,
                 [{"name": m, "params": {"sgd": "nonprivate", "accounting": ["paper", "dpgl"],
                                         "epochs": 50 if quick else 200}}
                  for m in ("dpar-em0", "dpar-gm")], common)
    split = _spec("dpar-split", datasets, seeds, [1.0, 8.0],
                  [{"name": "dpar-em0", "params": {"appr_share": SPLIT_SHARES,
                                                   "accounting": ["paper", "dpgl"],
                                                   "epochs": 20 if quick else 200}}], common)
    return fig1, split


def _configs(specs: list[GridSpec]) -> list[RunConfig]:
    out: list[RunConfig] = []
    for s in specs:
        out.extend(_paper_runs(c) for c in s.expand(lambda m: get_method(m).private))
    return out


def _label(row: pd.Series) -> str:
    acc = row.get("param_accounting")
    if isinstance(acc, str) and acc:
        return f"{row['method']} ({acc})"
    return str(row["method"])


def _target(df: pd.DataFrame) -> pd.Series:
    """The target eps of a run: --epsilon, or paper_epsilon for a paper-calibrated run."""
    target = df["epsilon"].astype(float)
    if "param_paper_epsilon" in df:
        target = target.fillna(df["param_paper_epsilon"].astype(float))
    return target


def _table(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["variant"] = df.apply(_label, axis=1)
    df["epsilon"] = _target(df)
    # the reported epsilon: the run's verified node-DP total; the paper's claim for "paper" runs
    summary = summarize(df, group_by=("dataset", "variant", "epsilon"),
                        report=["test_accuracy"])
    col = next((c for c in ("privacy_total_node-DP_epsilon",
                            "privacy_total_bounded-degree node-DP_epsilon") if c in df), None)
    if "privacy_total_bounded-degree node-DP_epsilon" in df and col is not None:
        df[col] = df[col].fillna(df["privacy_total_bounded-degree node-DP_epsilon"])
    eps_cols = df.groupby(["dataset", "variant", "epsilon"], dropna=False).agg(
        verified_epsilon=(col, "max"))
    summary = summary.merge(eps_cols.reset_index(), on=["dataset", "variant", "epsilon"],
                            how="left")
    return summary


def _markdown(summary: pd.DataFrame) -> str:
    lines = ["| dataset | method (noise calibrated with) | target ε | test accuracy (%) | seeds "
             "| verified node-DP ε of the run |",
             "|---|---|---|---|---|---|"]
    for _, r in summary.iterrows():
        eps = "-" if pd.isna(r["epsilon"]) else f"{r['epsilon']:g}"
        ver = r.get("verified_epsilon")
        ver_s = "no privacy" if pd.isna(ver) or (isinstance(ver, float) and math.isinf(ver)) \
            else f"{ver:.3g}"
        if pd.isna(r["epsilon"]):
            ver_s = "no privacy"
        lines.append(f"| {r['dataset']} | {r['variant']} | {eps} | "
                     f"{format_value(r['test_accuracy_mean'], r['test_accuracy_std'])} | "
                     f"{int(r['n_seeds'])} | {ver_s} |")
    return "\n".join(lines) + "\n"


def _comparison(summary: pd.DataFrame) -> list[str]:
    rows = ["| dataset | ours: best DPAR (paper calibration) | paper DPAR | ours: best DPAR "
            "(dpgl calibration) | ours: Features (paper calibration) | ours: Features (dpgl "
            "calibration) | paper Features |", "|---|---|---|---|---|---|---|"]
    for ds, v in PAPER_EPS1.items():
        sub = summary[(summary["dataset"] == ds) & (summary["epsilon"] == 1.0)]
        if sub.empty:
            rows.append(f"| {ds} | not run | {100 * v['dpar']:.2f} | not run | not run | "
                        f"not run | {100 * v['features']:.2f} |")
            continue

        def best(pattern: str, frame: pd.DataFrame = sub) -> str:
            part = frame[frame["variant"].str.contains(pattern, regex=False)]
            if part.empty:
                return "not run"
            r = part.sort_values("test_accuracy_mean", ascending=False).iloc[0]
            value = format_value(r["test_accuracy_mean"], r["test_accuracy_std"])
            return f"{value} ({r['variant']})"

        dpar = sub[sub["variant"].str.startswith("dpar")]
        rows.append(f"| {ds} | {best('(paper)', dpar)} | {100 * v['dpar']:.2f} | "
                    f"{best('(dpgl)', dpar)} | {best('features-dpsgd (paper)')} | "
                    f"{best('features-dpsgd (dpgl)')} | {100 * v['features']:.2f} |")
    return rows


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


BEFORE_AFTER_READING = """\
Reading the change. DPAR's private top-K is a near-uniform draw at these budgets (Fig. 1).
It used to draw among the nodes present in the 9% node subsample, so each APPR row mixed the
node with random present nodes; it now draws over the public universe of training ids, where
most ids are absent (zero rows), so the rows are close to the node's own features. That is
why the paper-calibrated DPAR on Cora-ML at eps 8 rose to the level of the Features baseline
(~64 vs 63.2) and why a node now appears in at most one other row (max_other 1 instead of 2),
which lowers the epsilon our analysis certifies for the same noise (629 instead of 1305).
GAP and DP-SAGE are charged at the degree bound that holds (every edge kept, declared D), the
non-private GAP / DP-SAGE keep every edge too, and DPAR's non-private run draws its sources from
the universe: their small changes are new random draws, not a change of method."""


def _reason(variant: str) -> str:
    return next((why for prefix, why in _CHANGE_REASON.items() if variant.startswith(prefix)),
                "")


def _before_after(summary: pd.DataFrame, before_csv: Path) -> list[str]:
    """Old (before issue #11, committed table) and new test accuracy side by side."""
    if not before_csv.exists():
        return []
    old = pd.read_csv(before_csv)
    lines = ["## Before and after issue #11", "",
             f"`{BEFORE_FILE}` is the table this page showed before issue #11 (commit 6de0c0a: "
             "the same grid, seeds and epochs). The fixes changed what several rows compute "
             "(docs/node-dp.md); a lower number honestly obtained replaces a higher one that "
             "rested on a false guarantee. Test accuracy (%).", "",
             "| dataset | method | target ε | before | now | change | what changed |",
             "|---|---|---|---|---|---|---|"]
    key = ["dataset", "variant", "epsilon"]
    merged = summary.merge(old[[*key, "test_accuracy_mean"]], on=key, how="outer",
                           suffixes=("", "_before"))
    for _, r in merged.sort_values(key).iterrows():
        eps = "-" if pd.isna(r["epsilon"]) else f"{r['epsilon']:g}"
        now, was = r["test_accuracy_mean"], r["test_accuracy_mean_before"]
        now_s = "not run" if pd.isna(now) else f"{100 * now:.1f}"
        was_s = "not run" if pd.isna(was) else f"{100 * was:.1f}"
        diff = "" if pd.isna(now) or pd.isna(was) else f"{100 * (now - was):+.1f}"
        lines.append(f"| {r['dataset']} | {r['variant']} | {eps} | {was_s} | {now_s} | {diff} "
                     f"| {_reason(str(r['variant']))} |")
    return [*lines, "", BEFORE_AFTER_READING, ""]


GRID_TEXT_QUICK = """## Grid (quick)

`--quick` (what is committed): Cora-ML with every method at eps in {1, 8}, 2 seeds, 200 epochs
(GAP 30 + 30 epochs, DP-SAGE 20 epochs to fit the CPU budget); Coauthor CS (= MS Academic)
with `dpar-em0`, `dpar-gm` (both calibrations), `features-dpsgd` and the non-private DPAR /
Features at eps = 1 only, 1 seed, **50 epochs** (the paper: 200); Coauthor Physics with
`dpar-em0` (both calibrations), `features-dpsgd` and the non-private pair, same reduction.
Fig. 1 and Figs. 2-6 on Coauthor CS, 1 seed (50 / 20 epochs). Common settings (paper
Sec. 5): lr 0.005, batch 60, K = 2, M = 70, q' = 9%,
C = 1, C1 = 0.01, C2 = 0.001, hidden 32, alpha = 0.25, P = 2, `appr_share` = 0.3,
delta = 1e-4 (the reference code's default; the paper's per-dataset deltas could not be
verified offline). Features is run on the same 9% node subsample as DPAR (as the reference
code's pipeline does)."""

GRID_TEXT_FULL = """## Grid (full)

Cora-ML, Coauthor CS, Coauthor Physics; eps in {1, 8}; 10 seeds; 200 epochs; every method
and both calibrations; plus the DP-APPR / DP-SGD budget split sweep (`appr_share` in
{0.1, 0.3, 0.5, 0.7, 0.9}, Figs. 2-6) and the eps_pr sweep of Fig. 1 on all three datasets.
Reddit needs a download and is not included."""

GAPS_TEXT = """## Why our numbers differ from the paper's

* **With the paper's calibration we are close.** On Coauthor CS (= MS Academic) at eps = 1,
  DPAR with noise calibrated by DPAR's own formulas reaches 84.5 (EM) / 84.3 (GM) against the
  paper's 85.69 (1 seed, 50 instead of 200 epochs, random instead of METIS split), and the
  Features baseline 84.3 against 83.00. In our runs DPAR and Features are within 0.3 points
  of each other; the paper's 2.7-point advantage of DPAR is not reproduced at this budget of
  seeds (it may need the 10 seeds / 200 epochs of the full grid).
* **Coauthor Physics** (1 seed, 50 epochs; table above): DPAR with the paper's calibration is
  above the paper's 89.48, and so is our Features baseline (paper 84.12). We cannot tell from
  the offline material how the paper's baseline was tuned or split (METIS parts vs our random
  inductive split), so this gap is reported, not explained.
* **The private structure carries no signal at these budgets (Fig. 1, Figs. 2-6).** With
  C2 = 1e-3 the Gumbel noise dwarfs the clipped APPR scores, so DP-APPR-EM returns a nearly
  uniform top-K over the public universe (recall of the true top-K 0 up to eps_pr = 64, see
  Fig. 1); DPAR's accuracy comes from the features and from the exact test graph used at
  inference. Giving DP-APPR a larger share of eps only lowers accuracy (Figs. 2-6: 84.5 ->
  66.8 from share 0.1 to 0.9 at eps = 1 with the paper's calibration, 33.9 -> 18.4 with
  ours), and with the paper's default share 0.3 DPAR equals the Features baseline within a
  point.
* **Those paper-calibrated runs are not private at the stated eps.** The last column of the
  table is what our analysis certifies for the noise they used: eps ~ 200 for DPAR on CS and
  ~ 70 on Cora-ML at a paper eps of 1 (DP-SGD must count a node's effect on up to
  1 + max_other gradients, and eps x q' is not a valid amplification), eps = 8.7 for Features
  (the only gap there is the amplification formula). See docs/node-dp.md for the
  claim-by-claim status.
* **With verified calibration (`(dpgl)` rows) DPAR collapses** to about majority-class
  accuracy (27.1 EM / 30.5 GM on CS, ~31 on Cora-ML) at eps = 1, and on Cora-ML even at
  eps = 8: the multi-term DP-SGD bound has no q^2 amplification, so the noise multiplier is
  one to two orders of magnitude larger (26.6 instead of 1.05 on CS, 59.8 instead of 4.2 on
  Cora-ML at eps = 1). Features with verified calibration keeps 79.2 on CS (the
  sampled-Gaussian accountant applies; only the amplification formula changes): under a
  verified node-level analysis the features-only model is the better choice at these budgets.
* **GAP and DP-SAGE are charged at the degree bound that really holds** (issue #11): every
  edge is kept and the run promises in- and out-degrees <= the declared D (the dataset's
  maximum: 246 on Cora-ML), so one node moves an aggregate by up to sqrt(D + D^2) ~ 247
  (GAP) or 2 C D (DP-SAGE) instead of the sqrt(D) claimed for random top-D bounding, which
  did not hold. GAP keeps 54.5 at eps = 8 (55.2 before) from its DP-SGD encoder and
  classifier while its aggregates are drowned in noise; DP-SAGE falls below the majority
  class (18.2 / 24.6 at eps 1 / 8). A smaller declared D (e.g. 10 with the high-degree nodes
  removed, as in GAP's paper) would cost less noise but protect only graphs within it.
* **Cora-ML** has only ~216 training nodes after 9% subsampling: DP-SGD on a 92k-parameter MLP
  is noise-dominated even with the paper's calibration at eps = 1 (30.9, majority class);
  the paper values we could check do not include Cora-ML at eps = 1.
* **Setup differences**: random 80/20 inductive split instead of METIS parts (not available
  offline); Poisson instead of fixed-size node and batch sampling; one configuration per
  row (no hyper-parameter search); 1-2 seeds; 50 epochs on CS in the quick grid."""


FIG1_READING = """\
Reading Fig. 1 (Coauthor CS, 1 seed): with the paper's clipping C2 = 1e-3 every clipped APPR
score lies in [0, 1e-3], while the Gumbel noise of one peeling step has scale 2 C2 K /
eps_vector, above the whole score range at every eps_pr up to 64 under either accounting.
Even with less noise, every node whose APPR value reaches C2 gets the same clipped score, so
the selection is uniform among them. The private top-K is therefore an almost uniform draw
over the public universe of training ids (recall 0 up to eps_pr = 64 for every variant but GM
with the paper's calibration, 9.5 % there), and most of the ids it names are absent from the
9% node subsample (their rows are zero). Accuracy hardly depends on it anyway: only M = 70
of the training rows are APPR rows (the others are the node itself), and the non-private DPAR
(exact top-K) reaches about 90 (table above), like the uniform selection (89.0); at
eps_pr = 1024 with the paper's calibration, where the selection follows the true APPR (recall
71 % EM, 95 % GM), accuracy is not higher (90.1 EM, 87.6 GM; one seed). DPAR's accuracy here
comes from the features and from the exact test graph used at inference (Eq. 4), not from the
private structure."""


def _curve(df: pd.DataFrame, x: str, series: pd.Series,
           value: str = "test_accuracy") -> pd.DataFrame:
    """Mean/std of ``value`` (in %) per (dataset, series, x)."""
    d = df.assign(series=series, acc=100 * df[value].astype(float))
    g = d.groupby(["dataset", "series", x], dropna=False)["acc"]
    return g.agg(mean="mean", std="std", n="count").reset_index()


def _curve_markdown(curve: pd.DataFrame, x: str, label: str) -> list[str]:
    lines: list[str] = []
    for ds, sub in curve.groupby("dataset"):
        xs = sorted(sub[x].unique())
        lines += [f"{ds}:", "", "| series | " + " | ".join(f"{label}={v:g}" for v in xs) + " |",
                  "|---|" + "---|" * len(xs)]
        for name, g in sub.groupby("series"):
            cells = []
            for v in xs:
                r = g[g[x] == v]
                cells.append("-" if r.empty else format_value(r["mean"].iloc[0] / 100,
                                                      r["std"].iloc[0] / 100))
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def _write_figures(df: pd.DataFrame, fig1: list[RunConfig], split: list[RunConfig],
                   out_dir: Path) -> tuple[list[str], list[Path]]:
    text: list[str] = []
    paths: list[Path] = []
    f1 = df[df["key"].isin([c.key() for c in fig1])].copy()
    if not f1.empty:
        f1["epsilon"] = _target(f1)
        curve = _curve(f1, "epsilon", f1["method"] + " (" + f1["param_accounting"] + ")")
        paths.append(line_plot(curve, "epsilon", "series", out_dir / "fig1_eps_pr.png",
                               "DPAR Fig. 1: DP-APPR alone (eps_pr), MLP trained without noise",
                               logx=True))
        text += ["## Fig. 1: accuracy vs eps_pr (DP-APPR only)", "",
                 "The whole eps goes to DP-APPR and the MLP is trained without DP-SGD "
                 "(`sgd=nonprivate`), so these runs are **not** node-DP as a whole (their "
                 "privacy reports say so); they isolate the cost of the private structure. "
                 "Test accuracy (%), `(paper)` / `(dpgl)` = DP-APPR noise calibrated with the "
                 "paper's statements / our verified analysis.", ""]
        text += _curve_markdown(curve, "epsilon", "eps_pr")
        if "appr_topk_recall" in f1 and f1["appr_topk_recall"].notna().any():
            rec = _curve(f1, "epsilon", f1["method"] + " (" + f1["param_accounting"] + ")",
                         "appr_topk_recall")
            text += ["Recall (%) of the true top-K neighbours among the released ones "
                     "(diagnostic computed with the true APPR; chance level is about K / "
                     "(training nodes)):", ""]
            text += _curve_markdown(rec, "epsilon", "eps_pr")
            text += [FIG1_READING, ""]
    sp_ = df[df["key"].isin([c.key() for c in split])].copy()
    if not sp_.empty:
        sp_["epsilon"] = _target(sp_)
        series = ("eps=" + sp_["epsilon"].map(lambda e: f"{e:g}") + " ("
                  + sp_["param_accounting"] + ")")
        curve = _curve(sp_, "param_appr_share", series)
        paths.append(line_plot(curve, "param_appr_share", "series",
                               out_dir / "figs2-6_budget_split.png",
                               "DPAR Figs. 2-6: share of eps given to DP-APPR (dpar-em0)"))
        text += ["## Figs. 2-6: budget split between DP-APPR and DP-SGD (dpar-em0)", "",
                 "x = `appr_share`, the fraction of eps spent on DP-APPR (the rest on DP-SGD). "
                 "Test accuracy (%).", ""]
        text += _curve_markdown(curve, "param_appr_share", "share")
    return text, paths


def run(out_dir: Path, *, quick: bool, data_dir: Path | None, console: Any) -> list[Path]:
    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    logging.getLogger("absl").setLevel(logging.ERROR)
    out_dir.mkdir(parents=True, exist_ok=True)
    specs = grids(quick)
    fig1_spec, split_spec = figure_grids(quick)
    fig1, split = _configs([fig1_spec]), _configs([split_spec])
    table = _configs(specs)
    # Cora-ML / CS tables, then the figures, then Coauthor Physics (the most expensive)
    configs = ([c for c in table if c.dataset != "coauthor-physics"] + fig1 + split
               + [c for c in table if c.dataset == "coauthor-physics"])
    start = time.perf_counter()

    def run_fn(cfg: RunConfig) -> Any:
        return execute_run(cfg, data_dir=data_dir)

    with RunStore(out_dir / "runs.sqlite") as store:
        outcome = run_grid(configs, store, run_fn, progress=console is not None,
                           grid_name="dpar-quick" if quick else "dpar-full")
        df = store.to_frame()
        recall = {r["key"]: r["diagnostics"].get("appr_topk_recall")
                  for r in store.rows(keys=[c.key() for c in fig1])}
    df["appr_topk_recall"] = df["key"].map(recall)
    fig_text, fig_paths = _write_figures(df, fig1, split, out_dir)
    df = df[df["key"].isin([c.key() for c in configs])]
    total_minutes = float(df["time_total"].sum()) / 60
    df = df[df["key"].isin([c.key() for c in table])]
    summary = _table(df)
    csv = to_csv(summary, out_dir / "results.csv")
    md_table = _markdown(summary)
    (out_dir / "results.md").write_text("# DPAR reproduction: test accuracy\n\n" + md_table,
                                        encoding="utf-8")
    readme = out_dir / "README.md"
    mode = "--quick" if quick else "--full"
    text = [
        "# DPAR (Zhang et al., WWW 2024): node-level DP, Table 1",
        "",
        f"Command: `dpgl reproduce dpar {mode}` (runs stored in `runs.sqlite`, resumable).",
        f"Report written {_dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}"
        f" (this invocation: {outcome.summary()}, {time.perf_counter() - start:.0f} s). "
        f"Sum of the stored runs' times: {total_minutes:.1f} min on one "
        "core (2 cores shared with other jobs).",
        "",
        "## Measured",
        "",
        md_table,
        "Test accuracy on the test half of the inductive test graph (the other half picks "
        "hyper-parameters on validation accuracy; here there is one configuration per row). "
        "`(paper)`: noise calibrated with DPAR's own accounting statements (reference-code "
        "formulas); `(dpgl)`: noise calibrated so that our verified analysis meets the target. "
        "The last column is the node-DP epsilon our analysis gives for the noise the run "
        "actually used (docs/node-dp.md) — for `(paper)` runs it is far above the target.",
        "",
        "## Paper values (eps = 1)",
        "",
        "| dataset | DPAR (best variant) | Features |",
        "|---|---|---|",
    ]
    for ds, v in PAPER_EPS1.items():
        text.append(f"| {ds} | {100 * v['dpar']:.2f} | {100 * v['features']:.2f} |")
    text += ["", PAPER_NOTE, "", "## Ours next to the paper (eps = 1)", ""]
    text += _comparison(summary)
    text += ["", *_before_after(summary, out_dir / BEFORE_FILE)]
    text += ["", *fig_text, GRID_TEXT_QUICK if quick else GRID_TEXT_FULL, "", GAPS_TEXT, ""]
    (out_dir / "README.md").write_text("\n".join(text) + "\n", encoding="utf-8")
    if console is not None:
        console.print(outcome.summary())
        console.print(md_table)
    return [readme, out_dir / "results.md", csv, *fig_paths]
