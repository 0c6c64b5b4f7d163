"""Blink reproduction (Zhu, Tan, Xiao, "Blink: Link Local Differential Privacy in Graph Neural
Networks via Bayesian Estimation", CCS 2023), Figure 5: test accuracy vs epsilon of every
edge-LDP method on Cora, CiteSeer and Facebook with GCN, GraphSAGE and GAT, 2:1:1 random node
split, hyper-parameters (and Blink's degree budget share) selected on validation, mean ± std
over seeds. LastFM is left out: its node features are not available offline.

``dpgl reproduce blink --quick`` (default) runs a reduced grid, documented in the generated
README: Cora with GCN at eps in {1, 4, 5, 8} (the paper's published reference points), 3 seeds,
fixed lr/weight decay/dropout, degree share in {0.1, 0.5}. ``--full`` runs the paper's grid
(3 datasets x 3 models x eps 1..8 x 10 seeds, lr x weight decay x dropout x degree share).
"""

from __future__ import annotations

import datetime as _dt
import functools
from pathlib import Path
from typing import Any

import pandas as pd

from dpgl.experiments.execute import execute_run
from dpgl.experiments.grid import GridSpec
from dpgl.experiments.report import format_value, summarize, write_report
from dpgl.experiments.runner import run_grid
from dpgl.experiments.store import RunStore
from dpgl.methods import get_method, list_methods

NAME = "blink"
SUMMARY = "Blink (CCS 2023) Fig. 5: accuracy vs epsilon of the edge-LDP methods"

EDGE_METHODS = ["blink-hard", "blink-soft", "blink-hybrid", "rr", "symrr", "dprr", "ldpgcn",
                "ldpgen", "solitude-link"]
BLINK = ("blink-hard", "blink-soft", "blink-hybrid")
#: Published reference points (Blink authors' results, Cora, GCN), accuracy in %.
PAPER_CORA_GCN: dict[tuple[str, float | None], float] = {
    ("blink-hard", 1.0): 71.2, ("blink-hard", 4.0): 77.0, ("blink-hard", 5.0): 84.5,
    ("blink-hard", 8.0): 87.1, ("mlp", None): 71.0, ("none", None): 86.8,
    ("rr", 5.0): 43.2, ("ldpgcn", 5.0): 78.3, ("dprr", 5.0): 37.9, ("symrr", 5.0): 61.3,
}


#: Why a method may land more than 2 points from the published value (written into the README
#: next to every such gap).
ISSUE11_NOTE = (
    "Issue #11 (floating-point safety): Blink's noisy degree and LDPGen's degree vectors are "
    "integers a device releases, and are now drawn with the exact discrete Laplace sampler "
    "(Canonne, Kamath & Steinke 2020) instead of a rounded continuous Laplace, with the same "
    "epsilon. The stored Cora runs above were made with the continuous sampler and have not "
    "been re-run (the Blink and LDPGen rows would move by sampling noise: on the csbm demo the "
    "Blink rows moved by at most 1.4 points, the others not at all; README, 'The demo'). "
    "`dpgl reproduce blink --quick` on an empty store re-measures them.")


GAP_NOTES = {
    "symrr": "SymRR's per-seed spread is large at eps = 5 (one user's report decides each pair, "
    "so the noisy graph varies a lot between seeds); with 3 seeds the standard error of our mean "
    "is about std/sqrt(3), so a 4-point gap is within 1.2 standard errors. The quick grid also "
    "keeps lr, weight decay and dropout fixed, where the paper tunes them per method.",
    "dprr": "DPRR is close to the majority-class rate (~30%) at eps <= 5 for node "
    "classification (its degree-preserving sampling keeps the expected degree but the kept "
    "edges are mostly noise), so small differences in the budget split (Eq. 8 with n_max = n), "
    "the server's symmetrization (ours: reports used as directed edges) and untuned "
    "hyper-parameters move it by a few points; the gap is about 1.6 of our standard deviations.",
}


