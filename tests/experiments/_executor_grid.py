"""What the executor tests share (tests/experiments/test_experiments_executors.py and
test_experiments_dask.py): fake configurations for the fake runs of ``_fake_runs``, and a
small real grid whose report tables must not depend on the executor."""

from __future__ import annotations

from pathlib import Path

from dpgl.cli import main
from dpgl.experiments.config import RunConfig
from dpgl.experiments.store import RunStore


def configs(n: int = 6) -> list[RunConfig]:
    return [RunConfig(dataset="d", method="m", epsilon=1.0, seed=s, params={"lr": 0.1})
            for s in range(n)]


def stored_rows(store: RunStore) -> dict[str, dict]:
    return {c.key(): store.get(c.key())["metrics"] for c in configs() if store.has(c.key())}


GRID = """name: exec-check
task: node
datasets: [csbm]
models: [gcn]
seeds: [0, 1]
methods:
  - mlp
  - name: rr
    epsilons: [4.0]
params: {epochs: 15, patience: null, hidden: 8}
selection: {metric: val_accuracy, mode: max, report: [test_accuracy]}
"""


def grid_tables(out: Path, *flags: str) -> dict[str, bytes]:
    """``dpgl run`` of :data:`GRID` with ``flags`` into ``out`` (in-process; its stderr goes
    to pytest's capture): the report's ``.md`` and ``.csv`` files by name."""
    out.mkdir(parents=True)
    grid = out / "grid.yaml"
    grid.write_text(GRID)
    try:
        main(["run", str(grid), "--store", str(out / "runs.sqlite"),
              "--report", str(out / "report"), "--quiet", *flags])
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    assert code == 0, f"dpgl run {' '.join(flags)} exited with {code}"
    tables = {p.name: p.read_bytes() for p in sorted((out / "report").iterdir())
              if p.suffix in (".md", ".csv")}
    assert tables, "the report wrote no tables"
    return tables
