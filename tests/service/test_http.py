"""The collection server's HTTP API over a real uvicorn server on loopback (issue #14):
enrolment, one report per user and round (201 stored, 200 the same bytes again, 409 a
different one), every refusal's status code (401 token, 403 not a member, 404 round, 410
closed or past the deadline, 413 size, 422 outside the mechanism's output space, 429 rate)
with a one-line error and nothing stored, and the published round."""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from _collection import ROOMY, enroll, serving, spec
from dpgl.collection import PrivateData, Round, canonical_json, user_rng
from dpgl.service.db import Database
from dpgl.service.operator import open_round

USERS = [f"u{i}" for i in range(5)]
N = len(USERS)
ME = "u1"          # index 1 in every round below
FEATURES = {"epsilon": 2.0, "dim": 4, "m": 2}
LABELS = {"epsilon": 1.0, "classes": 3}
PRIVATE = PrivateData(neighbors=[0, 3], features=[0.1, 0.9, 0.5, 0.2], label=2)


def honest(rnd: Round, user: str = ME, seed: int = 0) -> dict[str, Any]:
    """What ``user``'s device sends in ``rnd`` (the randomizers on PRIVATE)."""
    i = rnd.index_of(user)
    nb = [j for j in (0, 2, 3) if j != i]
    return rnd.device_report(PrivateData(nb, PRIVATE.features, PRIVATE.label), i,
                             user_rng(seed, i))


def post(srv: Any, round_id: str, token: str | None, body: Any, *, raw: bytes | None = None,
         headers: dict[str, str] | None = None) -> httpx.Response:
    h = dict(headers or {})
    if token is not None:
        h["Authorization"] = f"Bearer {token}"
    content = raw if raw is not None else canonical_json(body).encode()
    return srv.http.post(f"/v1/rounds/{round_id}/reports", content=content,
                         headers={"Content-Type": "application/json", **h})


def one_line_error(r: httpx.Response, status: int, *needles: str) -> str:
    assert r.status_code == status, (r.status_code, r.text)
    msg = r.json()["error"]
    assert isinstance(msg, str) and msg and "\n" not in msg, msg
    for n in needles:
        assert n in msg, (n, msg)
    return msg


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Iterator[Database]:
    with Database(f"sqlite:///{tmp_path / 'server.db'}") as db:
        db.set_lifetime(ROOMY)
        yield db


def _rr_round(db: Database, round_id: str = "r", users: list[str] = USERS) -> Round:
    s = spec(round_id, users, neighbors={"mechanism": "rr", "epsilon": 1.0})
    open_round(db, s)
    return Round(s)


# ---------------------------------------------------------------------------- the flow
def test_enrol_submit_retry_conflict_and_refusals(open_db: Callable[..., Database]) -> None:
    """On SQLite and PostgreSQL: enrol (201, again 409), submit (201), the same bytes again
    (200, one row), a different report (409, the stored one unchanged), and the 401, 403 and
    404 refusals, each storing nothing."""
    db = open_db()
    with serving(db) as srv:
        r = srv.http.post("/v1/enroll", json={"user_id": ME})
        assert r.status_code == 201 and r.json()["user_id"] == ME
        token = r.json()["token"]
        assert isinstance(token, str) and len(token) >= 32
        one_line_error(srv.http.post("/v1/enroll", json={"user_id": ME}), 409,
                       "already enrolled")
        one_line_error(srv.http.post("/v1/enroll", json={"user": ME}), 400)
        assert db.authenticate(ME, token)                 # the second enrolment changed nothing
        others = enroll(db, [u for u in USERS if u != ME] + ["outsider"])
        rnd = _rr_round(db)
        report = honest(rnd)
        body = {"user_id": ME, "report": report}

        r = post(srv, "r", token, body)
        assert r.status_code == 201, r.text
        assert r.json() == {"round_id": "r", "user_id": ME, "stored": True,
                            "duplicate": False}
        r = post(srv, "r", token, body)                   # a retry: the same bytes
        assert r.status_code == 200 and r.json()["duplicate"] is True
        stored = db.reports("r")
        assert [(s.user_id, s.payload) for s in stored] == [(ME, canonical_json(report))]

        other = dict(report, neighbors={"neighbors": [0] if report["neighbors"]["neighbors"]
                                        != [0] else [2]})
        one_line_error(post(srv, "r", token, {"user_id": ME, "report": other}), 409,
                       "already reported")
        assert db.reports("r") == stored                  # unchanged

        one_line_error(post(srv, "nope", token, body), 404, "unknown round")
        one_line_error(post(srv, "r", others["outsider"],
                            {"user_id": "outsider", "report": report}), 403, "not in round")
        one_line_error(post(srv, "r", others["u2"], body), 401)          # u2's token, u1's id
        one_line_error(post(srv, "r", token + "x", body), 401)
        one_line_error(post(srv, "r", None, body), 401, "bearer")
        one_line_error(post(srv, "r", None, body, headers={"Authorization": f"Basic {token}"}),
                       401)
        u2 = {"user_id": "u2", "report": honest(rnd, "u2")}
        one_line_error(post(srv, "r", token, u2), 401)                   # u1's token, u2's id
        assert [s.user_id for s in db.reports("r")] == [ME]
        assert post(srv, "r", others["u2"], u2).status_code == 201      # u2 herself: stored


