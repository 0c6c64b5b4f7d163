"""The device SDK against a real server (issue #14): it keeps its own lifetime ledger and
refuses a round over it, refuses a round whose published charge is below its randomizers'
guarantee (in both cases sending no report and spending nothing), retries with the same bytes
until exactly one report is stored, re-sends its saved report after a restart instead of
drawing again, and cannot report as another user."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _collection import ROOMY, Recording, enroll, recording_client, serving, spec
from dpgl.client import Device, DeviceError, PrivateData
from dpgl.collection import ReportError, Round, canonical_json, parse_round_spec, user_rng
from dpgl.service.db import Database
from dpgl.service.operator import open_round

USERS = ["alice", "bob", "carol", "dave"]
EDGE = "edge-LDP"
RR = {"mechanism": "rr", "epsilon": 2.0}
PRIVATE = PrivateData(neighbors=[1, 3])     # alice (index 0) knows bob and dave


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    with Database(f"sqlite:///{tmp_path / 'server.db'}") as database:
        database.set_lifetime(ROOMY)
        yield database


@pytest.fixture
def server(db: Database) -> Iterator[Any]:
    with serving(db) as srv:
        yield srv


@pytest.fixture
def recorded() -> Iterator[tuple[httpx.Client, Recording]]:
    client, transport = recording_client()
    with client:
        yield client, transport


def _open(db: Database, round_id: str, **items: Any) -> Round:
    s = spec(round_id, USERS, **(items or {"neighbors": RR}))
    open_round(db, s)
    return Round(s)


def _enrolled(db: Database) -> None:
    enroll(db, [u for u in USERS if u != "alice"])


# ---------------------------------------------------------------------------- the ledger
def test_refuses_a_round_over_its_lifetime_budget(db, server, recorded, tmp_path) -> None:
    client, sent = recorded
    _enrolled(db)
    dev = Device(server.url, "alice", state=tmp_path / "alice.json", lifetime=3.0,
                 client=client, seed=0)
    dev.enroll()
    _open(db, "r1")
    _open(db, "r2")
    assert dev.submit("r1", PRIVATE).stored
    assert dev.spent == {EDGE: 2.0}
    with pytest.raises(DeviceError, match="over its lifetime edge-LDP budget"):
        dev.submit("r2", PRIVATE)                          # 2 + 2 > 3
    assert dev.spent == {EDGE: 2.0}                         # nothing spent
    assert [s.path for s in sent.posts()] == ["/v1/rounds/r1/reports"]   # nothing sent
    assert db.reports("r2") == []
    state = json.loads((tmp_path / "alice.json").read_text())
    assert set(state["rounds"]) == {"r1"} and state["spent"] == {EDGE: 2.0}
    # the ledger survives a restart: a new process with the same state refuses too
    again = Device(server.url, "alice", state=tmp_path / "alice.json", lifetime=3.0,
                   client=client)
    with pytest.raises(DeviceError, match="lifetime"):
        again.prepare("r2", PRIVATE)
    # a unit the device has no budget for is refused the same way
    _open(db, "r3", labels={"epsilon": 0.5, "classes": 2})
    strict = Device(server.url, "alice", state=tmp_path / "alice.json",
                    lifetime={EDGE: 8.0}, client=client)
    with pytest.raises(DeviceError, match="label-LDP"):
        strict.submit("r3", PrivateData(label=1))
    assert len(sent.posts()) == 1 and strict.spent == {EDGE: 2.0}


@pytest.mark.parametrize("lie", ["lower", "slightly-lower", "missing"])
def test_refuses_a_round_whose_published_charge_is_too_low(db, server, recorded, monkeypatch,
                                                           lie: str) -> None:
    """A malicious (or buggy) server declares less than the randomizer spends: the device
    recomputes the charge from the published spec and refuses."""
    client, sent = recorded
    _enrolled(db)
    dev = Device(server.url, "alice", client=client)
    dev.enroll()
    _open(db, "r", neighbors=RR, features={"epsilon": 1.0, "dim": 3})
    honest_round = db.round

    def lying(round_id: str) -> dict[str, Any]:
        out = honest_round(round_id)
        if lie == "missing":
            del out["charge"][EDGE]
        else:
            out["charge"][EDGE]["epsilon"] *= 0.5 if lie == "lower" else 1 - 1e-9
        return out
    monkeypatch.setattr(db, "round", lying)
    with pytest.raises(DeviceError, match="declares a edge-LDP charge"):
        dev.submit("r", PrivateData(neighbors=[1], features=[0.0, 0.5, 1.0]))
    assert dev.spent == {} and sent.posts() == []
    assert db.reports("r") == []
    monkeypatch.setattr(db, "round", honest_round)          # the true charge: accepted
    assert dev.submit("r", PrivateData(neighbors=[1], features=[0.0, 0.5, 1.0])).stored
    assert dev.spent == {EDGE: 2.0, "feature-LDP": 1.0}


@pytest.mark.parametrize("charge", ['{"edge-LDP": {"epsilon": NaN, "delta": 0}}',
                                    '{"edge-LDP": {"epsilon": "2", "delta": 0}}',
                                    '{"edge-LDP": {"epsilon": -2, "delta": 0}}',
                                    '{"edge-LDP": 2}', '[2]'],
                         ids=["nan", "string", "negative", "not-an-object", "list"])
def test_refuses_a_published_charge_that_is_not_numbers(db, server, charge: str) -> None:
    """A NaN charge would pass every comparison with the device's own: it, and any other
    charge that is not numbers, is refused before anything is drawn."""
    _enrolled(db)

    def lie(request: httpx.Request, body: bytes) -> bytes | None:
        if request.method != "GET" or request.url.path != "/v1/rounds/r":
            return None
        info = json.loads(body)
        return json.dumps({**info, "charge": "@"}).replace('"@"', charge).encode()
    client, sent = recording_client(rewrite=lie)
    with client:
        dev = Device(server.url, "alice", client=client)
        dev.enroll()
        _open(db, "r")
        with pytest.raises(DeviceError, match="not a published round"):
            dev.submit("r", PRIVATE)
    assert dev.spent == {} and sent.posts() == [] and db.reports("r") == []


def test_accepts_a_published_charge_above_its_own(db, server, monkeypatch) -> None:
    """Declaring more than the randomizer spends is the server's own loss (it reserves more of
    the user's budget than used); the device records what it spends."""
    _enrolled(db)
    dev = Device(server.url, "alice")
    dev.enroll()
    _open(db, "r")
    honest_round = db.round

    def generous(round_id: str) -> dict[str, Any]:
        out = honest_round(round_id)
        out["charge"][EDGE]["epsilon"] = 3.0
        return out
    monkeypatch.setattr(db, "round", generous)
    with dev:
        assert dev.submit("r", PRIVATE).stored and dev.spent == {EDGE: 2.0}


