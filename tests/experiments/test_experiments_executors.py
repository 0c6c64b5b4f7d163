"""Grids on worker processes (issue #15): the driver alone writes the store, the rows (hence
the tables) do not depend on the executor, and a killed worker loses only its runs, which a
resumed grid runs again."""

from __future__ import annotations

from pathlib import Path

import pytest
from _executor_grid import configs, grid_tables, stored_rows
from _fake_runs import deterministic, dies_at_seed_2

from dpgl.errors import ConfigError
from dpgl.experiments.executors import ProcessExecutor, make_executor
from dpgl.experiments.runner import run_grid
from dpgl.experiments.store import RunStore


def test_process_executor_stores_what_the_local_loop_stores(tmp_path: Path) -> None:
    with RunStore(tmp_path / "local.db") as a, RunStore(tmp_path / "proc.db") as b:
        out_a = run_grid(configs(), a, deterministic, progress=False)
        out_b = run_grid(configs(), b, deterministic, progress=False,
                         executor=ProcessExecutor(2))
        assert (out_b.ran, out_b.failed) == (out_a.ran, out_a.failed) == (5, 1)
        assert [f.config.seed for f in out_b.failures] == [3]
        assert "ValueError: boom at seed 3" in out_b.failures[0].error
        assert "Traceback" in out_b.failures[0].traceback    # the worker's traceback
        assert stored_rows(a) == stored_rows(b) and len(stored_rows(b)) == 5
        again = run_grid(configs(), b, deterministic, progress=False,
                         executor=ProcessExecutor(2))
        assert (again.skipped_existing, again.ran, again.failed) == (5, 0, 1)


def test_a_killed_worker_loses_only_unstored_runs(tmp_path: Path) -> None:
    with RunStore(tmp_path / "r.db") as store:
        out = run_grid(configs(), store, dies_at_seed_2, progress=False,
                       executor=ProcessExecutor(2))
        failed = {f.config.seed for f in out.failures}
        assert 2 in failed and any("worker process died" in f.error for f in out.failures)
        stored = {c.seed for c in configs() if store.has(c.key())}
        assert stored.isdisjoint(failed) and stored | failed == set(range(6))
        # resume (locally, the killer is gone): the missing runs run, nothing twice
        resumed = run_grid(configs(), store, deterministic, progress=False)
        assert resumed.skipped_existing == len(stored)
        assert {c.seed for c in configs() if store.has(c.key())} == set(range(6)) - {3}


def test_unknown_executor_and_bad_workers() -> None:
    with pytest.raises(ConfigError, match="unknown executor 'ray2'"):
        make_executor("ray2")
    with pytest.raises(ConfigError, match="workers"):
        ProcessExecutor(0)
    assert make_executor("local") is None


def test_same_grid_gives_byte_identical_tables_local_and_process(tmp_path: Path) -> None:
    local = grid_tables(tmp_path / "local", "--executor", "local")
    process = grid_tables(tmp_path / "process", "--executor", "process", "--workers", "2")
    assert local == process
