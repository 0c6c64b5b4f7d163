"""Fuzzing the collection server's submission endpoint (issue #14): property-based
(hypothesis) malformed report submissions against a running ``dpgl serve`` process.

The database holds a population of ``--users`` users, one outsider (enrolled, in no round),
and the rounds of :func:`dpgl.service.fuzzcases.fuzz_rounds`: RR, DPRR and Blink neighbour
lists, LocalLap and L-DpGCN Laplace vectors, multi-bit and 1-bit features, labels, a round
collecting all three, and a closed round, so that every validator is exercised; users
"0".."4" of every round already hold a valid report. For each category of
:data:`dpgl.service.fuzzcases.CATEGORIES` (wrong types, missing/extra fields, out-of-range,
unsorted/duplicate and self ids, huge ints, floats, NaN/Infinity, bad base64, wrong lengths,
deep nesting, non-JSON bytes, wrong content, oversized bodies, bad tokens, bad user ids,
bad round ids), ``--examples`` requests drawn by hypothesis are sent; every one of them is
to be refused by construction. The properties: no answer is 2xx, none is 5xx, and the
stored reports (count and content hash per round) are what they were before. The server's
rate limit is raised (``--rate``) so that refusals are the validators', not the limiter's.

    python benchmarks/collection_fuzz.py --backends sqlite,postgresql --examples 600
"""

from __future__ import annotations

import argparse
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from _collection import commands_and_machines, run_backends, scratch_database

OUT = Path(__file__).resolve().parent.parent / "results" / "collection"


def send(client: Any, req: Any) -> str:
    """The answer's status code, or ``closed (<error>)`` when the server cut the connection
    (e.g. after refusing an oversized body before reading it)."""
    import httpx
    content: Any = req.body
    if req.stream:
        body = req.body

        def chunks() -> Any:
            for i in range(0, len(body), 65536):
                yield body[i:i + 65536]
        content = chunks()
    try:
        r = client.post(req.url_path, content=content, headers=req.headers)
    except httpx.HTTPError as e:
        return f"closed ({type(e).__name__})"
    return str(r.status_code)


def run_backend(backend: str, args: argparse.Namespace) -> dict[str, Any]:
    import httpx
    from hypothesis import HealthCheck, Phase, given, settings

    from dpgl.service.db import Database
    from dpgl.service.fuzzcases import CATEGORIES, prepare, requests, stored_state
    from dpgl.service.process import ServerProcess
    with scratch_database(backend, "fuzz") as sdb:
        url, pg_version = sdb.url, sdb.pg_version
        with Database(url) as db:
            target = prepare(db, args.users, seed=args.seed)
            before = stored_state(db)
        cats = CATEGORIES if args.categories == "all" else tuple(
            c.strip() for c in args.categories.split(",") if c.strip())
        statuses: dict[str, Counter[str]] = defaultdict(Counter)
        bad: list[dict[str, Any]] = []
        changed: list[str] = []
        t0 = time.perf_counter()
        with ServerProcess(url, rate=args.rate, burst=args.burst) as server, \
                httpx.Client(base_url=server.url, timeout=60.0) as client, \
                Database(url, migrate=False) as db:
            def fuzzer(cat: str) -> Any:
                @settings(max_examples=args.examples, deadline=None, database=None,
                          derandomize=args.derandomize, phases=[Phase.generate],
                          suppress_health_check=list(HealthCheck))
                @given(requests(target, cat))
                def fuzz(req: Any) -> None:
                    status = send(client, req)
                    statuses[cat][status] += 1
                    # a cut connection is expected only while sending an oversized body
                    if status[:1] in ("2", "5") or (status.startswith("closed")
                                                    and cat != "oversized"):
                        bad.append({"category": cat, "status": status, "note": req.note,
                                    "path": req.path, "body": req.body[:300].decode(
                                        "utf-8", "replace"),
                                    "headers": {k: v[:60] for k, v in req.headers.items()}})
                    if not server.alive():
                        raise RuntimeError(f"the server died: {server.log_tail(800)}")
                return fuzz

            for cat in cats:
                fuzzer(cat)()
                now = stored_state(db)
                if now != before:
                    changed.append(f"after {cat}: {now} != {before}")
                n = sum(statuses[cat].values())
                print(f"[{backend}] {cat}: {n} requests, {dict(statuses[cat])}", flush=True)
            log = server.log_tail(4000)
        wall = time.perf_counter() - t0
        total = sum(sum(c.values()) for c in statuses.values())
        out = {"backend": backend, "pg_version": pg_version, "users": args.users,
               "rounds": sorted(target.rounds), "requests": total,
               "seconds": round(wall, 1), "statuses": {k: dict(v) for k, v in
                                                       statuses.items()},
               "bad_answers": bad[:50], "bad_answer_count": len(bad),
               "stored_changed": changed, "stored_before": before,
               "server_log_tail": log[-2000:] if bad else "",
               "ok": not bad and not changed}
        print(f"[{backend}] {total} requests in {wall:.0f} s; 2xx/5xx answers: {len(bad)}; "
              f"stored reports changed: {bool(changed)}", flush=True)
        return out


