"""Blink's full grid in the authors' protocol: the prepare hook puts the authors' published
hyper-parameters (authors_hparams.csv) into exactly the marked configurations, the full
protocol has one step per block with the paper protocol's options, and the comparison report
(ours vs every Fig. 5 number) counts agreement correctly; all without a real run."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from dpgl.errors import ConfigError
from dpgl.experiments import reproductions
from dpgl.experiments.config import RunConfig, RunResult
from dpgl.experiments.execute import validate_config
from dpgl.experiments.reproductions.blink import hparams, missing_md, paper_compare, prepare

BLINK = reproductions.get("blink")
CSV = Path(hparams.__file__).with_name("authors_hparams.csv")
PAPER = Path(hparams.__file__).with_name("paper_full.csv")
ROOT = Path(__file__).resolve().parents[2]
BLOCKS = [f"{d}-{m}" for d in ("cora", "citeseer", "facebook") for m in ("gcn", "sage", "gat")]


def _csv_rows(dataset: str, model: str, method: str, eps: str) -> dict[str, str]:
    """The CSV's rows of one configuration, read with the csv module (not the hook's code)."""
    with CSV.open(encoding="utf-8") as f:
        return {r["param"]: r["value"] for r in csv.DictReader(f)
                if (r["dataset"], r["model"], r["method"], r["epsilon"])
                == (dataset, model, method, eps)}


def _marked(dataset: str, model: str, method: str, eps: float | None, **params) -> RunConfig:
    return RunConfig(dataset=dataset, model=model, method=method, epsilon=eps,
                     params={"hparams": "authors", "lr": 0.01, "dropout": 0.5,
                             "weight_decay": 5e-4, "epochs": 300, **params})


@pytest.mark.parametrize("dataset, model, method, eps", [
    ("cora", "gcn", "blink-hard", 1), ("citeseer", "sage", "ldpgcn", 5),
    ("cora", "gat", "dprr", 4), ("citeseer", "gat", "rr", 8), ("cora", "gcn", "ldpgen", 3),
    ("citeseer", "gat", "none", None), ("facebook", "sage", "blink-soft", 7),
])
def test_prepare_puts_the_authors_values_of_the_configuration(dataset, model, method,
                                                              eps) -> None:
    rows = _csv_rows(dataset, model, method, "" if eps is None else str(eps))
    assert rows, "the CSV has this configuration"
    got = prepare(_marked(dataset, model, method, eps)).params
    assert "hparams" not in got
    for name in ("lr", "dropout", "weight_decay", "hidden", "epochs", "degree_share",
                 "phase1_share"):
        if name in rows:
            assert got[name] == pytest.approx(float(rows[name])), name
    assert got["epochs"] in (200, 300) and got["hidden"] == 16
    validate_config(prepare(_marked(dataset, model, method, eps)))


def test_prepare_maps_the_mlp_solitude_and_a_capped_degree_share() -> None:
    mlp = prepare(_marked("cora", "gat", "mlp", None)).params  # the MLP row, any model
    assert mlp["lr"] == float(_csv_rows("cora", "mlp", "mlp", "")["lr"]) == 0.1
    sol = _csv_rows("cora", "sage", "solitude-link", "4")
    got = prepare(_marked("cora", "sage", "solitude-link", 4.0)).params
    assert (got["lr"], got["adj_lr"]) == (float(sol["lr_theta"]), float(sol["lr_adj"]))
    assert "lambda1" not in got and "lam1" not in got
    assert hparams.authors_params("cora", "sage", "solitude-link", 4).status == "adapted"
    fb = _csv_rows("facebook", "gcn", "blink-hard", "1")
    assert fb["degree_share"] == "1.0"
    chosen = hparams.authors_params("facebook", "gcn", "blink-hard", 1)
    assert chosen.params["degree_share"] == 0.9 and chosen.status == "adapted"
    assert "run at 0.9" in chosen.notes[0]
    assert hparams.authors_params("cora", "gcn", "blink-hard", 1).status == "authors"


def test_prepare_keeps_the_grid_where_the_authors_published_nothing() -> None:
    cfg = _marked("facebook", "gat", "blink-soft", 2.0, degree_share=0.3)
    got = prepare(cfg)
    assert got.params == {k: v for k, v in cfg.params.items() if k != "hparams"}
    assert hparams.authors_params("facebook", "gat", "blink-soft", 2).status == "none"
    plain = RunConfig(dataset="cora", method="blink-hard", epsilon=1.0, params={"lr": 0.05})
    assert prepare(plain).key() == plain.key()  # unmarked: untouched
    with pytest.raises(ConfigError, match="the only value is 'authors'"):
        prepare(RunConfig(dataset="cora", method="none", params={"hparams": "mine"}))


def test_full_protocol_is_one_paper_protocol_step_per_block() -> None:
    steps = BLINK.steps(False)
    assert [s.label for s in steps] == BLOCKS
    total = 0
    for step in steps:
        configs = BLINK.configs(False, step.label)
        dataset, model = step.label.split("-")
        assert {(c.dataset, c.model) for c in configs} == {(dataset, model)}
        methods = {c.method for c in configs}
        assert ("blink-soft" in methods) == ("solitude-link" in methods) == (model != "gat")
        assert len(configs) == (174 if model == "gat" else 222)
        assert {c.epsilon for c in configs if c.epsilon} == set(map(float, range(1, 9)))
        assert {c.seed for c in configs} == {0, 1, 2}
        total += len(configs)
        for c in configs:
            p = c.params
            assert "hparams" not in p and c.data == {"normalize_rows": True}
            assert (p["split"], p["patience"], p["select_epoch_by"]) == (
                "blink-fixed", None, "val_loss")
            if c.method in ("rr", "dprr"):
                assert p["direction"] == "reported"
            if c.method == "dprr":
                assert (p["allocation"], p["degree_share"]) == ("split", 0.1)
            assert (p.get("generator") == "blink-authors-bug") == (c.method == "ldpgen")
            assert p["epochs"] == (200 if c.method in ("rr", "symrr", "ldpgcn",
                                                       "solitude-link") else 300)
        for c in configs[:: max(1, len(configs) // 25)]:
            validate_config(c)
    assert total == len(BLINK.configs(False)) == 1854


def _summary(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["dataset", "model", "method", "epsilon",
                                       "test_accuracy_mean", "test_accuracy_std", "n_seeds"])


def test_compare_and_count_on_a_synthetic_block() -> None:
    paper = pd.DataFrame(
        [["toy", "gcn", "none", math.nan, 80.0, 1.0, True],
         ["toy", "mlp", "mlp", math.nan, 60.0, 1.0, True],
         ["toy", "gcn", "rr", 1.0, 50.0, 1.0, True],
         ["toy", "gcn", "rr", 2.0, 50.0, 5.0, True],
         ["toy", "gcn", "dprr", 1.0, 40.0, 0.5, True]],
        columns=["dataset", "model", "method", "epsilon", "test_accuracy", "std", "plotted"])
    planned = pd.DataFrame([["toy", "gcn", m, e] for m, e in [
        ("none", math.nan), ("mlp", math.nan), ("rr", 1.0), ("rr", 2.0), ("dprr", 1.0),
        ("ldpgen", 1.0)]], columns=["dataset", "model", "method", "epsilon"])
    # ours: a scale twice the paper's (none 100, mlp 60): mapped = 60 + (ours - 60) / 2
    summary = _summary([("toy", "gcn", "none", math.nan, 1.00, 0.01, 3),
                        ("toy", "gcn", "mlp", math.nan, 0.60, 0.01, 3),
                        ("toy", "gcn", "rr", 1.0, 0.515, 0.01, 3),   # +1.5: within 2
                        ("toy", "gcn", "rr", 2.0, 0.54, 0.01, 3),    # +4: within paper std 5
                        ("toy", "gcn", "dprr", 1.0, 0.20, 0.03, 3)])  # -20: disagrees
    t = paper_compare.compare(planned, summary, paper).set_index(["method", "epsilon"])
    assert t.loc[("rr", 1.0), "gap"] == pytest.approx(1.5)
    assert (t.loc[("rr", 1.0), "within_points"], t.loc[("rr", 1.0), "within_std"]) == (
        True, False)
    assert (t.loc[("rr", 2.0), "within_points"], t.loc[("rr", 2.0), "within_std"]) == (
        False, True)
    assert not t.loc[("dprr", 1.0), "agree"] and t.loc[("mlp", math.nan), "paper"] == 60.0
    assert pd.isna(t.loc[("ldpgen", 1.0), "ours"]) and pd.isna(t.loc[("ldpgen", 1.0), "agree"])
    assert str(t["n_seeds"].dtype) == "Int64" and pd.isna(t.loc[("ldpgen", 1.0), "n_seeds"])
    assert "3.0" not in set(pd.read_csv(io.StringIO(t.to_csv()), dtype=str)["n_seeds"])
    assert t.loc[("rr", 1.0), "mapped"] == pytest.approx(60 + (51.5 - 60) / 2)
    assert t.loc[("dprr", 1.0), "mapped"] == pytest.approx(40.0)  # 60 + (20 - 60) / 2
    assert bool(t.loc[("dprr", 1.0), "mapped_agree"]) and pd.isna(t.loc[("none", math.nan),
                                                                        "mapped"])
    assert t.loc[("ldpgen", 1.0), "hparams"] == "none"
    # none: +20 (no); mlp: 0 (both); rr 1: +1.5 (points); rr 2: +4 (std 5); dprr: -20 (no).
    # Mapped: rr 1 -> 55.75 (+5.75 > 2), rr 2 -> 57 (+7 > 5), dprr -> 40 (agrees)
    c = paper_compare.counts(t.reset_index()).set_index("block")
    assert c.loc["toy-gcn"].to_dict() == {"points": 5, "within_points": 2, "within_std": 2,
                                          "agree": 3, "mapped_points": 3, "mapped_agree": 1}
    assert c.loc["all but facebook", "agree"] == 3
    md = paper_compare.block_md(t.reset_index())
    assert "| dprr | none | 20.0 / 40.0 (**-20.0**) |" in md
    assert "| rr | none | 51.5 / 50.0 (+1.5) | 54.0 / 50.0 (+4.0) |" in md
    assert "| ldpgen | none | not run |" in md.replace("not run / -", "not run")


def test_full_report_from_a_synthetic_store_and_only_by_block(tmp_path: Path,
                                                              monkeypatch) -> None:
    """``--only cora-gcn`` runs that block alone; the report then counts its points: every
    run returns the paper's value except RR, 10 points below it."""
    paper = pd.read_csv(PAPER)
    calls: list[RunConfig] = []

    def fake_run(cfg: RunConfig, data_dir=None, device="cpu") -> RunResult:
        calls.append(cfg)
        model = "mlp" if cfg.method == "mlp" else cfg.model
        hit = paper[(paper["dataset"] == cfg.dataset) & (paper["model"] == model)
                    & (paper["method"] == cfg.method)
                    & ((paper["epsilon"] == cfg.epsilon) if cfg.epsilon is not None
                       else paper["epsilon"].isna())]
        acc = float(hit["test_accuracy"].iloc[0]) / 100 - (0.10 if cfg.method == "rr" else 0)
        return RunResult(metrics={"test_accuracy": acc, "val_loss": 1.0, "val_accuracy": acc},
                         privacy={"totals": {}})

    import dpgl.experiments.execute as execute
    monkeypatch.setattr(execute, "execute_run", fake_run)
    BLINK.run(tmp_path, quick=False, data_dir=None, console=None, only=("cora-gcn",))
    assert len(calls) == 222 and {(c.dataset, c.model) for c in calls} == {("cora", "gcn")}
    BLINK.report(tmp_path, quick=False)
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert "Runs: 222 of 1854 configurations stored" in readme
    assert "| cora-gcn | 74 | 66 / 74 | 66 / 74 | 66 / 74 | 64 / 72 |" in readme
    assert "Cora and CiteSeer: 66 of 74 points agree" in readme
    assert "| blink-hard | authors | 71.2 / 71.2 (+0.0) |" in readme
    assert "## Protocol differences" in readme and "Runs: 0 of 174 stored." in readme
    table = pd.read_csv(tmp_path / "paper_comparison.csv")
    rr = table[(table["method"] == "rr") & (table["model"] == "gcn")
               & (table["dataset"] == "cora")]
    assert (rr["gap"].round(6) == -10.0).all() and not rr["agree"].astype(bool).any()


