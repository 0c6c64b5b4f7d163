"""What the collection service keeps and shows (issue #14): tokens only as hashes, no
endpoint that returns a user's report, and a device SDK whose every request carries the
randomizer's output and nothing of the raw private data."""

from __future__ import annotations

import base64
import hashlib
import html
import inspect
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

from _collection import ROOMY, enroll, recording_client, serving, spec
from dpgl.client import Device, PrivateData
from dpgl.collection import Round, canonical_json, user_rng
from dpgl.service.db import Database
from dpgl.service.operator import close_round, open_round


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Iterator[Database]:
    with Database(f"sqlite:///{tmp_path / 'server.db'}") as db:
        db.set_lifetime(ROOMY)
        yield db


# ---------------------------------------------------------------------------- tokens
def test_tokens_are_stored_hashed(open_db, db_url: str, tmp_path: Path) -> None:
    """Enrolled over HTTP: every table holds the token's SHA-256, never the token (and, on
    SQLite, neither do the database's files)."""
    db = open_db()
    with serving(db) as srv:
        tokens = {u: srv.http.post("/v1/enroll", json={"user_id": u}).json()["token"]
                  for u in ("ann", "ben", "cy")}
    with db.engine.connect() as conn:
        rows = dict(conn.execute(sa.text("SELECT user_id, token_sha256 FROM users")).all())
        everything = [str(v) for t in sa.inspect(conn).get_table_names()
                      for row in conn.execute(sa.text(f"SELECT * FROM {t}")) for v in row]
    assert rows == {u: hashlib.sha256(t.encode()).hexdigest() for u, t in tokens.items()}
    for t in tokens.values():
        assert not any(t in v for v in everything)
    if db_url.startswith("sqlite"):
        db.close()                                          # checkpoint the WAL into the file
        files = list(tmp_path.glob("server.db*"))
        assert files
        for f in files:
            data = f.read_bytes()
            for t in tokens.values():
                assert t.encode() not in data, f


def test_the_server_binds_loopback_by_default() -> None:
    from dpgl.service.server import ServerThread, serve
    assert inspect.signature(serve).parameters["host"].default == "127.0.0.1"
    assert inspect.signature(ServerThread).parameters["host"].default == "127.0.0.1"
    from dpgl.cli import serve as serve_command
    assert inspect.signature(serve_command).parameters["host"].default == "127.0.0.1"


# ---------------------------------------------------------------------------- no read-back
USERS = [f"user-{c}" for c in "abcdefgh"]


def _forbidden(db: Database, round_ids: list[str]) -> list[str]:
    """Strings that give a stored report away: its text, its digest, each item's JSON."""
    out = []
    for rid in round_ids:
        for s in db.reports(rid):
            out += [s.payload, hashlib.sha256(s.payload.encode()).hexdigest()]
            out += [canonical_json(v) for v in json.loads(s.payload).values()]
    return out


def _views(text: str) -> list[str]:
    """The ways a response can carry a string: as sent, as HTML text without whitespace,
    and for JSON every string in it and every object or list re-encoded canonically."""
    out = [text, re.sub(r"\s+", "", html.unescape(text))]
    try:
        doc = json.loads(text)
    except ValueError:
        return out

    def walk(node: Any) -> None:
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, (dict, list)):
            out.append(canonical_json(node))
            for child in node.values() if isinstance(node, dict) else node:
                walk(child)
    walk(doc)
    return out


def _get_routes(app: Any) -> list[tuple[str, list[str]]]:
    """Every GET route of the app: (path, its path parameters)."""
    out = []
    for route in app.routes:
        if "GET" in (getattr(route, "methods", None) or set()):
            out.append((route.path, list(route.param_convertors)))
    return out