#: what the first runs found, before the fixes (kept with the results)
FINDINGS = [
    "## Found and fixed", "",
    "The first runs, before the fixes (`python benchmarks/collection_fuzz.py --backends "
    "sqlite,postgresql --examples 600`: 10,800 requests per backend), got 5xx answers "
    "(57 on SQLite, 99 on PostgreSQL), and connections cut right after some of them (the "
    "script records a bad answer and goes on, so every category ran to the end):",
    "",
    "* **Feature indices beyond int64** (categories huge_ints and out_of_range_ids; 51 "
    "answers of 500 on each backend out of 10,800): the features validator converted the "
    "indices to an int64 array before checking their range, and an index such as 2^64 "
    "raised OverflowError. Fixed in `dpgl.collection.items.FeatureItem.parse` (range "
    "checked on the Python integers first); regression test "
    "`tests/service/test_fuzz.py::test_feature_indices_beyond_int64_are_422_not_500`.",
    "* **User ids the database driver cannot bind** (bad_user_ids: 6 answers of 500 on "
    "SQLite, 13 on PostgreSQL): a `user_id` with a lone surrogate (`\\ud800`; SQLite "
    "cannot encode it) or a NUL (PostgreSQL refuses it in text) reached the token lookup. "
    "Now any `user_id` that enrolment would refuse (not 1 to 200 printable characters) is "
    "400 before the database; regression test "
    "`test_user_ids_that_cannot_be_ids_are_refused_before_the_database` (SQLite and "
    "PostgreSQL).",
    "* **Round ids the database driver cannot bind** (bad_round_ids: 35 answers of 500 on "
    "PostgreSQL): `/v1/rounds/%00/reports` and ids decoding to lone surrogates reached the "
    "round lookup. Now a path id that no round can have is 404 before the database, on "
    "every `/v1/rounds/{round_id}` route; regression test "
    "`test_round_ids_that_cannot_be_ids_are_404`.",
    "",
    "Nothing malformed was ever stored (the stored state never changed, before or after the "
    "fixes).", "",
]


