"""The DPAR reproduction's figure grids and their tables/plots (no training)."""

from pathlib import Path

import pandas as pd

from dpgl.experiments import reproductions
from dpgl.experiments.reproductions import dpar

FIG1_EPSILONS = [0.1, 0.5, 1.0, 2.0, 4.0, 8.0, 64.0, 1024.0]
SPLIT_SHARES = [0.1, 0.3, 0.5, 0.7, 0.9]


def _grids() -> tuple[list, list]:
    repro = reproductions.get("dpar")
    return repro.configs(True, "fig1"), repro.configs(True, "split")


def test_quick_figure_grids_cover_the_sweeps() -> None:
    fig1, split = _grids()
    assert {c.params["sgd"] for c in fig1} == {"nonprivate"}

    def target(c):  # paper-calibrated runs take paper_epsilon, not --epsilon
        assert (c.epsilon is None) == (c.params["accounting"] == "paper")
        return c.epsilon if c.epsilon is not None else c.params["paper_epsilon"]

    assert {(c.method, target(c), c.params["accounting"]) for c in fig1} == {
        (m, e, a) for m in ("dpar-em0", "dpar-gm") for e in FIG1_EPSILONS
        for a in ("paper", "dpgl")}
    assert {(target(c), c.params["appr_share"], c.params["accounting"]) for c in split} == {
        (e, s, a) for e in (1.0, 8.0) for s in SPLIT_SHARES for a in ("paper", "dpgl")}
    assert len({c.key() for c in fig1 + split}) == len(fig1) + len(split)


def test_gap_and_sage_declare_the_degree_bound() -> None:
    table = reproductions.get("dpar").configs(True, "table")
    bounded = [c for c in table if c.method.startswith(("gap", "sage"))]
    assert bounded and {c.params["max_degree"] for c in bounded} == {246}


def test_figures_average_over_seeds_and_write_plots(tmp_path: Path) -> None:
    fig1, split = _grids()
    rows = []
    for c in fig1 + split:
        for acc in (0.5, 0.7):  # two "seeds" per point: mean 60.0 ± 14.1
            rows.append({"key": c.key(), "dataset": c.dataset, "method": c.method,
                         "epsilon": c.epsilon, "param_accounting": c.params["accounting"],
                         "param_paper_epsilon": c.params.get("paper_epsilon"),
                         "param_appr_share": c.params.get("appr_share"),
                         "test_accuracy": acc})
    text, paths = dpar.figures(pd.DataFrame(rows), fig1, split, tmp_path)
    assert [p.name for p in paths] == ["fig1_eps_pr.png", "figs2-6_budget_split.png"]
    assert all(p.stat().st_size > 0 for p in paths)
    assert "| dpar-em0 (paper) | " + " | ".join(["60.0 ± 14.1"] * 6) + " |" in text["fig1"]
    assert "| eps=8 (dpgl) | " + " | ".join(["60.0 ± 14.1"] * 5) + " |" in text["split"]
    # nothing stored yet: no section, no plot
    empty = pd.DataFrame(rows[:0], columns=list(rows[0]))
    assert dpar.figures(empty, fig1, split, tmp_path) == (
        {"fig1": None, "recall": None, "split": None}, [])


def test_before_after_table_pairs_rows_and_names_the_change(tmp_path: Path) -> None:
    before = tmp_path / dpar.BEFORE_FILE
    pd.DataFrame({"dataset": ["cora-ml", "cora-ml", "cora-ml"],
                  "variant": ["gap-ndp", "dpar-em0 (dpgl)", "sage-ndp"],
                  "epsilon": [8.0, 1.0, 8.0],
                  "test_accuracy_mean": [0.55, 0.31, 0.30]}).to_csv(before, index=False)
    now = pd.DataFrame({"dataset": ["cora-ml", "cora-ml", "cora-ml"],
                        "variant": ["gap-ndp", "dpar-em0 (dpgl)", "gap-nonprivate"],
                        "epsilon": [8.0, 1.0, float("nan")],
                        "test_accuracy_mean": [0.30, 0.31, 0.81]})
    rows = {r[1]: r for r in dpar.before_after(now, before)}
    assert rows["gap-ndp"][3:6] == ["55.0", "30.0", "-25.0"]
    assert "declared degree bound" in rows["gap-ndp"][6]
    assert rows["dpar-em0 (dpgl)"][3:6] == ["31.0", "31.0", "+0.0"]
    assert "public universe" in rows["dpar-em0 (dpgl)"][6]
    assert rows["sage-ndp"][3:5] == ["30.0", "not run"]
    assert rows["gap-nonprivate"][3:5] == ["not run", "81.0"]
    assert dpar.before_after(now, tmp_path / "missing.csv") == []
