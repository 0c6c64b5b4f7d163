"""Helpers shared by the collection service's reliability benchmarks (collection_load.py,
collection_faults.py, collection_fuzz.py; issue #14): synthetic private data, precomputed
device reports, the operator's set-up of a database, a peak-RSS sampler, the check that a
database holds exactly the acknowledged reports, the machine notes of a results page, and the
loop that runs a benchmark on each database and records its results."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _common import command_line

from dpgl.collection.items import user_rng
from dpgl.collection.round import PrivateData, Round, canonical_json
from dpgl.collection.spec import RoundSpec

#: what every results page says about the machine the numbers were taken on
SHARED_MACHINE_NOTE = (
    "The numbers were taken on a shared 2-core virtual machine: the server process, the "
    "load driver (same machine, Python/httpx, asyncio), PostgreSQL when used, and two other "
    "developers' jobs (tests, builds) ran at the same time on those 2 cores. They are lower "
    "bounds for a dedicated server and vary from run to run; compare rows of one table, not "
    "with other machines.")


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Submission:
    """One precomputed device submission: the exact request body, and the SHA-256 of the
    text the server stores for it (the canonical JSON of the report)."""

    user_id: str
    body: bytes
    stored_sha256: str


def private_data(n: int, index: int, *, degree: int = 10, dim: int = 0, classes: int = 0,
                 seed: int = 0) -> PrivateData:
    """User ``index``'s synthetic private data: a sparse neighbour list (``degree`` random
    other users, sorted), a feature vector in [0, 1]^dim, a label in [0, classes)."""
    rng = np.random.default_rng([seed, index])
    nb = np.unique(rng.integers(0, n, size=degree + 1))
    nb = nb[nb != index][:degree]
    return PrivateData(neighbors=nb.astype(np.int64),
                       features=rng.random(dim) if dim else None,
                       label=int(rng.integers(classes)) if classes else None)


def precompute(spec: RoundSpec, users: Iterable[int], *, seed: int = 1,
               degree: int = 10) -> list[Submission]:
    """The devices' submissions for ``users`` (indices), drawn as a seeded device draws
    them (:meth:`Round.device_report` with :func:`user_rng`)."""
    rnd = Round(spec)
    n = len(rnd)
    dim = spec.features.dim if spec.features is not None else 0
    classes = spec.labels.classes if spec.labels is not None else 0
    out = []
    for i in users:
        report = rnd.device_report(private_data(n, i, degree=degree, dim=dim,
                                                classes=classes, seed=seed), i,
                                   user_rng(seed, i))
        uid = rnd.users[i]
        out.append(Submission(uid, canonical_json({"user_id": uid, "report": report})
                              .encode("utf-8"), sha256_text(canonical_json(report))))
    return out


def setup_database(url: str, n: int, specs: list[RoundSpec]) -> dict[str, str]:
    """The operator's set-up: enrol the population "0".."n-1" in bulk
    (:meth:`Database.enroll_many`, one transaction) and open every round. Returns the
    tokens by user id."""
    from dpgl.service.db import Database
    from dpgl.service.operator import open_round
    with Database(url) as db:
        db.set_lifetime({"edge-LDP": 50.0, "feature-LDP": 50.0, "label-LDP": 50.0})
        ids = [str(i) for i in range(n)]
        tokens = dict(zip(ids, db.enroll_many(ids), strict=True))
        for spec in specs:
            open_round(db, spec)
    return tokens


class RssSampler:
    """Samples a process's resident set size every ``interval`` seconds in a thread; the
    peak since the last :meth:`reset` is :attr:`peak` (bytes). Follows the process given
    by ``pid()`` (a callable: the pid changes when a server is restarted)."""

    def __init__(self, pid: Any, interval: float = 0.05) -> None:
        self._pid, self.interval = pid, interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil
        while not self._stop.is_set():
            pid = self._pid()
            if pid is not None:
                with contextlib.suppress(psutil.Error):
                    self.peak = max(self.peak, psutil.Process(pid).memory_info().rss)
            self._stop.wait(self.interval)

    def reset(self) -> None:
        self.peak = 0

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def stored_reports(url: str, round_id: str) -> dict[str, tuple[str, str, int]]:
    """Every stored report of ``round_id``: user id -> (SHA-256 of the stored payload as
    recomputed here, the sha256 column, payload length), read row by row."""
    import sqlalchemy as sa

    from dpgl.service.db import Database, reports
    out: dict[str, tuple[str, str, int]] = {}
    with Database(url, migrate=False) as db, db.engine.connect() as conn:
        q = sa.select(reports.c.user_id, reports.c.payload, reports.c.sha256).where(
            reports.c.round_id == round_id)
        for uid, payload, col in conn.execution_options(yield_per=200).execute(q):
            if uid in out:
                raise AssertionError(f"user {uid!r} has two rows in round {round_id!r}")
            out[uid] = (sha256_text(payload), col, len(payload))
    return out


def check_exactly(url: str, round_id: str, acknowledged: dict[str, str]) -> dict[str, Any]:
    """The database holds exactly the ``acknowledged`` reports (user id -> SHA-256 of the
    text sent), each once and byte for byte (sha256 of the payload recomputed), and no
    others. Returns the counts; raises AssertionError with the first differences."""
    stored = stored_reports(url, round_id)
    missing = sorted(set(acknowledged) - set(stored))
    extra = sorted(set(stored) - set(acknowledged))
    wrong = sorted(u for u in set(stored) & set(acknowledged)
                   if stored[u][0] != acknowledged[u])
    bad_col = sorted(u for u, (h, col, _) in stored.items() if h != col)
    ok = not (missing or extra or wrong or bad_col)
    res = {"round_id": round_id, "acknowledged": len(acknowledged), "stored": len(stored),
           "missing": len(missing), "extra": len(extra), "bytes_differ": len(wrong),
           "hash_column_differs": len(bad_col), "ok": ok}
    if not ok:
        raise AssertionError(f"round {round_id!r}: database differs from the acknowledged "
                             f"reports: {res}; e.g. missing {missing[:3]}, extra {extra[:3]}, "
                             f"differing {wrong[:3]}, bad hash column {bad_col[:3]}")
    return res


def db_size(url: str, path: str | None = None) -> int:
    """The database's size on disk, bytes (SQLite: the file plus its WAL; PostgreSQL:
    pg_database_size of the current database)."""
    if url.startswith("sqlite"):
        assert path is not None
        with sqlite3.connect(path, timeout=60) as conn:  # fold the WAL into the file
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    import sqlalchemy as sa

    from dpgl.service.db import Database
    with Database(url, migrate=False) as db, db.engine.connect() as conn:
        return int(conn.execute(sa.text("SELECT pg_database_size(current_database())"))
                   .scalar() or 0)


def machine_notes(pg_version: str | None = None) -> list[str]:
    import fastapi
    import httpx
    import uvicorn
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name")), platform.processor())
    except OSError:
        cpu = platform.processor()
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem = float("nan")
    la = os.getloadavg()
    notes = [f"{os.cpu_count()} CPU cores ({cpu}), {mem:.0f} GiB memory, "
             f"{platform.system()} {platform.release()}",
             f"load average at the end of the run: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}",
             f"Python {sys.version.split()[0]}, FastAPI {fastapi.__version__}, uvicorn "
             f"{uvicorn.__version__} (h11, asyncio loop, one worker), httpx "
             f"{httpx.__version__}, SQLite {sqlite3.sqlite_version} (WAL, synchronous=FULL)"]
    if pg_version:
        notes.append(f"PostgreSQL {pg_version} (a temporary cluster started by "
                     "dpgl.service.pgtemp.TempPostgres on the same machine; default settings, "
                     "fsync on)")
    notes.append(SHARED_MACHINE_NOTE)
    return notes


@dataclass(frozen=True)
class ScratchDatabase:
    """A benchmark's fresh database: its URL, a temporary directory for the run's files, the
    SQLite file (None on PostgreSQL) and the PostgreSQL server version (None on SQLite)."""

    url: str
    tmp: Path
    sqlite_path: str | None
    pg_version: str | None


@contextlib.contextmanager
def scratch_database(backend: str, name: str, *,
                     pg_settings: dict[str, str] | None = None) -> Iterator[ScratchDatabase]:
    """A fresh database for ``backend``: a SQLite file in a temporary directory, or database
    ``name`` on a temporary PostgreSQL server (:class:`dpgl.service.pgtemp.TempPostgres`
    with ``pg_settings``); the server is stopped and the directory removed on exit."""
    tmp = Path(tempfile.mkdtemp(prefix=f"dpgl-{name}-"))
    pg = None
    try:
        if backend == "sqlite":
            path = str(tmp / "server.db")
            yield ScratchDatabase(f"sqlite:///{path}", tmp, path, None)
        else:
            from dpgl.service.pgtemp import TempPostgres
            pg = TempPostgres(settings=pg_settings) if pg_settings else TempPostgres()
            pg.start()
            url = pg.create_database(name)
            yield ScratchDatabase(url, tmp, None, pg_server_version(url))
    finally:
        if pg is not None:
            pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def commands_and_machines(runs: list[dict[str, Any]]) -> list[str]:
    """The results page's footer: each distinct command of ``runs``, then each run's machine
    notes."""
    lines = ["Commands (from the repository root, `PYTHONPATH=src`):", ""]
    lines += [f"    {cmd}" for cmd in dict.fromkeys(r["command"] for r in runs)]
    lines += ["", "Machine:", ""]
    for r in runs:
        lines.append(f"* {r['backend']} run, {r['when']}:")
        lines += [f"    * {n}" for n in r["notes"]]
    return lines


def pg_server_version(url: str) -> str:
    import sqlalchemy as sa

    from dpgl.service.db import Database
    with Database(url, migrate=False) as db, db.engine.connect() as conn:
        return str(conn.execute(sa.text("SHOW server_version")).scalar())


def stamp() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


BACKENDS = ("sqlite", "postgresql")


def run_backends(ap: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str] | None,
                 *, script: str, stem: str,
                 run_backend: Callable[[str, argparse.Namespace], dict[str, Any]],
                 render: Callable[[dict[str, Any]], str],
                 extra: dict[str, Any] | None = None) -> int:
    """Run ``run_backend`` on each database of ``args.backends`` (PostgreSQL is left out,
    with its reason, when its binaries are missing) and, unless ``args.no_write``, record
    every result with its command, time and machine notes in ``args.out / stem.json`` and
    the page ``render`` makes of them in ``stem.md``. Returns 1 when a run is not ok."""
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    for b in backends:
        if b not in BACKENDS:
            ap.error(f"unknown backend {b!r} (choose from {', '.join(BACKENDS)})")
    if "postgresql" in backends:
        from dpgl.service.pgtemp import postgres_unavailable
        reason = postgres_unavailable()
        if reason:
            print(f"skipping postgresql: {reason}", file=sys.stderr)
            backends.remove("postgresql")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    cmd = command_line(script, argv)
    path = args.out / f"{stem}.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    status = 0
    for b in backends:
        res = run_backend(b, args)
        res.update(command=cmd, when=stamp(), notes=machine_notes(res.get("pg_version")),
                   **(extra or {}))
        data[b] = res
        status |= 0 if res.get("ok", True) else 1
        if not args.no_write:
            args.out.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
            (args.out / f"{stem}.md").write_text(render(data))
    return status
