"""The run store: one SQLite row per FINISHED run.

A row is written in one transaction after the run has finished (``INSERT OR IGNORE`` on the
primary key ``key = RunConfig.key()``), so a process killed at any moment -- Ctrl-C or
``kill -9``, during the run or during the write -- leaves either the complete row or no row,
and re-running a grid never duplicates one. The database uses write-ahead logging with
``synchronous=FULL`` (a committed run survives a power cut) and a busy timeout, so several
processes may write the same file (each write takes the write lock with ``BEGIN IMMEDIATE``).
Keep the file on a local disk: SQLite's WAL mode does not work over network file systems.
"""

from __future__ import annotations

import json
import math
import sqlite3
import warnings
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

import pandas as pd

import dpgl
from dpgl.errors import ConfigError, DpglDeprecationWarning
from dpgl.experiments.config import RunConfig, RunResult, canonical_json

#: 1: first; 2: evaluation-only diagnostics stored apart; 3: old parameter names renamed in the
#: stored configurations (and their keys recomputed), see docs/glossary.md.
SCHEMA_VERSION = 3

_COLUMNS = (
    "key", "hparam_key", "grid", "task", "dataset", "method", "model", "epsilon", "seed",
    "config_json", "metrics_json", "privacy_json", "timing_json", "info_json", "created_at",
    "dpgl_version", "diagnostics_json",
)
#: Columns of a version-1 store (before evaluation-only diagnostics were stored apart).
_COLUMNS_V1 = _COLUMNS[:-1]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    key          TEXT PRIMARY KEY NOT NULL,
    hparam_key   TEXT NOT NULL,
    grid         TEXT,
    task         TEXT NOT NULL,
    dataset      TEXT NOT NULL,
    method       TEXT NOT NULL,
    model        TEXT NOT NULL,
    epsilon      REAL,
    seed         INTEGER NOT NULL,
    config_json  TEXT NOT NULL,
    metrics_json TEXT NOT NULL,
    privacy_json TEXT NOT NULL,
    timing_json  TEXT NOT NULL,
    info_json    TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    dpgl_version TEXT NOT NULL,
    diagnostics_json TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS runs_group ON runs (dataset, model, method, epsilon, hparam_key);