def test_submission_body_shape_is_400(sqlite_db: Database) -> None:
    tokens = enroll(sqlite_db, USERS)
    rnd = _rr_round(sqlite_db)
    report = honest(rnd)
    with serving(sqlite_db) as srv:
        for raw in (b"{not json", b"\xff\xfe", b"[]", b'"text"',
                    canonical_json({"user_id": ME}).encode(),
                    canonical_json({"user_id": ME, "report": report, "extra": 1}).encode(),
                    canonical_json({"user_id": 1, "report": report}).encode()):
            one_line_error(post(srv, "r", tokens[ME], None, raw=raw), 400)
    assert sqlite_db.reports("r") == []


# ---------------------------------------------------------------------------- 422
def _lap_values(values: list[float]) -> str:
    return base64.b64encode(np.asarray(values, dtype="<f8").tobytes()).decode()


def _nb(value: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Replace the neighbour list of a report."""
    return lambda rep: {**rep, "neighbors": {**rep["neighbors"], "neighbors": value}}


def _item(key: str, **fields: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Set (value) or drop (None) fields of item ``key``."""
    def mutate(rep: dict[str, Any]) -> dict[str, Any]:
        item = dict(rep[key])
        for f, v in fields.items():
            if v is None:
                item.pop(f, None)
            else:
                item[f] = v
        return {**rep, key: item}
    return mutate


def _whole(key: str, value: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda rep: {**rep, key: value}


# (round, case, mutation of an honest report of user u1 = index 1 among 5 users)
LIST_CASES: list[tuple[str, Callable[[dict[str, Any]], dict[str, Any]]]] = [
    ("too-long", _nb([0, 2, 3, 4, 5])),
    ("unsorted", _nb([3, 2])),
    ("duplicate-ids", _nb([2, 2])),
    ("own-id", _nb([0, 1])),
    ("out-of-range", _nb([2, 5])),
    ("negative-id", _nb([-1, 2])),
    ("string-ids", _nb(["2"])),
    ("float-ids", _nb([2.0])),
    ("bool-ids", _nb([True])),
    ("not-a-list", _nb("0,2")),
    ("null-list", _nb(None)),
    ("field-name", lambda rep: {**rep, "neighbors": {"neighbours": [2]}}),
    ("item-not-object", _whole("neighbors", [2])),
]
BLINK_CASES = [
    ("degree-missing", _item("neighbors", degree=None)),
    ("degree-float", _item("neighbors", degree=2.0)),
    ("degree-string", _item("neighbors", degree="2")),
    ("degree-huge", _item("neighbors", degree=2**60)),
    ("extra-field", _item("neighbors", weight=1)),
]
LAP_CASES = [
    ("values-short", _item("neighbors", values=_lap_values([0.5, 0.0, 0.5, 0.5]))),
    ("values-long", _item("neighbors", values=_lap_values([0.5, 0.0, 0.5, 0.5, 0.5, 0.5]))),
    ("values-not-base64", _item("neighbors", values="!" * len(_lap_values([0.0] * N)))),
    ("values-nan", _item("neighbors", values=_lap_values([0.5, 0.0, float("nan"), 0, 0]))),
    ("values-inf", _item("neighbors", values=_lap_values([0.5, 0.0, float("inf"), 0, 0]))),
    ("values-own-entry", _item("neighbors", values=_lap_values([0.5, 0.7, 0.5, 0, 0]))),
    ("values-beyond-clamp", _item("neighbors", values=_lap_values([0.5, 0.0, 1e6, 0, 0]))),
    ("values-as-list", _item("neighbors", values=[0.5, 0.0, 0.5, 0.5, 0.5])),
    ("field-name", lambda rep: {**rep, "neighbors": {"vals": rep["neighbors"]["values"]}}),
]
FEATURE_CASES = [
    ("too-few", _item("features", indices=[0], signs=[1])),
    ("too-many", _item("features", indices=[0, 1, 2], signs=[1, 1, 1])),
    ("lengths-differ", _item("features", indices=[0, 1], signs=[1])),
    ("unsorted", _item("features", indices=[2, 0], signs=[1, 1])),
    ("duplicate", _item("features", indices=[1, 1], signs=[1, 1])),
    ("out-of-range", _item("features", indices=[0, 4], signs=[1, 1])),
    ("negative", _item("features", indices=[-1, 0], signs=[1, 1])),
    ("sign-zero", _item("features", indices=[0, 1], signs=[0, 1])),
    ("sign-two", _item("features", indices=[0, 1], signs=[1, 2])),
    ("sign-float", _item("features", indices=[0, 1], signs=[1.0, -1])),
    ("sign-bool", _item("features", indices=[0, 1], signs=[True, -1])),
    ("index-string", _item("features", indices=["0", 1], signs=[1, -1])),
    ("field-name", lambda rep: {**rep, "features": {"idx": [0, 1], "signs": [1, 1]}}),
    ("raw-values", lambda rep: {**rep, "features": {"values": [0.1, 0.9, 0.5, 0.2]}}),
]
LABEL_CASES = [
    ("too-large", _item("labels", label=3)),
    ("negative", _item("labels", label=-1)),
    ("string", _item("labels", label="1")),
    ("float", _item("labels", label=1.0)),
    ("bool", _item("labels", label=True)),
    ("null", lambda rep: {**rep, "labels": {"label": None}}),
    ("field-name", lambda rep: {**rep, "labels": {"class": 1}}),
    ("extra-field", _item("labels", true_label=2)),
]
REPORT_CASES = [
    ("report-not-object", lambda rep: [rep]),                         # type: ignore[list-item]
    ("item-missing", lambda rep: {k: v for k, v in rep.items() if k != "labels"}),
    ("item-extra", lambda rep: {**rep, "neighbors": {"neighbors": [2]}}),
]

ROUNDS = {
    "rr": {"neighbors": {"mechanism": "rr", "epsilon": 1.0}},
    "dprr": {"neighbors": {"mechanism": "dprr", "epsilon": 4.0}},
    "blink": {"neighbors": {"mechanism": "blink-hard", "epsilon": 1.0}},
    "locallap": {"neighbors": {"mechanism": "locallap", "epsilon": 1.0}},
    "ldpgcn": {"neighbors": {"mechanism": "ldpgcn", "epsilon": 1.0}},
    "fl": {"features": FEATURES, "labels": LABELS},
}
CASES = ([(r, c, m) for r in ("rr", "dprr", "blink") for c, m in LIST_CASES]
         + [("dprr", "degree-sent", _item("neighbors", degree=2))]
         + [("blink", c, m) for c, m in BLINK_CASES]
         + [(r, c, m) for r in ("locallap", "ldpgcn") for c, m in LAP_CASES]
         + [("locallap", "degree-missing", _item("neighbors", degree=None)),
            ("locallap", "degree-float", _item("neighbors", degree=1.5)),
            ("ldpgcn", "degree-sent", _item("neighbors", degree=2))]
         + [("fl", c, m) for c, m in FEATURE_CASES + LABEL_CASES + REPORT_CASES])


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Database,
                                                                        dict[str, Any]]]:
    """One server for the malformed-report matrix: a round per mechanism, u1's token and
    honest reports (a refused report stores nothing, so the cases do not interact)."""
    path = tmp_path_factory.mktemp("matrix") / "server.db"
    with Database(f"sqlite:///{path}") as db:
        db.set_lifetime(ROOMY)
        tokens = enroll(db, USERS)
        good, rounds = {}, {}
        for rid, items in ROUNDS.items():
            s = spec(rid, USERS, **items)
            open_round(db, s)
            rounds[rid] = Round(s)
            good[rid] = honest(rounds[rid])
        with serving(db) as srv:
            yield srv, db, {"token": tokens[ME], "tokens": tokens, "good": good,
                            "rounds": rounds}


