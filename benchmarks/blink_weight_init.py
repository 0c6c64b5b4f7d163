"""Blink full-grid points re-run with both GCN/GAT weight initialisations, paired by seed.

results/blink's stored grid ran ``weight_init: torch`` (nn.Linear's default, narrower than
Glorot); the authors' PyG layers draw Glorot (``weight_init: glorot``; dpgl.nn.init). This
re-runs the named points of the full grid (the grid's own configuration, its seed replaced)
with each initialisation on the same seeds, so the LDP reports and the split are the same
and only the initial weights differ, and prints per point the two means, their paired
difference and the paper's number.

    DPGL_DATA_DIR=... python benchmarks/blink_weight_init.py --seeds 0:10 \\
        citeseer-gcn-symrr-5 citeseer-gat-symrr-6

A point is ``DATASET-MODEL-METHOD-EPS``. With ``--block DATASET-MODEL --store FILE`` it
instead runs every configuration of that block of the full grid (its seeds 0-2) with
``weight_init: glorot`` into ``FILE`` (resumable) and prints, beside the stored grid's
torch-initialised points, how many points agree with the paper under each (within 2 points
or one std, the larger of ours and the paper's: results/blink's rule). ``--skip METHOD``
leaves a method out (Solitude's GCN draws Glorot already, as PyG's ``GCNConv``, untouched by
the option).
``--csv FILE`` also writes the block's points (both initialisations' means and stds, the
paper's, agreement under each) into ``FILE``, replacing that block's rows and keeping others'
(results/blink/weight_init_blocks.csv).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any


def _glorot(config: Any) -> Any:
    """``config`` (a RunConfig) with ``weight_init: glorot`` among its params."""
    return type(config)(**{**config.model_dump(),
                           "params": {**config.params, "weight_init": "glorot"}})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("points", nargs="*", help="DATASET-MODEL-METHOD-EPS, e.g. citeseer-gat-symrr-3")
    ap.add_argument("--block", default=None, help="DATASET-MODEL: a whole block, seeds 0-2")
    ap.add_argument("--store", default=None, help="run store of --block's glorot runs")
    ap.add_argument("--skip", action="append", default=[], help="method left out of --block")
    ap.add_argument("--csv", default=None, help="--block: write its points into this CSV")
    ap.add_argument("--seeds", default="0:10", help="first:last (exclusive)")
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args()
    first, last = (int(v) for v in args.seeds.split(":"))
    if args.block:
        if not args.store:
            sys.exit("--block needs --store")
        block(args.block, args.store, args.skip, args.data_dir, args.csv)
        return
    if not args.points:
        sys.exit("name points, or --block")
    wanted = []
    for text in args.points:
        parts = text.split("-")
        if len(parts) < 4:
            sys.exit(f"point {text!r} is not DATASET-MODEL-METHOD-EPS")
        wanted.append((parts[0], parts[1], "-".join(parts[2:-1]), float(parts[-1])))

    import torch

    from dpgl.experiments import reproductions
    from dpgl.experiments.config import RunConfig
    from dpgl.experiments.execute import execute_run
    from dpgl.experiments.reproductions.blink import __file__ as blink_dir
    from dpgl.experiments.reproductions.blink.paper_compare import read_paper

    torch.set_num_threads(1)
    blink = reproductions.get("blink")
    grid = {(c.dataset, c.model, c.method, c.epsilon): c for c in blink.configs(False)
            if c.seed == 0}
    rows = read_paper(Path(blink_dir).parent / "paper_full.csv")
    paper = {(r.dataset, r.model, r.method, float(r.epsilon)): (r.test_accuracy, r["std"])
             for _, r in rows.dropna(subset=["epsilon"]).iterrows()}
    for point in wanted:
        if point not in grid:
            sys.exit(f"no full-grid point {point}")
        acc: dict[str, list[float]] = {"torch": [], "glorot": []}
        for seed in range(first, last):
            # torch: the stored grid's configuration itself (its key unchanged)
            torch_cfg = RunConfig(**{**grid[point].model_dump(), "seed": seed})
            for init, cfg in (("torch", torch_cfg), ("glorot", _glorot(torch_cfg))):
                out = execute_run(cfg, data_dir=args.data_dir)
                acc[init].append(100 * out.metrics["test_accuracy"])
            print(f"{'-'.join(map(str, point))} seed {seed}: torch {acc['torch'][-1]:.2f}, "
                  f"glorot {acc['glorot'][-1]:.2f}", flush=True)
        diff = [g - t for g, t in zip(acc["glorot"], acc["torch"], strict=True)]
        ref = paper.get(point)
        ref_text = "-" if ref is None else f"{ref[0]:.1f} +- {ref[1]:.1f}"
        sd = statistics.stdev(diff) if len(diff) > 1 else float("nan")
        print(f"== {'-'.join(map(str, point))}: torch {statistics.mean(acc['torch']):.1f}, "
              f"glorot {statistics.mean(acc['glorot']):.1f}, paired difference "
              f"{statistics.mean(diff):+.1f} +- {sd:.1f} ({len(diff)} seeds); paper {ref_text}",
              flush=True)


def block(name: str, store_path: str, skip: list[str], data_dir: str | None,
          csv: str | None = None) -> None:
    """Every configuration of block ``name`` with Glorot weights; agreement counts."""
    import pandas as pd

    from dpgl.experiments import reproductions
    from dpgl.experiments.config import RunConfig
    from dpgl.experiments.execute import execute_run
    from dpgl.experiments.report import summarize
    from dpgl.experiments.reproductions.blink import __file__ as blink_dir
    from dpgl.experiments.reproductions.blink import paper_compare as pc
    from dpgl.experiments.runner import run_grid
    from dpgl.experiments.store import RunStore

    dataset, model = name.split("-")
    blink = reproductions.get("blink")
    base = [c for c in blink.configs(False) if (c.dataset, c.model) == (dataset, model)
            and c.method not in skip]
    if not base:
        sys.exit(f"no block {name}")
    glorot = [_glorot(c) for c in base]
    selection = blink.steps(False)[0].grids[0].selection

    def points(store: RunStore, configs: list[RunConfig]) -> pd.DataFrame:
        """Per point, the summary results/blink's report makes of the stored runs of
        ``configs`` (one configuration per point: the selection only averages seeds)."""
        return summarize(store.to_frame(keys=[c.key() for c in configs]), selection=selection)

    stored = Path(__file__).resolve().parents[1] / "results" / "blink" / "runs.sqlite"
    with RunStore(store_path) as store:
        run_grid(glorot, store, lambda c: execute_run(c, data_dir=data_dir),
                 grid_name=f"weight-init-{name}")
        summaries = {"glorot": points(store, glorot)}
    with RunStore(stored) as store:
        summaries["torch"] = points(store, base)
    paper = pc.read_paper(Path(blink_dir).parent / "paper_full.csv")
    planned = pc.planned_points(base)
    tables = {label: pc.compare(planned, summary, paper) for label, summary in summaries.items()}
    both = tables["torch"][["method", "epsilon", "ours", "ours_std", "paper", "paper_std",
                            "agree"]].merge(
        tables["glorot"][["method", "epsilon", "ours", "ours_std", "agree"]],
        on=["method", "epsilon"], suffixes=("_torch", "_glorot"), how="outer")
    measured = both["paper"].notna() & both["ours_glorot"].notna()
    for label in ("torch", "glorot"):
        agree = both.loc[measured, f"agree_{label}"].astype(bool)
        gap = (both.loc[measured, f"ours_{label}"] - both.loc[measured, "paper"]).abs()
        print(f"{name} {label}: {int(agree.sum())} of {int(measured.sum())} points agree "
              f"(mean |gap| {float(gap.mean()):.2f})")
    if csv:
        rows = both[measured].assign(dataset=dataset, model=model)
        rows = rows[["dataset", "model", *both.columns]].round(2)
        path = Path(csv)
        if path.exists():
            old = pd.read_csv(path)
            rows = pd.concat([old[(old["dataset"] != dataset) | (old["model"] != model)], rows])
        rows.sort_values(["dataset", "model", "method", "epsilon"]).to_csv(path, index=False)
        print(f"wrote {path}")
    changed = both[measured & (both["agree_torch"] != both["agree_glorot"])]
    for r in changed.itertuples():
        print(f"  {r.method} eps={r.epsilon:g}: torch {r.ours_torch:.1f}, glorot "
              f"{r.ours_glorot:.1f}, paper {r.paper:.1f}")


if __name__ == "__main__":
    main()
