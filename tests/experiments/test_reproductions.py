"""Reproductions as data: every reproduction is found, its grids expand to exactly the runs
the committed results were made with, and its README and tables regenerate byte-identically
from what is committed (runs.jsonl / runs.csv / the committed tables), without a run store."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from dpgl.experiments import reproductions
from dpgl.experiments.config import RunConfig
from dpgl.experiments.reproductions._tables import Runs, md_table, pivot_md, pm
from dpgl.experiments.store import RunStore

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["blink", "blink-pp", "dpar", "dprr", "lpgnn", "solitude"]

#: sha256 (first 16 hex digits) of the sorted run keys of each quick protocol, taken from the
#: code before the reproductions became data: same configurations -> same keys -> the stored
#: runs are reused, nothing re-runs. dprr and lpgnn: the keys after the parameter renames of
#: docs/glossary.md (alpha -> degree_share, steps -> feature_steps), which a run store
#: migrates to when it is opened (schema 3; results/lpgnn: 214 of 214 runs found after it).
#: lpgnn 214 -> 353 and solitude 107 -> 154 (issue #16 item 2): steps added, the earlier runs'
#: keys unchanged (LPGNN's CCS version: xyeps 84, labels 57 of which 8 are xyeps runs,
#: bn_check 6; Solitude: CiteSeer with GraphSAGE in Table 3 27, xeps 16 of which 4 are Table 3
#: runs, yeps 8). lpgnn 353 -> 425: the authors' epoch selection (rule_labels 48,
#: rule_checks 24), the earlier 353 keys unchanged (test below).
QUICK_KEYS = {"blink": (147, "fe6e07d746739bcf"), "blink-pp": (1000, "13d9b324f4c5a249"),
              "dpar": (186, "d4da3997a893e310"),
              "dprr": (232, "db1f004a4bd4b757"), "lpgnn": (425, "edd94935024b1c0a"),
              "solitude": (154, "db491ea505f6da0b")}
#: The quick keys before issue #16 item 2 (kept: every one is still in the protocol).
EARLIER_KEYS = {"lpgnn": (214, "585f64cab23d1e7b"), "solitude": (107, "ac177f1050eb61ac")}

#: What each committed quick directory regenerates (and the test compares byte for byte);
#: blink-pp's committed results are its full protocol's (FULL_OUTPUTS).
OUTPUTS = {"blink": ["README.md", "results.md", "results.csv"],
           "dpar": ["README.md", "results.md", "results.csv"],
           "dprr": ["README.md", "fig4.csv", "fig5.csv", "fig6.csv", "fig10.csv"],
           "lpgnn": ["README.md", "table3.md", "table3.csv", "fig6_steps_selfloops.csv",
                     "fig7_label_rate.csv", "xyeps.csv", "labels.csv", "labels_rule.csv",
                     "rule_checks.csv"],
           "solitude": ["README.md", "table3.md", "table3.csv", "fig5_label_rate.csv", "link.csv",
                        "xeps.csv", "yeps.csv"]}


def test_every_reproduction_is_listed() -> None:
    assert sorted(reproductions.available()) == NAMES
    with pytest.raises(Exception, match="unknown reproduction 'nope'"):
        reproductions.get("nope")


@pytest.mark.parametrize("name", NAMES)
def test_quick_grids_expand_to_the_committed_runs(name: str) -> None:
    keys = sorted(c.key() for c in reproductions.get(name).configs(True))
    digest = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]
    assert (len(keys), digest) == QUICK_KEYS[name]


@pytest.mark.parametrize("name", sorted(EARLIER_KEYS))
def test_added_steps_keep_the_earlier_runs(name: str) -> None:
    """The steps added later leave the earlier quick runs' keys as they were (so the stored
    runs are reused): the earlier steps alone still hash to the earlier digest."""
    repro = reproductions.get(name)
    added = {"lpgnn": ("xyeps", "labels", "bn_check", "rule_"),
             "solitude": ("xeps", "yeps")}[name]
    earlier = [c for s in repro.steps(True) if not s.label.startswith(added)
               for g in s.grids for c in repro.expand(g)]
    if name == "solitude":  # Table 3's CiteSeer / GraphSAGE grid came with the added steps
        earlier = [c for c in earlier if (c.dataset, c.model) != ("citeseer", "sage")]
    keys = sorted({c.key() for c in earlier})
    digest = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]
    assert (len(keys), digest) == EARLIER_KEYS[name]


def test_blink_pp_edge_scale_runs_keep_the_earlier_runs() -> None:
    """blink-pp 600 -> 840 (issue #16 item 4): the edge-scale configurations and the
    Blink-Hybrid ablation grids were added; the earlier 600 runs keep their keys."""
    repro = reproductions.get("blink-pp")
    earlier = sorted({c.key() for c in repro.configs(True) if "edge_scale" not in c.params})
    digest = hashlib.sha256("\n".join(earlier).encode()).hexdigest()[:16]
    assert (len(earlier), digest) == (600, "016c059cf2aa798d")


def test_blink_pp_public_graph_runs_keep_the_earlier_runs() -> None:
    """blink-pp 840 -> 1000: the public-graph candidate and its ablation (Cora and CiteSeer,
    grids of their own) were added; the earlier 840 runs keep their keys."""
    repro = reproductions.get("blink-pp")
    configs = repro.configs(True)
    earlier = sorted({c.key() for c in configs if "public_graph" not in c.params})
    digest = hashlib.sha256("\n".join(earlier).encode()).hexdigest()[:16]
    assert (len(earlier), digest) == (840, "ca42c915c6d95bba")
    added = [c for c in configs if "public_graph" in c.params]
    assert len(added) == 160 and {c.dataset for c in added} == {"cora", "citeseer"}


def test_lpgnn_rule_steps_keep_the_earlier_runs() -> None:
    """The steps with the authors' epoch selection (``select_epoch_by`` set, so new keys) leave
    the 353 earlier quick runs as they were: the default rule's keys do not change."""
    repro = reproductions.get("lpgnn")
    earlier = [c for s in repro.steps(True) if not s.label.startswith("rule_")
               for g in s.grids for c in repro.expand(g)]
    keys = sorted({c.key() for c in earlier})
    assert (len(keys), hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]) == \
        (353, "7635218950653eb4")
    assert all("select_epoch_by" not in c.params for c in earlier)


