"""The default demo (the README's main job): a small privacy-utility comparison on the
built-in synthetic graph (contextual SBM) — no dataset files, no network, under 2 minutes
on 2 cores. It runs a grid through the same runner, store and report as ``dpgl run``."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

from dpgl.experiments.execute import execute_run
from dpgl.experiments.grid import GridSpec
from dpgl.experiments.report import write_report
from dpgl.experiments.runner import run_grid
from dpgl.experiments.store import RunStore
from dpgl.methods import get_method, list_methods

#: Private edge-LDP methods shown in the demo when they are registered.
DEMO_PRIVATE = ("rr", "dprr", "ldpgcn", "blink-hard", "blink-hybrid")
DEMO_EPSILONS = (1.0, 4.0, 8.0)


def demo_grid(seeds: int = 3) -> GridSpec:
    available = set(list_methods("node"))
    methods: list[Any] = ["none", "mlp"] + [m for m in DEMO_PRIVATE if m in available]
    return GridSpec.from_dict(
        {
            "name": "demo",
            "task": "node",
            "datasets": ["csbm"],
            "models": ["gcn"],
            "seeds": seeds,
            "epsilons": list(DEMO_EPSILONS),
            "methods": methods,
            "params": {"epochs": 60, "patience": 20},
            "selection": {"metric": "val_accuracy", "mode": "max", "report": ["test_accuracy"]},
        },
        source="demo",
    )


def run_demo(output: Path, *, seeds: int = 3, console: Any = None,
             device: Any = "cpu") -> list[Path]:
    """Run the demo grid into ``output/demo.sqlite`` and write the table and plot there
    (training on ``device``, :mod:`dpgl.device`)."""
    output.mkdir(parents=True, exist_ok=True)
    spec = demo_grid(seeds)
    configs = spec.expand(lambda m: get_method(m).private)
    start = time.perf_counter()
    with RunStore(output / "demo.sqlite") as store:
        outcome = run_grid(
            configs, store, functools.partial(execute_run, device=device),
            progress=console is not None, grid_name="demo"
        )
        paths = write_report(
            store,
            output,
            selection=spec.selection,
            keys=[c.key() for c in configs],
            title="dpgl demo: csbm, GCN",
        )
    if console is not None:
        console.print(outcome.summary())
        md = next((p for p in paths if p.suffix == ".md"), None)
        if md is not None:
            console.print(md.read_text())
        for p in paths:
            console.print(f"wrote {p}")
        console.print(f"demo finished in {time.perf_counter() - start:.1f} s")
    return paths
