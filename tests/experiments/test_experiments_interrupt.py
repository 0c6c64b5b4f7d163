"""Interruption: kill -9 and Ctrl-C a grid mid-way, resume, and get the identical table.

The worker (``_grid_worker.py``) runs a 12-run grid with a fake deterministic run function
(each run sleeps 0.15 s) into a SQLite store; see that file.
"""

from __future__ import annotations

import importlib.util
import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from dpgl.experiments.report import summarize, to_markdown
from dpgl.experiments.runner import run_grid
from dpgl.experiments.store import RunStore

WORKER_PATH = Path(__file__).with_name("_grid_worker.py")
_spec = importlib.util.spec_from_file_location("_dpgl_grid_worker", WORKER_PATH)
worker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(worker)
N_RUNS = 12


def _default_sigint() -> None:
    """In the child: SIGINT back to its default, so Python installs its Ctrl-C handler even
    when this test runs in a background job, which inherits SIGINT ignored (``cmd &``)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(db: Path, sleep: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(WORKER_PATH), str(db), str(sleep)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)


def count_rows(db: Path) -> int:
    if not db.exists():
        return 0
    conn = sqlite3.connect(db, timeout=5)
    try:
        return conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    except sqlite3.OperationalError:  # table not created yet
        return 0
    finally:
        conn.close()


def wait_rows(db: Path, n: int, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while count_rows(db) < n:
        assert proc.poll() is None, f"worker exited early: {proc.communicate()}"
        assert time.monotonic() < deadline, "timed out waiting for stored runs"
        time.sleep(0.01)


def check_store(db: Path) -> int:
    """No partial or duplicate rows; every row is exactly what the run function returned."""
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        total, distinct = conn.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM runs").fetchone()
        assert total == distinct
        nulls = conn.execute("SELECT COUNT(*) FROM runs WHERE metrics_json IS NULL OR "
                             "config_json IS NULL OR privacy_json IS NULL").fetchone()[0]
        assert nulls == 0
    finally:
        conn.close()
    expected = {c.key(): c for c in worker.grid().expand(worker.is_private)}
    with RunStore(db) as store:
        rows = store.rows()
    for r in rows:
        cfg = expected[r["key"]]
        assert r["config"] == cfg
        assert r["metrics"] == worker.fake_metrics(cfg)
        assert r["privacy"] == {"totals": {"epsilon": cfg.epsilon, "delta": 0.0},
                                "unit": "edge-LDP"}
        assert r["info"] == {"seed": cfg.seed}
    return len(rows)


def table(db: Path) -> pd.DataFrame:
    with RunStore(db) as store:
        return summarize(store.to_frame())


def test_killed_and_interrupted_grid_resumes_to_the_identical_table(tmp_path):
    # reference: the same grid, uninterrupted (in-process, no sleep)
    ref = tmp_path / "reference.db"
    with RunStore(ref) as store:
        out = run_grid(worker.grid(), store, worker.make_run(0.0), progress=False,
                       is_private=worker.is_private)
    assert (out.total, out.ran) == (N_RUNS, N_RUNS)

    db = tmp_path / "interrupted.db"
    # 1. kill -9 after a few runs are stored
    proc = start(db, 0.15)
    try:
        wait_rows(db, 3, proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    n_killed = check_store(db)
    assert 3 <= n_killed <= N_RUNS - 4

    # 2. resume, then Ctrl-C (SIGINT) after two more runs: exit 130, clean store
    proc = start(db, 0.15)
    try:
        wait_rows(db, n_killed + 2, proc)
    finally:
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=10)
    assert proc.returncode == 130, stderr
    assert json.loads(stdout)["interrupted"] is True
    assert "interrupted: 12 runs:" in stderr and "re-run to resume" in stderr
    n_interrupted = check_store(db)
    assert n_killed + 2 <= n_interrupted < N_RUNS

    # 3. resume to completion: only the missing runs are run
    proc = start(db, 0.0)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert json.loads(stdout) == {"total": N_RUNS, "skipped_existing": n_interrupted,
                                  "ran": N_RUNS - n_interrupted, "failed": 0}
    assert check_store(db) == N_RUNS
    assert check_store(ref) == N_RUNS

    # 4. the final table equals the uninterrupted one, bit for bit
    a, b = table(ref), table(db)
    assert len(a) == 3  # none; priv at eps 1 and 4
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert to_markdown(a) == to_markdown(b)


def test_two_workers_share_one_store(tmp_path):
    db = tmp_path / "shared.db"
    RunStore(db).close()
    procs = [start(db, 0.05) for _ in range(2)]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=60)
        assert p.returncode == 0, stderr
        outs.append(json.loads(stdout))
    assert check_store(db) == N_RUNS
    assert sum(o["ran"] for o in outs) == N_RUNS  # each run stored once, counted once
    assert all(o["ran"] + o["skipped_existing"] == N_RUNS for o in outs)