def test_each_protocol_writes_a_directory_of_its_own() -> None:
    """The quick and the full protocol of a reproduction never share a directory: a report
    of one (``--report-only`` without ``--out``) would rewrite the other's README and drop its
    runs from the committed runs.jsonl."""
    for name in NAMES:
        repro = reproductions.get(name)
        assert repro.default_out(True) != repro.default_out(False), name
    assert len({reproductions.get(n).default_out(q) for n in NAMES for q in (True, False)}) \
        == 2 * len(NAMES)


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_readme_and_tables_regenerate_byte_identical(name: str, tmp_path: Path) -> None:
    committed = ROOT / reproductions.get(name).default_out(True)
    out = tmp_path / name
    shutil.copytree(committed, out, ignore=shutil.ignore_patterns("*.sqlite*", "*.png"))
    for f in OUTPUTS[name]:
        (out / f).unlink()  # rewritten from the runs (or the committed summary), not kept
    reproductions.get(name).report(out, quick=True)
    for f in OUTPUTS[name]:
        assert (out / f).read_bytes() == (committed / f).read_bytes(), f"{name}/{f} differs"


#: What a full protocol with its own directory regenerates (the quick one: OUTPUTS).
FULL_OUTPUTS = {"blink": ["README.md", "results.md", "results.csv", "paper_comparison.csv"],
                "blink-pp": ["README.md", "results.csv"],
                "lpgnn": ["README.md", "xyeps.csv"],
                "solitude": ["README.md", "table3.md", "table3.csv", "fig5_label_rate.csv",
                             "link.csv"]}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FULL_OUTPUTS))
def test_full_protocol_directories_regenerate_byte_identical(name: str, tmp_path: Path) -> None:
    """A full protocol with a directory of its own (results/blink, results/lpgnn-full) is
    regenerated from its committed runs.jsonl byte for byte, like the quick ones."""
    repro = reproductions.get(name)
    assert repro.default_out(False) != repro.default_out(True)
    committed = ROOT / repro.default_out(False)
    out = tmp_path / name
    shutil.copytree(committed, out, ignore=shutil.ignore_patterns("*.sqlite*", "*.png"))
    for f in FULL_OUTPUTS[name]:
        (out / f).unlink()
    repro.report(out, quick=False)
    for f in FULL_OUTPUTS[name]:
        assert (out / f).read_bytes() == (committed / f).read_bytes(), f"{name}/{f} differs"