def _totals(epsilon: float | None) -> dict:
    """A stored report's totals as a real edge-LDP run (or a non-private one) records them."""
    public = {u: {"delta": 0.0, "epsilon": None, "unit": u} for u in ("feature-LDP",
                                                                      "label-LDP")}
    if epsilon is None:
        return public
    return {"edge-LDP": {"delta": 0.0, "epsilon": epsilon, "unit": "edge-LDP"}, **public}


def _recorded_runs(monkeypatch) -> list[RunConfig]:
    """Replace the runner's run function by one that records each configuration (and returns
    a fixed result); the list it fills."""
    calls: list[RunConfig] = []

    def fake_run(cfg: RunConfig, data_dir=None, device="cpu") -> RunResult:
        calls.append(cfg)
        return RunResult(metrics={"test_accuracy": 0.5, "val_loss": 1.0, "val_accuracy": 0.5},
                         privacy={"totals": _totals(cfg.epsilon)})

    import dpgl.experiments.execute as execute
    monkeypatch.setattr(execute, "execute_run", fake_run)
    return calls


def test_method_filters_run_only_the_named_methods(tmp_path: Path, monkeypatch) -> None:
    """``--method`` keeps only the named methods' runs, ``--skip-method`` drops them (both
    within ``--only``'s block); a name the protocol never runs is a one-line error before
    anything runs."""
    calls = _recorded_runs(monkeypatch)
    BLINK.run(tmp_path / "a", quick=False, data_dir=None, console=None, only=("cora-gcn",),
              methods=("rr", "mlp"))
    assert sorted({c.method for c in calls}) == ["mlp", "rr"] and len(calls) == 3 + 24
    calls.clear()
    BLINK.run(tmp_path / "b", quick=False, data_dir=None, console=None, only=("cora-gat",),
              skip_methods=("solitude-link", "ldpgen", "none"))
    assert {c.method for c in calls} == {"mlp", "blink-hard", "blink-hybrid", "rr", "symrr",
                                         "dprr", "ldpgcn"}
    assert not (tmp_path / "b" / "README.md").exists()  # partial: no report
    calls.clear()
    with pytest.raises(ConfigError, match="runs no method nosuch"):
        BLINK.run(tmp_path / "c", quick=False, data_dir=None, console=None,
                  skip_methods=("nosuch",))
    assert not calls


