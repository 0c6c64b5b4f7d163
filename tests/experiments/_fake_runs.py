"""Module-level run functions for the process-executor tests (a spawned worker imports them
by name)."""

from __future__ import annotations

import os
import signal

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