def test_runs_export_round_trips_the_store(tmp_path: Path) -> None:
    from dpgl.experiments.config import RunResult

    cfg = RunConfig.parse({"task": "node", "dataset": "csbm", "method": "rr", "model": "gcn",
                           "epsilon": 1.0, "seed": 0, "params": {"lr": 0.01}}, "test")
    normalized = cfg.model_copy(update={"data": {"normalize_rows": True}})
    configs = [cfg, normalized]
    with RunStore(tmp_path / "runs.sqlite") as store:
        for c in configs:
            store.put(c, RunResult.parse({"metrics": {"test_accuracy": 0.1 + 0.2},
                                          "privacy": {"summary": "x", "entries": [1],
                                                      "totals": {"edge-LDP": {"epsilon": 1.0}}}},
                                         "r"), grid="g")
        frame = store.to_frame()
    runs = Runs.load(tmp_path, configs)
    assert runs is not None and runs.exported == tmp_path / "runs.jsonl"
    (tmp_path / "runs.sqlite").unlink()
    again = Runs.load(tmp_path, configs)
    assert again is not None and again.exported is None
    pd.testing.assert_frame_equal(again.frame(configs), frame)
    assert "entries" not in again.rows[0]["privacy"]  # compact: totals and summary only
    assert again.last_stored().endswith(" UTC") and again.count(configs) == 2
    # each row names its whole configuration: data options too, and only where there are some
    assert [r.get("data") for r in again.of([cfg])] == [None]
    assert [r.get("data") for r in again.of([normalized])] == [{"normalize_rows": True}]
    assert [_rebuilt(r).key() for r in again.rows] == [r["key"] for r in again.rows]


def _rebuilt(row: dict) -> RunConfig:
    """The configuration an exported row describes."""
    return RunConfig.parse({k: row[k] for k in ("task", "dataset", "method", "model", "epsilon",
                                                "seed", "params")} | {"data": row.get("data", {})},
                           "exported row")


@pytest.mark.parametrize("export", sorted((ROOT / "results").glob("*/runs.jsonl")),
                         ids=lambda p: p.parent.name)
def test_every_committed_row_rebuilds_its_configuration(export: Path) -> None:
    """The committed exports are the public record: each row's fields give back the
    configuration its key names."""
    rows = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()]
    bad = [r["key"][:12] for r in rows if _rebuilt(r).key() != r["key"]]
    assert not bad, f"{len(bad)} of {len(rows)} rows do not rebuild their key: {bad[:5]}"


def test_table_helpers() -> None:
    assert md_table(["a", "b"], [[1, "x"]], ["---", "---:"]) == "| a | b |\n|---|---:|\n| 1 | x |"
    df = pd.DataFrame({"s": ["q", "p", "p"], "x": [2.0, 1.0, 2.0], "v": [0.5, 0.25, 0.125]})
    assert pivot_md(df, "s", "x", lambda r: pm(r["v"]), head=lambda v: f"x={v:g}") == (
        "| s | x=1 | x=2 |\n|---|---|---|\n| p | 25.0 | 12.5 |\n| q | - | 50.0 |")
    assert pm(0.5, 0.1) == "50.0 ± 10.0" and pm(50.0, 10.0, 100) == "50.0 ± 10.0"


def test_blinkpp_margin_compares_the_variants_that_ran() -> None:
    """The margin is over the best Blink variant on the seeds every compared method ran; a
    variant with no run at the point is listed as missing, one seed short drops that seed."""
    from dpgl.experiments.reproductions.blinkpp import margin

    rows = [("blink-pp", 0, 0.80), ("blink-pp", 1, 0.82), ("blink-pp", 2, 0.90),
            ("blink-hard", 0, 0.75), ("blink-hard", 1, 0.83), ("blink-hard", 2, 0.50),
            ("blink-hybrid", 0, 0.70), ("blink-hybrid", 1, 0.70)]
    runs = pd.DataFrame([{"dataset": "facebook", "epsilon": 1.0, "method": m, "seed": s,
                          "test_accuracy": a} for m, s, a in rows])
    m = margin(runs)
    assert m is not None
    assert m["missing"] == ["blink-soft"] and m["seeds"] == 2  # seed 2: no hybrid run
    assert m["best_blink"] == "blink-hard"
    assert m["margin"] == pytest.approx(100 * (0.81 - 0.79))
    assert m["wins"] == 1  # seed 1: 0.82 < 0.83
    assert margin(runs[runs["method"] == "blink-pp"]) is None
    assert margin(runs[runs["method"] != "blink-pp"]) is None


