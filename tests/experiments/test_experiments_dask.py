"""Grids on a Dask distributed cluster (issue #15): a local cluster started by ``dpgl run
--executor dask`` or one started here and reached with ``--address`` (loopback only) gives
the tables of the local loop byte for byte; a worker killed mid-run is replaced and its run
retried (or, past the retry budget, reported and not stored); the driver alone writes the
store, so no row is partial or duplicated, and a resumed grid completes."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _executor_grid import configs, grid_tables, stored_rows
from _fake_runs import DiesOnceAtSeed2, deterministic, dies_at_seed_2

from _cli import run_cli
from dpgl.errors import ConfigError
from dpgl.experiments import executors
from dpgl.experiments.executors import DaskExecutor, check_executor, make_executor
from dpgl.experiments.runner import run_grid
from dpgl.experiments.store import RunStore


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    """A cluster of 2 worker processes on loopback, as ``dask scheduler`` + ``dask worker``
    would give (no dashboard; the scheduler's HTTP endpoints on a free port)."""
    from distributed import LocalCluster
    c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                     dashboard_address=None,
                     scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                     silence_logs=logging.CRITICAL)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def local_tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The small real grid's tables from the local loop (computed once for this module)."""
    return grid_tables(tmp_path_factory.mktemp("local") / "out", "--executor", "local")


def test_same_grid_gives_byte_identical_tables_local_process_and_dask(
        tmp_path: Path, local_tables: dict[str, bytes]) -> None:
    process = grid_tables(tmp_path / "process", "--executor", "process", "--workers", "2")
    dask = grid_tables(tmp_path / "dask", "--executor", "dask", "--workers", "2")
    assert local_tables == process == dask


def test_a_cluster_at_an_address_gives_the_same_tables(
        tmp_path: Path, local_tables: dict[str, bytes], cluster) -> None:
    address = cluster.scheduler_address
    assert address.startswith("tcp://127.0.0.1:")
    tables = grid_tables(tmp_path / "remote", "--executor", "dask", "--address", address)
    assert tables == local_tables


def _check_rows(store: RunStore, stored: set[int]) -> None:
    """Exactly one complete row per stored seed: what the run computes, nothing else."""
    assert len(store) == len(stored)
    expected = {c.key(): deterministic(c).metrics for c in configs() if c.seed in stored}
    assert stored_rows(store) == expected


def test_a_killed_worker_is_replaced_and_its_run_retried(tmp_path: Path, cluster) -> None:
    """Seed 2 kills its worker (SIGKILL) mid-run the first time; the scheduler runs it again
    on another worker (the nanny restarts the dead one). Seed 3 raises (a run's own error:
    not retried, not stored)."""
    with RunStore(tmp_path / "r.db") as store:
        out = run_grid(configs(), store, DiesOnceAtSeed2(str(tmp_path / "killed")),
                       progress=False, executor=DaskExecutor(cluster.scheduler_address))
        assert (tmp_path / "killed").exists()  # a worker did die
        assert (out.ran, out.failed) == (5, 1), [f.error for f in out.failures]
        assert "ValueError: boom at seed 3" in out.failures[0].error
        assert "Traceback" in out.failures[0].traceback  # the worker's traceback
        _check_rows(store, {0, 1, 2, 4, 5})


def test_a_run_that_kills_every_worker_it_meets_fails_unstored(tmp_path: Path,
                                                               cluster) -> None:
    """On the executor's own local cluster, past its retry budget (here none) the run is a
    failure: reported, not stored; the other runs are stored once, and resuming runs the
    rest."""
    with RunStore(tmp_path / "r.db") as store:
        out = run_grid(configs(), store, dies_at_seed_2, progress=False,
                       executor=DaskExecutor(workers=2, retries=0))
        errors = {f.config.seed: f.error for f in out.failures}
        assert {2, 3} <= set(errors), errors
        assert "worker process died" in errors[2] and "not stored" in errors[2]
        # a finished run's result waits on its worker until the driver fetches it: when
        # the killed worker held one, that run is lost too (reported, never stored)
        lost = set(errors) - {2, 3}
        assert all("worker process died" in errors[s] for s in lost), errors
        _check_rows(store, {0, 1, 4, 5} - lost)
        with DaskExecutor(cluster.scheduler_address) as ex:  # one connection, two grids
            resumed = run_grid(configs(), store, deterministic, progress=False, executor=ex)
            assert (resumed.skipped_existing, resumed.ran, resumed.failed) == \
                (4 - len(lost), 1 + len(lost), 1)
            _check_rows(store, {0, 1, 2, 4, 5})
            again = run_grid(configs(), store, deterministic, progress=False, executor=ex)
            assert (again.skipped_existing, again.ran, again.failed) == (5, 0, 1)


