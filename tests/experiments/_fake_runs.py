"""Module-level run functions for the process and Dask executor tests (a worker imports them
by name)."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

from dpgl.experiments.config import RunConfig, RunResult


def deterministic(cfg: RunConfig) -> RunResult:
    """A run whose result depends only on its configuration; seed 3 raises."""
    if cfg.seed == 3:
        raise ValueError(f"boom at seed {cfg.seed}")
    return RunResult(metrics={"val_accuracy": 0.5 + cfg.seed / 100},
                     privacy={"totals": {"epsilon": cfg.epsilon}}, timing={"total": 0.0})


def dies_at_seed_2(cfg: RunConfig) -> RunResult:
    """The worker running seed 2 is killed (SIGKILL) mid-run."""
    if cfg.seed == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return deterministic(cfg)


@dataclass(frozen=True)
class DiesOnceAtSeed2:
    """The first worker to run seed 2 is killed (SIGKILL) mid-run; a later attempt (``marker``
    exists) runs normally. Picklable (Dask sends it to its workers)."""

    marker: str

    def __call__(self, cfg: RunConfig) -> RunResult:
        if cfg.seed == 2 and not os.path.exists(self.marker):
            with open(self.marker, "w"):
                pass
            os.kill(os.getpid(), signal.SIGKILL)
        return deterministic(cfg)