def test_gaps_over_two_points_are_explained_by_std_or_a_note_else_flagged(tmp_path) -> None:
    """A gap over 2 points is 'within one std' when the larger std covers it, else the first
    matching note (an empty epsilon matches every epsilon, an empty dataset every dataset),
    else 'unexplained'; gaps of 2 points or less are not listed."""
    table = pd.DataFrame({
        "dataset": ["cora", "cora", "cora", "citeseer", "citeseer", "facebook"],
        "model": ["gcn"] * 6,
        "method": ["rr", "rr", "dprr", "ldpgen", "symrr", "mlp"],
        "epsilon": [1.0, 2.0, 1.0, 3.0, 1.0, float("nan")],
        "ours": [50.0, 60.0, 30.0, 45.0, 41.0, 89.0],
        "ours_std": [1.0, 5.0, 0.5, 1.0, 0.1, 0.1],
        "paper": [55.0, 55.0, 35.0, 35.0, 40.0, 76.5],
        "paper_std": [1.0, 1.0, 0.5, 0.5, 0.1, 0.2]})
    table["gap"] = table["ours"] - table["paper"]
    tol = table[["ours_std", "paper_std"]].max(axis=1)
    table["within_std"] = table["gap"].abs() <= tol
    path = tmp_path / "notes.csv"
    path.write_text("dataset,model,method,epsilon,note\n"
                    ",,ldpgen,,their generator\ncora,gcn,dprr,2,not this epsilon\n",
                    encoding="utf-8")
    g = paper_compare.gaps(table, paper_compare.read_gap_notes(path))
    # Facebook's features are not the paper's: its gaps are flagged as not comparable
    assert g.loc[g["dataset"] == "facebook", "why"].tolist() == [paper_compare.NOT_COMPARABLE]
    g = g[g["dataset"] != "facebook"].set_index(["method", "epsilon"])
    assert g["why"].to_dict() == {("rr", 1.0): "unexplained", ("rr", 2.0): "within one std",
                                  ("dprr", 1.0): "unexplained",
                                  ("ldpgen", 3.0): "their generator"}
    md = paper_compare.gaps_md(g.reset_index())
    assert "| citeseer-gcn | ldpgen | 3 | 45.0 ± 1.0 | 35.0 ± 0.5 | +10.0 | their generator |" in md
    assert paper_compare.read_gap_notes(tmp_path / "none.csv").empty