@pytest.mark.parametrize(("rid", "case", "mutate"), CASES,
                         ids=[f"{r}-{c}" for r, c, _ in CASES])
def test_malformed_reports_are_422_and_store_nothing(matrix, rid: str, case: str,
                                                     mutate: Any) -> None:
    srv, db, ctx = matrix
    bad = mutate(ctx["good"][rid])
    assert bad != ctx["good"][rid]
    one_line_error(post(srv, rid, ctx["token"], {"user_id": ME, "report": bad}), 422)
    assert [s for s in db.reports(rid) if s.user_id == ME] == []


@pytest.mark.parametrize("rid", list(ROUNDS))
def test_every_mechanisms_honest_report_is_accepted(matrix, rid: str) -> None:
    """The matrix's rounds accept what an honest device sends (u2 here, so the 422 cases
    above, which are u1's, still find nothing stored)."""
    srv, db, ctx = matrix
    report = honest(ctx["rounds"][rid], "u2", seed=1)
    r = post(srv, rid, ctx["tokens"]["u2"], {"user_id": "u2", "report": report})
    assert r.status_code == 201, r.text
    assert [(x.user_id, json.loads(x.payload)) for x in db.reports(rid)] == [("u2", report)]


# ---------------------------------------------------------------------------- 413, 429
def test_body_over_the_rounds_size_limit_is_413(sqlite_db: Database) -> None:
    tokens = enroll(sqlite_db, USERS)
    rnd = _rr_round(sqlite_db)
    limit = rnd.max_bytes() + 1024                       # the app's per-round limit
    body = canonical_json({"user_id": ME, "report": honest(rnd)}).encode()
    with serving(sqlite_db) as srv:
        padded = body[:-1] + b" " * (limit + 1 - len(body)) + b"}"
        assert len(padded) == limit + 1
        one_line_error(post(srv, "r", tokens[ME], None, raw=padded), 413, "exceeds")

        def chunks() -> Iterator[bytes]:                 # no Content-Length: streamed
            yield padded[:100]
            yield padded[100:]
        r = srv.http.post("/v1/rounds/r/reports", content=chunks(),
                       headers={"Authorization": f"Bearer {tokens[ME]}"})
        one_line_error(r, 413, "exceeds")
        assert sqlite_db.reports("r") == []
        # the limit is the round's: a body of exactly that size is read and stored
        r = post(srv, "r", tokens[ME], None, raw=padded[:-2] + b"}")
        assert r.status_code == 201, r.text
    assert len(sqlite_db.reports("r")) == 1


