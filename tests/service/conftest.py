"""Database fixtures: an SQLite file in a temp dir, and a real PostgreSQL server started
from the installed binaries by :class:`dpgl.service.pgtemp.TempPostgres` (initdb, pg_ctl in
a temp dir on a loopback port, stopped afterwards; skipped where the binaries are
missing)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    from dpgl.service.pgtemp import TempPostgres, postgres_unavailable
    reason = postgres_unavailable()
    if reason is not None:
        pytest.skip(reason)
    with TempPostgres() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'server.db'}"
        return
    base = request.getfixturevalue("postgres_url")
    from dpgl.service.pgtemp import create_database, drop_database

    name = f"t{abs(hash(request.node.nodeid)) % 10**9}"
    url = create_database(base, name)
    try:
        yield url
    finally:
        drop_database(base, name)


@pytest.fixture
def open_db(db_url: str) -> Iterator[Any]:
    """``open_db(migrate=True)``: a Database on the test's store, closed at teardown."""
    from dpgl.service.db import Database

    opened: list[Database] = []

    def make(migrate: bool = True) -> Database:
        db = Database(db_url, migrate=migrate)
        opened.append(db)
        return db

    yield make
    for db in opened:
        db.close()