def test_default_output_directories() -> None:
    """Blink's full grid (the paper's protocol) defaults to results/blink and its quick grid to
    results/blink-quick; a reproduction without an ``out`` entry uses results/<name>."""
    assert BLINK.default_out(False) == Path("results/blink")
    assert BLINK.default_out(True) == Path("results/blink-quick")
    assert reproductions.get("lpgnn").default_out(True) == Path("results/lpgnn")


def test_epsilon_filter_runs_only_those_epsilons(tmp_path: Path, monkeypatch) -> None:
    """``--epsilon`` keeps only the runs at those epsilons (non-private runs have none, so
    they are left out); an epsilon the protocol does not run is an error."""
    calls = _recorded_runs(monkeypatch)
    BLINK.run(tmp_path / "a", quick=False, data_dir=None, console=None, only=("cora-gcn",),
              methods=("solitude-link",), epsilons=(2.0, 8.0))
    assert sorted((c.epsilon, c.seed) for c in calls) == [(e, s) for e in (2.0, 8.0)
                                                          for s in range(3)]
    with pytest.raises(ConfigError, match=r"runs no epsilon 0\.5"):
        BLINK.run(tmp_path / "b", quick=False, data_dir=None, console=None, epsilons=(0.5,))


def test_seed_filter_runs_only_those_seeds(tmp_path: Path, monkeypatch) -> None:
    """``--seed`` keeps only the runs with those seeds, non-private ones included; a seed the
    protocol does not run is an error."""
    calls = _recorded_runs(monkeypatch)
    BLINK.run(tmp_path / "a", quick=False, data_dir=None, console=None, only=("cora-gcn",),
              methods=("none", "rr"), seeds=(1,))
    assert sorted((c.method, c.epsilon, c.seed) for c in calls) == [
        ("none", None, 1), *[("rr", float(e), 1) for e in range(1, 9)]]
    with pytest.raises(ConfigError, match=r"runs no seed 7 \(it runs seeds 0-2\)"):
        BLINK.run(tmp_path / "b", quick=False, data_dir=None, console=None, seeds=(7,))