def test_rate_limit_is_429_with_retry_after(sqlite_db: Database) -> None:
    tokens = enroll(sqlite_db, USERS)
    rnd = _rr_round(sqlite_db)
    body = {"user_id": ME, "report": honest(rnd)}
    with serving(sqlite_db, rate=0.001, burst=2) as srv:
        assert post(srv, "r", tokens[ME], body).status_code == 201
        assert post(srv, "r", tokens[ME], body).status_code == 200
        r = post(srv, "r", tokens[ME], body)
        one_line_error(r, 429, "too many")
        assert re.fullmatch(r"[0-9]+", r.headers["Retry-After"])   # RFC 9110 delay-seconds
        assert int(r.headers["Retry-After"]) >= 999                 # one token per 1000 s
        # per token: another user is not slowed down, and a flood of bad tokens is
        # limited before any database work
        u2 = {"user_id": "u2", "report": honest(rnd, "u2")}
        assert post(srv, "r", tokens["u2"], u2).status_code == 201
        assert [post(srv, "r", "forged", u2).status_code for _ in range(3)] == [401, 401, 429]
        # enrolment is limited per user id
        codes = [srv.http.post("/v1/enroll", json={"user_id": "new"}).status_code
                 for _ in range(3)]
        assert codes == [201, 409, 429]
    assert [s.user_id for s in sqlite_db.reports("r")] == [ME, "u2"]


def test_retry_after_is_whole_seconds(sqlite_db: Database) -> None:
    """A wait shorter than a second is announced as 1: Retry-After is an integer (a
    fraction such as 0.79 is not HTTP, and urllib3 raises on it)."""
    with serving(sqlite_db, rate=1.25, burst=1) as srv:        # the next token in 0.8 s
        codes = [srv.http.post("/v1/enroll", json={"user_id": "x"}) for _ in range(2)]
    assert [c.status_code for c in codes] == [201, 429]
    assert codes[1].headers["Retry-After"] == "1"