def render(data: dict[str, Any]) -> str:
    runs = [data[b] for b in ("sqlite", "postgresql") if b in data]
    lines = ["# Collection server: fuzzing the submission endpoint", "",
             "Malformed report submissions drawn by hypothesis, sent to a running `dpgl serve` "
             "process (`benchmarks/collection_fuzz.py`, strategies in "
             "`dpgl.service.fuzzcases`; issue #14). Every request is refused by construction; "
             "the properties checked: no answer is 2xx, none is 5xx, and the stored reports "
             "(count and a hash of their contents, per round) do not change. Generated file.",
             ""]
    if not runs:
        return "\n".join(lines) + "No runs yet.\n"
    for r in runs:
        held = ", ".join(f"{k} {v[0]}" for k, v in sorted(r["stored_before"].items()))
        lines += [f"## {r['backend']}" + (f" (PostgreSQL {r['pg_version']})"
                                          if r.get("pg_version") else ""), "",
                  f"{r['requests']:,} requests in {r['seconds']} s; answers that were 2xx or "
                  f"5xx: **{r['bad_answer_count']}**; stored reports changed: "
                  f"**{'yes' if r['stored_changed'] else 'no'}** (reports per round before and "
                  f"after: {held}); "
                  f"result: **{'pass' if r['ok'] else 'FAIL'}**.", "",
                  "| category | requests | statuses seen |", "|---|---|---|"]
        for cat, st in r["statuses"].items():
            lines.append(f"| {cat} | {sum(st.values()):,} | " + ", ".join(
                f"{k}: {v:,}" for k, v in sorted(st.items())) + " |")
        lines.append(f"| **total** | **{r['requests']:,}** | " + ", ".join(
            f"{k}: {v:,}" for k, v in sorted(sum((Counter(s) for s in r["statuses"].values()),
                                                 Counter()).items())) + " |")
        if r["bad_answers"]:
            lines += ["", "First bad answers:", ""]
            lines += [f"* {b['category']}: HTTP {b['status']} for {b['note']}"
                      for b in r["bad_answers"][:10]]
        lines.append("")
    lines += FINDINGS
    first = runs[0]
    lines += [
        "Statuses: 400 unreadable request (not JSON, not the submission object, bad "
        "Content-Length, a user id that is not a valid id); 401 missing or wrong token; 403 "
        "user not in the round's population; 404 unknown round; 409 a second, different "
        "report from a user who already reported; 410 closed round; 413 body over the "
        "round's size limit; 422 report outside the mechanism's output space; `closed (...)` "
        "(allowed for oversized bodies only): the server answered 413 and closed the "
        "connection while the client was still sending, so the client saw the connection "
        "end instead of the answer.",
        "",
        f"Rounds (population {first['users']:,}): " + ", ".join(first["rounds"]) + ". The "
        "user ids, tokens and valid reports the generators start from are the real ones "
        "(every request would be accepted but for its defect).",
        "",
        "Categories: wrong JSON types at every level; missing and extra fields (top level, "
        "report, item); out-of-range ids (neighbour ids, feature indices, labels); unsorted "
        "and duplicate ids; the user's own id (neighbour lists; a non-zero own entry in "
        "LocalLap values); huge integers (beyond 2^53, 2^64, up to 4,000 digits); floats "
        "where integers belong; NaN/Infinity tokens and strings, and NaN/inf encoded in "
        "LocalLap values; bad base64 (alphabet, padding, url-safe characters, whitespace, "
        "non-ASCII); wrong lengths (LocalLap values, feature indices/signs); deep nesting "
        "(up to 4,000 levels, in every position); non-JSON bytes (binary, invalid UTF-8, "
        "empty, truncated, trailing data, UTF-16/32, BOM, single quotes, scalars); wrong "
        "content (another round's report shape, a second different report, a closed round, "
        "a user outside the population, wrong Content-Type); oversized bodies (just over the "
        "limit up to 8 MiB, with a Content-Length or chunked); bad tokens (none, Basic, "
        "empty, another user's, random, one character altered, truncated, extended, 12 KB "
        "long, no scheme, the outsider's); bad user ids (non-strings, empty, whitespace "
        "variants, NUL, lone surrogates, 5,000 characters, unknown users); bad round ids in "
        "the path (unknown, NUL, invalid UTF-8, encoded slashes and dots, 5,000 "
        "characters).",
        ""]
    lines += commands_and_machines(runs)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backends", default="sqlite,postgresql")
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--examples", type=int, default=600, help="requests per category")
    ap.add_argument("--categories", default="all")
    ap.add_argument("--rate", type=float, default=1e6)
    ap.add_argument("--burst", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--derandomize", action="store_true")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    return run_backends(ap, args, argv, script="collection_fuzz.py", stem="fuzz",
                        run_backend=run_backend, render=render)


if __name__ == "__main__":
    raise SystemExit(main())
