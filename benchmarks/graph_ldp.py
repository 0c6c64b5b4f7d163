"""DPRR paper Figs. 8/9: training time per 100 epochs, classification time and peak memory of
GIN-0 on noisy graphs vs graph size, for NonPriv-Full, DPRR and RR.

Graphs: Barabasi-Albert (m in {3, 5}, n in {1000, ..., 4000}; ``dpgl.datasets.synthetic``)
and induced subgraphs of REDDIT-BINARY's largest graph (3,782 nodes) on n random nodes.
Each case runs in its own subprocess (clean ``ru_maxrss``): ``--copies`` independently
randomized copies of the graph are the training set (one batch); time per 100 epochs is
extrapolated from ``--epochs`` timed epochs; classification time = one eval forward pass per
graph. RR's output has ~n^2 / (1 + e^eps) pairs per graph, DPRR's ~2|E| (clipping aside):
cases whose expected edges exceed ``--max-edges`` are listed with the expected count instead
of run.

    python benchmarks/graph_ldp.py --out results/dprr/benchmark.md
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

CASES_BA = [(m, n) for m in (3, 5) for n in (1000, 2000, 3000, 4000)]
REDDIT_SIZES = (1000, 2000, 3000)
METHODS = ("nonpriv-full", "dprr", "rr")


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _graph(family: str, n: int, m: int, seed: int):
    import numpy as np
    import torch
    from torch_geometric.data import Data
    from torch_geometric.utils import subgraph

    from dpgl.datasets import load_dataset
    from dpgl.datasets.synthetic import barabasi_albert

    if family == "ba":
        g = barabasi_albert(n, m, rng=seed)
        return Data(edge_index=g.edge_index, num_nodes=n, y=torch.tensor([0]))
    ds = load_dataset("reddit-binary")
    big = max(ds.graphs, key=lambda g: int(g.num_nodes))
    keep = np.sort(np.random.default_rng(seed).choice(int(big.num_nodes), n, replace=False))
    ei, _ = subgraph(torch.from_numpy(keep), big.edge_index, relabel_nodes=True,
                     num_nodes=int(big.num_nodes))
    return Data(edge_index=ei, num_nodes=n, y=torch.tensor([0]))


def expected_edges(method: str, n: int, directed_edges: int, eps: float) -> float:
    import math

    if method == "rr":
        p = math.exp(eps) / (1 + math.exp(eps))
        return directed_edges * p + (n * (n - 1) - directed_edges) * (1 - p)
    return float(directed_edges)


def child(args: argparse.Namespace) -> None:
    import torch

    torch.set_num_threads(1)
    from torch_geometric.loader import DataLoader

    from dpgl.methods.graph_ldp import GraphLDPParams, graph_randomizer, to_training_graph
    from dpgl.nn.gin import GIN
    from dpgl.rng import make_rng, spawn

    g = _graph(args.family, args.n, args.m, args.seed)
    rss_loaded = _rss_mb()
    params = GraphLDPParams()
    eps = None if args.method == "nonpriv-full" else args.eps
    rand = graph_randomizer(args.method, eps, params, n_max=max(args.n, 2))
    t0 = time.perf_counter()
    graphs = [to_training_graph(rand(g, r), torch.tensor([k % 2]), "directed")
              for k, r in enumerate(spawn(make_rng(args.seed), args.copies))]
    t_rand = (time.perf_counter() - t0) / args.copies
    edges = sum(int(h.edge_index.size(1)) for h in graphs) / args.copies
    model = GIN(1, 2, hidden=args.hidden, num_layers=args.layers, dropout=0.5)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    loader = DataLoader(graphs, batch_size=args.copies)
    times = []
    for _ in range(args.epochs):
        model.train()
        t0 = time.perf_counter()
        for batch in loader:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(
                model(batch.x, batch.edge_index, batch.batch), batch.y)
            loss.backward()
            opt.step()
        times.append(time.perf_counter() - t0)
    model.eval()
    t0 = time.perf_counter()
    with torch.no_grad():
        for batch in DataLoader(graphs, batch_size=1):
            model(batch.x, batch.edge_index, batch.batch)
    t_cls = (time.perf_counter() - t0) / args.copies
    print(json.dumps({
        "edges_per_graph": edges, "randomize_s_per_graph": t_rand,
        "train_s_per_100_epochs": 100 * min(times), "classify_s_per_graph": t_cls,
        "peak_rss_mb": _rss_mb(), "rss_after_load_mb": rss_loaded,
        "load_avg": os.getloadavg()[0],
    }))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--family", default="ba")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--m", type=int, default=3)
    ap.add_argument("--method", default="dprr")
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--copies", type=int, default=4, help="graphs in the training batch")
    ap.add_argument("--epochs", type=int, default=2, help="timed epochs (min is reported)")
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--max-edges", type=float, default=1.2e7,
                    help="skip cases whose expected edges in the batch exceed this")
    ap.add_argument("--out", type=Path, default=None, help="markdown table (and .json) path")
    ap.add_argument("--cases", default=None,
                    help="subset, e.g. 'ba:3:1000,reddit:0:2000' (family:m:n); default all")
    ap.add_argument("--render", type=Path, nargs="*", default=None,
                    help="only write --out from the JSON lines of earlier runs' stdout")
    ap.add_argument("--data-dir", type=Path, default=None,
                    help="dataset directory (default: $DPGL_DATA_DIR); REDDIT-BINARY cases")
    args = ap.parse_args()
    if args.data_dir is not None:  # children inherit it
        os.environ["DPGL_DATA_DIR"] = str(args.data_dir)
    if args.child:
        child(args)
        return
    if args.render is not None:
        rows = [json.loads(line) for path in args.render
                for line in path.read_text().splitlines() if line.startswith("{")]
        _write(args, rows)
        return
    rows = []
    cases = [("ba", n, m) for m, n in CASES_BA] + [("reddit", n, 0) for n in REDDIT_SIZES]
    if args.cases:
        cases = [(f, int(n), int(m)) for f, m, n in (c.split(":") for c in args.cases.split(","))]
    for family, n, m in cases:
        g = _graph(family, n, m, 0)
        directed = int(g.edge_index.size(1))
        for method in METHODS:
            exp = expected_edges(method, n, directed, args.eps)
            row = {"family": family, "n": n, "m": m, "method": method, "eps": args.eps,
                   "true_edges": directed, "expected_edges": exp}
            if exp * args.copies > args.max_edges:
                row["note"] = "skipped (expected edges above --max-edges)"
            else:
                cmd = [sys.executable, __file__, "--child", "--family", family, "--n", str(n),
                       "--m", str(m), "--method", method, "--eps", str(args.eps),
                       "--copies", str(args.copies), "--epochs", str(args.epochs),
                       "--hidden", str(args.hidden), "--layers", str(args.layers)]
                res = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if res.returncode == 0:
                    row.update(json.loads(res.stdout.strip().splitlines()[-1]))
                else:
                    row["note"] = "failed: " + (res.stderr.strip().splitlines() or ["?"])[-1]
            rows.append(row)
            print(json.dumps(row), flush=True)
    _write(args, rows)


def _write(args: argparse.Namespace, rows: list[dict]) -> None:
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(rows, indent=1))
        head = ("| graphs | n | method | true directed edges | edges after randomization | "
                "randomize s/graph | train s / 100 epochs | classify s/graph | peak RSS MB "
                "(after load) | load avg | note |\n|---|---:|---|---:|---:|---:|---:|---:|---:|"
                "---:|---|\n")
        lines = []
        for r in rows:
            fam = f"BA m={r['m']}" if r["family"] == "ba" else "REDDIT-B sub"

            def f(k: str, fmt: str = "{:.3g}", r: dict = r) -> str:
                return fmt.format(r[k]) if k in r else "-"
            edges = f("edges_per_graph", "{:.0f}") if "edges_per_graph" in r else \
                f"~{r['expected_edges']:.3g} expected"
            lines.append(f"| {fam} | {r['n']} | {r['method']} | {r['true_edges']} | {edges} | "
                         f"{f('randomize_s_per_graph')} | {f('train_s_per_100_epochs')} | "
                         f"{f('classify_s_per_graph')} | {f('peak_rss_mb', '{:.0f}')} "
                         f"({f('rss_after_load_mb', '{:.0f}')}) | {f('load_avg', '{:.1f}')} | "
                         f"{r.get('note', '')} |")
        args.out.write_text(
            "Rows from one or more runs of\n"
            f"`python benchmarks/graph_ldp.py --copies {args.copies} --epochs "
            f"{args.epochs} --hidden {args.hidden} --layers {args.layers} --eps {args.eps} "
            f"--max-edges {args.max_edges:g} --out {args.out}`\n\n"
            "GIN-0 (hidden/layers as in the command), batch = all copies, 1 torch thread; "
            "time per 100 epochs extrapolated from the fastest timed epoch.\n\n"
            + head + "\n".join(lines) + "\n")


if __name__ == "__main__":
    from dpgl.errors import DpglError

    try:
        main()
    except DpglError as e:  # bad input: one line, no traceback
        raise SystemExit(f"error: {e}") from None
