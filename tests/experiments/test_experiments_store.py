"""RunStore: roundtrip, no duplicates, to_frame, atomicity under kill -9, two writers."""

from __future__ import annotations

import json
import math
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from dpgl.errors import ConfigError
from dpgl.experiments.config import RunConfig, RunResult
from dpgl.experiments.store import RunStore

PRIVACY = {"totals": {"epsilon": 4.0, "delta": 0.0}, "per_user": {"epsilon": 2.0},
           "unit": "edge-LDP", "steps": [{"name": "rr", "epsilon": 4.0}]}


def result(acc: float = 0.8) -> RunResult:
    return RunResult(metrics={"test_accuracy": acc, "val_accuracy": acc - 0.1},
                     privacy=PRIVACY, timing={"total": 1.5, "fit": 1.0},
                     info={"epochs": 12, "graph": {"n": 5}})


def test_roundtrip_and_reopen(tmp_path):
    cfg = RunConfig(dataset="cora", method="rr", epsilon=4, seed=2, params={"lr": 0.01})
    path = tmp_path / "sub" / "runs.db"
    with RunStore(path) as store:
        assert not store.has(cfg.key()) and store.get(cfg.key()) is None
        assert store.put(cfg, result(), grid="g1") is True
        assert store.has(cfg.key())
        assert store.finished_keys() == {cfg.key()}
        assert len(store) == 1
    with RunStore(path) as store:
        row = store.get(cfg.key())
    assert row is not None
    assert row["config"] == cfg and row["config"].key() == cfg.key()
    assert row["key"] == cfg.key() and row["hparam_key"] == cfg.hparam_key()
    assert (row["grid"], row["task"], row["dataset"], row["method"], row["model"]) == (
        "g1", "node", "cora", "rr", "gcn")
    assert row["epsilon"] == 4.0 and row["seed"] == 2 and row["params"] == {"lr": 0.01}
    assert row["metrics"] == {"test_accuracy": 0.8, "val_accuracy": 0.8 - 0.1}
    assert row["privacy"] == PRIVACY
    assert row["timing"] == {"total": 1.5, "fit": 1.0}
    assert row["info"] == {"epochs": 12, "graph": {"n": 5}}
    assert row["dpgl_version"] and row["created_at"].endswith("+00:00")


def test_no_duplicates_and_first_write_wins(tmp_path):
    cfg = RunConfig(dataset="cora", seed=0)
    with RunStore(tmp_path / "r.db") as store:
        assert store.put(cfg, result(0.8)) is True
        assert store.put(cfg, result(0.1)) is False
        assert store.put(RunConfig(dataset="cora", seed=0.0), result(0.2)) is False
        assert len(store) == 1
        assert store.get(cfg.key())["metrics"]["test_accuracy"] == 0.8
        n = store._conn.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM runs").fetchone()
    assert n == (1, 1)


def test_pragmas(tmp_path):
    with RunStore(tmp_path / "r.db") as store:
        assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    with RunStore(tmp_path / "d.db", journal_mode="delete") as store:
        assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_rows_filters_and_order(tmp_path):
    with RunStore(tmp_path / "r.db") as store:
        for ds in ("pubmed", "cora"):
            for method, eps in (("rr", 8.0), ("none", None), ("rr", 1.0)):
                for seed in (1, 0):
                    store.put(RunConfig(dataset=ds, method=method, epsilon=eps, seed=seed),
                              result(), grid="a" if ds == "cora" else "b")
        rows = store.rows()
        assert [(r["dataset"], r["method"], r["epsilon"], r["seed"]) for r in rows[:6]] == [
            ("cora", "none", None, 0), ("cora", "none", None, 1), ("cora", "rr", 1.0, 0),
            ("cora", "rr", 1.0, 1), ("cora", "rr", 8.0, 0), ("cora", "rr", 8.0, 1)]
        assert len(store.rows(dataset="cora")) == 6
        assert len(store.rows(grid="b", method=["rr"])) == 4
        assert len(store.rows(dataset=[])) == 0
        some = [rows[0]["key"], rows[5]["key"]]
        assert [r["key"] for r in store.rows(keys=some)] == some


def test_to_frame_columns(tmp_path):
    with RunStore(tmp_path / "r.db") as store:
        assert list(store.to_frame().columns)[:3] == ["key", "hparam_key", "grid"]
        assert store.to_frame().empty
        store.put(RunConfig(dataset="cora", method="rr", epsilon=4, seed=0,
                            params={"lr": 0.01, "dims": [8, 8]}), result(0.75))
        store.put(RunConfig(dataset="cora", seed=1), RunResult(metrics={"seed": 3.0}))
        df = store.to_frame()
    assert len(df) == 2
    priv = df[df["method"] == "rr"].iloc[0]
    assert priv["epsilon"] == 4.0 and priv["seed"] == 0
    assert priv["test_accuracy"] == 0.75 and priv["val_accuracy"] == pytest.approx(0.65)
    assert priv["privacy_total_epsilon"] == 4.0 and priv["privacy_total_delta"] == 0.0
    assert priv["privacy_per_user_epsilon"] == 2.0 and priv["privacy_unit"] == "edge-LDP"
    assert "privacy_steps" not in df.columns  # non-scalar entries are not flattened
    assert priv["time_total"] == 1.5 and priv["time_fit"] == 1.0
    assert priv["param_lr"] == 0.01 and priv["param_dims"] == "[8,8]"
    assert json.loads(priv["params"]) == {"dims": [8, 8], "lr": 0.01}
    nonpriv = df[df["method"] == "none"].iloc[0]
    assert math.isnan(nonpriv["epsilon"]) and df["epsilon"].dtype == float
    assert nonpriv["metric_seed"] == 3.0 and nonpriv["seed"] == 1  # collision renamed


