"""The DPAR reproduction's figure grids and their tables/plots (no training)."""

from pathlib import Path

import pandas as pd

from dpgl.experiments.reproductions import dpar


def test_quick_figure_grids_cover_the_sweeps() -> None:
    fig1_spec, split_spec = dpar.figure_grids(quick=True)
    fig1 = dpar._configs([fig1_spec])
    split = dpar._configs([split_spec])
    assert {c.params["sgd"] for c in fig1} == {"nonprivate"}

    def target(c):  # paper-calibrated runs take paper_epsilon, not --epsilon
        assert (c.epsilon is None) == (c.params["accounting"] == "paper")
        return c.epsilon if c.epsilon is not None else c.params["paper_epsilon"]

    assert {(c.method, target(c), c.params["accounting"]) for c in fig1} == {
        (m, e, a) for m in ("dpar-em0", "dpar-gm") for e in dpar.FIG1_EPSILONS
        for a in ("paper", "dpgl")}
    assert {(target(c), c.params["appr_share"], c.params["accounting"]) for c in split} == {
        (e, s, a) for e in (1.0, 8.0) for s in dpar.SPLIT_SHARES for a in ("paper", "dpgl")}
    assert len({c.key() for c in fig1 + split}) == len(fig1) + len(split)


def test_figures_average_over_seeds_and_write_plots(tmp_path: Path) -> None:
    fig1_spec, split_spec = dpar.figure_grids(quick=True)
    fig1, split = dpar._configs([fig1_spec]), dpar._configs([split_spec])
    rows = []
    for c in fig1 + split:
        for acc in (0.5, 0.7):  # two "seeds" per point: mean 60.0 ± 14.1
            rows.append({"key": c.key(), "dataset": c.dataset, "method": c.method,
                         "epsilon": c.epsilon, "param_accounting": c.params["accounting"],
                         "param_paper_epsilon": c.params.get("paper_epsilon"),
                         "param_appr_share": c.params.get("appr_share"),
                         "test_accuracy": acc})
    text, paths = dpar._write_figures(pd.DataFrame(rows), fig1, split, tmp_path)
    assert [p.name for p in paths] == ["fig1_eps_pr.png", "figs2-6_budget_split.png"]
    assert all(p.stat().st_size > 0 for p in paths)
    body = "\n".join(text)
    assert "| dpar-em0 (paper) | " + " | ".join(["60.0 ± 14.1"] * 6) + " |" in body
    assert "| eps=8 (dpgl) | " + " | ".join(["60.0 ± 14.1"] * 5) + " |" in body
    # nothing stored yet: no section, no plot
    assert dpar._write_figures(pd.DataFrame(rows[:0], columns=list(rows[0])), fig1, split,
                               tmp_path) == ([], [])
