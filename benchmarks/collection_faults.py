"""Crash benchmark of the collection server (issue #14): ``kill -9`` the server process at
random moments while devices submit, restart it on the same database, and check that no
acknowledged report is lost, none is stored twice, none differs from what was sent, and
that every device's retries converge.

For each backend (SQLite; PostgreSQL where its binaries are installed): a fresh database, a
population of ``--users`` users enrolled in bulk by the operator, and two rounds over it
(DPRR neighbour lists and multi-bit features). Every user submits one report per round:
``--sdk-users`` of them per round through the device SDK (:class:`dpgl.client.Device`, in
threads: the report is drawn once and saved before it is sent, so every retry sends the same
bytes), the others through an asyncio httpx retry loop that resends the same precomputed
bytes after a connection error, a timeout, a 429 or a 5xx, with capped exponential back-off
(``--concurrency`` in flight). Meanwhile a killer sends SIGKILL to the ``dpgl serve``
process after a random uptime (uniform in ``--uptime``), keeps it down for a random time
(uniform in [0, ``--downtime``]) and starts it again on the same database and port, until
every device is acknowledged; a run with fewer than ``--kills`` kills fails (size
``--users`` so that ingestion outlasts them).

At the end, on the database itself: every acknowledged (2xx) report is present exactly once;
its stored text's SHA-256, recomputed, equals the SHA-256 of the report the device sent; no
row exists that was not acknowledged; every stored payload parses and passes the round's
validation (no partial rows); SQLite's ``PRAGMA integrity_check`` is ``ok``; and every user
of every round ended acknowledged (retries converge; no 409, no other refusal).

    python benchmarks/collection_faults.py --backends sqlite,postgresql
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from _collection import (
    Submission,
    check_exactly,
    commands_and_machines,
    precompute,
    private_data,
    run_backends,
    scratch_database,
    setup_database,
    sha256_text,
)
from dpgl.collection.round import Round, canonical_json
from dpgl.collection.spec import RoundSpec
from dpgl.service.process import ServerProcess

OUT = Path(__file__).resolve().parent.parent / "results" / "collection"
RETRY = {429, 500, 502, 503, 504}


def round_specs(n: int) -> list[RoundSpec]:
    pop = {"size": n}
    return [RoundSpec.model_validate({"round_id": "faults-dprr", "population": pop,
                                      "neighbors": {"mechanism": "dprr", "epsilon": 4.0}}),
            RoundSpec.model_validate({"round_id": "faults-features", "population": pop,
                                      "features": {"mechanism": "multibit", "epsilon": 4.0,
                                                   "dim": 64}})]


class Stats:
    """Counters shared by the clients (async and threads) and the killer."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.attempts: Counter[str] = Counter()    # outcome of every request
        self.per_user_attempts: list[int] = []
        self.inflight = 0
        self.acks = 0                              # 2xx answers so far (async and SDK)
        self.refused: list[tuple[str, str, int, str]] = []

    def add(self, outcome: str) -> None:
        with self.lock:
            self.attempts[outcome] += 1


async def async_clients(url: str, round_id: str, subs: list[Submission],
                        tokens: dict[str, str], acked: dict[str, str], stats: Stats,
                        concurrency: int, seed: int) -> None:
    """Send every submission until it is acknowledged, resending the same bytes."""
    import httpx
    path = f"/v1/rounds/{round_id}/reports"
    rng = random.Random(seed)
    nxt = 0

    async def one(client: httpx.AsyncClient, s: Submission) -> None:
        headers = {"Authorization": f"Bearer {tokens[s.user_id]}",
                   "Content-Type": "application/json"}
        attempt = 0
        while True:
            attempt += 1
            stats.inflight += 1
            try:
                r = await client.post(path, content=s.body, headers=headers)
            except httpx.HTTPError as e:
                stats.add(f"error {type(e).__name__}")
            else:
                stats.add(str(r.status_code))
                if r.status_code in (200, 201):
                    acked[s.user_id] = s.stored_sha256
                    stats.acks += 1
                    stats.per_user_attempts.append(attempt)
                    return
                if r.status_code not in RETRY:
                    stats.refused.append((round_id, s.user_id, r.status_code, r.text[:200]))
                    return
            finally:
                stats.inflight -= 1
            await asyncio.sleep(min(0.05 * 2 ** min(attempt, 6), 1.0) * rng.uniform(0.5, 1.5))

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal nxt
        while nxt < len(subs):
            s = subs[nxt]
            nxt += 1
            await one(client, s)

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=15.0) as client:
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))