def test_param_filter_runs_only_that_configuration(tmp_path: Path, monkeypatch) -> None:
    """``--param KEY=VALUE`` keeps only the runs whose parameters set KEY to VALUE (here one
    of blink-pp's configurations: the runs of methods without the key are left out too); a
    value no run uses, or a combination no run has, is an error naming the values used."""
    pp = reproductions.get("blink-pp")
    calls = _recorded_runs(monkeypatch)
    pp.run(tmp_path / "a", quick=False, data_dir=None, console=None, only=("cora",),
           seeds=(3,), epsilons=(1.0,), params=(("covariates", "none"),))
    assert [(c.method, c.params["graph"], c.params["edge_scale"], c.params.get("public_graph"))
            for c in calls] == [("blink-pp", "hybrid", "val", None),
                                ("blink-pp", "hybrid", "val", 10), ("blink-pp", "hybrid", 0, 10)]
    calls.clear()
    pp.run(tmp_path / "a", quick=False, data_dir=None, console=None, only=("cora",),
           seeds=(3,), epsilons=(1.0,), params=(("knn", 40),))
    assert sorted(c.params["graph"] for c in calls) == ["hybrid", "soft"]
    assert not (tmp_path / "a" / "README.md").exists()  # a filtered run writes no report
    with pytest.raises(ConfigError, match=r'no configuration with covariates = "nothing" '
                                          r'\(its values of covariates: "none"\)'):
        pp.run(tmp_path / "b", quick=False, data_dir=None, console=None,
               params=(("covariates", "nothing"),))
    with pytest.raises(ConfigError, match=r"no configuration with knn = 40, covariates"):
        pp.run(tmp_path / "b", quick=False, data_dir=None, console=None,
               params=(("knn", 40), ("covariates", "none")))


