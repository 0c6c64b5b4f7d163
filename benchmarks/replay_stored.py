"""Re-run stored runs with today's code and compare: does the code still give the numbers a
results store holds? (A grid reuses stored runs, so a change that moves rounding does not show
in its tables; this says which stored runs it would move, and by how much.)

Each selected row of a reproduction's store (its ``runs.jsonl``, e.g.
``results/blink/runs.jsonl``, or ``--store``) is matched by its key to the reproduction's
:class:`~dpgl.experiments.config.RunConfig` (``dpgl reproduce NAME``'s, data options
included), run with :func:`~dpgl.experiments.execute.execute_run` on ``--threads`` torch
threads, and its test accuracy compared with the stored one; the last line counts the runs
that replay exactly.

    python benchmarks/replay_stored.py blink --full \\
        --where model=gat --where dataset=cora --where seed=0 --where epsilon=4

Used for the GAT layer's move to :class:`~dpgl.nn.gat.AttentionEdges` (2026-11-28): of 36
stored GAT runs of Blink's grid, which the old layer replays to the digit, 26 replay exactly
(docs/edge-ldp.md, "GAT in O(E) memory").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

FIELDS = ("dataset", "model", "method", "epsilon", "seed", "grid")


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("reproduction", help="a reproduction's name (dpgl reproduce --list)")
    ap.add_argument("--full", action="store_true", help="its full protocol (default quick)")
    ap.add_argument("--store", type=Path, default=None,
                    help="a runs.jsonl (default: the protocol's own, e.g. "
                         "results/blink/runs.jsonl)")
    ap.add_argument("--where", action="append", default=[], metavar="FIELD=VALUE",
                    help=f"keep rows whose FIELD ({', '.join(FIELDS)}) is VALUE (repeatable; "
                         "VALUE may list several, comma-separated; epsilon 'none' for none)")
    ap.add_argument("--limit", type=int, default=None, help="at most this many runs")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--data-dir", type=Path, default=None,
                    help="dataset directory (default: $DPGL_DATA_DIR)")
    a = ap.parse_args(argv)
    a.filters = {}
    for item in a.where:
        field, sep, value = item.partition("=")
        if not sep or field not in FIELDS or not value:
            ap.error(f"--where takes FIELD=VALUE with FIELD one of {', '.join(FIELDS)}, "
                     f"got {item!r}")
        a.filters[field] = value.split(",")
    if a.threads < 1 or (a.limit is not None and a.limit < 1):
        ap.error("--threads and --limit must be positive")
    return a


def _matches(row: dict, filters: dict[str, list[str]]) -> bool:
    for field, values in filters.items():
        got = row.get(field)
        if field == "epsilon":
            wanted = {None if v == "none" else float(v) for v in values}
            if got not in wanted:
                return False
        elif str(got) not in values:
            return False
    return True


def main(argv: list[str] | None = None) -> int:
    a = _args(argv)
    from dpgl.errors import DpglError
    from dpgl.experiments import reproductions

    try:
        spec = reproductions.get(a.reproduction)
    except DpglError as e:
        sys.exit(f"error: {e}")
    a.store = a.store or spec.default_out(quick=not a.full) / "runs.jsonl"
    if not a.store.is_file():
        sys.exit(f"error: no such file: {a.store}")
    configs = {c.key(): c for c in spec.reported_configs(quick=not a.full)}
    rows = []
    with a.store.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                sys.exit(f"error: {a.store}: line {n} is not JSON")
            if _matches(row, a.filters) and row.get("key") in configs:
                rows.append(row)
    rows = rows[:a.limit]
    if not rows:
        sys.exit("error: no stored run of the protocol matches")

    import torch

    from dpgl.experiments.execute import execute_run

    torch.set_num_threads(a.threads)
    same = 0
    print("| dataset | model | method | eps | seed | stored test acc. | today | difference | s |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        cfg = configs[row["key"]]
        t = time.perf_counter()
        out = execute_run(cfg, data_dir=a.data_dir)
        stored = 100 * row["metrics"]["test_accuracy"]
        today = 100 * out.metrics["test_accuracy"]
        same += stored == today
        print(f"| {row['dataset']} | {row['model']} | {row['method']} | {row['epsilon']} | "
              f"{row['seed']} | {stored:.2f} | {today:.2f} | {today - stored:+.2f} | "
              f"{time.perf_counter() - t:.1f} |", flush=True)
    print(f"\n{same} of {len(rows)} runs give the stored test accuracy exactly")
    return 0


if __name__ == "__main__":
    sys.exit(main())