# ---------------------------------------------------------------------------- 410
def test_closed_round_is_410(open_db: Callable[..., Database]) -> None:
    db = open_db()
    db.set_lifetime(ROOMY)
    tokens = enroll(db, USERS)
    rnd = _rr_round(db)
    mine = {"user_id": ME, "report": honest(rnd)}
    with serving(db) as srv:
        assert post(srv, "r", tokens[ME], mine).status_code == 201
        db.close_round("r")
        one_line_error(post(srv, "r", tokens["u2"],
                            {"user_id": "u2", "report": honest(rnd, "u2")}), 410, "closed")
        # a retry of a report stored before the close is still acknowledged (its answer
        # may have been lost); a different one is still a conflict
        assert post(srv, "r", tokens[ME], mine).status_code == 200
        other = {"user_id": ME, "report": {"neighbors": {"neighbors": [0, 2, 3, 4]}}}
        if other["report"] == mine["report"]:
            other["report"] = {"neighbors": {"neighbors": []}}
        one_line_error(post(srv, "r", tokens[ME], other), 409)
        assert srv.http.get("/v1/rounds/r").json()["status"] == "closed"
    assert [s.user_id for s in db.reports("r")] == [ME]


def test_passed_deadline_is_410(db_url: str) -> None:
    """The deadline is read from the database's clock (here one the test sets)."""
    deadline = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
    now = [deadline.timestamp() - 60.0]
    with Database(db_url, clock=lambda: now[0]) as db:
        db.set_lifetime(ROOMY)
        tokens = enroll(db, USERS)
        s = spec("r", USERS, neighbors={"mechanism": "rr", "epsilon": 1.0},
                 deadline=deadline.isoformat())
        open_round(db, s)
        rnd = Round(s)
        with serving(db) as srv:
            info = srv.http.get("/v1/rounds/r").json()
            assert info["deadline"] == deadline.timestamp()
            assert post(srv, "r", tokens[ME], {"user_id": ME, "report": honest(rnd)}
                        ).status_code == 201
            now[0] = deadline.timestamp() + 1.0
            one_line_error(post(srv, "r", tokens["u2"],
                                {"user_id": "u2", "report": honest(rnd, "u2")}),
                           410, "deadline")
        assert [x.user_id for x in db.reports("r")] == [ME]


def test_deadline_in_the_past_is_410_at_once(sqlite_db: Database) -> None:
    tokens = enroll(sqlite_db, USERS)
    s = spec("old", USERS, neighbors={"mechanism": "rr", "epsilon": 1.0},
             deadline="2001-01-01T00:00:00")
    open_round(sqlite_db, s)
    with serving(sqlite_db) as srv:
        one_line_error(post(srv, "old", tokens[ME], {"user_id": ME,
                                                     "report": honest(Round(s))}),
                       410, "deadline")
    assert sqlite_db.reports("old") == []


# ---------------------------------------------------------------------------- reading
def test_published_round_has_spec_and_per_unit_charge(sqlite_db: Database) -> None:
    enroll(sqlite_db, USERS)
    s = spec("pub", USERS, neighbors={"mechanism": "blink-soft", "epsilon": 2.0,
                                      "degree_share": 0.2},
             features=FEATURES, labels=LABELS, min_participation=0.5)
    charge = open_round(sqlite_db, s)
    with serving(sqlite_db) as srv:
        info = srv.http.get("/v1/rounds/pub").json()
        listed = srv.http.get("/v1/rounds").json()
        one_line_error(srv.http.get("/v1/rounds/nope"), 404, "unknown round")
        one_line_error(srv.http.get("/v1/rounds/pub/result"), 404, "no result")
    assert info["spec"] == s.model_dump(mode="json")
    assert info["charge"] == {"edge-LDP": {"epsilon": 2.0, "delta": 0.0},
                              "feature-LDP": {"epsilon": 2.0, "delta": 0.0},
                              "label-LDP": {"epsilon": 1.0, "delta": 0.0}}
    assert {u: (c["epsilon"], c["delta"]) for u, c in info["charge"].items()} == charge
    assert info["status"] == "open" and info["reports"] == 0
    # a device rebuilds the same randomizers, hence the same charge, from what is published
    from dpgl.collection import parse_round_spec
    assert Round(parse_round_spec(info["spec"])).charge() == charge
    assert [(x["round_id"], x["population"], x["reports"]) for x in listed] == [("pub", N, 0)]


def test_server_thread_connections_send_without_delay(sqlite_db: Database) -> None:
    """Every connection ServerThread accepts has TCP_NODELAY (asyncio sets it only on sockets
    created with proto IPPROTO_TCP): without it each response body on a kept-alive
    connection waited for the client's delayed ACK of the headers, about 40 ms a request."""
    import socket
    with serving(sqlite_db) as srv:
        assert srv.http.get("/healthz").status_code == 200
        connections = list(srv.server.server_state.connections)
        assert connections
        for protocol in connections:
            sock = protocol.transport.get_extra_info("socket")
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
