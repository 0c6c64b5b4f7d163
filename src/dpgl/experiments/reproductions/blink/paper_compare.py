"""Ours against the paper's Fig. 5, point by point, for the full (paper-protocol) grid.

The paper's numbers (``paper_full.csv``) are the authors' output files that Fig. 5 is drawn
from (github.com/zhxchd/Blink_GNN ``scripts/output/results.json`` / ``bl_results.json``,
``scripts/plot/plot_figures.py``; Zhu, Tan & Xiao, CCS 2023): mean and ``np.std`` over 30 runs
on one fixed split, in %. A point *agrees* when the gap is at most :data:`POINTS` points or
at most one standard deviation, the larger of ours (over seeds) and the paper's.

Facebook's features differ from the paper's (dpgl has the raw 4,714-dim MUSAE features, the
paper PyG's 128-dim file, which is not available offline), so each block is also compared
*mapped*: our accuracy placed on the paper's scale by the affine map that sends our MLP and
non-private GNN to the paper's (the fraction of the gain of the graph over the features that a
method keeps).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from dpgl.experiments.config import RunConfig
from dpgl.experiments.reproductions._tables import md_table
from dpgl.experiments.reproductions.blink.hparams import authors_params

#: agreement tolerance, in points of accuracy
POINTS = 2.0
#: Fig. 5's methods, in the order the tables list them
METHOD_ORDER = ("none", "mlp", "blink-hard", "blink-soft", "blink-hybrid", "rr", "symrr", "dprr",
                "ldpgcn", "ldpgen", "solitude-link")
_KEY = ["dataset", "model", "method", "eps_key"]


def read_paper(path: Path) -> pd.DataFrame:
    """``paper_full.csv``: dataset, model (``mlp`` for the MLP), method, epsilon (empty for
    the non-private rows), test_accuracy and std (%), plotted (in Fig. 5 or only in the
    authors' output files)."""
    paper = pd.read_csv(path)
    paper["epsilon"] = paper["epsilon"].astype(float)
    return paper


def planned_points(configs: Iterable[RunConfig]) -> pd.DataFrame:
    """The (dataset, model, method, epsilon) points the configurations cover, each once."""
    rows = sorted({(c.dataset, c.model, c.method, c.epsilon) for c in configs},
                  key=lambda r: (r[0], r[1], _order(r[2]), -1.0 if r[3] is None else r[3]))
    return pd.DataFrame(rows, columns=["dataset", "model", "method", "epsilon"]).astype(
        {"epsilon": float})


def _order(method: str) -> int:
    return METHOD_ORDER.index(method) if method in METHOD_ORDER else len(METHOD_ORDER)


def _eps_key(epsilon: pd.Series) -> pd.Series:
    return epsilon.astype(float).fillna(0.0)


def compare(planned: pd.DataFrame, summary: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """One row per planned point: ours (``test_accuracy_mean`` / ``_std`` of ``summary``, in
    %; NaN where not run), the paper's (NaN where it has none; the MLP row of a dataset serves
    every model), the gap and whether it agrees (:data:`POINTS` or one std, the larger of
    ours and the paper's), the same after mapping ours onto the paper's MLP -> non-private
    scale (``mapped``; NaN for the two anchors) and the hyper-parameters used (``hparams``:
    authors / adapted / none, :func:`~dpgl.experiments.reproductions.blink.hparams.
    authors_params`)."""
    out = planned[["dataset", "model", "method", "epsilon"]].copy()
    out["eps_key"] = _eps_key(out["epsilon"])
    if len(summary):
        ours = summary[["dataset", "model", "method", "epsilon", "n_seeds"]].copy()
        ours["ours"] = 100 * summary["test_accuracy_mean"].astype(float)
        ours["ours_std"] = 100 * summary["test_accuracy_std"].astype(float)
        ours["eps_key"] = _eps_key(ours["epsilon"])
        out = out.merge(ours.drop(columns="epsilon"), on=_KEY, how="left")
    else:
        out = out.assign(n_seeds=math.nan, ours=math.nan, ours_std=math.nan)
    # a count: stays an integer column (empty where not run), so the CSV does not flip from
    # "3.0" to "3" on every row when a grid's last missing point lands
    out["n_seeds"] = out["n_seeds"].astype("Int64")
    pap = paper.rename(columns={"test_accuracy": "paper", "std": "paper_std"})
    pap = pap.assign(eps_key=_eps_key(pap["epsilon"]), paper_model=pap["model"])[
        ["dataset", "paper_model", "method", "eps_key", "paper", "paper_std", "plotted"]]
    out["paper_model"] = out["model"].where(out["method"] != "mlp", "mlp")
    out = out.merge(pap, on=["dataset", "paper_model", "method", "eps_key"], how="left")
    out["gap"] = out["ours"] - out["paper"]
    tol = out[["ours_std", "paper_std"]].max(axis=1, skipna=True)
    out["within_points"] = out["gap"].abs() <= POINTS
    out["within_std"] = out["gap"].abs() <= tol
    out["agree"] = out["within_points"] | out["within_std"]
    out = _mapped(out)
    chosen = [authors_params(r.dataset, r.model, r.method,
                             None if math.isnan(r.epsilon) else r.epsilon)
              for r in out.itertuples()]
    out["hparams"] = [a.status for a in chosen]
    out["hparams_notes"] = ["; ".join(a.notes) for a in chosen]
    measured = out["ours"].notna() & out["paper"].notna()
    for col in ("within_points", "within_std", "agree"):
        out[col] = out[col].where(measured)
    return out.drop(columns=["eps_key", "paper_model"])


def _mapped(out: pd.DataFrame) -> pd.DataFrame:
    """Add ``mapped`` (ours on the paper's scale), ``mapped_gap`` and ``mapped_agree`` per
    block; the anchors (none, mlp) get NaN (they map onto the paper's exactly)."""
    out = out.copy()
    out["mapped"] = math.nan
    for _, g in out.groupby(["dataset", "model"], sort=False):
        anchor = {m: g[g["method"] == m].iloc[0] if (g["method"] == m).any() else None
                  for m in ("none", "mlp")}
        if any(a is None for a in anchor.values()):
            continue
        o_none, o_mlp = anchor["none"]["ours"], anchor["mlp"]["ours"]
        p_none, p_mlp = anchor["none"]["paper"], anchor["mlp"]["paper"]
        if any(pd.isna(v) for v in (o_none, o_mlp, p_none, p_mlp)) or o_none == o_mlp:
            continue
        scale = (p_none - p_mlp) / (o_none - o_mlp)
        rows = g.index[~g["method"].isin(["none", "mlp"])]
        out.loc[rows, "mapped"] = p_mlp + (out.loc[rows, "ours"] - o_mlp) * scale
        out.loc[rows, "mapped_std"] = out.loc[rows, "ours_std"] * abs(scale)
    if "mapped_std" not in out:
        out["mapped_std"] = math.nan
    out["mapped_gap"] = out["mapped"] - out["paper"]
    tol = out[["mapped_std", "paper_std"]].max(axis=1, skipna=True).clip(lower=POINTS)
    out["mapped_agree"] = (out["mapped_gap"].abs() <= tol).where(
        out["mapped_gap"].notna())
    return out


def counts(table: pd.DataFrame) -> pd.DataFrame:
    """Per block (``dataset-model``), then over all blocks and over all but Facebook: the
    points measured (ours and the paper's), how many are within :data:`POINTS` points,
    within one std, agree (either), and how many of the mapped points (anchors excluded)
    agree."""
    t = table[table["ours"].notna() & table["paper"].notna()].assign(
        block=lambda d: d["dataset"] + "-" + d["model"])

    def row(name: str, g: pd.DataFrame) -> dict[str, Any]:
        mapped = g["mapped_agree"].dropna()
        return {"block": name, "points": len(g),
                "within_points": int(g["within_points"].astype(bool).sum()),
                "within_std": int(g["within_std"].astype(bool).sum()),
                "agree": int(g["agree"].astype(bool).sum()),
                "mapped_points": len(mapped), "mapped_agree": int(mapped.astype(bool).sum())}

    rows = [row(b, t[t["block"] == b]) for b in t["block"].drop_duplicates()]
    rows.append(row("all", t))
    rows.append(row("all but facebook", t[t["dataset"] != "facebook"]))
    return pd.DataFrame(rows)


def counts_md(c: pd.DataFrame) -> str:
    """:func:`counts` as a markdown table."""
    def frac(k: int, n: int) -> str:
        return f"{k} / {n}" if n else "-"

    rows = [[r["block"], r["points"], frac(r["within_points"], r["points"]),
             frac(r["within_std"], r["points"]), frac(r["agree"], r["points"]),
             frac(r["mapped_agree"], r["mapped_points"])] for _, r in c.iterrows()]
    return md_table(["block", "points", f"within {POINTS:g} points", "within one std",
                     "agree (either)", "agree, mapped (anchors excluded)"], rows,
                    ["---", "---:", "---:", "---:", "---:", "---:"])


def _cell(r: pd.Series) -> str:
    ours = "not run" if pd.isna(r["ours"]) else f"{r['ours']:.1f}"
    if pd.isna(r["paper"]):
        return f"{ours} / -"
    gap = "" if pd.isna(r["gap"]) else f" ({r['gap']:+.1f})"
    if gap and not pd.isna(r["agree"]) and not bool(r["agree"]):
        gap = f" (**{r['gap']:+.1f}**)"
    return f"{ours} / {r['paper']:.1f}{gap}"


def block_md(table: pd.DataFrame, *, mapped: bool = False) -> str:
    """One block's points as a method x epsilon table, each cell ``ours / paper (gap)`` (a
    gap in bold does not agree); ``mapped``: ours mapped onto the paper's scale instead."""
    t = table.copy()
    if mapped:
        t = t.assign(ours=t["mapped"].where(t["mapped"].notna(), t["ours"]),
                     gap=t["mapped_gap"].where(t["mapped"].notna(), t["gap"]),
                     agree=t["mapped_agree"].where(t["mapped"].notna(), t["agree"]))
    eps = sorted(t["epsilon"].dropna().unique())
    rows = []
    for method in sorted(t["method"].unique(), key=_order):
        m = t[t["method"] == method]
        hp = "/".join(sorted(set(m["hparams"])))
        cells = [_cell(h.iloc[0]) if len(h := m[m["epsilon"] == e]) else "" for e in eps]
        free = m[m["epsilon"].isna()]
        rows.append([method, hp, *cells, _cell(free.iloc[0]) if len(free) else ""])
    return md_table(["method", "hp", *[f"ε={e:g}" for e in eps], "non-private"], rows,
                    ["---", "---"] + ["---:"] * (len(eps) + 1))


def hparam_notes(table: pd.DataFrame) -> list[str]:
    """One line per method of a block whose hyper-parameters are not all the authors':
    which epsilons, and why."""
    out = []
    t = table[table["hparams"] != "authors"]
    for (method, note), g in t.groupby(["method", "hparams_notes"], sort=False):
        eps = ", ".join("-" if pd.isna(e) else f"{e:g}" for e in g["epsilon"])
        out.append(f"{method} (ε {eps}): {note}")
    return out


def read_gap_notes(path: Path) -> pd.DataFrame:
    """``gap_notes.csv``: why a point is more than :data:`POINTS` points from the paper's, when
    one standard deviation does not cover it. Columns dataset, model, method, epsilon (empty:
    every epsilon of that method) and note (the cause, naming the protocol difference; a
    note that starts with "unexplained" records what was checked and still counts as
    unexplained); empty dataset / model fields match every dataset / model."""
    if not path.exists():
        return pd.DataFrame(columns=["dataset", "model", "method", "epsilon", "note"])
    notes = pd.read_csv(path, dtype={"dataset": str, "model": str, "method": str, "note": str})
    notes["epsilon"] = notes["epsilon"].astype(float)
    return notes.fillna({"dataset": "", "model": "", "note": ""})


#: datasets whose features are not the paper's (Facebook: raw MUSAE features, D6); their
#: points are not comparable one by one, only relative to their own MLP and GNN (mapped)
OTHER_FEATURES = ("facebook",)
NOT_COMPARABLE = ("not comparable point by point: different features (D6; our MLP is far "
                  "above the paper's, and every method's accuracy rests on the features)")


def gaps(table: pd.DataFrame, notes: pd.DataFrame) -> pd.DataFrame:
    """Every measured point more than :data:`POINTS` points from the paper's, with why:
    ``within one std`` (the larger of ours and the paper's covers it: seed noise), else the
    first matching :func:`read_gap_notes` note, else :data:`NOT_COMPARABLE` on a dataset of
    :data:`OTHER_FEATURES`, else ``unexplained``."""
    t = table[table["ours"].notna() & table["paper"].notna()
              & (table["gap"].abs() > POINTS)].copy()

    def why(r: pd.Series) -> str:
        if bool(r["within_std"]):
            return "within one std"
        for n in notes.itertuples():
            if ((not n.dataset or n.dataset == r["dataset"])
                    and (not n.model or n.model == r["model"]) and n.method == r["method"]
                    and (math.isnan(n.epsilon) or n.epsilon == r["epsilon"])):
                return str(n.note)
        return NOT_COMPARABLE if r["dataset"] in OTHER_FEATURES else "unexplained"

    t["why"] = [why(r) for _, r in t.iterrows()]
    return t


def gaps_md(g: pd.DataFrame) -> str:
    """:func:`gaps` as a markdown table (one row per point)."""
    rows = [[f"{r['dataset']}-{r['model']}", r["method"],
             "-" if pd.isna(r["epsilon"]) else f"{r['epsilon']:g}",
             f"{r['ours']:.1f} ± {r['ours_std']:.1f}", f"{r['paper']:.1f} ± {r['paper_std']:.1f}",
             f"{r['gap']:+.1f}", r["why"]] for _, r in g.iterrows()]
    return md_table(["block", "method", "ε", "ours", "paper", "gap", "why"], rows,
                    ["---", "---", "---:", "---:", "---:", "---:", "---"])


def generator_md(own: pd.DataFrame, table: pd.DataFrame) -> str:
    """LDPGen per block and epsilon: dpgl's own generation (``own``, a :func:`summarize`
    frame of the ``generator: chung-lu`` runs), the authors' generation the grid runs and the
    paper's (both from the comparison ``table``), in %; one row per block."""
    if own.empty:
        return ""
    grid = table[table["method"] == "ldpgen"]
    eps = sorted(grid["epsilon"].dropna().unique())
    rows = []
    for (dataset, model), g in own.groupby(["dataset", "model"], sort=True):
        theirs = grid[(grid["dataset"] == dataset) & (grid["model"] == model)]

        def cell(e: float, g: pd.DataFrame = g, theirs: pd.DataFrame = theirs) -> str:
            o = g[g["epsilon"] == e]
            t = theirs[theirs["epsilon"] == e]
            mine = f"{100 * o['test_accuracy_mean'].iloc[0]:.1f}" if len(o) else "not run"
            auth = (f"{t['ours'].iloc[0]:.1f}" if len(t) and not pd.isna(t["ours"].iloc[0])
                    else "not run")
            pap = f"{t['paper'].iloc[0]:.1f}" if len(t) and not pd.isna(t["paper"].iloc[0]) \
                else "-"
            return f"{mine} / {auth} / {pap}"

        rows.append([f"{dataset}-{model}", *[cell(e) for e in eps]])
    return md_table(["block", *[f"ε={e:g}" for e in eps]], rows,
                    ["---"] + ["---:"] * len(eps))