def grid(quick: bool) -> dict[str, Any]:
    methods = [m for m in EDGE_METHODS if m in list_methods("node")]
    if quick:
        share = [0.1, 0.5]
        spec: dict[str, Any] = {
            "datasets": ["cora"], "models": ["gcn"], "seeds": 3, "epsilons": [1, 4, 5, 8],
            "params": {"hidden": 16, "lr": 0.01, "weight_decay": 5e-4, "dropout": 0.5,
                       "epochs": 200, "patience": 50},
        }
    else:
        share = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
        spec = {
            "datasets": ["cora", "citeseer", "facebook"], "models": ["gcn", "sage", "gat"],
            "seeds": 10, "epsilons": [1, 2, 3, 4, 5, 6, 7, 8],
            "params": {"hidden": 16, "lr": [0.01, 0.005], "weight_decay": [5e-4, 0.0],
                       "dropout": [0.5, 0.2], "epochs": 200, "patience": 50},
        }
    entries: list[Any] = ["none", "mlp"]
    for m in methods:
        if m in BLINK:
            entries.append({"name": m, "params": {"degree_share": share}})
        elif m == "solitude-link" and quick:
            # Its structure learner trains over every reported pair: ~2M at eps = 1 on Cora,
            # >= 10 min per run on 2 cores, so the quick grid starts at eps = 4.
            entries.append({"name": m, "epsilons": [4, 5, 8]})
        else:
            entries.append(m)
    return {"name": "blink-quick" if quick else "blink-full", "task": "node", "methods": entries,
            "selection": {"metric": "val_accuracy", "mode": "max", "report": ["test_accuracy"]},
            **spec}


def _paper_table(summary: pd.DataFrame) -> str:
    rows = ["| method | epsilon | ours (Cora, GCN) | Blink paper | gap |", "|---|---|---|---|---|"]
    notes: dict[str, str] = {}
    sub = summary[(summary["dataset"] == "cora") & (summary["model"] == "gcn")]
    for (method, eps), paper in PAPER_CORA_GCN.items():
        if eps is None:
            hit = sub[sub["method"] == method]
        else:
            hit = sub[(sub["method"] == method) & (sub["epsilon"] == eps)]
        if hit.empty:
            rows.append(f"| {method} | {eps or '-'} | not run | {paper:.1f} | |")
            continue
        r = hit.iloc[0]
        mean, std = 100 * r["test_accuracy_mean"], 100 * r["test_accuracy_std"]
        ours = format_value(r["test_accuracy_mean"], r["test_accuracy_std"])
        rows.append(f"| {method} | {eps or '-'} | {ours} | {paper:.1f} "
                    f"| {mean - paper:+.1f} (std {std:.1f}) |")
        if abs(mean - paper) > 2:
            notes[method] = GAP_NOTES.get(method, "no explanation recorded yet")
    text = "\n".join(rows)
    if notes:
        text += "\n\nGaps larger than 2 points:\n\n" + "\n".join(
            f"- **{m}**: {why}" for m, why in notes.items()
        )
    return text


def _method_table(summary: pd.DataFrame) -> str:
    sub = summary[(summary["dataset"] == "cora") & (summary["model"] == "gcn")]
    eps_values = sorted(e for e in sub["epsilon"].dropna().unique())
    rows = ["| method | " + " | ".join(f"eps={e:g}" for e in eps_values) + " | non-private |",
            "|---|" + "---:|" * (len(eps_values) + 1)]
    for method in sorted(sub["method"].unique()):
        cells = []
        for e in eps_values:
            hit = sub[(sub["method"] == method) & (sub["epsilon"] == e)]
            cells.append(format_value(hit.iloc[0]["test_accuracy_mean"],
                                      hit.iloc[0]["test_accuracy_std"]) if len(hit) else "")
        np_hit = sub[(sub["method"] == method) & sub["epsilon"].isna()]
        cells.append(format_value(np_hit.iloc[0]["test_accuracy_mean"],
                                  np_hit.iloc[0]["test_accuracy_std"]) if len(np_hit) else "")
        rows.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def run(out_dir: Path, *, quick: bool, data_dir: Path | None, console: Any) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    spec = GridSpec.from_dict(grid(quick), source="blink reproduction")
    configs = spec.expand(lambda m: get_method(m).private)
    run_fn = functools.partial(execute_run, data_dir=data_dir)
    with RunStore(out_dir / "runs.sqlite") as store:
        outcome = run_grid(configs, store, run_fn, progress=console is not None,
                           grid_name=spec.name)
    return write_outputs(out_dir, quick=quick, status=outcome.summary())