def sdk_device(url: str, spec: RoundSpec, index: int, token: str, state_dir: Path,
               seed: int, stats: Stats) -> tuple[str, str, str, int]:
    """One user's device SDK submitting until acknowledged; (round id, user id, SHA-256 of
    the report it drew and saved or "" when refused, submit() calls needed)."""
    from dpgl.client.device import Device, DeviceError
    rnd_n = len(spec.population)
    uid = str(index)
    state = state_dir / f"{uid}.json"
    if not state.exists():
        state.write_text(json.dumps({"user_id": uid, "token": token, "spent": {},
                                     "rounds": {}}))
    private = private_data(rnd_n, index, dim=spec.features.dim if spec.features else 0,
                           seed=seed)
    calls = 0
    while True:
        calls += 1
        # a fresh Device object each time: as a device app restarted after a failure, it
        # reads its saved state (token, the report already drawn) from disk
        with Device(url, uid, state=state, seed=seed, retries=6, backoff=0.05,
                    timeout=15.0) as dev:
            try:
                dev.submit(spec.round_id, private)
            except DeviceError as e:
                if "no answer after" not in str(e):  # a refusal, not an outage
                    stats.refused.append((spec.round_id, uid, 0, str(e)[:200]))
                    return spec.round_id, uid, "", calls
                stats.add("sdk DeviceError: no answer (retried by a new submit call)")
                continue
            body = dev._state["rounds"][spec.round_id]["body"]
        stats.add("sdk acknowledged")
        with stats.lock:
            stats.acks += 1
        report = json.loads(body)["report"]
        return spec.round_id, uid, sha256_text(canonical_json(report)), calls


async def killer(server: ServerProcess, done: asyncio.Event, stats: Stats,
                 uptime: tuple[float, float], downtime: float, rng: random.Random,
                 log: list[dict[str, Any]]) -> None:
    """Kill the server at a random moment of its ingestion: once it has acknowledged a
    report since it (re)started, after a further uniform(*uptime) seconds."""
    started = time.perf_counter()
    while not done.is_set():
        base = stats.acks
        while stats.acks == base and not done.is_set():  # warm: ingesting again
            await asyncio.sleep(0.01)
        first_ack = time.perf_counter() - started
        try:
            await asyncio.wait_for(done.wait(), rng.uniform(*uptime))
            return
        except asyncio.TimeoutError:
            pass
        at = stats.inflight
        server.kill()
        down = rng.uniform(0.0, downtime)
        await asyncio.sleep(down)
        t0 = time.perf_counter()
        await asyncio.to_thread(server.start)
        started = time.perf_counter()
        log.append({"inflight_async": at, "down_s": round(down, 3),
                    "restart_s": round(started - t0, 3),
                    "first_ack_s": round(first_ack, 3)})


