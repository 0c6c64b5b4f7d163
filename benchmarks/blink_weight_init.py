"""Blink full-grid points re-run with both GCN/GAT weight initialisations, paired by seed.

results/blink's stored grid ran ``weight_init: torch`` (nn.Linear's default, narrower than
Glorot); the authors' PyG layers draw Glorot (``weight_init: glorot``; dpgl.nn.init). This
re-runs the named points of the full grid (the grid's own configuration, its seed replaced)
with each initialisation on the same seeds, so the LDP reports and the split are the same
and only the initial weights differ, and prints per point the two means, their paired
difference and the paper's number.

    DPGL_DATA_DIR=... python benchmarks/blink_weight_init.py --seeds 0:10 \\
        citeseer-gcn-symrr-5 citeseer-gat-symrr-6

A point is ``DATASET-MODEL-METHOD-EPS``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("points", nargs="+", help="DATASET-MODEL-METHOD-EPS, e.g. citeseer-gat-symrr-3")
    ap.add_argument("--seeds", default="0:10", help="first:last (exclusive)")
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args()
    first, last = (int(v) for v in args.seeds.split(":"))
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
        base = grid[point].model_dump()
        acc: dict[str, list[float]] = {"torch": [], "glorot": []}
        for seed in range(first, last):
            for init in acc:
                cfg = RunConfig(**{**base, "seed": seed,
                                   "params": {**base["params"], "weight_init": init}})
                if init == "torch":  # the stored grid's configuration, key unchanged
                    cfg = RunConfig(**{**base, "seed": seed})
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


if __name__ == "__main__":
    main()
