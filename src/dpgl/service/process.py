"""The collection server as a real operating-system process, for the fault and load
benchmarks and their tests (issue #14).

:class:`ServerProcess` runs ``python -m dpgl.cli serve --db URL --port PORT`` (the command an
operator runs) as a child process with this dpgl on its path, waits until ``/healthz``
answers, and can be killed without warning (``SIGKILL``: no shutdown code runs, as in a
power cut or an OOM kill) and started again on the same database and port.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from dpgl.errors import DpglError

__all__ = ["ServerProcess", "ServerProcessError", "free_port"]


class ServerProcessError(DpglError):
    """The server process did not start (its last output is in the message)."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _src_dir() -> str:
    import dpgl
    return str(Path(dpgl.__file__).resolve().parent.parent)


class ServerProcess:
    """``dpgl serve`` over ``db`` (a path or URL) on ``port`` (default: a free one).

    ``rate``/``burst``: the server's per-token rate limit. ``start()`` waits up to
    ``start_timeout`` seconds for ``/healthz``; ``kill()`` sends SIGKILL and reaps the
    process; ``stop()`` asks it to exit (SIGINT, as Ctrl-C) and kills it after ``grace``
    seconds. The server's stderr goes to a temporary log (:meth:`log_tail`)."""

    def __init__(self, db: str, *, port: int | None = None, rate: float = 5.0,
                 burst: int = 10, python: str = sys.executable,
                 start_timeout: float = 60.0, env: dict[str, str] | None = None) -> None:
        self.db, self.port = db, port or free_port()
        self.rate, self.burst, self.python = rate, burst, python
        self.start_timeout = float(start_timeout)
        self.env = dict(os.environ if env is None else env)
        path = self.env.get("PYTHONPATH")
        self.env["PYTHONPATH"] = _src_dir() + (os.pathsep + path if path else "")
        self.proc: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self.starts = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def command(self) -> list[str]:
        return [self.python, "-m", "dpgl.cli", "serve", "--db", self.db, "--port",
                str(self.port), "--rate", repr(float(self.rate)), "--burst", str(self.burst)]

    def log_tail(self, chars: int = 2000) -> str:
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-chars:]

    def start(self) -> ServerProcess:
        if self.alive():
            raise ServerProcessError("the server process is already running")
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=self._log, env=self.env)
        self.starts += 1
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self.proc.poll() is not None:
                raise ServerProcessError(f"dpgl serve exited with status "
                                         f"{self.proc.returncode}: {self.log_tail(500)}")
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=2) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                self.kill()
                raise ServerProcessError(f"dpgl serve did not answer /healthz within "
                                         f"{self.start_timeout:g} s: {self.log_tail(500)}")
            time.sleep(0.02)

    def kill(self) -> None:
        """SIGKILL: the process dies at once, mid-request, with no shutdown code."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait()

    def stop(self, grace: float = 10.0) -> None:
        """Ask the server to exit (SIGINT); SIGKILL after ``grace`` seconds."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.kill()

    def close(self) -> None:
        self.stop()
        self._log.close()

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
