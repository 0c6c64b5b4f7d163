"""Grids on worker processes (issue #15): the driver alone writes the store, the rows (hence
the tables) do not depend on the executor, and a killed worker loses only its runs, which a
resumed grid runs again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest
import torch
from _executor_grid import configs, grid_tables, stored_rows
from _fake_runs import deterministic, dies_at_seed_2

from _cli import run_cli
from dpgl.errors import ConfigError
from dpgl.experiments.executors import ProcessExecutor, make_executor, with_threads
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


def test_with_threads_runs_the_function_on_that_many_torch_threads() -> None:
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert with_threads(lambda _: torch.get_num_threads(), 1, None) == 1
    finally:
        torch.set_num_threads(before)


ROOT = Path(__file__).resolve().parents[2]


class _Recording(ProcessExecutor):
    """A process pool that records what the driver hands it."""

    calls: ClassVar[list] = []

    def map_unordered(self, fn, items):
        self.calls.append((fn, len(items)))
        yield from super().map_unordered(fn, items)


def test_reproduce_on_worker_processes_stores_the_committed_numbers(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch, shared_data_dir,
        shared_file) -> None:
    """``dpgl reproduce --executor process --workers 2 --threads 1``: the runs go to the pool,
    each worker on one torch thread, and the driver stores the numbers the committed grid
    holds, to the digit."""
    shared_file("planetoid/raw/ind.cora.x")  # skips without the offline Cora
    from dpgl.experiments import executors

    made = []
    monkeypatch.setattr(executors, "make_executor",
                        lambda name, workers, address: made.append((name, workers))
                        or _Recording(workers))
    _Recording.calls = []
    code, out, err = run_cli(
        capsys, "reproduce", "blink", "--full", "--only", "cora-gcn", "--method", "mlp",
        "--method", "none", "--seed", "0", "--out", str(tmp_path), "--executor", "process",
        "--workers", "2", "--threads", "1", "--data-dir", str(shared_data_dir), "--quiet")
    assert code == 0, err
    assert made == [("process", 2)] and "2 ran, 0 failed" in out
    [(fn, n)] = _Recording.calls
    fn = fn.run_fn  # the runner's result check around what the driver passed
    assert n == 2 and fn.func is with_threads and fn.args[1] == 1
    with RunStore(tmp_path / "runs.sqlite") as s:
        got = {row["key"]: row["metrics"] for row in s.rows()}
    committed = {}
    for line in (ROOT / "results" / "blink" / "runs.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["key"] in got:
            committed[row["key"]] = row["metrics"]
    assert len(got) == 2 and got == committed