def run_backend(backend: str, args: argparse.Namespace) -> dict[str, Any]:
    specs = round_specs(args.users)
    rng = np.random.default_rng(args.seed)
    sdk_idx = {s.round_id: set(rng.permutation(args.users)[:args.sdk_users].tolist())
               for s in specs}
    subs = {s.round_id: precompute(s, [i for i in range(args.users)
                                       if i not in sdk_idx[s.round_id]], seed=args.seed)
            for s in specs}
    for s in specs:  # random order of arrival
        order = rng.permutation(len(subs[s.round_id]))
        subs[s.round_id] = [subs[s.round_id][i] for i in order]
    with scratch_database(backend, "faults") as sdb:
        url, tmp, pg_version = sdb.url, sdb.tmp, sdb.pg_version
        tokens = setup_database(url, args.users, specs)
        stats = Stats()
        kill_log: list[dict[str, Any]] = []
        acked: dict[str, dict[str, str]] = {s.round_id: {} for s in specs}
        sdk_calls: list[int] = []
        server = ServerProcess(url, rate=args.rate, burst=args.burst)
        server.start()
        t0 = time.perf_counter()

        async def main() -> None:
            done = asyncio.Event()
            kill_rng = random.Random(args.seed)
            async def progress() -> None:
                while not done.is_set():
                    try:
                        await asyncio.wait_for(done.wait(), 10.0)
                    except asyncio.TimeoutError:
                        print(f"[{backend}] {time.perf_counter() - t0:.0f} s: acknowledged "
                              f"{ {r: len(a) for r, a in acked.items()} }, kills "
                              f"{len(kill_log)}, attempts {dict(stats.attempts)}", flush=True)
            prog = asyncio.create_task(progress())
            k = asyncio.create_task(killer(server, done, stats, (args.uptime_min,
                                                                 args.uptime_max),
                                           args.downtime, kill_rng, kill_log))
            pool = ThreadPoolExecutor(max_workers=args.sdk_threads)
            loop = asyncio.get_running_loop()
            futs = []
            for s in specs:
                sd = tmp / f"devices-{s.round_id}"
                sd.mkdir()
                futs += [loop.run_in_executor(pool, sdk_device, server.url, s, i,
                                              tokens[str(i)], sd, args.seed, stats)
                         for i in sorted(sdk_idx[s.round_id])]
            try:
                await asyncio.gather(*(async_clients(server.url, s.round_id,
                                                     subs[s.round_id], tokens,
                                                     acked[s.round_id], stats,
                                                     args.concurrency, args.seed + j)
                                       for j, s in enumerate(specs)))
                results = await asyncio.gather(*futs)
            finally:
                done.set()
                await k
                await prog
                pool.shutdown()
            for rid, uid, sha, calls in results:
                if sha:
                    acked[rid][uid] = sha
                sdk_calls.append(calls)

        try:
            asyncio.run(main())
        finally:
            server.close()
        wall = time.perf_counter() - t0
        kills = len(kill_log)
        checks = {}
        for s in specs:
            checks[s.round_id] = check_exactly(url, s.round_id, acked[s.round_id])
        partial = validate_rows(url, specs)
        integrity = sqlite_integrity(url) if backend == "sqlite" else "n/a"
        converged = all(len(acked[s.round_id]) == args.users for s in specs) and \
            not stats.refused
        inflight = [e["inflight_async"] for e in kill_log]
        out = {
            "backend": backend, "pg_version": pg_version, "users": args.users,
            "rounds": [s.round_id for s in specs], "kills": kills,
            "restarts": server.starts - 1, "seconds": round(wall, 1),
            "reports": sum(len(a) for a in acked.values()),
            "attempts": dict(stats.attempts),
            "sdk_users_per_round": args.sdk_users,
            "sdk_submit_calls_max": max(sdk_calls) if sdk_calls else 0,
            "max_attempts_per_report": max(stats.per_user_attempts or [0]),
            "mean_attempts_per_report": round(float(np.mean(stats.per_user_attempts or [0])),
                                              3),
            "inflight_at_kill": {"min": min(inflight or [0]),
                                 "median": float(np.median(inflight or [0])),
                                 "max": max(inflight or [0])},
            "restart_seconds_median": float(np.median([e["restart_s"] for e in kill_log]
                                                      or [0])),
            "first_ack_seconds_median": float(np.median([e["first_ack_s"] for e in kill_log]
                                                        or [0])),
            "refused": stats.refused[:10], "converged": converged,
            "checks": checks, "rows_valid": partial, "integrity_check": integrity,
        }
        ok = converged and kills >= args.kills and partial["invalid"] == 0 and \
            integrity in ("ok", "n/a") and all(c["ok"] for c in checks.values())
        out["ok"] = ok
        print(f"[{backend}] {json.dumps(out)}", flush=True)
        return out


def validate_rows(url: str, specs: list[RoundSpec]) -> dict[str, int]:
    """Every stored payload is complete: valid JSON, canonical, and inside the round's
    output space for its user."""
    from dpgl.service.db import Database
    valid = invalid = 0
    with Database(url, migrate=False) as db:
        for s in specs:
            rnd = Round(s)
            for row in db.reports(s.round_id):
                try:
                    obj = json.loads(row.payload)
                    rnd.parse_report(obj, rnd.index_of(row.user_id))
                    assert canonical_json(obj) == row.payload
                except Exception:
                    invalid += 1
                else:
                    valid += 1
    return {"valid": valid, "invalid": invalid}