CREATE INDEX IF NOT EXISTS runs_grid ON runs (grid);
"""

#: Columns of :meth:`RunStore.to_frame` that come from the configuration, not the result.
BASE_COLUMNS = ("key", "hparam_key", "grid", "task", "dataset", "method", "model", "epsilon",
                "seed", "params", "created_at", "dpgl_version")


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=True,
                      ensure_ascii=False)


class RunStore:
    """SQLite store of finished runs (see the module docstring for the guarantees).

    ``RunStore(path)`` creates the file (and its directory) if needed. Use it as a context
    manager or call :meth:`close`. One instance belongs to one thread; open one per process.
    """

    def __init__(self, path: str | Path, *, timeout: float = 60.0,
                 journal_mode: str = "wal") -> None:
        self.path = Path(path)
        if journal_mode.lower() not in ("wal", "delete"):
            raise ConfigError(f"journal_mode must be 'wal' or 'delete', got {journal_mode!r}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: no implicit transactions; each write is an explicit
            # BEGIN IMMEDIATE ... COMMIT below.
            self._conn = sqlite3.connect(str(self.path), timeout=timeout,
                                         isolation_level=None)
        except (OSError, sqlite3.Error) as e:
            raise ConfigError(f"cannot open run store {str(self.path)!r}: {e}") from None
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self._conn.execute(f"PRAGMA journal_mode = {journal_mode.upper()}")
            self._conn.execute("PRAGMA synchronous = FULL")
            self._init_schema()
        except sqlite3.DatabaseError as e:
            self._conn.close()
            raise ConfigError(
                f"{str(self.path)!r} is not a usable dpgl run store (SQLite): {e}"
            ) from None
        except BaseException:
            self._conn.close()
            raise

    def _init_schema(self) -> None:
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise ConfigError(
                f"run store {str(self.path)!r} has schema version {version}; this dpgl reads "
                f"up to {SCHEMA_VERSION} (upgrade dpgl)"
            )
        statements = [st for st in _SCHEMA.split(";") if st.strip()]
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            # statement by statement: executescript() would commit on its own
            self._conn.execute(statements[0])  # the table
            cols = [r[1] for r in self._conn.execute("PRAGMA table_info(runs)")]
            if tuple(cols) == _COLUMNS_V1:  # version 1: add the diagnostics column
                self._conn.execute("ALTER TABLE runs ADD COLUMN diagnostics_json TEXT NOT NULL "
                                   "DEFAULT '{}'")
                cols.append("diagnostics_json")
            if tuple(cols) != _COLUMNS:
                raise ConfigError(
                    f"{str(self.path)!r} has a 'runs' table with unexpected columns "
                    f"{', '.join(cols)}; it is not a dpgl run store"
                )
            for statement in statements[1:]:
                self._conn.execute(statement)
            if version < 3:
                self._rename_old_params()
            self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise

    def _rename_old_params(self) -> None:
        """Version 3: stored configurations that use an old parameter name get the current
        one and the key it gives (the run is the same; its results are unchanged). A row
        whose renamed key is already stored is a duplicate of that run and is dropped."""
        rows = self._conn.execute("SELECT key, config_json FROM runs").fetchall()
        for key, text in rows:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DpglDeprecationWarning)
                    config = RunConfig(**json.loads(text))
            except (ConfigError, ValueError, TypeError):
                continue  # not ours to judge here: reading the row reports it
            new = config.key()
            if new == key:
                continue
            if self._conn.execute("SELECT 1 FROM runs WHERE key = ?", (new,)).fetchone():
                self._conn.execute("DELETE FROM runs WHERE key = ?", (key,))
            else:
                self._conn.execute("UPDATE runs SET key = ?, hparam_key = ?, config_json = ? "
                                   "WHERE key = ?", (new, config.hparam_key(), config.to_json(),
                                                     key))

    # ----------------------------------------------------------------------------------
    # context manager
    # ----------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (idempotent)."""
        conn = getattr(self, "_conn", None)
        if conn is not None:
            conn.close()
            self._conn = None  # type: ignore[assignment]

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _c(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ConfigError(f"run store {str(self.path)!r} is closed")
        return self._conn

    # ----------------------------------------------------------------------------------
    # writing
    # ----------------------------------------------------------------------------------

    def put(self, config: RunConfig, result: RunResult, grid: str | None = None, *,
            created_at: str | None = None, version: str | None = None) -> bool:
        """Store a finished run in one transaction. Returns False (and changes nothing) if a
        run with the same key is already stored. ``created_at`` / ``version``: when and by
        which dpgl the run was made, for a run copied from another store (default: now,
        this dpgl)."""
        if not isinstance(config, RunConfig):
            raise ConfigError(f"put() needs a RunConfig, got {type(config).__name__}")
        if not isinstance(result, RunResult):
            result = RunResult.parse(result, "run result")
        row = (
            config.key(), config.hparam_key(), grid, config.task, config.dataset,
            config.method, config.model, config.epsilon, config.seed, config.to_json(),
            _dumps(result.metrics), _dumps(result.privacy), _dumps(result.timing),
            _dumps(result.info),
            created_at or datetime.now(timezone.utc).isoformat(timespec="seconds"),
            version or dpgl.__version__, _dumps(result.diagnostics),
        )
        conn = self._c()
        placeholders = ", ".join("?" * len(_COLUMNS))
        conn.execute("BEGIN IMMEDIATE")
        try:
            cur = conn.execute(
                f"INSERT OR IGNORE INTO runs ({', '.join(_COLUMNS)}) VALUES ({placeholders})",
                row,
            )
            inserted = cur.rowcount == 1
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return inserted

    # ----------------------------------------------------------------------------------
    # reading
    # ----------------------------------------------------------------------------------

    def has(self, key: str) -> bool:
        """Whether a finished run with this key is stored."""
        cur = self._c().execute("SELECT 1 FROM runs WHERE key = ?", (key,))
        return cur.fetchone() is not None

    def finished_keys(self) -> set[str]:
        """Keys of all stored runs."""
        return {r[0] for r in self._c().execute("SELECT key FROM runs")}

    def __len__(self) -> int:
        return int(self._c().execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored run with this key (see :meth:`rows` for the fields), or None."""
        rows = self.rows(keys=[key])
        return rows[0] if rows else None

    def rows(self, *, keys: Iterable[str] | None = None, grid: str | Iterable[str] | None = None,
             task: str | Iterable[str] | None = None,
             dataset: str | Iterable[str] | None = None,
             method: str | Iterable[str] | None = None,
             model: str | Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Stored runs matching every given filter (a value or a collection of values),
        ordered by dataset, model, method, epsilon, hparam_key, seed.

        Each row: key, hparam_key, grid, task, dataset, method, model, epsilon, seed,
        ``config`` (a :class:`RunConfig`), ``params``, ``metrics``, ``privacy``, ``timing``,
        ``info``, ``diagnostics`` (dicts), created_at, dpgl_version.
        """
        where: list[str] = []
        args: list[Any] = []
        filters: dict[str, Any] = {"grid": grid, "task": task, "dataset": dataset,
                                   "method": method, "model": model}
        if keys is not None:
            where.append("key IN (SELECT value FROM json_each(?))")
            args.append(json.dumps([str(k) for k in keys]))
        for column, value in filters.items():
            if value is None:
                continue
            values = [value] if isinstance(value, str) else list(value)
            where.append(f"{column} IN ({', '.join('?' * len(values))})" if values else "0")
            args.extend(values)
        sql = f"SELECT {', '.join(_COLUMNS)} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY dataset, model, method, epsilon, hparam_key, seed, key"
        return [_decode(dict(zip(_COLUMNS, r, strict=True)))
                for r in self._c().execute(sql, args)]

    def to_frame(self, **filters: Any) -> pd.DataFrame:
        """One row per stored run (filters as in :meth:`rows`).

        Columns: :data:`BASE_COLUMNS` (``params`` as canonical JSON text, ``epsilon`` NaN
        for non-private runs), then ``param_<name>`` per hyper-parameter, every metric under
        its own name (``metric_<name>`` if it collides with another column), timing as
        ``time_<name>``, and the privacy report's scalars: top-level ``privacy_<name>``,
        ``totals``/``total`` entries as ``privacy_total_<name>``, ``per_user`` entries as
        ``privacy_per_user_<name>``.
        """
        return rows_to_frame(self.rows(**filters))


def _decode(rec: dict[str, Any]) -> dict[str, Any]:
    out = {k: rec[k] for k in ("key", "hparam_key", "grid", "task", "dataset", "method",
                               "model", "epsilon", "seed", "created_at", "dpgl_version")}
    config = RunConfig.parse(json.loads(rec["config_json"]), "stored run config")
    out["config"] = config
    out["params"] = dict(config.params)
    for name in ("metrics", "privacy", "timing", "info", "diagnostics"):
        out[name] = json.loads(rec[f"{name}_json"])
    return out


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def _privacy_columns(privacy: Mapping[str, Any]) -> dict[str, Any]:
    cols: dict[str, Any] = {}
    for name, value in privacy.items():
        if _scalar(value):
            cols[f"privacy_{name}"] = value
        elif name in ("totals", "total", "per_user") and isinstance(value, Mapping):
            prefix = "privacy_per_user_" if name == "per_user" else "privacy_total_"
            for k, v in value.items():
                if _scalar(v):
                    cols[f"{prefix}{k}"] = v
                elif isinstance(v, Mapping):  # per-unit totals: {unit: {epsilon, delta, ...}}
                    for kk, vv in v.items():
                        if _scalar(vv) and kk != "unit":
                            cols[f"{prefix}{k}_{kk}"] = vv
    return cols


def rows_to_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The :meth:`RunStore.to_frame` table from :meth:`RunStore.rows` records."""
    records = []
    for r in rows:
        rec: dict[str, Any] = {c: r[c] for c in BASE_COLUMNS if c != "params"}
        rec["params"] = canonical_json(r["params"])
        rec["epsilon"] = math.nan if r["epsilon"] is None else float(r["epsilon"])
        for k, v in r["params"].items():
            rec[f"param_{k}"] = v if _scalar(v) else canonical_json(v)
        for k, v in r["timing"].items():
            rec[f"time_{k}"] = v
        rec.update(_privacy_columns(r["privacy"]))
        for k, v in r["metrics"].items():
            rec[f"metric_{k}" if k in rec else k] = v
        records.append(rec)
    if not records:
        return pd.DataFrame(columns=list(BASE_COLUMNS))
    frame = pd.DataFrame.from_records(records)
    frame["epsilon"] = frame["epsilon"].astype(float)
    return frame
