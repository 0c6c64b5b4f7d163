"""The collection server's database rules on SQLite and on a real PostgreSQL server: one
report per user and round (retries acknowledged, a different report refused), the lifetime
budget ledger, tokens, migrations."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa

from dpgl.service.db import (
    SCHEMA_VERSION,
    BudgetExceededError,
    Database,
    ReportConflictError,
    ServiceError,
)

EDGE = "edge-LDP"


def _db(open_db, n: int = 4) -> tuple[Database, dict[str, str]]:
    db = open_db()
    return db, {f"u{i}": db.enroll(f"u{i}") for i in range(n)}


def test_schema_is_created_and_versioned(open_db, db_url: str) -> None:
    db = open_db()
    assert db.version() == SCHEMA_VERSION
    assert open_db().migrate() == SCHEMA_VERSION  # idempotent on an existing store
    with db.engine.begin() as conn:
        conn.execute(sa.text("UPDATE schema_version SET version = :v"),
                     {"v": SCHEMA_VERSION + 1})
    with pytest.raises(ServiceError, match="newer than this dpgl"):
        open_db()


def test_tokens_are_stored_hashed_and_checked(open_db, db_url: str) -> None:
    db, tokens = _db(open_db, 2)
    assert db.authenticate("u0", tokens["u0"])
    assert not db.authenticate("u0", tokens["u1"]) and not db.authenticate("zz", tokens["u0"])
    with db.engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT token_sha256 FROM users")).scalars().all()
    assert tokens["u0"] not in stored and len(stored[0]) == 64
    with pytest.raises(ServiceError, match="already enrolled"):
        db.enroll("u0")


def test_one_report_per_user_and_round(open_db, db_url: str) -> None:
    db, _ = _db(open_db, 3)
    db.open_round("r1", {"mechanism": "rr"}, ["u0", "u1"], {EDGE: (1.0, 0.0)}, {EDGE: 4.0})
    assert db.submit("r1", "u0", '{"neighbours": [1]}') is True
    assert db.submit("r1", "u0", '{"neighbours": [1]}') is False      # a retry: acknowledged
    with pytest.raises(ReportConflictError):
        db.submit("r1", "u0", '{"neighbours": [2]}')                   # different: refused
    assert [r.payload for r in db.reports("r1")] == ['{"neighbours": [1]}']  # unchanged
    with pytest.raises(ServiceError, match="not in round"):
        db.submit("r1", "u2", "{}")
    with pytest.raises(ServiceError, match="unknown round"):
        db.submit("nope", "u0", "{}")
    assert db.close_round("r1") == 1
    with pytest.raises(ServiceError, match="closed"):
        db.submit("r1", "u1", "{}")
    assert db.submit("r1", "u0", '{"neighbours": [1]}') is False      # a late retry still ok


def test_concurrent_retries_store_one_row(open_db, db_url: str) -> None:
    db, _ = _db(open_db, 1)
    db.open_round("r", {}, ["u0"], {EDGE: (1.0, 0.0)}, {EDGE: 4.0})
    results: list[object] = []

    def send() -> None:
        try:
            with Database(db_url, migrate=False) as mine:
                results.append(mine.submit("r", "u0", "same"))
        except Exception as e:  # pragma: no cover - reported by the assertion below
            results.append(e)

    threads = [threading.Thread(target=send) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(map(repr, results)) == sorted(["True"] + ["False"] * 5)
    assert len(db.reports("r")) == 1


def test_lifetime_budget_ledger(open_db, db_url: str) -> None:
    db, _ = _db(open_db, 3)
    life = {EDGE: 4.0}
    db.open_round("a", {}, ["u0", "u1"], {EDGE: (3.0, 0.0)}, life)
    assert db.spent("u0") == {EDGE: 3.0} and db.spent("u2") == {}
    with pytest.raises(BudgetExceededError, match="over their lifetime edge-LDP budget"):
        db.open_round("b", {}, ["u1", "u2"], {EDGE: (1.5, 0.0)}, life)
    with pytest.raises(ServiceError, match="unknown round"):
        db.round("b")                                    # nothing of the refused round stayed
    assert db.spent("u2") == {}
    db.open_round("c", {}, ["u1", "u2"], {EDGE: (1.0, 0.0)}, life)    # exactly at the limit
    assert db.spent("u1") == {EDGE: 4.0}
    with pytest.raises(ServiceError, match="no lifetime budget"):
        db.open_round("d", {}, ["u2"], {"feature-LDP": (1.0, 0.0)}, life)
    with pytest.raises(ServiceError, match="not enrolled"):
        db.open_round("e", {}, ["u2", "ghost"], {EDGE: (0.5, 0.0)}, life)
    assert db.round("c")["charge"] == {EDGE: {"epsilon": 1.0, "delta": 0.0}}


def test_rounds_opened_at_once_cannot_both_pass(open_db, db_url: str) -> None:
    """Two rounds that each fit but together exceed the budget: exactly one opens."""
    db, _ = _db(open_db, 2)
    errors: list[str] = []

    def open_(rid: str) -> None:
        try:
            with Database(db_url, migrate=False) as mine:
                mine.open_round(rid, {}, ["u0", "u1"], {EDGE: (3.0, 0.0)}, {EDGE: 4.0})
        except BudgetExceededError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=open_, args=(f"r{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 3
    assert db.spent("u0") == {EDGE: 3.0}


@pytest.mark.parametrize("bad", ["", "x" * 201, "tab\there", 5])
def test_bad_ids_are_refused(tmp_path, bad) -> None:
    with Database(f"sqlite:///{tmp_path / 's.db'}") as db, \
            pytest.raises(ServiceError, match="printable string"):
        db.enroll(bad)


def test_bad_urls_are_one_line_errors() -> None:
    with pytest.raises(ServiceError, match="database URL"):
        Database("nosuchdb://x")


def test_enroll_many_is_bulk_enroll_all_or_nothing(open_db, db_url: str) -> None:
    db = open_db()
    ids = [f"b{i}" for i in range(25_000)]          # more than one insert batch
    tokens = db.enroll_many(ids)
    assert len(tokens) == len(ids) and len(set(tokens)) == len(ids)
    assert db.authenticate("b0", tokens[0]) and db.authenticate("b24999", tokens[-1])
    assert not db.authenticate("b1", tokens[0])
    with db.engine.connect() as conn:
        stored = set(conn.execute(sa.text("SELECT token_sha256 FROM users")).scalars())
        count = conn.execute(sa.text("SELECT count(*) FROM users")).scalar()
    assert count == len(ids) and tokens[0] not in stored           # hashed, as enroll
    with pytest.raises(ServiceError, match="already enrolled"):
        db.enroll_many(["new1", "b7"])                             # one clash refuses all
    with pytest.raises(ServiceError, match="not unique"):
        db.enroll_many(["new2", "new2"])
    with pytest.raises(ServiceError, match="printable string"):
        db.enroll_many(["new3", ""])
    assert not db.authenticate("new1", "x")
    with db.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM users")).scalar() == len(ids)
    assert db.enroll_many([]) == []
    assert db.enroll("new1")                                        # ids stayed free


def test_large_populations_are_checked_in_chunks(open_db, db_url: str, monkeypatch) -> None:
    """Opening a round looks its members up in chunks (PostgreSQL caps a statement at 65535
    parameters); with tiny chunks the ledger still sees every member."""
    import dpgl.service.db as dbmod
    monkeypatch.setattr(dbmod, "_IN_CHUNK", 3)
    db = open_db()
    ids = [f"c{i}" for i in range(11)]
    db.enroll_many(ids)
    db.open_round("a", {}, ids[:10], {EDGE: (3.0, 0.0)}, {EDGE: 4.0})
    assert db.spent("c9") == {EDGE: 3.0} and db.spent("c10") == {}
    with pytest.raises(BudgetExceededError, match="push 1 user"):
        db.open_round("b", {}, ids[9:], {EDGE: (3.0, 0.0)}, {EDGE: 4.0})
    with pytest.raises(ServiceError, match="1 member"):
        db.open_round("c", {}, [*ids, "ghost"], {EDGE: (0.5, 0.0)}, {EDGE: 4.0})
    assert sorted(db.budget_spent()) == sorted(ids)


@pytest.mark.slow
def test_a_round_of_70000_members_opens(open_db, db_url: str) -> None:
    """More members than one PostgreSQL statement can bind (65535): the round opens."""
    db = open_db()
    ids = [str(i) for i in range(70_000)]
    db.enroll_many(ids)
    db.open_round("big", {}, ids, {EDGE: (1.0, 0.0)}, {EDGE: 4.0})
    assert db.spent("69999") == {EDGE: 1.0}
