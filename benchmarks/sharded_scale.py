"""Benchmark of the sharded simulation and estimation (issue #15) on a local Dask cluster.

A synthetic power-law graph (Chung-Lu weights w_i ~ i^(-1/(gamma-1)), gamma = 2.5, average
degree --degree) with --users users, 4 classes and 8 features per user in [0, 1] (a class
signal plus noise) is written once to a shard store (--store, reused when it exists; the
input preparation is timed apart). Then, on a local cluster of --workers single-threaded
worker processes on loopback (or an existing scheduler with --address), the users' DPRR
reports (eps 4), multi-bit feature reports (eps 2) and label RR (eps 2) are drawn block by
block, and the server runs 2 KProp steps of the feature estimates over the reported graph.
Reported per stage: wall time and the peak resident memory of each worker process (its
VmHWM: the worker's imports, its largest block, and the pages of memory-mapped
arrays it touched); and the run's privacy report.

    python benchmarks/sharded_scale.py --users 1e7 --workers 2 --out results/scale
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from _common import command_line


def power_law_graph(n: int, degree: float, seed: int, gamma: float = 2.5
                    ) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, indices int32) of an undirected Chung-Lu graph with about
    n * degree / 2 edges (self-loops and repeated pairs dropped), built in chunks."""
    rng = np.random.default_rng(seed)
    w = (np.arange(1, n + 1, dtype=np.float64)) ** (-1.0 / (gamma - 1.0))
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    perm = rng.permutation(n)          # hubs spread over the id range (and the blocks)
    m = int(n * degree / 2)
    keys = []
    chunk = 10_000_000
    for start in range(0, m, chunk):
        k = min(chunk, m - start)
        u = perm[np.searchsorted(cdf, rng.random(k))]
        v = perm[np.searchsorted(cdf, rng.random(k))]
        keep = u != v
        a, b = np.minimum(u[keep], v[keep]), np.maximum(u[keep], v[keep])
        keys.append(a.astype(np.int64) * n + b)
    und = np.unique(np.concatenate(keys))
    del keys
    a, b = und // n, und % n
    del und
    src = np.concatenate([a, b])
    dst = np.concatenate([b, a])
    del a, b
    order = np.lexsort((dst, src))
    indices = dst[order].astype(np.int32)
    counts = np.bincount(src, minlength=n)
    del src, dst, order
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr, indices


def prepare(store_dir: Path, n: int, degree: float, seed: int) -> tuple[float, bool]:
    from dpgl.distributed import ShardStore
    if (store_dir / "meta.json").exists():
        return 0.0, False
    t0 = time.perf_counter()
    indptr, indices = power_law_graph(n, degree, seed)
    rng = np.random.default_rng(seed + 1)
    labels = rng.integers(0, 4, n)
    feats = rng.random((n, 8), dtype=np.float32) * 0.6
    feats[np.arange(n), labels * 2] += 0.4
    ShardStore.create(store_dir, indptr, indices, features=feats, labels=labels)
    return time.perf_counter() - t0, True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=float, default=1e6, help="number of users (e.g. 1e7)")
    ap.add_argument("--degree", type=float, default=10.0, help="average degree")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--address", default=None, help="an existing Dask scheduler")
    ap.add_argument("--partitions", type=int, default=0,
                    help="partitions of the block dataset (default: 4 per worker)")
    ap.add_argument("--block-size", type=int, default=1 << 16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--store", default=None,
                    help="shard store directory (default: $TMPDIR/dpgl-scale-N)")
    ap.add_argument("--out", default=None, help="write sharded-N.json and .md here")
    args = ap.parse_args(argv)
    n = int(args.users)
    if n < 2 or n != args.users:
        ap.error("--users must be an integer >= 2")
    if args.workers < 1 or args.degree <= 0:
        ap.error("--workers must be >= 1 and --degree > 0")
    store_dir = Path(args.store or Path(os.environ.get("TMPDIR", "/tmp")) / f"dpgl-scale-{n}")

    from dpgl import progress
    from dpgl.distributed import ShardedRun, ShardStore, connect
    from dpgl.distributed.tasks import peak_rss_mb
    from dpgl.mechanisms import DPRR
    from dpgl.mechanisms.features import FeatureRandomizer
    from dpgl.mechanisms.labels import LabelRR

    with progress.use(progress.reporter_for()):
        prep_s, made = prepare(store_dir, n, args.degree, args.seed)
        store = ShardStore(store_dir)
        edges = int(np.load(store_dir / "input" / "indptr.npy", mmap_mode="r")[-1])
        partitions = args.partitions or 4 * args.workers
        stages: dict[str, dict] = {}
        t0 = time.perf_counter()
        with connect(args.address, workers=args.workers) as client:
            run = ShardedRun(store, seed=args.seed, block_size=args.block_size,
                             partitions=partitions, client=client)
            for name, call in (("dprr (eps 4)", lambda: run.dprr(DPRR(4.0))),
                               ("features, multi-bit (eps 2)",
                                lambda: run.features(FeatureRandomizer(2.0, 8))),
                               ("labels, k-RR (eps 2)", lambda: run.labels(LabelRR(2.0, 4))),
                               ("KProp, 2 steps (gcn)", lambda: run.kprop(2, "gcn"))):
                res = call()
                stages[name] = {"seconds": round(res.seconds, 1), "outputs": res.outputs,
                                "workers": len(res.peak_rss_mb),
                                "peak_rss_mb_per_worker": sorted(
                                    round(v) for v in res.peak_rss_mb.values())}
                print(f"{name}: {res.seconds:.1f} s, peak RSS per worker "
                      f"{stages[name]['peak_rss_mb_per_worker']} MB", file=sys.stderr)
        total = time.perf_counter() - t0
        report = run.accountant.report()
    out = {
        "command": command_line("sharded_scale.py", argv),
        "users": n, "directed_edges": edges, "block_size": args.block_size,
        "blocks": len(run.blocks), "partitions": partitions, "workers": args.workers,
        "address": args.address, "input_preparation_seconds": round(prep_s, 1),
        "input_prepared_now": made, "total_seconds": round(total, 1), "stages": stages,
        "driver_peak_rss_mb": round(peak_rss_mb()),
        "privacy": {u.value: g.epsilon for u, g in report.totals.items()},
        "machine": f"{os.cpu_count()} cores, {platform.machine()}",
        "load_average_1min_end": round(os.getloadavg()[0], 2),
    }
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        d = Path(args.out)
        d.mkdir(parents=True, exist_ok=True)
        exp = round(math.log10(n))
        stem = f"sharded-1e{exp}" if 10**exp == n else f"sharded-{n}"
        (d / f"{stem}.json").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
