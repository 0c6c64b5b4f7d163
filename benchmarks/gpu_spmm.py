"""The price and the proof of bit-for-bit products with a ``SparseOperator`` (docs/gpu.md).

For random sparse matrices with ``n`` rows and ``nnz`` entries (uniform positions, the shape of
an RR report graph, e.g. Facebook: n = 22,470, 12 / 30 / 68 million pairs at eps = 3 / 2 / 1)
and a dense ``n x width`` input, it times one forward and backward of ``SparseOperator @ x``
(two products: ``A x`` and ``A^T g``) on ``--device`` with

* ``csr``: torch's CSR product (cuSPARSE on a GPU), what the CPU runs;
* ``gather``: :func:`dpgl.graph.propagation.gather_mm`, what a GPU runs under torch's
  deterministic mode (the trainers switch it on there),

and checks, per path, whether two calls on the same input give the same floats (``same``),
and the largest difference between the paths. On a GPU ``csr`` is expected to differ between
calls on large inputs and ``gather`` never; on the CPU both are deterministic. Time: the best
of ``--repeats`` calls after one warm-up call, synchronised.

    python benchmarks/gpu_spmm.py --device cuda --nnz 1e6,1.2e7,3e7 --out bench-output/spmm
    python benchmarks/gpu_spmm.py --device cpu --nnz 1e5,1e6

Measured on the 2-core CPU machine (both cores busy with two training processes; seconds,
best of 3, ``--nnz 1e5,1e6``): n = 22,470, width 16: nnz 10^5: csr 0.0033, gather 0.0150;
nnz 10^6: csr 0.0071, gather 0.218 (which is why the CPU keeps ``csr``); both paths gave the
same floats twice, and they differ from each other by at most 3e-5 (float32 sums in another
order).

On a lent H200 (stop 33, torch 2.11.0+cu130, alone on the machine, ``--nnz 1e6,1.2e7``) an
earlier version of this script, which forced the gather path *without* the trainers'
deterministic mode, measured: csr 0.0006 / 0.0014 s, gather 0.0018 / 0.0195 s, and neither
path gave the same floats twice (csr and gather differ by up to 3e-5 / 5e-4). That gather time
is the atomic ``index_add_``'s, and its "same False" shows why the mode matters; the script
now runs both paths in :func:`dpgl.device.seeded`, as the trainers do, and the GPU numbers
under that mode are still to be measured. What the mode gives end to end was measured the same
day: ``pytest -m gpu`` (mini-batch GCN and GAT bit-identical twice) passed (docs/gpu.md).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _common import csv_items, torch_on, write_results


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    ap.add_argument("--nodes", type=int, default=22470, help="rows = columns (default: Facebook)")
    ap.add_argument("--nnz", default="1e5,1e6", help="comma-separated numbers of entries")
    ap.add_argument("--width", type=int, default=16, help="columns of x (a GCN's hidden size)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="folder for results.json")
    a = ap.parse_args(argv)
    try:
        a.nnz_list = [int(float(t)) for t in csv_items(a.nnz)]
    except ValueError:
        ap.error(f"--nnz must be comma-separated numbers, got {a.nnz!r}")
    if not a.nnz_list or min(a.nnz_list) < 1 or a.nodes < 1 or a.width < 1 or a.repeats < 1:
        ap.error("--nnz, --nodes, --width and --repeats must be positive")
    if a.device != "cpu" and not a.device.startswith("cuda"):
        ap.error(f"--device must be cpu, cuda or cuda:N, got {a.device!r}")
    return a


def _case(n: int, nnz: int, width: int, device: str, repeats: int, seed: int) -> dict:
    import numpy as np
    import scipy.sparse as sp
    import torch

    from dpgl.device import resolve_device, seeded
    from dpgl.graph import propagation
    from dpgl.graph.propagation import SparseOperator

    device = str(resolve_device(device))  # on CUDA: cuBLAS' fixed workspace, as the trainers
    rng = np.random.default_rng(seed)
    mat = sp.csr_matrix((rng.random(nnz, dtype=np.float32),
                         (rng.integers(0, n, nnz), rng.integers(0, n, nnz))), shape=(n, n))
    op = SparseOperator(mat).to(device)
    x0 = torch.from_numpy(rng.standard_normal((n, width), dtype=np.float32)).to(device)
    weight = torch.from_numpy(rng.standard_normal(width, dtype=np.float32)).to(device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    row: dict = {"nodes": n, "nnz": int(mat.nnz), "width": width}
    outs = {}
    real = propagation.uses_gather
    for path, on in (("csr", False), ("gather", True)):
        propagation.uses_gather = lambda x, on=on: on  # type: ignore[assignment]
        # the trainers' mode (dpgl.device.seeded): on a GPU, torch's deterministic algorithms,
        # without which index_add_ sums with atomics and the gather path is not deterministic
        try:
            with seeded(seed, device):
                results, best = [], float("inf")
                for i in range(repeats + 1):
                    x = x0.clone().requires_grad_(True)
                    sync()
                    t = time.perf_counter()
                    y = op @ x
                    (y * weight).sum().backward()
                    sync()
                    if i:  # the first call warms up
                        best = min(best, time.perf_counter() - t)
                    results.append((y.detach().cpu(), x.grad.detach().cpu()))
        finally:
            propagation.uses_gather = real  # type: ignore[assignment]
        row[f"{path}_seconds"] = best
        row[f"{path}_same"] = all(torch.equal(a, b) for r in results[1:]
                                  for a, b in zip(results[0], r, strict=True))
        outs[path] = results[0]
    row["max_abs_diff"] = max(float((a - b).abs().max())
                              for a, b in zip(outs["csr"], outs["gather"], strict=True))
    return row


def main(argv: list[str] | None = None) -> None:
    a = _args(argv)
    torch_on(a.device)
    rows = []
    for nnz in a.nnz_list:
        row = _case(a.nodes, nnz, a.width, a.device, a.repeats, a.seed)
        rows.append(row)
        print(f"nnz {row['nnz']:>11,}  csr {row['csr_seconds']:.4f} s (same {row['csr_same']})"
              f"  gather {row['gather_seconds']:.4f} s (same {row['gather_same']})"
              f"  max |csr - gather| {row['max_abs_diff']:.2e}", flush=True)
    write_results(a.out, "gpu_spmm.py", argv, a.device, rows)


if __name__ == "__main__":
    main()