# ---------------------------------------------------------------------------- retries
@pytest.mark.parametrize("plan", [["connect", "503", "connect"], ["lost"], ["503", "lost"]],
                         ids=["unreached", "answer-lost", "both"])
def test_retries_send_the_same_bytes_and_store_one_report(db, server, plan) -> None:
    _enrolled(db)
    client, sent = recording_client(fail=plan)
    with client:
        dev = Device(server.url, "alice", client=client, backoff=0.0)   # OS entropy
        dev.enroll()
        rnd = _open(db, "r")
        res = dev.submit("r", PRIVATE)
    bodies = [s.body for s in sent.posts()]
    assert len(bodies) == len(plan) + 1 and res.attempts == len(plan) + 1
    assert len(set(bodies)) == 1                           # identical bytes every time
    # a request the server handled before its answer was lost makes the last one a duplicate
    assert res.stored is ("lost" not in plan)
    stored = db.reports("r")
    assert len(stored) == 1
    assert stored[0].payload == canonical_json(json.loads(bodies[0])["report"])
    assert dev.spent == {EDGE: 2.0}
    rnd.parse_report(json.loads(stored[0].payload), 0)


def test_a_restarted_device_resends_its_saved_report(db, server, tmp_path, monkeypatch
                                                     ) -> None:
    """The device draws, saves, and dies before any request gets through; restarted from its
    state file it sends the saved bytes (no new draw: the ledger does not grow)."""
    _enrolled(db)
    state = tmp_path / "alice.json"
    down, sent = recording_client(fail=["connect"] * 3)
    with down:
        first = Device(server.url, "alice", state=state, client=down, retries=2, backoff=0.0)
        first.enroll()
        _open(db, "r")
        with pytest.raises(DeviceError, match="no answer after 3 attempts"):
            first.submit("r", PRIVATE)
    saved = json.loads(state.read_text())
    assert saved["spent"] == {EDGE: 2.0}
    assert saved["rounds"]["r"]["acknowledged"] is False
    assert db.reports("r") == []

    def no_new_draw(*a: object, **k: object) -> None:
        raise AssertionError("the restarted device drew a new report")
    monkeypatch.setattr(Round, "device_report", no_new_draw)
    client, resent = recording_client()
    with client:
        again = Device(server.url, "alice", state=state, client=client)   # OS entropy
        res = again.submit("r", PRIVATE)
        assert res.stored and again.spent == {EDGE: 2.0}
        assert [s.body for s in resent.posts()] == [sent.posts()[0].body]
        assert json.loads(state.read_text())["rounds"]["r"]["acknowledged"] is True
        # and once more: the server already holds it, nothing is spent
        assert not Device(server.url, "alice", state=state, client=client).submit(
            "r", PRIVATE).stored
    assert json.loads(state.read_text())["spent"] == {EDGE: 2.0}
    assert [s.payload for s in db.reports("r")] == [
        canonical_json(json.loads(saved["rounds"]["r"]["body"])["report"])]


