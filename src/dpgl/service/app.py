"""The collection server's HTTP API (FastAPI), issue #14.

Devices enrol once (``POST /v1/enroll`` returns a per-user token; only its hash is stored),
read a published round (``GET /v1/rounds/{id}``) and submit one report
(``POST /v1/rounds/{id}/reports``, bearer token). A report is checked, in this order, against
the request size limit (413), the per-token rate limit (429), the token (401), the round
(404) and its population (403), and the mechanisms' output space (422); only then is it
stored, and it is committed before the server answers 201 (stored) or 200 (the same report
again: a retry). A second, different report is 409 and changes nothing; a closed round or a
passed deadline is 410. Every refusal is a JSON ``{"error": "..."}`` with one line, and
nothing is stored. Results are served at ``GET /v1/rounds/{id}/result``; the web pages are
:mod:`dpgl.service.web`.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from dpgl.collection.items import ReportError
from dpgl.collection.round import Round, canonical_json
from dpgl.collection.spec import parse_round_spec
from dpgl.errors import DpglError
from dpgl.service.db import (
    Database,
    NotFoundError,
    NotMemberError,
    ReportConflictError,
    RoundClosedError,
    ServiceError,
)
from dpgl.service.limits import RateLimiter

__all__ = ["MAX_BODY_BYTES", "ServerConfig", "create_app"]

#: the hard cap on any request body, whatever the round (64 MiB)
MAX_BODY_BYTES = 64 * 2**20


class ServerConfig:
    """Server options: rate limit (``rate`` per second, ``burst``), hard body cap."""

    def __init__(self, *, rate: float = 5.0, burst: int = 10,
                 max_body: int = MAX_BODY_BYTES) -> None:
        self.rate, self.burst, self.max_body = rate, burst, int(max_body)


class HTTPError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None
                 ) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message.splitlines()[0] if message else "error"},
                        status_code=status, headers=headers)


class _Rounds:
    """Published rounds parsed once (a round's spec never changes after it is opened)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._cache: dict[str, Round] = {}
        self._lock = threading.Lock()
        self._build = threading.Lock()

    def get(self, round_id: str) -> Round:
        with self._lock:
            found = self._cache.get(round_id)
        if found is not None:
            return found
        # one thread builds a round (its population index, its randomizers); the requests
        # that arrive meanwhile wait for it instead of each building its own copy
        with self._build:
            with self._lock:
                found = self._cache.get(round_id)
            if found is not None:
                return found
            spec = parse_round_spec(self.db.round(round_id)["spec"])
            rnd = Round(spec)
            rnd.index_of(rnd.users[0])  # build the index before it is shared
            with self._lock:
                self._cache[round_id] = rnd
        return rnd


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, refused with 413 past ``limit`` bytes (declared or streamed)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise HTTPError(400, "invalid Content-Length header") from None
        if size > limit:
            raise HTTPError(413, f"request body of {size} bytes exceeds the limit of {limit}")
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            raise HTTPError(413, f"request body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _json(body: bytes) -> Any:
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise HTTPError(400, "the request body is not valid JSON (UTF-8)") from None


def _retry_after(wait: float) -> str:
    """Retry-After in whole seconds, rounded up (RFC 9110: delay-seconds = 1*DIGIT; clients
    such as urllib3 reject a fraction)."""
    return str(max(1, math.ceil(wait)))


def _valid_id(value: object) -> bool:
    """Whether ``value`` can be a user or round id (what enrolment and opening a round
    accept: 1 to 200 printable characters, so no NUL and no lone surrogate, which the
    database drivers cannot bind)."""
    return isinstance(value, str) and 0 < len(value) <= 200 and value.isprintable()


def _round_id(round_id: str) -> str:
    """A round id from the path; one that no round can have is 404 before the database."""
    if not _valid_id(round_id):
        raise HTTPError(404, f"unknown round {round_id[:200]!r}")
    return round_id


def _bearer(request: Request) -> str:
    auth = request.headers.get("authorization", "")
    scheme, _, token = auth.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise HTTPError(401, "missing bearer token (Authorization: Bearer <token>)")
    return token.strip()


def create_app(db: Database, config: ServerConfig | None = None) -> FastAPI:
    """The server's ASGI application over ``db``."""
    cfg = config or ServerConfig()
    app = FastAPI(title="dpgl collection server", docs_url=None, redoc_url=None,
                  openapi_url=None)
    limiter = RateLimiter(cfg.rate, cfg.burst)
    published = _Rounds(db)
    app.state.db, app.state.config, app.state.rounds = db, cfg, published

    @app.exception_handler(HTTPError)
    async def _http_error(_request: Request, exc: HTTPError) -> JSONResponse:
        return _error(exc.status, exc.message, exc.headers)

    @app.exception_handler(DpglError)
    async def _dpgl_error(_request: Request, exc: DpglError) -> JSONResponse:
        status = (404 if isinstance(exc, NotFoundError) else 403
                  if isinstance(exc, NotMemberError) else 409
                  if isinstance(exc, ReportConflictError) else 410
                  if isinstance(exc, RoundClosedError) else 422
                  if isinstance(exc, ReportError) else 400)
        return _error(status, str(exc))

    @app.get("/healthz")
    def healthz() -> dict[str, Any]:
        return {"ok": True, "schema_version": db.version()}

    @app.post("/v1/enroll", status_code=201)
    async def enroll(request: Request) -> dict[str, str]:
        obj = _json(await _read_body(request, 4096))
        if not isinstance(obj, dict) or set(obj) != {"user_id"}:
            raise HTTPError(400, 'enrolment needs exactly {"user_id": "..."}')
        wait = limiter.acquire("enroll:" + str(obj["user_id"])[:200])
        if wait:
            raise HTTPError(429, "too many requests", {"Retry-After": _retry_after(wait)})
        try:
            token = await run_in_threadpool(db.enroll, obj["user_id"])
        except ServiceError as e:
            status = 409 if "already enrolled" in str(e) else 400
            raise HTTPError(status, str(e)) from None
        return {"user_id": obj["user_id"], "token": token}

    @app.get("/v1/rounds")
    def list_rounds() -> list[dict[str, Any]]:
        return db.list_rounds()

    @app.get("/v1/rounds/{round_id}")
    def get_round(round_id: str) -> dict[str, Any]:
        out = db.round(_round_id(round_id))
        out["reports"] = db.report_count(round_id)
        return out

    @app.get("/v1/rounds/{round_id}/result")
    def get_result(round_id: str) -> dict[str, Any]:
        db.round(_round_id(round_id))  # 404 for an unknown round
        return db.result(round_id)

    @app.get("/v1/rounds/{round_id}/participation")
    def participation(round_id: str) -> dict[str, Any]:
        info = db.round(_round_id(round_id))
        return {"round_id": round_id, "received_at": db.received_times(round_id),
                "created_at": info.get("created_at"),
                "population": len(published.get(round_id))}

    @app.get("/v1/budget")
    def budget() -> dict[str, Any]:
        """Every enrolled user's spent epsilon per unit, aggregated (no user ids)."""
        spent = db.budget_spent()
        per_unit: dict[str, list[float]] = {}
        for units in spent.values():
            for unit, eps in units.items():
                per_unit.setdefault(unit, []).append(eps)
        return {"users": len(spent), "lifetime": db.lifetime(),
                "spent": {u: sorted(v) for u, v in per_unit.items()}}

    @app.post("/v1/rounds/{round_id}/reports")
    async def submit(round_id: str, request: Request) -> JSONResponse:
        token = _bearer(request)
        key = hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()
        wait = limiter.acquire(key)
        if wait:
            raise HTTPError(429, "too many requests for this token",
                            {"Retry-After": _retry_after(wait)})
        _round_id(round_id)
        try:
            rnd = await run_in_threadpool(published.get, round_id)
        except DpglError as e:
            raise HTTPError(404 if isinstance(e, NotFoundError) else 400, str(e)) from None
        body = await _read_body(request, min(cfg.max_body, rnd.max_bytes() + 1024))
        obj = _json(body)
        if not isinstance(obj, dict) or set(obj) != {"user_id", "report"}:
            raise HTTPError(400, 'a submission is {"user_id": "...", "report": {...}}')
        user_id = obj["user_id"]
        if not _valid_id(user_id):
            raise HTTPError(400, "user_id must be a string of 1 to 200 printable characters")
        ok = await run_in_threadpool(db.authenticate, user_id, token)
        if not ok:
            raise HTTPError(401, "the token is not this user's")
        try:
            index = rnd.index_of(user_id)
        except ReportError as e:
            raise HTTPError(403, str(e)) from None
        report = await run_in_threadpool(rnd.parse_report, obj["report"], index)
        del report  # validated; the stored text is the canonical JSON of what was sent
        text = canonical_json(obj["report"])
        stored = await run_in_threadpool(db.submit, round_id, user_id, text)
        return JSONResponse({"round_id": round_id, "user_id": user_id, "stored": stored,
                             "duplicate": not stored}, status_code=201 if stored else 200)

    from dpgl.service.web import add_pages
    add_pages(app, db)
    return app