def test_no_endpoint_returns_a_stored_report(sqlite_db: Database) -> None:
    """Every GET route the app registers, with every real round (open, closed with a result)
    and user id filled in, answers without any stored report, digest or report item."""
    db = sqlite_db
    enroll(db, USERS)
    rounds = {
        "open-lap": {"neighbors": {"mechanism": "locallap", "epsilon": 1.0}},
        "open-fl": {"features": {"epsilon": 2.0, "dim": 6}, "labels": {"epsilon": 1.0,
                                                                       "classes": 4}},
        "closed-blink": {"neighbors": {"mechanism": "blink-hard", "epsilon": 2.0}},
    }
    rng = np.random.default_rng(5)
    for rid, items in rounds.items():
        s = spec(rid, USERS, **items)
        open_round(db, s)
        rnd = Round(s)
        for i in range(0, len(USERS), 2):
            nb = sorted(int(j) for j in rng.choice([j for j in range(8) if j != i], 3,
                                                   replace=False))
            report = rnd.device_report(
                PrivateData(nb, rng.uniform(0, 1, 6).tolist(), int(rng.integers(4))), i,
                user_rng(1, i))
            assert db.submit(rid, USERS[i], canonical_json(report))
    result = close_round(db, "closed-blink")                  # no training: a stored result
    assert result["participation"]["reports"] == 4
    forbidden = _forbidden(db, list(rounds))
    assert len(forbidden) == 3 * 4 * 2 + 4 * (1 + 2 + 1)

    with serving(db) as srv:
        routes = _get_routes(srv.app)
        assert {"/v1/rounds", "/v1/rounds/{round_id}", "/v1/rounds/{round_id}/result",
                "/v1/rounds/{round_id}/participation", "/v1/budget"} <= {p for p, _ in routes}
        checked = 0
        for path, params in routes:
            fills: list[dict[str, str]] = [{}]
            for p in params:
                values = list(rounds) if "round" in p else USERS if "user" in p else None
                assert values is not None, f"{path}: no test values for {{{p}}}: add them"
                fills = [dict(f, **{p: v}) for f in fills for v in values]
            for f in fills:
                r = srv.http.get(path.format(**f))
                assert r.status_code in (200, 404), (path, f, r.status_code)
                views = _views(r.text)
                for bad in forbidden:
                    assert not any(bad in v for v in views), (path, f, bad[:80])
                checked += 1
        assert checked >= 1 + 3 * 3 + 1


# ---------------------------------------------------------------------------- the device
SENTINEL_FEATURES = [0.123456789012, 0.987654321098, 0.555555555511, 0.314159265358,
                     0.271828182845, 0.161803398874, 0.141421356237, 0.173205080757]
SENTINEL_STRINGS = [repr(v) for v in SENTINEL_FEATURES] + ["123456789", "98765432",
                                                           "314159265", "27182818"]
ME = "alice"
POP = ["alice", "bob", "carol", "dave", "erin", "frank"]
TRUE_NEIGHBORS = [1, 2, 4]          # bob, carol, erin
TRUE_LABEL = 2


def _device_run(db: Database, srv: Any, round_id: str, items: dict[str, Any],
                seed: int, state: Path | None = None) -> tuple[list[Any], dict[str, Any],
                                                              Round]:
    client, recorder = recording_client()
    with client:
        dev = Device(srv.url, ME, client=client, seed=seed, state=state)
        dev.enroll()
        s = spec(round_id, POP, **items)
        open_round(db, s)
        private = PrivateData(neighbors=list(TRUE_NEIGHBORS), features=SENTINEL_FEATURES,
                              label=TRUE_LABEL)
        assert dev.submit(round_id, private).stored
    return recorder.sent, dev.spent, Round(s)


