"""One Solitude epoch's GNN passes on an RR-sized graph: dpgl's ``WeightedGNN`` (propagation by
:class:`dpgl.graph.edge_operator.EdgeOperator`) against PyG's ``GCNConv`` with edge weights
(edge-list message passing, what ``WeightedGNN`` used until 2026-11-28; docs/feature-ldp.md).

An epoch of :func:`dpgl.train.solitude.train_solitude` is three forward passes and two
backward passes: the GNN step (gradient in the parameters), the structure step (gradient in
the edge weights too) and the validation pass. This script times exactly those on a random
directed graph of ``--nodes`` nodes and ``--edges`` edges (sorted by target, as RR reports
come; Facebook's reports: 22,470 nodes and about 24 / 60 / 136 million directed edges at
eps = 3 / 2 / 1) with ``--features`` dense features, two-layer GCN, hidden 16, 4 classes; the
best of ``--repeats`` epochs after one warm-up, and the largest difference between the two
implementations' logits and edge-weight gradients.

    python benchmarks/solitude_step.py --edges 1e6,2.4e7
    python benchmarks/solitude_step.py --device cuda --edges 2.4e7,6e7

Measured on the 2-core CPU machine (AMD EPYC, one torch thread, while two Solitude training
processes shared the two cores; ``--edges 1e6,2.4e7 --repeats 1``, 128 features), seconds an
epoch: 10^6 edges: dpgl 0.17 (+ 0.07 once to sort the edges), PyG 1.33; 2.4 x 10^7 edges:
dpgl 7.6 (+ 4.5 once), PyG 48.6 (6.4x). The logits were bit-identical and the edge-weight
gradients within 1e-12 (a CSR row adds its entries in the edge list's order, as PyG's scatter
does).
"""

from __future__ import annotations

import argparse
import time

from _common import (
    add_graph_step_args,
    check_graph_step_args,
    random_graph_task,
    torch_on,
    write_results,
)


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_graph_step_args(ap)
    a = ap.parse_args(argv)
    check_graph_step_args(ap, a)
    return a


def _epoch(forward, params: list, weight, x, y, train) -> tuple:
    """The passes of one train_solitude epoch: logits of the last pass, the weight gradient."""
    import torch.nn.functional as F

    for p in params:
        p.grad = None
    F.cross_entropy(forward(x, weight.detach())[train], y[train]).backward()  # GNN step
    weight.grad = None
    F.cross_entropy(forward(x, weight)[train], y[train]).backward()           # structure step
    grad = weight.grad
    out = forward(x, weight.detach())                                          # validation
    return out.detach(), grad


def _case(n: int, e: int, d: int, device: str, repeats: int, seed: int) -> dict:
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn import GCNConv

    from dpgl.device import resolve_device, seeded
    from dpgl.nn.weighted_gnn import WeightedGNN

    device = str(resolve_device(device))
    g, ei, x, y, train, sync = random_graph_task(n, e, d, seed, device)
    weight = torch.rand(e, generator=g).to(device).requires_grad_(True)
    torch.manual_seed(seed)
    ours = WeightedGNN("gcn", d, 4, hidden=16, dropout=0.0, activation="relu").to(device)
    torch.manual_seed(seed)
    conv1, conv2 = GCNConv(d, 16).to(device), GCNConv(16, 4).to(device)

    def pyg(xx, w):
        return conv2(F.relu(conv1(xx, ei, w)), ei, w)

    row: dict = {"nodes": n, "edges": e, "features": d}
    results = {}
    with seeded(seed, device):
        t = time.perf_counter()
        op = WeightedGNN.operator(ei, n)
        sync()
        row["prepare_seconds"] = time.perf_counter() - t
        for name, forward, params in (
                ("dpgl", lambda xx, w: ours(xx, op, w), list(ours.parameters())),
                ("pyg", pyg, [*conv1.parameters(), *conv2.parameters()])):
            best = float("inf")
            for i in range(repeats + 1):
                sync()
                t = time.perf_counter()
                results[name] = _epoch(forward, params, weight, x, y, train)
                sync()
                if i:
                    best = min(best, time.perf_counter() - t)
            row[f"{name}_seconds"] = best
    row["max_abs_diff_logits"] = float((results["dpgl"][0] - results["pyg"][0]).abs().max())
    row["max_abs_diff_weight_grad"] = float((results["dpgl"][1] - results["pyg"][1]).abs().max())
    return row


def main(argv: list[str] | None = None) -> None:
    a = _args(argv)
    torch_on(a.device)
    rows = []
    for e in a.edge_list:
        row = _case(a.nodes, e, a.features, a.device, a.repeats, a.seed)
        rows.append(row)
        print(f"edges {row['edges']:>11,}  dpgl {row['dpgl_seconds']:.3f} s "
              f"(+ {row['prepare_seconds']:.2f} s once)  pyg {row['pyg_seconds']:.3f} s  "
              f"max |diff| logits {row['max_abs_diff_logits']:.1e}, weight grad "
              f"{row['max_abs_diff_weight_grad']:.1e}", flush=True)
    write_results(a.out, "solitude_step.py", argv, a.device, rows)


if __name__ == "__main__":
    main()