def _checked_seeds(check_file: str) -> list[int]:
    """The seeds of a check grid (``gapcheck-*`` / ``initcheck-*``) in gap_checks.csv."""
    stored = pd.read_csv(ROOT / "results" / "blink" / "gap_checks.csv")
    return sorted(stored[stored["check"] == check_file.removesuffix(".yaml")]["seed"])


@pytest.mark.parametrize("name", sorted(p.name for p in BLINK.dir.glob("gapcheck-*.yaml")))
def test_gap_checks_rerun_the_full_grids_point(name: str) -> None:
    """A gap note's seed check runs exactly the full grid's configuration of that point (its
    seeds 0-2 have the full protocol's run keys), with more seeds (10, or 30 where the note
    needed a sharper test), every one in gap_checks.csv."""
    from dpgl.experiments.grid import load_grid
    from dpgl.experiments.reproductions._spec import is_private

    check = load_grid(BLINK.dir / name).expand(is_private)
    full = {c.key() for c in BLINK.configs(False)}
    assert len(check) in (10, 30) and sorted(c.seed for c in check) == list(range(len(check)))
    assert {c.key() for c in check if c.seed < 3} <= full
    assert not {c.key() for c in check if c.seed >= 3} & full
    assert _checked_seeds(name) == list(range(len(check)))


@pytest.mark.parametrize("name", sorted(p.name for p in BLINK.dir.glob("initcheck-*.yaml")))
def test_init_checks_change_only_the_weight_initialisation(name: str) -> None:
    """A protocol check for D14 runs the full grid's configuration of its point with the
    authors' Glorot weights (``weight_init: glorot``) and nothing else changed, on 30 seeds,
    every one in gap_checks.csv (paired by seed with the point's gap check)."""
    from dpgl.experiments.grid import load_grid
    from dpgl.experiments.reproductions._spec import is_private

    check = load_grid(BLINK.dir / name).expand(is_private)
    full = {c.key() for c in BLINK.configs(False)}
    assert sorted(c.seed for c in check) == list(range(30))
    for c in check:
        assert c.params["weight_init"] == "glorot"
        if c.seed < 3:
            base = c.model_dump()
            base["params"] = {k: v for k, v in c.params.items() if k != "weight_init"}
            assert type(c)(**base).key() in full
    assert _checked_seeds(name) == list(range(30))