@pytest.mark.parametrize("collect", ["all", "features"])
def test_the_device_sends_only_the_randomizers_output(sqlite_db: Database, collect: str
                                                      ) -> None:
    """A recording transport sees every request the SDK makes: no raw feature value in any
    of them, the token only in the Authorization header, the enrolment body is exactly
    {user_id}, and the report body is exactly {user_id, report} where the report is the
    encoding of what the round's randomizers drew (recomputed with the device's seed)."""
    db = sqlite_db
    enroll(db, POP[1:])
    items: dict[str, Any] = {"features": {"epsilon": 1.0, "dim": 8, "m": 3}}
    if collect == "all":
        items |= {"neighbors": {"mechanism": "dprr", "epsilon": 6.0},
                  "labels": {"epsilon": 1.0, "classes": 4}}
    with serving(db) as srv:
        sent, spent, rnd = _device_run(db, srv, "r", items, seed=11)
    assert {(s.method, s.path) for s in sent} == {
        ("POST", "/v1/enroll"), ("GET", "/v1/rounds/r"), ("POST", "/v1/rounds/r/reports")}
    token = next(s for s in sent if s.path == "/v1/rounds/r/reports").headers[
        "authorization"].split(" ", 1)[1]
    for s in sent:
        for needle in SENTINEL_STRINGS:
            assert needle not in s.url and needle.encode() not in s.body, (s.path, needle)
        assert token not in s.url and token.encode() not in s.body
        if s.method == "GET":
            assert s.body == b""
    enrol = next(s for s in sent if s.path == "/v1/enroll")
    assert json.loads(enrol.body) == {"user_id": ME}
    post = next(s for s in sent if s.path == "/v1/rounds/r/reports")
    body = json.loads(post.body)
    assert set(body) == {"user_id", "report"} and body["user_id"] == ME
    expected = rnd.device_report(PrivateData(TRUE_NEIGHBORS, SENTINEL_FEATURES, TRUE_LABEL),
                                 0, user_rng(11, 0))
    assert body["report"] == expected
    assert post.body == canonical_json(body).encode()
    feats = body["report"]["features"]
    assert set(feats) == {"indices", "signs"} and len(feats["indices"]) == 3
    assert all(type(i) is int and 0 <= i < 8 for i in feats["indices"])
    assert all(s in (-1, 1) and type(s) is int for s in feats["signs"])
    if collect == "features":
        assert set(body["report"]) == {"features"}
        assert spent == {"feature-LDP": 1.0}
    else:
        # DPRR's noisy degree stays on the device: only the randomized list is sent
        assert set(body["report"]) == {"neighbors", "features", "labels"}
        assert set(body["report"]["neighbors"]) == {"neighbors"}
        assert set(body["report"]["labels"]) == {"label"}
        assert spent == {"edge-LDP": 6.0, "feature-LDP": 1.0, "label-LDP": 1.0}
    # the server stored exactly that report
    assert [x.payload for x in db.reports("r")] == [canonical_json(expected)]


@pytest.mark.parametrize("mechanism", ["locallap", "ldpgcn"])
def test_real_valued_reports_are_drawn_floating_point_safely(sqlite_db: Database,
                                                             mechanism: str) -> None:
    """LocalLap's n reals leave the device: they are drawn by the snapping mechanism
    (docs/secure-mode.md), so every sent value is a multiple of its grid within the public
    clamp [-B, B] (textbook float Laplace values carry input-dependent low-order bits)."""
    db = sqlite_db
    enroll(db, POP[1:])
    with serving(db) as srv:
        sent, _, rnd = _device_run(db, srv, "lap", {"neighbors": {"mechanism": mechanism,
                                                                  "epsilon": 2.0}}, seed=3)
    report = json.loads(next(s for s in sent if s.path.endswith("/reports")).body)["report"]
    values = np.frombuffer(base64.b64decode(report["neighbors"]["values"]), dtype="<f8")
    bits = rnd.items["neighbors"].randomizer.bits
    assert bits.grid is not None and bits.bound is not None, "LocalLap is not in secure mode"
    assert values.size == len(POP) and values[0] == 0.0
    assert np.all(np.abs(values) <= bits.bound)
    inside = np.abs(values) < bits.bound
    assert np.all(np.mod(values[inside], bits.grid) == 0.0), values
    # DPRR's noisy degree (it sets the sampling probability on the device) likewise
    dprr = Round(spec("d", POP, neighbors={"mechanism": "dprr", "epsilon": 6.0}))
    degree_mech, _ = dprr.items["neighbors"].randomizer.randomizers(len(POP))
    assert degree_mech.secure


def test_reports_differ_from_the_private_data(sqlite_db: Database, tmp_path: Path) -> None:
    """The randomizers really ran: over seeds, the sent neighbour list (RR at a small
    epsilon) is not always the same, nor are the sent signs."""
    db = sqlite_db
    enroll(db, POP[1:])
    lists, signs = set(), set()
    with serving(db) as srv:
        for seed in range(6):
            sent, _, _ = _device_run(db, srv, f"r{seed}", {
                "neighbors": {"mechanism": "rr", "epsilon": 0.5},
                "features": {"epsilon": 0.5, "dim": 8, "m": 8}}, seed=seed,
                state=tmp_path / "alice.json")
            report = json.loads(next(s for s in sent if s.path.endswith("/reports")).body)[
                "report"]
            lists.add(tuple(report["neighbors"]["neighbors"]))
            signs.add(tuple(report["features"]["signs"]))
    assert len(lists) > 1 and len(signs) > 1
