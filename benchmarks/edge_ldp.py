"""Benchmark of the sparse edge-LDP pipelines (users' randomizer + server estimate).

Synthetic power-law graphs (Chung-Lu with weights w_i ~ i^(-1/(gamma-1)), gamma = 2.5,
average degree ~10) with n in --sizes; every (method, n, eps) case runs in its own
subprocess, which reports wall time of the users + server step and its peak RSS
(``ru_maxrss``), next to the RSS after imports and loading the graph, and the 1-minute load
average at the end of the case (the machine may be shared: times are upper bounds). Cases
whose output is inherently dense (e.g. RR at small eps: ~n^2 / (1 + e^eps) reported pairs)
are not run when the expected number of pairs exceeds --max-pairs; the expected size is
reported instead.

    python benchmarks/edge_ldp.py --sizes 1e4,1e5 --eps 1,4,8 --out results.md
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

METHODS = ("rr", "symrr", "dprr", "locallap", "ldpgcn", "blink-hard", "blink-hybrid",
           "ldpgen")
DEFAULT_METHODS = ("rr", "symrr", "dprr", "locallap", "ldpgcn", "blink-hard", "blink-hybrid")
DEGREE_SHARE = 0.1


def chung_lu_graph(n: int, avg_degree: float, seed: int, gamma: float = 2.5
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Undirected power-law graph: endpoints drawn proportionally to Chung-Lu weights,
    self-loops and repeated pairs dropped (about n * avg_degree / 2 edges)."""
    from dpgl.graph.pairs import index_to_pair, pair_to_index, unique_counts

    rng = np.random.default_rng(seed)
    w = np.arange(1, n + 1, dtype=np.float64) ** (-1.0 / (gamma - 1.0))
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    m = int(n * avg_degree / 2)
    keys = np.zeros(0, np.int64)
    while keys.size < m:
        draws = int((m - keys.size) * 1.15) + 100
        a = np.searchsorted(cdf, rng.random(draws))
        b = np.searchsorted(cdf, rng.random(draws))
        ok = a != b
        k = pair_to_index(np.minimum(a[ok], b[ok]), np.maximum(a[ok], b[ok]), n)
        keys = unique_counts(np.concatenate([keys, k]))[0]
    keys = rng.permutation(keys)[:m]
    return index_to_pair(np.sort(keys), n)


def expected_pairs(method: str, n: int, m: int, eps: float) -> float:
    """Expected number of pairs the case materializes (its output or RR intermediate)."""
    f = lambda e: 1.0 / (1.0 + math.exp(e))  # noqa: E731 - RR flip probability
    ordered = n * (n - 1.0)
    if method == "rr":
        return 2 * m * (1 - f(eps)) + (ordered - 2 * m) * f(eps)
    if method == "symrr":
        return m * (1 - f(eps)) + (ordered / 2 - m) * f(eps)
    if method.startswith("blink"):
        ea = (1 - DEGREE_SHARE) * eps
        return 2 * m * (1 - f(ea)) + (ordered - 2 * m) * f(ea)
    if method == "ldpgcn":
        return m + 8.0 * eps**-1 * math.sqrt(ordered / 2) + m
    return 2.0 * m  # dprr, locallap, ldpgen: output ~ the true size


