"""Fuzzing the submission endpoint (a fast, deterministic version of
``benchmarks/collection_fuzz.py``): hypothesis draws malformed submissions of every category
of :mod:`dpgl.service.fuzzcases` against the server (uvicorn in a thread,
:class:`~dpgl.service.server.ServerThread`) over SQLite; none may be
answered 2xx or 5xx, and the stored reports must not change. Plus the regressions the
benchmark found, and a control showing that the harness sees a stored report."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings

from dpgl.collection.round import canonical_json
from dpgl.service.fuzzcases import (
    CATEGORIES,
    FuzzRequest,
    FuzzTarget,
    prepare,
    requests,
    stored_state,
)

EXAMPLES = 20


class Server:
    def __init__(self, url: str, n: int) -> None:
        import httpx

        from dpgl.service.app import ServerConfig, create_app
        from dpgl.service.db import Database
        from dpgl.service.server import ServerThread
        self.db = Database(url)
        self.target: FuzzTarget = prepare(self.db, n)
        self.before = stored_state(self.db)
        app = create_app(self.db, ServerConfig(rate=1e9, burst=10**9))
        self.thread = ServerThread(app).start()
        self.client = httpx.Client(base_url=self.thread.url, timeout=60)

    def send(self, req: FuzzRequest) -> int:
        content: Any = req.body
        if req.stream:
            body = req.body
            content = (body[i:i + 65536] for i in range(0, len(body), 65536))
        import httpx
        try:
            return self.client.post(req.url_path, content=content,
                                    headers=req.headers).status_code
        except httpx.HTTPError:  # cut while sending a body the server had already refused
            assert req.category == "oversized", f"{req.note}: connection closed"
            return 413

    def close(self) -> None:
        self.client.close()
        self.thread.stop()
        self.db.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'fuzz.db'}", 400)
    yield srv
    srv.close()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def any_server(request: pytest.FixtureRequest,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A small fuzz target on SQLite and on PostgreSQL (the drivers refuse different
    strings: SQLite a lone surrogate, PostgreSQL a NUL)."""
    if request.param == "sqlite":
        srv = Server(f"sqlite:///{tmp_path_factory.mktemp('fuzzreg') / 'fuzz.db'}", 60)
        yield srv
        srv.close()
        return
    from dpgl.service.pgtemp import create_database, drop_database
    base = request.getfixturevalue("postgres_url")
    srv = Server(create_database(base, "fuzzreg"), 60)
    yield srv
    srv.close()
    drop_database(base, "fuzzreg")


@pytest.mark.parametrize("category", CATEGORIES)
def test_malformed_submissions_are_refused_and_change_nothing(server: Server,
                                                              category: str) -> None:
    seen: set[int] = set()

    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(requests(server.target, category))
    def check(req: FuzzRequest) -> None:
        status = server.send(req)
        seen.add(status)
        assert 400 <= status < 500, f"{req.note}: HTTP {status}"

    check()
    assert seen, "no request was sent"
    assert stored_state(server.db) == server.before


def test_the_harness_sees_a_stored_report(server: Server) -> None:
    """Control: a valid report of a user who has not reported is stored (201), and the
    stored state changes: the property above can fail."""
    t = server.target
    rid = "fz-labels"
    uid, report = sorted(t.fresh[rid].items())[-1]
    before = stored_state(server.db)
    body = canonical_json({"user_id": uid, "report": report}).encode()
    req = FuzzRequest("control", rid, {"Authorization": f"Bearer {t.tokens[uid]}"}, body)
    assert server.send(req) == 201
    assert stored_state(server.db) != before
    assert server.send(req) == 200                     # the same bytes again: a retry
    del t.fresh[rid][uid]                              # no longer fresh for other tests
    server.before = stored_state(server.db)


# ---------------------------------------------------------------------- regressions
def _post(server: Server, rid: str, uid: Any, report: Any, token_of: str | None = None
          ) -> int:
    t = server.target
    token = t.tokens[token_of if token_of is not None else str(uid)]
    body = json.dumps({"user_id": uid, "report": report}).encode()
    return server.send(FuzzRequest("regression", rid, {"Authorization": f"Bearer {token}"},
                                   body))


def test_feature_indices_beyond_int64_are_422_not_500(any_server: Server) -> None:
    """The features validator converted the indices to int64 before checking their range:
    an index of 2**64 raised OverflowError (HTTP 500)."""
    rid = "fz-feat"
    uid, report = sorted(any_server.target.fresh[rid].items())[0]
    for bad in (2**64, -(2**63) - 1, 10**30):
        rep = json.loads(json.dumps(report))
        rep["features"]["indices"][-1] = bad
        assert _post(any_server, rid, uid, rep) == 422
    assert stored_state(any_server.db) == any_server.before


@pytest.mark.parametrize("bad_id", ["\u0000", "3\u0000", "\ud800", "x\udc80", "x" * 201, ""])
def test_user_ids_that_cannot_be_ids_are_refused_before_the_database(any_server: Server,
                                                                     bad_id: str) -> None:
    """A user id with NUL or a lone surrogate reached the database driver (SQLite cannot
    encode a surrogate, PostgreSQL refuses NUL): HTTP 500. Now 400, as any id that enrolment
    would refuse."""
    rid = "fz-rr"
    uid, report = sorted(any_server.target.fresh[rid].items())[0]
    assert _post(any_server, rid, bad_id, report, token_of=uid) == 400
    assert stored_state(any_server.db) == any_server.before


@pytest.mark.parametrize("segment", ["%00", "fz-rr%00", "%ed%a0%80", "x" * 300])
def test_round_ids_that_cannot_be_ids_are_404(any_server: Server, segment: str) -> None:
    rid = "fz-rr"
    uid, report = sorted(any_server.target.fresh[rid].items())[0]
    assert _post(any_server, segment, uid, report) == 404
    assert stored_state(any_server.db) == any_server.before
