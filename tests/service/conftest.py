"""Database fixtures: an SQLite file in a temp dir, and a real PostgreSQL server that the
fixture starts from the installed binaries (initdb, pg_ctl) in a temp dir on a loopback port
and stops afterwards (skipped where the binaries are missing)."""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) are not installed")
    # its own directory under the system temp dir: pytest's are private to this user, and
    # PostgreSQL may have to run as another one (it refuses root)
    root = Path(tempfile.mkdtemp(prefix="dpgl-pg-"))
    data, port = root / "data", _free_port()
    user = getpass.getuser()
    env = dict(os.environ)
    run_as: list[str] = []
    if os.geteuid() == 0:  # postgres refuses to run as root: use an unprivileged account
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser")
        user = "nobody"
        os.chmod(root, 0o777)
        run_as = ["runuser", "-u", user, "--"]
    subprocess.run([*run_as, initdb, "-D", str(data), "-U", "dpgl", "--auth=trust",
                    "-E", "UTF8"], check=True, capture_output=True, env=env)
    log = root / "log"
    subprocess.run([*run_as, pg_ctl, "-D", str(data), "-l", str(log), "-w", "-o",
                    f"-h 127.0.0.1 -p {port} -k {root}", "start"], check=True,
                   capture_output=True, env=env)
    try:
        yield f"postgresql://dpgl@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*run_as, pg_ctl, "-D", str(data), "-m", "fast", "stop"],
                       capture_output=True, env=env)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'server.db'}"
        return
    base = request.getfixturevalue("postgres_url")
    import sqlalchemy as sa

    name = f"t{abs(hash(request.node.nodeid)) % 10**9}"
    admin = sa.create_engine(base.replace("postgresql://", "postgresql+psycopg://"),
                             isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    try:
        yield base.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.dispose()


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