def test_generator_table_puts_dpgls_ldpgen_beside_the_authors_and_the_paper() -> None:
    own = pd.DataFrame({"dataset": ["cora"], "model": ["gcn"], "epsilon": [1.0],
                        "test_accuracy_mean": [0.423]})
    table = pd.DataFrame({"dataset": ["cora", "cora"], "model": ["gcn", "gcn"],
                          "method": ["ldpgen", "ldpgen"], "epsilon": [1.0, 2.0],
                          "ours": [34.3, math.nan], "paper": [34.1, 34.3]})
    md = paper_compare.generator_md(own, table)
    assert "| cora-gcn | 42.3 / 34.3 / 34.1 | not run / not run / 34.3 |" in md
    assert paper_compare.generator_md(pd.DataFrame(), table) == ""


def test_a_note_marked_unexplained_still_counts_as_unexplained(tmp_path: Path) -> None:
    table = pd.DataFrame({"dataset": ["cora"], "model": ["gat"], "method": ["symrr"],
                          "epsilon": [3.0], "ours": [20.0], "ours_std": [1.0], "paper": [27.0],
                          "paper_std": [1.0], "gap": [-7.0], "within_std": [False]})
    path = tmp_path / "notes.csv"
    path.write_text("dataset,model,method,epsilon,note\ncora,gat,symrr,3,\"unexplained, "
                    "checked: not seed noise\"\n", encoding="utf-8")
    g = paper_compare.gaps(table, paper_compare.read_gap_notes(path))
    assert g["why"].iloc[0].startswith("unexplained, checked")


def test_only_combines_steps_and_datasets(tmp_path: Path, monkeypatch) -> None:
    """``--only`` takes step labels and dataset names: within a kind they add up, across
    kinds they intersect (a step on a dataset); a name that is neither is a one-line error
    before anything runs."""
    lpgnn = reproductions.get("lpgnn")
    calls = _recorded_runs(monkeypatch)
    lpgnn.run(tmp_path / "a", quick=False, data_dir=None, console=None,
              only=("xyeps", "citeseer"))
    xyeps = [c for g in next(s for s in lpgnn.steps(False) if s.label == "xyeps").grids
             for c in lpgnn.expand(g) if c.dataset == "citeseer"]
    assert calls and {c.key() for c in calls} == {c.key() for c in xyeps}
    calls.clear()
    lpgnn.run(tmp_path / "b", quick=False, data_dir=None, console=None,
              only=("bn_check", "control"))
    assert {c.dataset for c in calls} == {"cora", "citeseer", "facebook"}
    assert {c.params.get("batch_norm", True) for c in calls} == {False, True}
    calls.clear()
    with pytest.raises(ConfigError, match="has no step or dataset pubmed"):
        lpgnn.run(tmp_path / "c", quick=False, data_dir=None, console=None,
                  only=("pubmed", "cora"))
    assert not calls


