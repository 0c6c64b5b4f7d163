"""One full-batch GAT training epoch on an RR-sized graph, time and peak memory: dpgl's
:class:`~dpgl.nn.gat.WeightedGATConv` (one value per edge; the messages' weighted sum a sparse
product through :class:`~dpgl.graph.edge_operator.EdgeOperator`) against PyG's ``GATConv``
(one head; it gathers ``W h_j`` for every edge, E x d floats kept for the backward pass, as
dpgl's layer did until 2026-11-28; docs/edge-ldp.md).

An epoch of the node trainer is a training pass (forward and backward) and an evaluation
pass. Each implementation runs in its own process on a random directed graph of ``--nodes``
nodes and ``--edges`` edges (sorted by target, as RR reports come; Facebook's RR reports:
22,470 nodes and about 24 / 60 / 136 million directed edges at eps = 3 / 2 / 1) with
``--features`` dense features, two layers, hidden 16, 4 classes, the same parameters in both;
the best of ``--repeats`` epochs after one warm-up, the process's peak resident memory, and
the largest difference between the two implementations' logits.

    python benchmarks/gat_step.py --edges 1e6,4e6
    python benchmarks/gat_step.py --device cuda --edges 2.4e7,6e7

Measured on the 2-core CPU machine (AMD EPYC, one torch thread, while two Solitude training
processes shared the two cores; ``--edges 1e6,4e6 --repeats 1``, 128 features), seconds an
epoch and peak RSS: 10^6 edges: dpgl 0.26 s (+ 0.14 s once), 536 MB; PyG 0.78 s, 854 MB;
4 x 10^6 edges: dpgl 0.85 s (+ 0.56 s once), 966 MB; PyG 6.05 s, 1,874 MB; the logits
bit-identical (docs/edge-ldp.md, "GAT in O(E) memory").
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from _common import (
    add_graph_step_args,
    check_graph_step_args,
    csv_items,
    random_graph_task,
    run_python,
    torch_on,
    write_results,
)

IMPLEMENTATIONS = ("dpgl", "pyg")


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_graph_step_args(ap)
    ap.add_argument("--only", default="dpgl,pyg", help="implementations (default dpgl,pyg)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    check_graph_step_args(ap, a)
    a.impls = csv_items(a.only)
    for name in a.impls:
        if name not in IMPLEMENTATIONS:
            ap.error(f"unknown implementation {name!r}; choose from {', '.join(IMPLEMENTATIONS)}")
    return a


def _child(a: argparse.Namespace) -> None:
    """One implementation at one size (``--child NAME:EDGES:LOGITS_FILE``): a JSON line."""
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn import GATConv

    from dpgl.device import resolve_device, seeded
    from dpgl.nn.gat import AttentionEdges, WeightedGATConv

    torch_on(a.device)
    name, e, logits_file = a.child.split(":", 2)
    n, e, d = a.nodes, int(e), a.features
    device = str(resolve_device(a.device))
    _, ei, x, y, train, sync = random_graph_task(n, e, d, a.seed, device)
    torch.manual_seed(a.seed)
    ours = [WeightedGATConv(d, 16).to(device), WeightedGATConv(16, 4).to(device)]
    row: dict = {"implementation": name, "nodes": n, "edges": e, "features": d}
    t = time.perf_counter()
    if name == "dpgl":
        edges = AttentionEdges.build(ei, n)
        layers = ours
        sync()
        row["prepare_seconds"] = time.perf_counter() - t
    else:
        edges = ei
        layers = []
        for layer in ours:
            conv = GATConv(layer.lin.in_features, layer.lin.out_features, heads=1).to(device)
            with torch.no_grad():
                conv.lin.weight.copy_(layer.lin.weight)
                conv.att_src.copy_(layer.att_src.view_as(conv.att_src))
                conv.att_dst.copy_(layer.att_dst.view_as(conv.att_dst))
                conv.bias.copy_(layer.bias)
            layers.append(conv)
        row["prepare_seconds"] = 0.0

    def forward() -> torch.Tensor:
        return layers[1](F.relu(layers[0](x, edges)), edges)

    params = [p for layer in layers for p in layer.parameters()]
    best = float("inf")
    with seeded(a.seed, device):
        for i in range(a.repeats + 1):
            sync()
            t = time.perf_counter()
            for p in params:
                p.grad = None
            F.cross_entropy(forward()[train], y[train]).backward()
            with torch.no_grad():
                out = forward()
            sync()
            if i:
                best = min(best, time.perf_counter() - t)
    row["seconds"] = best
    torch.save(out.cpu(), logits_file)
    print(json.dumps(row), flush=True)


def main(argv: list[str] | None = None) -> None:
    a = _args(argv)
    if a.child:
        _child(a)
        return
    torch = torch_on(a.device)
    script = str(Path(__file__).resolve())
    base = [script, "--device", a.device, "--nodes", str(a.nodes), "--features",
            str(a.features), "--repeats", str(a.repeats), "--seed", str(a.seed)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for e in a.edge_list:
            logits = {}
            for name in a.impls:
                f = f"{tmp}/{name}-{e}.pt"
                code, text, usage = run_python([*base, "--child", f"{name}:{e}:{f}"], None,
                                               {}, None)
                row = ({"implementation": name, "edges": e} if code
                       else json.loads(text.strip().splitlines()[-1]))
                row.update(peak_rss_mb=usage["rss_mb"], status=usage.get("status", "ok"))
                if not code:
                    logits[name] = torch.load(f)
                rows.append(row)
                print(f"edges {e:>11,}  {name:4}  " + (
                    f"{row['seconds']:.3f} s an epoch (+ {row['prepare_seconds']:.2f} s once), "
                    f"peak {row['peak_rss_mb']:,.0f} MB" if not code else row["status"]),
                    flush=True)
            if len(logits) == 2:
                diff = float((logits["dpgl"] - logits["pyg"]).abs().max())
                rows[-1]["max_abs_diff_logits"] = diff
                print(f"edges {e:>11,}  max |diff| of the logits {diff:.1e}", flush=True)
    write_results(a.out, "gat_step.py", argv, a.device, rows)


if __name__ == "__main__":
    sys.exit(main())
