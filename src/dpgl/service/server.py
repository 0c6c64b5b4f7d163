"""Running the collection server: :func:`serve` (the ``dpgl serve`` command, blocking) and
:class:`ServerThread` (a real uvicorn server on a loopback port in a background thread, for
the demo, the tests and the benchmarks)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from dpgl.errors import ConfigError

__all__ = ["ServerThread", "serve"]


def _config(app: Any, **kw: Any) -> Any:
    """uvicorn's configuration. ``log_config=None``: uvicorn installs no log handlers of its
    own (they would hold on to whatever ``sys.stderr`` was when the server started, e.g. a
    test's captured stream); its warnings and errors reach stderr through logging's last
    resort handler, which writes to the current ``sys.stderr``."""
    import uvicorn
    return uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                          timeout_keep_alive=30, log_config=None, **kw)


def serve(db_url: str, *, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> None:
    """Serve the database at ``db_url`` until interrupted."""
    import uvicorn

    from dpgl.service.app import ServerConfig, create_app
    from dpgl.service.db import Database
    db = Database(db_url)
    try:
        uvicorn.Server(_config(create_app(db, ServerConfig(**options)), host=host,
                               port=port)).run()
    finally:
        db.close()


class ServerThread:
    """``with ServerThread(app) as srv: ... srv.url ...``: uvicorn on 127.0.0.1 and a free
    port (or ``port``), started before the block and stopped after it."""

    def __init__(self, app: Any, *, port: int = 0, host: str = "127.0.0.1") -> None:
        import uvicorn
        # proto given explicitly: asyncio sets TCP_NODELAY only on sockets whose proto is
        # IPPROTO_TCP, and without it every response body on a kept-alive connection waits
        # for the client's delayed ACK of the headers (about 40 ms a request)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind((host, port))
        except OSError as e:
            self.sock.close()
            raise ConfigError(f"cannot listen on {host}:{port}: {e.strerror}") from None
        self.host, self.port = host, self.sock.getsockname()[1]
        self.server = uvicorn.Server(_config(app))
        self.thread = threading.Thread(target=self.server.run,
                                       kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise ConfigError("the collection server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