def test_lost_runs_are_one_line_errors() -> None:
    """What the driver reports for a run Dask could not finish (the scheduler's death is
    checked by hand: docs/experiments.md)."""
    from distributed import KilledWorker
    from distributed.client import FutureCancelledError
    died = executors._dask_error(KilledWorker("dpgl-run-x-2", None, 1))
    assert died.startswith("worker process died") and died.endswith("runs again on resume")
    lost = executors._dask_error(FutureCancelledError("dpgl-run-x-2",
                                                      "scheduler-connection-lost", "long text"))
    assert lost == ("cancelled by Dask (scheduler-connection-lost); the run is not stored and "
                    "runs again on resume")
    assert "\n" not in executors._dask_error(OSError("a\nb"))


def test_nothing_to_run_contacts_no_scheduler() -> None:
    assert list(DaskExecutor("tcp://127.0.0.1:1").map_unordered(deterministic, [])) == []


def test_an_unreachable_scheduler_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executors, "CONNECT_TIMEOUT", 1.0)  # 5 s by default
    grid = tmp_path / "grid.yaml"
    grid.write_text("name: g\ndatasets: [csbm]\nmethods: [mlp]\nseeds: [0]\n")
    t0 = time.perf_counter()
    code, _, err = run_cli(capsys, "run", str(grid), "--store", str(tmp_path / "s.sqlite"),
                           "--executor", "dask", "--address", "tcp://127.0.0.1:1", "--quiet")
    assert time.perf_counter() - t0 < 10
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert code == 2 and len(lines) == 1, err
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:1" in lines[0]
    assert "Traceback" not in err
    with RunStore(tmp_path / "s.sqlite") as store:
        assert len(store) == 0


@pytest.mark.parametrize("name, address, workers, message", [
    ("process", "tcp://127.0.0.1:8786", None, "give it with --executor dask"),
    ("local", "tcp://127.0.0.1:8786", None, "give it with --executor dask"),
    ("dask", "x", None, "not a Dask scheduler address"),
    ("dask", "tcp://127.0.0.1", None, "not a Dask scheduler address"),
    ("dask", "tcp://127.0.0.1:8786", 2, "--workers sets the size of the local cluster"),
])
def test_bad_executor_flags(name: str, address: str, workers: int | None,
                            message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check_executor(name, address, workers)
    with pytest.raises(ConfigError, match=message):
        make_executor(name, workers, address)


def test_good_addresses_and_the_dask_executor() -> None:
    for address in ("tcp://10.0.0.5:8786", "127.0.0.1:8786", "tls://sched.example:8786",
                    "tcp://[::1]:8786"):
        assert check_executor("dask", address) == "dask"
    ex = make_executor("dask", address="tcp://10.0.0.5:8786")
    assert isinstance(ex, DaskExecutor) and ex.workers is None
    assert make_executor("dask", workers=3).workers == 3
    with pytest.raises(ConfigError, match="workers"):
        DaskExecutor(workers=0)
    with pytest.raises(ConfigError, match="retries"):
        DaskExecutor(retries=-1)


def test_address_without_dask_on_the_command_line(capsys: pytest.CaptureFixture[str]
                                                  ) -> None:
    code, _, err = run_cli(capsys, "run", "grid.yaml", "--executor", "process",
                           "--address", "tcp://127.0.0.1:8786")
    assert code == 2 and err.count("\n") == 1 and "--executor dask" in err, err
