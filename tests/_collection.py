"""Helpers for the collection-service tests (issue #14): round specs, a real server over a
database, and httpx transports that record what a device sends or fail on purpose."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from dpgl.collection import RoundSpec, parse_round_spec
from dpgl.service.app import ServerConfig, create_app
from dpgl.service.db import Database
from dpgl.service.server import ServerThread

#: a lifetime high enough that opening the tests' rounds never hits the server's ledger
ROOMY = {"edge-LDP": 1000.0, "feature-LDP": 1000.0, "label-LDP": 1000.0}


def spec(round_id: str, users: list[str], **items: Any) -> RoundSpec:
    """A round over ``users`` collecting ``items`` (neighbors=..., features=..., ...)."""
    return parse_round_spec({"round_id": round_id, "population": {"users": users}, **items})


def enroll(db: Database, users: list[str]) -> dict[str, str]:
    """Enrol ``users`` through the Database API; their tokens."""
    return {u: db.enroll(u) for u in users}


@contextmanager
def serving(db: Database, **config: Any) -> Iterator[ServerThread]:
    """A real uvicorn server on loopback over ``db`` (rate limits generous unless given)."""
    options = {"rate": 1000.0, "burst": 1000, **config}
    app = create_app(db, ServerConfig(**options))
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=30.0) as http:
        srv.app = app    # type: ignore[attr-defined]
        srv.http = http  # type: ignore[attr-defined]  # one client: no TLS set-up per call
        yield srv


@dataclass(frozen=True)
class Sent:
    """One request as it left the client."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        return httpx.URL(self.url).path


#: what a failure plan step does to one request: "connect" (never reaches the server),
#: "503" (answered 503 without reaching the app), "lost" (the server handles it, the answer
#: is lost: a read timeout)
FAILURES = ("connect", "503", "lost")


class Recording(httpx.BaseTransport):
    """Forwards to a real HTTP transport, recording every request. ``fail``: a list of
    failure steps (:data:`FAILURES`) applied, in order, to the requests for which
    ``matches(request)`` is true; later ones pass. ``rewrite(request, body)``: the body
    the client sees instead of the server's (a lying server; None: unchanged)."""

    def __init__(self, *, fail: list[str] | None = None,
                 matches: Callable[[httpx.Request], bool] | None = None,
                 rewrite: Callable[[httpx.Request, bytes], bytes | None] | None = None
                 ) -> None:
        self.inner = httpx.HTTPTransport()
        self.sent: list[Sent] = []
        self.plan = list(fail or [])
        self.matches = matches or (lambda r: r.method == "POST"
                                   and r.url.path.endswith("/reports"))
        self.rewrite = rewrite

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        self.sent.append(Sent(request.method, str(request.url), dict(request.headers), body))
        step = self.plan.pop(0) if self.plan and self.matches(request) else None
        if step == "connect":
            raise httpx.ConnectError("simulated: connection refused", request=request)
        if step == "503":
            return httpx.Response(503, json={"error": "simulated outage"}, request=request)
        response = self.inner.handle_request(request)
        if step == "lost":
            response.read()
            response.close()
            raise httpx.ReadTimeout("simulated: the answer was lost", request=request)
        if self.rewrite is not None:
            original = response.read()
            response.close()
            changed = self.rewrite(request, original)
            if changed is not None:
                return httpx.Response(response.status_code, content=changed,
                                      headers={"Content-Type": "application/json"},
                                      request=request)
            return httpx.Response(response.status_code, content=original,
                                  headers=response.headers, request=request)
        return response

    def close(self) -> None:
        self.inner.close()

    def posts(self, suffix: str = "/reports") -> list[Sent]:
        return [s for s in self.sent if s.method == "POST" and s.path.endswith(suffix)]


def recording_client(**kw: Any) -> tuple[httpx.Client, Recording]:
    transport = Recording(**kw)
    return httpx.Client(transport=transport, timeout=30.0), transport
