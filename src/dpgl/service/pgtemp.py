"""A throw-away PostgreSQL server for tests and benchmarks (issue #14).

``with TempPostgres() as url: ...`` runs ``initdb`` and ``pg_ctl start`` from the installed
binaries in a fresh directory under the system temp dir, on a free loopback port (TCP on
127.0.0.1 only, the Unix socket in that directory, trust authentication for the role
``dpgl``), yields ``postgresql://dpgl@127.0.0.1:PORT/postgres``, and at the end stops the
server (``pg_ctl -m fast stop``) and deletes the directory. PostgreSQL refuses to run as
root: a root process runs it as ``nobody`` through ``runuser``. Where the binaries (or
``runuser``) are missing, :class:`TempPostgres` raises :class:`PostgresUnavailableError` with the
reason (tests turn it into a skip); :func:`postgres_unavailable` tells the reason before
anything is started.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from dpgl.errors import DpglError

__all__ = ["PostgresUnavailableError", "TempPostgres", "create_database", "drop_database",
           "postgres_unavailable"]


class PostgresUnavailableError(DpglError):
    """No PostgreSQL server can be started here (binaries or ``runuser`` missing)."""


def _binary(name: str) -> str | None:
    return shutil.which(name)


def postgres_unavailable() -> str | None:
    """Why :class:`TempPostgres` cannot start here, or None when it can."""
    missing = [b for b in ("initdb", "pg_ctl") if _binary(b) is None]
    if missing:
        return f"PostgreSQL binaries ({', '.join(missing)}) are not installed"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root, and runuser (to run PostgreSQL as nobody) is not installed"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def create_database(url: str, name: str, *, drop: bool = True) -> str:
    """Create database ``name`` on the server at ``url`` (dropping it first, disconnecting
    its clients, when ``drop``); returns its URL."""
    import sqlalchemy as sa
    admin = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1),
                             isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            if drop:
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.exec_driver_sql(f"CREATE DATABASE {name}")
    finally:
        admin.dispose()
    return url.rsplit("/", 1)[0] + f"/{name}"


def drop_database(url: str, name: str) -> None:
    """Drop database ``name`` on the server at ``url`` (disconnecting its clients)."""
    import sqlalchemy as sa
    admin = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1),
                             isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    finally:
        admin.dispose()


class TempPostgres:
    """A temporary PostgreSQL server: ``with TempPostgres() as url`` (a ``postgresql://``
    URL of its ``postgres`` database). ``settings``: extra ``-c name=value`` server options
    (e.g. ``{"max_connections": "200"}``). :attr:`pid` is the postmaster's process id while
    it runs (for memory measurements)."""

    def __init__(self, *, settings: dict[str, str] | None = None, user: str = "dpgl",
                 timeout: float = 60.0) -> None:
        self.settings = dict(settings or {})
        self.role, self.timeout = user, float(timeout)
        self.root: Path | None = None
        self.port: int | None = None
        self.url: str | None = None
        self._run_as: list[str] = []
        self._started = False

    @property
    def data_dir(self) -> Path:
        assert self.root is not None, "TempPostgres is not started"
        return self.root / "data"

    @property
    def pid(self) -> int | None:
        """The postmaster's pid (first line of postmaster.pid), None when not running."""
        if self.root is None:
            return None
        try:
            return int((self.data_dir / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def _run(self, args: list[str], what: str) -> None:
        try:
            subprocess.run([*self._run_as, *args], check=True, capture_output=True,
                           timeout=self.timeout)
        except subprocess.CalledProcessError as e:
            detail = (e.stderr or e.stdout or b"").decode("utf-8", "replace").strip()
            log = self.root / "log" if self.root is not None else None
            if log is not None and log.exists():
                detail += " | log: " + log.read_text(errors="replace").strip()[-500:]
            raise PostgresUnavailableError(f"PostgreSQL {what} failed: "
                                      f"{detail.splitlines()[-1] if detail else e}") from None
        except subprocess.TimeoutExpired:
            raise PostgresUnavailableError(f"PostgreSQL {what} did not finish in "
                                      f"{self.timeout:g} s") from None

    def start(self) -> str:
        """Create the cluster, start the server and return its URL."""
        reason = postgres_unavailable()
        if reason is not None:
            raise PostgresUnavailableError(reason)
        initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
        assert initdb is not None and pg_ctl is not None
        # its own directory under the system temp dir (PostgreSQL may have to run as another
        # user, who must be able to enter it)
        self.root = Path(tempfile.mkdtemp(prefix="dpgl-pg-"))
        if os.geteuid() == 0:  # postgres refuses to run as root: an unprivileged account
            os.chmod(self.root, 0o777)
            self._run_as = ["runuser", "-u", "nobody", "--"]
        try:
            self._run([initdb, "-D", str(self.data_dir), "-U", self.role, "--auth=trust",
                       "-E", "UTF8"], "initdb")
            self.port = _free_port()
            opts = f"-h 127.0.0.1 -p {self.port} -k {self.root}" + "".join(
                f" -c {k}={v}" for k, v in self.settings.items())
            self._run([pg_ctl, "-D", str(self.data_dir), "-l", str(self.root / "log"), "-w",
                       "-t", str(int(self.timeout)), "-o", opts, "start"], "start")
            self._started = True
        except BaseException:
            self.stop()
            raise
        self.url = f"postgresql://{self.role}@127.0.0.1:{self.port}/postgres"
        return self.url

    def create_database(self, name: str, *, drop: bool = True) -> str:
        """Create (after dropping it, when ``drop``) database ``name`` on this server and
        return its URL; ``name`` is a plain identifier (letters, digits, underscores)."""
        if self.url is None:
            raise PostgresUnavailableError("TempPostgres is not started")
        if not name.isidentifier() or not name.isascii():
            raise ValueError(f"database name {name!r}: letters, digits and underscores")
        return create_database(self.url, name, drop=drop)

    def stop(self) -> None:
        """Stop the server (if started) and delete its directory."""
        if self.root is None:
            return
        pg_ctl = _binary("pg_ctl")
        if self._started and pg_ctl is not None:
            subprocess.run([*self._run_as, pg_ctl, "-D", str(self.data_dir), "-m", "fast",
                            "-w", "stop"], capture_output=True, timeout=self.timeout,
                           check=False)
        self._started = False
        shutil.rmtree(self.root, ignore_errors=True)
        self.root, self.url = None, None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