def sqlite_integrity(url: str) -> str:
    import sqlite3
    with sqlite3.connect(url[len("sqlite:///"):]) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def render(data: dict[str, Any]) -> str:
    runs = [data[b] for b in ("sqlite", "postgresql") if b in data]
    lines = ["# Collection server: kill -9 during ingestion", "",
             "The `dpgl serve` process was killed with SIGKILL at random moments while "
             "devices were submitting, and restarted on the same database "
             "(`benchmarks/collection_faults.py`, issue #14). Generated file.", ""]
    if not runs:
        return "\n".join(lines) + "No runs yet.\n"
    lines += ["| backend | users x rounds | kills (restarts) | wall time (s) | requests sent "
              "by the async driver | connection errors / timeouts | 5xx / 429 | 201 stored "
              "| 200 duplicate (stored before the kill, answer lost) | 409 or other refusals "
              "| max attempts for one report | every user acknowledged "
              "| acknowledged = stored, once, same SHA-256 | rows valid (not partial) "
              "| integrity_check | all checks |",
              "|" + "---|" * 15]
    for r in runs:
        a = r["attempts"]
        errors = sum(v for k, v in a.items() if k.startswith("error"))
        fivexx = sum(v for k, v in a.items() if k[:1] == "5" or k == "429")
        sent = sum(v for k, v in a.items() if not k.startswith("sdk"))
        ch = r["checks"]
        same = all(c["ok"] for c in ch.values())
        stored = sum(c["stored"] for c in ch.values())
        lines.append(
            f"| {r['backend']} | {r['users']:,} x {len(r['rounds'])} | {r['kills']} "
            f"({r['restarts']}) | {r['seconds']} | {sent:,} | {errors:,} | {fivexx:,} | "
            f"{a.get('201', 0):,} | {a.get('200', 0):,} | {len(r['refused'])} | "
            f"{r['max_attempts_per_report']} | {'yes' if r['converged'] else 'NO'} | "
            f"{'yes' if same else 'NO'} ({stored:,} rows, {r['reports']:,} acknowledged) | "
            f"{r['rows_valid']['valid']:,} valid, {r['rows_valid']['invalid']} invalid | "
            f"{r['integrity_check']} | {'**pass**' if r['ok'] else '**FAIL**'} |")
    lines += ["", "Requests by outcome (every attempt of the async driver; the `sdk` lines "
              "count `Device.submit` calls, whose own HTTP retries are inside the SDK):", ""]
    for r in runs:
        lines.append(f"* {r['backend']}: " + ", ".join(
            f"{k}: {v:,}" for k, v in sorted(r["attempts"].items())))
        lines.append(f"  requests outstanding in the async driver at the kills (in flight or "
                     f"waiting for a connection): min "
                     f"{r['inflight_at_kill']['min']}, median "
                     f"{r['inflight_at_kill']['median']:g}, max "
                     f"{r['inflight_at_kill']['max']}; median restart (process start to "
                     f"/healthz) {r['restart_seconds_median']:.2f} s, from /healthz to the "
                     f"first acknowledged report {r['first_ack_seconds_median']:.2f} s "
                     f"(imports, loading the round, the clients' back-off); SDK devices "
                     f"needed at "
                     f"most {r['sdk_submit_calls_max']} `submit()` call(s)")
    first = runs[0]
    lines += [
        "",
        "How:",
        "",
        f"* {first['users']:,} users enrolled in bulk by the operator "
        "(`Database.enroll_many`), two rounds over all of them (DPRR neighbour lists, "
        "epsilon 4, synthetic lists of degree ~10; multi-bit features, epsilon 4, dim 64); "
        "every user submits one report per round.",
        f"* {first['sdk_users_per_round']} users per round submit through the device SDK "
        "(`dpgl.client.Device`, in threads, a fresh `Device` object per `submit()` call, as "
        "an app restarted after an error: it draws the report once, saves it, and every "
        "retry sends the saved bytes); the others through an asyncio httpx loop that "
        "resends the same precomputed bytes after a connection error, a timeout, a 429 or "
        "a 5xx (capped exponential back-off with jitter).",
        "* The killer: once the (re)started server has acknowledged a report (it is "
        "ingesting), it waits a random time (uniform in "
        f"[{first.get('uptime', [0.3, 2.5])[0]}, {first.get('uptime', [0.3, 2.5])[1]}] s), "
        "sends SIGKILL to the server process (requests in flight are cut), waits a random "
        f"downtime (uniform in [0, {first.get('downtime', 0.5)}] s) and starts `python -m "
        "dpgl.cli serve` again on the same database and port; until every device is "
        "acknowledged.",
        "* Checks on the database afterwards: every acknowledged (2xx) report is stored "
        "exactly once (primary key; no other row exists), the SHA-256 of the stored text, "
        "recomputed, equals that of the report the device sent (and the stored `sha256` "
        "column); every row parses and passes the round's validation and is the canonical "
        "text (no partial rows); SQLite `PRAGMA integrity_check`; every user of every round "
        "ended acknowledged, with no 409 and no other refusal.",
        "* What SIGKILL tests: a crash of the server process (every request in flight is "
        "cut; no shutdown code runs). It does not test a power cut or an OS crash (the "
        "commit's fsync is what covers those: SQLite `synchronous=FULL`, PostgreSQL "
        "`fsync=on`).",
        "* A 200 duplicate is a retry of a report whose first attempt was committed but "
        "whose answer never reached the device (the kill fell between the commit and the "
        "response): the server recognised the same bytes and acknowledged them without a "
        "second row.",
        "",
    ]
    lines += commands_and_machines(runs)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backends", default="sqlite,postgresql")
    ap.add_argument("--users", type=int, default=3000)
    ap.add_argument("--sdk-users", type=int, default=100,
                    help="users per round who submit through the device SDK")
    ap.add_argument("--sdk-threads", type=int, default=8)
    ap.add_argument("--kills", type=int, default=20, help="the fewest kills a run needs")
    ap.add_argument("--uptime-min", type=float, default=0.3)
    ap.add_argument("--uptime-max", type=float, default=2.5)
    ap.add_argument("--downtime", type=float, default=0.5)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--burst", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    return run_backends(ap, args, argv, script="collection_faults.py", stem="faults",
                        run_backend=run_backend, render=render,
                        extra={"uptime": [args.uptime_min, args.uptime_max],
                               "downtime": args.downtime})


if __name__ == "__main__":
    raise SystemExit(main())