def test_the_state_file_is_private_to_its_user(db, server, tmp_path) -> None:
    """The state file holds the bearer token: it is written readable by its owner only."""
    state = tmp_path / "alice.json"
    with Device(server.url, "alice", state=state) as dev:
        dev.enroll()
    assert json.loads(state.read_text())["token"] == dev.token
    assert state.stat().st_mode & 0o077 == 0, oct(state.stat().st_mode)


def test_state_file_of_another_user_is_refused(server, tmp_path) -> None:
    state = tmp_path / "s.json"
    state.write_text(json.dumps({"user_id": "bob", "token": "t", "spent": {}, "rounds": {}}))
    with pytest.raises(DeviceError, match="belongs to another user"):
        Device(server.url, "alice", state=state)
    state.write_text("{broken")
    with pytest.raises(DeviceError, match="cannot be read"):
        Device(server.url, "alice", state=state)


# ---------------------------------------------------------------------------- identity
def test_a_user_cannot_submit_for_another_user(db, server) -> None:
    enroll(db, ["carol", "dave"])
    bob = Device(server.url, "bob")
    bob.enroll()
    with Device(server.url, "alice") as alice:
        alice.enroll()
        assert alice.token is not None
        rnd = _open(db, "r")
        bob_report = rnd.device_report(PrivateData(neighbors=[0]), 1, user_rng(0, 1))
        r = server.http.post("/v1/rounds/r/reports",
                             content=canonical_json({"user_id": "bob", "report": bob_report}),
                             headers={"Authorization": f"Bearer {alice.token}"})
        assert r.status_code == 401 and "not this user's" in r.json()["error"]
        assert db.reports("r") == []
    with bob:                                                # bob reports himself
        assert bob.submit("r", PrivateData(neighbors=[0])).stored
    assert [s.user_id for s in db.reports("r")] == ["bob"]


def test_a_device_outside_the_population_sends_nothing(db, server, recorded) -> None:
    client, sent = recorded
    enroll(db, USERS)
    _open(db, "r")
    dev = Device(server.url, "eve", client=client)
    dev.enroll()
    with pytest.raises(ReportError, match="not in round"):
        dev.submit("r", PRIVATE)
    assert sent.posts() == [] and dev.spent == {}


def test_refuses_a_round_past_its_deadline_before_drawing(db, server, recorded) -> None:
    client, sent = recorded
    _enrolled(db)
    dev = Device(server.url, "alice", client=client, seed=0)
    dev.enroll()
    s = parse_round_spec({"round_id": "late", "population": {"users": USERS},
                          "neighbors": RR, "deadline": "2000-01-01T00:00:00Z"})
    open_round(db, s)
    with pytest.raises(DeviceError, match="deadline has passed"):
        dev.submit("late", PRIVATE)
    assert dev.spent == {} and sent.posts() == []


def test_a_rate_limited_device_waits_as_told(db, monkeypatch) -> None:
    """A 429's Retry-After is honoured (not just the device's own back-off)."""
    import dpgl.client.device as device_mod
    slept: list[float] = []
    monkeypatch.setattr(device_mod.time, "sleep", slept.append)
    calls = iter([httpx.Response(429, headers={"Retry-After": "3"}, json={"error": "slow"}),
                  httpx.Response(201, json={"token": "t"})])
    client = httpx.Client(transport=httpx.MockTransport(lambda request: next(calls)))
    dev = Device("http://server.invalid", "alice", client=client, backoff=0.01)
    dev.enroll()
    assert dev.token == "t" and slept == [3.0]
    assert device_mod._retry_after("a date") == 0.0 and device_mod._retry_after("1e9") == 60.0
