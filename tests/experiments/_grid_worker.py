"""Helper for the interruption tests: runs a small fixed grid with a fake, deterministic run
function into a SQLite run store.

    python _grid_worker.py DB_PATH SLEEP_SECONDS

Prints the outcome as JSON on stdout; exits 130 when interrupted by SIGINT.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time

from dpgl.experiments import GridInterrupted, GridSpec, RunConfig, RunResult, RunStore, run_grid

GRID = {
    "name": "interrupt-test",
    "datasets": ["toy"],
    "methods": ["none", {"name": "priv", "params": {"share": 0.5}}],
    "epsilons": [1, 4],
    "seeds": 2,
    "params": {"lr": [0.01, 0.1], "dropout": 0.5},
}  # none: 2 lr x 2 seeds = 4 runs; priv: 2 eps x 2 lr x 2 seeds = 8 runs; 12 in all


def is_private(method: str) -> bool:
    return method == "priv"


def grid() -> GridSpec:
    return GridSpec.from_dict(GRID, source="interrupt-test")


def fake_metrics(cfg: RunConfig) -> dict[str, float]:
    """Deterministic pseudo-metrics from the config's key (seed-dependent noise)."""
    h = hashlib.sha256(cfg.key().encode()).digest()
    base = 0.5 + 0.3 * float(cfg.params.get("lr", 0)) + 0.01 * (cfg.epsilon or 10)
    return {
        "val_accuracy": base + h[0] / 2550.0,
        "test_accuracy": base + h[1] / 2550.0,
    }


def make_run(sleep: float):
    def run(cfg: RunConfig) -> RunResult:
        time.sleep(sleep)
        eps = cfg.epsilon
        return RunResult(
            metrics=fake_metrics(cfg),
            privacy={"totals": {"epsilon": eps, "delta": 0.0}, "unit": "edge-LDP"},
            timing={"total": sleep},
            info={"seed": cfg.seed},
        )

    return run


def main() -> int:
    db, sleep = sys.argv[1], float(sys.argv[2])
    with RunStore(db) as store:
        try:
            out = run_grid(grid(), store, make_run(sleep), progress=False,
                           is_private=is_private)
        except GridInterrupted as e:
            print(json.dumps({"interrupted": True, "ran": e.outcome.ran}), flush=True)
            return 130
    print(json.dumps({"total": out.total, "skipped_existing": out.skipped_existing,
                      "ran": out.ran, "failed": out.failed}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