def test_not_a_store(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_text("this is not sqlite " * 100)
    with pytest.raises(ConfigError, match="is not a usable dpgl run store"):
        RunStore(bad)
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE runs (key TEXT PRIMARY KEY, x INT)")
    conn.commit()
    conn.close()
    with pytest.raises(ConfigError, match="has a 'runs' table with unexpected columns"):
        RunStore(other)
    with pytest.raises(ConfigError, match="journal_mode must be 'wal' or 'delete'"):
        RunStore(tmp_path / "x.db", journal_mode="memory")
    store = RunStore(tmp_path / "c.db")
    store.close()
    store.close()
    with pytest.raises(ConfigError, match="is closed"):
        store.has("x")


WRITER = """
import sys
from dpgl.experiments.config import RunConfig, RunResult
from dpgl.experiments.store import RunStore
store = RunStore(sys.argv[1])
for i in range(int(sys.argv[2]), int(sys.argv[3])):
    store.put(RunConfig(dataset="d", seed=i, params={"i": i}),
              RunResult(metrics={"a": float(i)}, info={"blob": "x" * 4000}))
print("done", flush=True)
"""


def _wait_rows(path, n, proc, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            try:
                conn = sqlite3.connect(path, timeout=5)
                try:
                    count = conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
                finally:
                    conn.close()
                if count >= n:
                    return count
            except sqlite3.OperationalError:
                pass
        assert proc.poll() is None, "writer exited early"
        time.sleep(0.02)
    raise AssertionError("timed out waiting for rows")


def _check_rows_complete(path):
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        total, distinct = conn.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM runs").fetchone()
        assert total == distinct
    finally:
        conn.close()
    with RunStore(path) as store:
        rows = store.rows()
        for r in rows:  # every stored row is whole: config, metrics and info agree
            assert r["config"].key() == r["key"]
            assert r["metrics"] == {"a": float(r["seed"])}
            assert r["info"] == {"blob": "x" * 4000}
    return len(rows)


def test_kill_9_during_writes_leaves_only_whole_rows(tmp_path):
    path = tmp_path / "k.db"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), "0", "1000000"])
    try:
        _wait_rows(path, 40, proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    n = _check_rows_complete(path)
    assert n >= 40
    with RunStore(path) as store:  # the store is usable after the crash
        assert store.put(RunConfig(dataset="d", seed=n + 10**7, params={"i": 0}),
                         RunResult(metrics={"a": float(n + 10**7)}, info={"blob": "x" * 4000}))
    assert _check_rows_complete(path) == n + 1


def test_two_processes_write_the_same_store(tmp_path):
    path = tmp_path / "c.db"
    RunStore(path).close()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), lo, hi],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for lo, hi in (("0", "60"), ("30", "90"))]
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert out.strip() == "done"
    assert _check_rows_complete(path) == 90
    with RunStore(path) as store:
        assert sorted(r["seed"] for r in store.rows()) == list(range(90))


def test_to_frame_flattens_a_real_privacy_report(tmp_path):
    from dpgl.privacy import Accountant, Guarantee, Unit

    acc = Accountant()
    acc.spend("rr", Guarantee.pure(1.5, Unit.EDGE_LDP))
    acc.spend_nonprivate("features", "as is", Unit.FEATURE_LDP)
    with RunStore(tmp_path / "r.sqlite") as store:
        config = RunConfig(dataset="cora", method="rr", epsilon=1.5)
        store.put(config, RunResult(metrics={"test_accuracy": 0.5}, privacy=acc.report().to_dict()))
        row = store.to_frame().iloc[0]
    assert row["privacy_total_edge-LDP_epsilon"] == 1.5
    assert row["privacy_total_edge-LDP_delta"] == 0.0
    no_privacy = row["privacy_total_feature-LDP_epsilon"]  # null in JSON: no guarantee
    assert no_privacy is None or math.isnan(no_privacy)


def test_diagnostics_are_stored_apart_and_version_1_stores_migrate(tmp_path):
    """Evaluation-only diagnostics have their own column; a store written before it existed
    (schema version 1) gains the column on open and its rows read back with none."""
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("""CREATE TABLE runs (key TEXT PRIMARY KEY NOT NULL, hparam_key TEXT NOT NULL,
        grid TEXT, task TEXT NOT NULL, dataset TEXT NOT NULL, method TEXT NOT NULL,
        model TEXT NOT NULL, epsilon REAL, seed INTEGER NOT NULL, config_json TEXT NOT NULL,
        metrics_json TEXT NOT NULL, privacy_json TEXT NOT NULL, timing_json TEXT NOT NULL,
        info_json TEXT NOT NULL, created_at TEXT NOT NULL, dpgl_version TEXT NOT NULL)""")
    cfg = RunConfig(dataset="cora", method="none", seed=0)
    conn.execute("INSERT INTO runs VALUES (?, ?, NULL, 'node', 'cora', 'none', 'gcn', NULL, 0, "
                 "?, '{}', '{}', '{}', '{}', 'now', '0')",
                 (cfg.key(), cfg.hparam_key(), cfg.to_json()))
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with RunStore(path) as st:
        assert st.get(cfg.key())["diagnostics"] == {}
        other = RunConfig(dataset="cora", method="none", seed=1)
        st.put(other, RunResult(metrics={"test_accuracy": 0.5},
                                diagnostics={"true_edges": 10}))
        assert st.get(other.key())["diagnostics"] == {"true_edges": 10}
        assert st.get(other.key())["info"] == {}