def run_case(method: str, graph_file: str, eps: float, seed: int) -> dict:
    """Worker: load the graph, run users + server once, report time and memory."""
    t_import = time.perf_counter()
    from dpgl.transforms import (
        BlinkTransform,
        DPRRTransform,
        LDPGenTransform,
        LocalLapTransform,
        RRTransform,
        SymRRTransform,
    )

    t_import = time.perf_counter() - t_import
    g = np.load(graph_file)
    u, v, n = g["u"], g["v"], int(g["n"])
    rss_base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    transforms = {
        "rr": lambda: RRTransform(eps, seed=seed),
        "symrr": lambda: SymRRTransform(eps, seed=seed),
        "dprr": lambda: DPRRTransform(eps, seed=seed),
        "locallap": lambda: LocalLapTransform(eps, seed=seed),
        "ldpgcn": lambda: LocalLapTransform(eps, variant="ldpgcn", seed=seed),
        "blink-hard": lambda: BlinkTransform(eps, DEGREE_SHARE, variant="hard", seed=seed),
        "blink-hybrid": lambda: BlinkTransform(eps, DEGREE_SHARE, variant="hybrid", seed=seed),
        "ldpgen": lambda: LDPGenTransform(eps, seed=seed),
    }
    t = transforms[method]()
    start = time.perf_counter()
    edge_index, _ = t.estimate(u, v, n, t.rng)
    seconds = time.perf_counter() - start
    info = {k: (float(x) if isinstance(x, (int, float, np.floating, np.integer)) else str(x))
            for k, x in t.last_info.items()}
    return {"seconds": seconds, "edges_out": int(edge_index.shape[1]),
            "load": os.getloadavg()[0],
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "rss_base_mb": rss_base, "import_s": t_import, "info": info}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e4,1e5")
    ap.add_argument("--eps", default="1,4,8")
    ap.add_argument("--methods", default=",".join(DEFAULT_METHODS))
    ap.add_argument("--avg-degree", type=float, default=10.0)
    ap.add_argument("--max-pairs", type=float, default=5e7,
                    help="skip a case whose expected materialized pairs exceed this")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="write the markdown table here")
    ap.add_argument("--worker", nargs=4, metavar=("METHOD", "GRAPH", "EPS", "SEED"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        method, graph, eps, seed = args.worker
        print(json.dumps(run_case(method, graph, float(eps), int(seed))))
        return
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    epss = [float(e) for e in args.eps.split(",")]
    methods = args.methods.split(",")
    for m in methods:
        if m not in METHODS:
            ap.error(f"unknown method {m!r}; choose from {', '.join(METHODS)}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            t0 = time.perf_counter()
            u, v = chung_lu_graph(n, args.avg_degree, args.seed)
            gfile = str(Path(tmp) / f"g{n}.npz")
            np.savez(gfile, u=u, v=v, n=n)
            m = int(u.size)
            print(f"n={n}: {m} edges (generated in {time.perf_counter() - t0:.1f} s)",
                  flush=True)
            for method in methods:
                for eps in epss:
                    exp = expected_pairs(method, n, m, eps)
                    row = {"method": method, "n": n, "m": m, "eps": eps, "expected": exp}
                    if exp > args.max_pairs:
                        row["status"] = "skipped (dense output)"
                    else:
                        cmd = [sys.executable, __file__, "--worker", method, gfile, str(eps),
                               str(args.seed)]
                        try:
                            res = subprocess.run(cmd, capture_output=True, text=True,
                                                 timeout=args.timeout, check=False)
                        except subprocess.TimeoutExpired:
                            row["status"] = f"timeout (> {args.timeout:.0f} s)"
                        else:
                            if res.returncode == 0:
                                row.update(json.loads(res.stdout.strip().splitlines()[-1]))
                                row["status"] = "ok"
                            else:
                                err = res.stderr.strip().splitlines()
                                row["status"] = "error: " + (err[-1] if err else "?")
                    rows.append(row)
                    print(format_row(row), flush=True)
    table = format_table(rows)
    if args.out:
        Path(args.out).write_text(table)
    print(table)


def format_row(r: dict) -> str:
    if r["status"] != "ok":
        return (f"{r['method']:>13} n={r['n']:<8} eps={r['eps']:<4} {r['status']}, "
                f"expected pairs {r['expected']:.3g}")
    return (f"{r['method']:>13} n={r['n']:<8} eps={r['eps']:<4} {r['seconds']:8.2f} s  "
            f"peak {r['rss_mb']:7.0f} MB (base {r['rss_base_mb']:.0f})  "
            f"out {r['edges_out']}")


def format_table(rows: list[dict]) -> str:
    lines = ["| method | n | edges | eps | time (s) | peak RSS (MB) | RSS after load (MB) | "
             "output edge_index | load avg | note |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if r["status"] == "ok":
            note = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                             for k, v in r.get("info", {}).items()
                             if k in ("T", "k", "beta_iterations", "candidates", "k1"))
            lines.append(f"| {r['method']} | {r['n']} | {r['m']} | {r['eps']:g} | "
                         f"{r['seconds']:.2f} | {r['rss_mb']:.0f} | {r['rss_base_mb']:.0f} | "
                         f"{r['edges_out']} | {r.get('load', float('nan')):.1f} | {note} |")
        else:
            lines.append(f"| {r['method']} | {r['n']} | {r['m']} | {r['eps']:g} | - | - | - | "
                         f"~{r['expected']:.3g} pairs expected | - | {r['status']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
