"""CiteSeer GAT on SymRR reports the way the Blink authors' code trains it, outside dpgl.

Checks results/blink's one unexplained gap (CiteSeer, GAT, SymRR, eps = 3: dpgl 23.9 +- 3.3
over 30 seeds, the paper 27.2 +- 4.3 over 30 runs). Everything here is PyG and torch, not
dpgl's trainer: PyG's Planetoid reader on the offline raw files with NormalizeFeatures, the
authors' fixed split (:func:`dpgl.graph.splits.blink_fixed_split`, their sklearn split), dense
randomized response on the lower triangle mirrored up (their SymRR client), two PyG
``GATConv`` layers (one head, Glorot weights) with ReLU and dropout between them, Adam,
200 full-batch epochs, and the test accuracy at the epoch of the lowest validation loss.
The hyper-parameters are the authors' for this point (dropout 0.001, lr 0.01, weight decay 0).

    python benchmarks/blink_gat_authors_loop.py --trials 0:13 --root /tmp/planetoid

``--root`` gets a ``CiteSeer/raw`` copy of ``$DPGL_DATA_DIR/planetoid/raw/ind.citeseer.*``.
One line per trial (about 100 s each on one core here).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", default="0:13", help="first:last (exclusive) trial seeds")
    ap.add_argument("--epsilon", type=float, default=3.0)
    ap.add_argument("--root", default="/tmp/planetoid", help="PyG Planetoid root to create")
    ap.add_argument("--data-dir", default=os.environ.get("DPGL_DATA_DIR", ""))
    args = ap.parse_args()
    first, last = (int(v) for v in args.trials.split(":"))
    raw = Path(args.data_dir) / "planetoid" / "raw"
    if not raw.is_dir():
        raise SystemExit(f"no Planetoid raw files under {raw} (set --data-dir)")

    import torch
    import torch.nn.functional as F
    from torch_geometric.datasets import Planetoid
    from torch_geometric.nn import GATConv
    from torch_geometric.transforms import NormalizeFeatures

    from dpgl.graph.splits import blink_fixed_split

    torch.set_num_threads(1)
    target = Path(args.root) / "CiteSeer" / "raw"
    target.mkdir(parents=True, exist_ok=True)
    for f in raw.glob("ind.citeseer.*"):
        shutil.copy(f, target / f.name)
    ds = Planetoid(args.root, "CiteSeer", transform=NormalizeFeatures())
    g = ds[0]
    n = g.num_nodes
    split = blink_fixed_split(n)
    masks = []
    for idx in (split.train, split.val, split.test):
        m = torch.zeros(n, dtype=torch.bool)
        m[idx] = True
        masks.append(m)
    train, val, test = masks
    adj = torch.zeros(n, n)
    adj[g.edge_index[0], g.edge_index[1]] = 1

    class GAT(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = GATConv(ds.num_features, 16)
            self.conv2 = GATConv(16, ds.num_classes)

        def forward(self, x: torch.Tensor, ei: torch.Tensor) -> torch.Tensor:
            h = F.dropout(self.conv1(x, ei).relu(), p=0.001, training=self.training)
            return self.conv2(h, ei)

    flip = 1.0 / (1.0 + math.exp(args.epsilon))
    accs = []
    for trial in range(first, last):
        torch.manual_seed(1000 + trial)
        bits = ((adj + torch.bernoulli(torch.full((n, n), flip))) % 2).bool()
        bits.fill_diagonal_(False)
        low = bits.tril(diagonal=1)  # user i's bits on j <= i + 1, mirrored
        ei = (low | low.t()).nonzero().t()
        model = GAT()
        opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=0.0)
        best = (math.inf, 0.0, 0)
        start = time.time()
        for epoch in range(1, 201):
            model.train()
            opt.zero_grad()
            F.cross_entropy(model(g.x, ei)[train], g.y[train]).backward()
            opt.step()
            model.eval()
            with torch.no_grad():
                out = model(g.x, ei)
                loss = float(F.cross_entropy(out[val], g.y[val]))
                acc = float((out.argmax(1)[test] == g.y[test]).float().mean())
            if loss < best[0]:
                best = (loss, acc, epoch)
        accs.append(100 * best[1])
        print(f"trial {trial}: {ei.size(1)} directed edges, best epoch {best[2]}, "
              f"val loss {best[0]:.4f}, test {100 * best[1]:.2f} ({time.time() - start:.0f} s)",
              flush=True)
    if len(accs) > 1:
        print(f"{len(accs)} trials: {statistics.mean(accs):.2f} +- {statistics.stdev(accs):.2f}")


if __name__ == "__main__":
    main()