def write_outputs(out_dir: Path, *, quick: bool, status: str) -> list[Path]:
    """Tables, plot and README from the runs stored in ``out_dir/runs.sqlite`` (runs nothing;
    configurations not stored yet are listed as missing)."""
    spec = GridSpec.from_dict(grid(quick), source="blink reproduction")
    configs = spec.expand(lambda m: get_method(m).private)
    keys = [c.key() for c in configs]
    with RunStore(out_dir / "runs.sqlite") as store:
        paths = write_report(store, out_dir, selection=spec.selection, keys=keys,
                             title=f"Blink Fig. 5 ({'quick' if quick else 'full'} grid)")
        frame = store.to_frame()
    frame = frame[frame["key"].isin(keys)]
    stored = set(frame["key"])
    missing = [c.label() for c in configs if c.key() not in stored]
    summary = summarize(frame, metric="val_accuracy", mode="max", report=["test_accuracy"])
    command = f"dpgl reproduce blink {'--quick' if quick else '--full'} --data-dir <datasets>"
    missing_text = (
        "\n\nNot run yet (the command above resumes them):\n\n"
        + "\n".join(f"- {m}" for m in missing) if missing else ""
    )
    readme = out_dir / "README.md"
    readme.write_text(
        f"# Blink reproduction (Fig. 5)\n\nCommand: `{command}`  \n"
        f"Generated: {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC; {status}; "
        f"{len(stored)} of {len(configs)} configurations stored.{missing_text}\n\n"
        "Grid: " + ("quick (Cora, GCN, eps in {1, 4, 5, 8}, 3 seeds, lr 0.01, weight decay 5e-4, "
                    "dropout 0.5, hidden 16, Blink degree share in {0.1, 0.5} chosen on "
                    "validation; solitude-link only at eps in {4, 5, 8}: at eps = 1 its structure "
                    "learner trains over ~2M reported pairs, >= 10 min per run)" if quick else
                    "full (Cora/CiteSeer/Facebook x GCN/GraphSAGE/GAT x eps 1..8 x 10 seeds; lr, "
                    "weight decay, dropout and the Blink degree share chosen on validation)")
        + ". Split 2:1:1 (50/25/25) random, the same split for every method at a given seed. "
        "Features and labels are known to the server (Blink's setting); every private run's "
        "report states eps-edge-LDP per user.\n\n"
        "## Against the published reference points (Cora, GCN)\n\n" + _paper_table(summary)
        + "\n\n## All methods (test accuracy %, Cora, GCN)\n\n" + _method_table(summary)
        + "\n\nLDPGen is flat in eps: our simplified LDPGen (Poissonized Chung-Lu, no "
        "third re-clustering step, docs/edge-ldp.md) generates a graph from noisy degree vectors "
        "whose community signal is weak on Cora at every budget. Blink-Soft at eps = 1 keeps all "
        "posteriors (Cora is below the 3,000-node exact limit): ~7M low-weight pairs swamp the "
        "true edges, as the Blink paper also observes for Soft at small eps.\n\n"
        "Per-configuration details: `results.md` / `results.csv`; plot: "
        "`privacy_utility_test_accuracy.png`.\n\n" + ISSUE11_NOTE + "\n"
    )
    return [*paths, readme]