def test_blinkpp_tables_keep_only_the_seeds_complete_at_a_point() -> None:
    """Configurations are chosen on the seeds where every configuration of the point ran; a
    later seed counts once every method's chosen configuration has run on it (a seed with
    only a configuration validation did not choose, or without one method, is left out); a
    configuration with no run at all (failed by design) does not hold a seed back; the runs
    without epsilon are untouched."""
    from dpgl.experiments.grid import SelectionSpec
    from dpgl.experiments.reproductions.blinkpp import complete_seeds

    rows = [("blink-pp", "a", 2.0, 0, 0.6), ("blink-pp", "b", 2.0, 0, 0.7),
            ("blink-hard", "h", 2.0, 0, 0.5),
            ("blink-pp", "a", 2.0, 1, 0.6), ("blink-hard", "h", 2.0, 1, 0.5),  # a: not chosen
            ("blink-pp", "b", 2.0, 2, 0.6), ("blink-hard", "h", 2.0, 2, 0.5),  # b: chosen
            ("blink-pp", "b", 2.0, 3, 0.6),  # no blink-hard yet
            ("blink-pp", "a", 3.0, 1, 0.6), ("blink-hard", "h", 3.0, 1, 0.5),
            ("mlp", "m", None, 0, 0.5), ("mlp", "m", None, 1, 0.5)]
    frame = pd.DataFrame([{"dataset": "facebook", "model": "gcn", "method": m, "hparam_key": k,
                           "epsilon": e, "seed": s, "val_accuracy": v, "test_accuracy": v}
                          for m, k, e, s, v in rows])
    selection = SelectionSpec(metric="val_accuracy", mode="max", report=["test_accuracy"])
    kept, selection_seeds = complete_seeds(frame, selection)
    at2 = kept[kept["epsilon"] == 2.0]
    assert sorted(zip(at2["hparam_key"], at2["seed"], strict=True)) == [
        ("a", 0), ("b", 0), ("b", 2), ("h", 0), ("h", 2)]
    assert sorted(kept[kept["epsilon"] == 3.0]["seed"]) == [1, 1]
    assert len(kept[kept["epsilon"].isna()]) == 2
    assert selection_seeds == {("facebook", 2.0): [0], ("facebook", 3.0): [1]}
    # the table's choice on the kept runs is the one made on the selection seeds
    from dpgl.experiments.report import summarize
    chosen = summarize(at2, selection=selection)
    assert set(chosen["hparam_key"]) == {"b", "h"}
    assert dict(zip(chosen["hparam_key"], chosen["n_seeds"], strict=True)) == {"b": 2, "h": 2}
    flipped = frame.assign(val_accuracy=frame["hparam_key"].map({"a": 0.9}).fillna(0.5))
    at2 = complete_seeds(flipped, selection)[0].query("epsilon == 2.0")
    assert sorted(zip(at2["hparam_key"], at2["seed"], strict=True)) == [
        ("a", 0), ("a", 1), ("b", 0), ("h", 0), ("h", 1)]
    assert complete_seeds(frame.iloc[:0], selection)[0].empty


def test_blink_pp_config_and_kept_scales_in_words() -> None:
    from dpgl.experiments.reproductions.blinkpp import chosen_config, scales_chosen

    assert chosen_config('{"graph": "soft", "knn": 40}') == "soft, kNN 40 + group, scale 1"
    assert chosen_config('{"covariates": "none", "edge_scale": "val"}') == \
        "hybrid, no covariate, scale val"
    rows = [{"info": {"edge_scale": s}} for s in (0.05, 0.1, 0.05, 0.0)] + [{"info": {}}]
    assert scales_chosen(rows) == "0.1 x1, 0.05 x2, 0 x1"
    assert scales_chosen([{"info": {}}]) == "-"
