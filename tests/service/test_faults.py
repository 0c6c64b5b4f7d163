"""Crashes during ingestion (a fast version of ``benchmarks/collection_faults.py``): a real
``dpgl serve`` process over SQLite is killed with SIGKILL three times while devices submit,
and restarted on the same database; the devices resend the same bytes until acknowledged.
Afterwards the database holds exactly the acknowledged reports, each once and byte for byte,
and every device was acknowledged."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import time
from pathlib import Path

from dpgl.collection.round import Round, canonical_json
from dpgl.collection.spec import RoundSpec
from dpgl.service.db import Database
from dpgl.service.fuzzcases import valid_report
from dpgl.service.operator import open_round
from dpgl.service.process import ServerProcess

N = 400
KILLS_AFTER = (60, 160, 260)   # kill once this many reports have been acknowledged


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _stored(path: Path, round_id: str) -> dict[str, str]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT user_id, payload, sha256 FROM reports WHERE round_id = ?",
                            (round_id,)).fetchall()
    out = {}
    for uid, payload, col in rows:
        assert uid not in out
        assert _sha(payload) == col, f"{uid}: stored hash column differs from the payload"
        out[uid] = _sha(payload)
    return out


def _differences(stored: dict[str, str], acked: dict[str, str]) -> list[str]:
    return ([f"missing {u}" for u in sorted(set(acked) - set(stored))]
            + [f"not acknowledged {u}" for u in sorted(set(stored) - set(acked))]
            + [f"differs {u}" for u in sorted(set(acked) & set(stored))
               if acked[u] != stored[u]])


async def _ingest(server: ServerProcess, round_id: str, bodies: dict[str, tuple[bytes, str]],
                  tokens: dict[str, str], outcomes: dict[str, int]) -> dict[str, str]:
    import httpx
    acked: dict[str, str] = {}
    queue = list(bodies)
    kills = list(KILLS_AFTER)

    async def one(client: httpx.AsyncClient, uid: str) -> None:
        body, sha = bodies[uid]
        for attempt in range(200):
            try:
                r = await client.post(f"/v1/rounds/{round_id}/reports", content=body,
                                      headers={"Authorization": f"Bearer {tokens[uid]}"})
            except httpx.HTTPError:
                outcomes["connection error"] = outcomes.get("connection error", 0) + 1
            else:
                outcomes[str(r.status_code)] = outcomes.get(str(r.status_code), 0) + 1
                if r.status_code in (200, 201):
                    acked[uid] = sha
                    if kills and len(acked) >= kills[0]:
                        kills.pop(0)
                        server.kill()              # SIGKILL, requests in flight are cut
                        await asyncio.to_thread(server.start)
                    return
                assert r.status_code in (429, 500, 502, 503, 504), r.text
            await asyncio.sleep(min(0.02 * 2 ** attempt, 0.5))
        raise AssertionError(f"{uid} was never acknowledged")

    async def worker(client: httpx.AsyncClient) -> None:
        while queue:
            await one(client, queue.pop())

    async with httpx.AsyncClient(base_url=server.url, timeout=20) as client:
        await asyncio.gather(*(worker(client) for _ in range(16)))
    return acked


def test_kill_9_during_ingestion_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "server.db"
    spec = RoundSpec.model_validate({"round_id": "crash", "population": {"size": N},
                                     "neighbors": {"mechanism": "dprr", "epsilon": 2.0}})
    with Database(f"sqlite:///{path}") as db:
        ids = [str(i) for i in range(N)]
        tokens = dict(zip(ids, db.enroll_many(ids), strict=True))
        open_round(db, spec)
    rnd = Round(spec)
    bodies = {}
    for i, uid in enumerate(ids):
        report = valid_report(rnd, i, seed=3)
        bodies[uid] = (canonical_json({"user_id": uid, "report": report}).encode(),
                       _sha(canonical_json(report)))
    outcomes: dict[str, int] = {}
    t0 = time.perf_counter()
    with ServerProcess(str(path), rate=1e6, burst=10**6) as server:
        acked = asyncio.run(_ingest(server, "crash", bodies, tokens, outcomes))
        kills = server.starts - 1
    elapsed = time.perf_counter() - t0
    assert kills == len(KILLS_AFTER), outcomes
    assert len(acked) == N, f"not every device was acknowledged: {outcomes}"
    stored = _stored(path, "crash")
    assert _differences(stored, acked) == [], outcomes
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        for (payload,) in conn.execute("SELECT payload FROM reports"):  # no partial rows
            obj = json.loads(payload)
            assert canonical_json(obj) == payload
    assert outcomes.get("409", 0) == 0
    print(f"{kills} kills in {elapsed:.1f} s; outcomes {outcomes}")

    # control: the check sees a lost row
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM reports WHERE user_id = ?", (next(iter(acked)),))
    assert _differences(_stored(path, "crash"), acked) != []


def test_a_killed_server_restarts_on_the_same_database(tmp_path: Path) -> None:
    """The restart itself: the database opens again after SIGKILL (WAL recovery) and the
    server answers."""
    path = tmp_path / "s.db"
    with Database(f"sqlite:///{path}") as db:
        db.enroll("u")
    server = ServerProcess(str(path))
    with server:
        pid = server.pid
        server.kill()
        assert not server.alive()
        server.start()
        assert server.alive() and server.pid != pid