def test_a_clean_checkout_resumes_from_the_committed_export(tmp_path: Path,
                                                             monkeypatch) -> None:
    """With no ``runs.sqlite`` but a ``runs.jsonl``, a run restores the store from the export
    first and runs only what is missing; ``--merge`` adds another copy's runs (and keeps those
    already stored); the export then written is the union, byte for byte what a store that
    ran them all would export."""
    calls = _recorded_runs(monkeypatch)
    first = tmp_path / "first"
    BLINK.run(first, quick=False, data_dir=None, console=None, only=("cora-gcn",),
              methods=("mlp", "none"))
    assert len(calls) == 6
    BLINK.report(first, quick=False)
    (first / "runs.sqlite").unlink()
    calls.clear()
    BLINK.run(first, quick=False, data_dir=None, console=None, only=("cora-gcn",),
              methods=("mlp", "none", "rr"), epsilons=(8.0,))
    assert sorted({c.method for c in calls}) == ["rr"] and len(calls) == 3
    # another machine ran RR at eps 7 in its own copy
    other = tmp_path / "other"
    calls.clear()
    BLINK.run(other, quick=False, data_dir=None, console=None, only=("cora-gcn",),
              methods=("rr",), epsilons=(7.0, 8.0))
    BLINK.report(other, quick=False)
    BLINK.run(first, quick=False, data_dir=None, console=None, report_only=True,
              merge=(other / "runs.jsonl",))
    rows = [r for r in (first / "runs.jsonl").read_text().splitlines() if r]
    assert len(rows) == 6 + 3 + 3
    # the eps = 8 runs, stored in both copies, are stored once
    from dpgl.experiments.store import RunStore
    with RunStore(first / "runs.sqlite") as s:
        assert len(s) == 12
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "x"}\nnot json\n')
    with pytest.raises(ConfigError, match="line 2 is not a stored run"):
        BLINK.run(first, quick=False, data_dir=None, console=None, report_only=True,
                  merge=(bad,))
    # a copied run meets the runner's privacy check: a run charged over its budget (or one
    # that recorded nothing) is refused, and nothing of that file is added
    rows = [json.loads(r) for r in (other / "runs.jsonl").read_text().splitlines() if r]
    over = next(r for r in rows if r["epsilon"] == 7.0)
    over["privacy"]["totals"]["edge-LDP"]["epsilon"] = 14.0
    good = next(r for r in rows if r["epsilon"] == 8.0)
    (tmp_path / "over.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(over) + "\n")
    with pytest.raises(ConfigError, match="fails the privacy check of a run: method 'rr' "
                                          "spent edge-LDP epsilon 14, more than its budget"):
        BLINK.run(tmp_path / "third", quick=False, data_dir=None, console=None,
                  report_only=True, merge=(tmp_path / "over.jsonl",))
    with RunStore(tmp_path / "third" / "runs.sqlite") as s:
        assert len(s) == 0
    over["privacy"]["totals"] = {}
    (tmp_path / "empty.jsonl").write_text(json.dumps(over) + "\n")
    with pytest.raises(ConfigError, match="recorded no privacy part"):
        BLINK.run(tmp_path / "third", quick=False, data_dir=None, console=None,
                  report_only=True, merge=(tmp_path / "empty.jsonl",))


def test_missing_runs_are_listed_per_method_and_epsilon() -> None:
    """The full README's "Not run yet" list: every seed missing at an epsilon gives the
    epsilon, some seeds missing give the seeds; stored runs and complete methods are left out."""
    configs = [SimpleNamespace(method=m, epsilon=e, seed=s)
               for m in ("rr", "symrr", "mlp") for e in ((1.0, 3.0) if m != "mlp" else (None,))
               for s in (0, 1, 2)]
    stored = {("rr", 3.0, 1), ("symrr", 1.0, 0), ("symrr", 1.0, 1), ("symrr", 1.0, 2),
              ("symrr", 3.0, 0), ("symrr", 3.0, 1)}

    class Runs:
        def count(self, cs):
            return sum((c.method, c.epsilon, c.seed) in stored for c in cs)

    assert missing_md(configs, Runs()) == (
        "rr at ε = 1 and seeds 0, 2 at ε = 3; symrr seed 2 at ε = 3; mlp all its runs")
    assert missing_md(configs, None).startswith("rr at ε = 1, 3; symrr at ε = 1, 3")


def test_only_runs_a_measure_step_when_it_names_it(tmp_path: Path, monkeypatch) -> None:
    """A step that measures without runs (LPGNN's ``rq2``) runs under ``--only`` when ``--only``
    names its label, and not when it names other steps or datasets."""
    lpgnn = reproductions.get("lpgnn")
    calls = _recorded_runs(monkeypatch)
    measured: list[bool] = []
    monkeypatch.setattr(lpgnn.hooks, "measure", lambda repro, out, quick, data: measured
                        .append(quick))
    lpgnn.run(tmp_path / "a", quick=False, data_dir=None, console=None, only=("rq2",))
    assert measured == [False] and not calls
    lpgnn.run(tmp_path / "b", quick=False, data_dir=None, console=None,
              only=("control", "cora"))
    assert measured == [False] and calls
