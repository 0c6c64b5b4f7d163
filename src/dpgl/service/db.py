"""The collection server's database: schema, migrations and the rules that must hold inside
one transaction (issue #14).

One data-access layer over SQLite (an embedded file, the default) and PostgreSQL
(``postgresql://...``, psycopg 3), written with SQLAlchemy Core: the same table definitions
and statements run on both, the dialect differences (upserts, locking) stay inside the
engine, and no ORM session state hides when a row is written. Every rule that protects a
user is enforced by the database in the same transaction as the write it guards:

* **one report per user per round**: the primary key ``(round_id, user_id)``; a retry with
  the same bytes is acknowledged as a duplicate, a different report is a conflict and
  changes nothing;
* **the lifetime budget**: opening a round reserves its per-user charge for every member of
  its population, and is refused when any member's reservations would exceed her lifetime
  budget (per unit); the members' ledger rows are locked first (``SELECT ... FOR UPDATE`` on
  PostgreSQL, a write transaction on SQLite), so two rounds opened at once cannot both pass;
* **tokens**: only a hash of each user's token is stored.

A report is committed before :meth:`Database.submit` returns, so the server answers 2xx only
for reports that are on disk. The schema is versioned (table ``schema_version``) and
:meth:`Database.migrate` applies the missing steps in order; opening a database written by a
newer dpgl is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from dpgl.errors import DpglError

__all__ = ["DEFAULT_LIFETIME", "SCHEMA_VERSION", "BudgetExceededError", "Database",
           "NotFoundError", "NotMemberError", "ReportConflictError", "RoundClosedError",
           "ServiceError", "StoredReport"]


class ServiceError(DpglError):
    """A request the collection server refuses (unknown round or user, closed round, ...)."""


class ReportConflictError(ServiceError):
    """A second, different report from a user for a round (nothing was changed)."""


class BudgetExceededError(ServiceError):
    """Opening the round would push an enrolled user over her lifetime budget."""


class NotFoundError(ServiceError):
    """An unknown round, or a round without a result yet."""


class NotMemberError(ServiceError):
    """A user who is not in the round's population."""


class RoundClosedError(ServiceError):
    """A report for a closed round, or after its deadline."""


#: the lifetime epsilon per unit a new database starts with (``Database.set_lifetime``)
DEFAULT_LIFETIME = {"edge-LDP": 8.0, "feature-LDP": 8.0, "label-LDP": 8.0}


metadata = sa.MetaData()

schema_version = sa.Table(
    "schema_version", metadata,
    sa.Column("version", sa.Integer, nullable=False),
)
users = sa.Table(
    "users", metadata,
    sa.Column("user_id", sa.String(200), primary_key=True),
    sa.Column("token_sha256", sa.String(64), nullable=False),
    sa.Column("enrolled_at", sa.Float, nullable=False),
)
rounds = sa.Table(
    "rounds", metadata,
    sa.Column("round_id", sa.String(200), primary_key=True),
    sa.Column("spec", sa.Text, nullable=False),            # the published round, JSON
    sa.Column("status", sa.String(16), nullable=False),    # open | closed
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("deadline", sa.Float, nullable=True),
)
#: what one member of a round spends in it, per unit (the randomizer's guarantee)
round_charges = sa.Table(
    "round_charges", metadata,
    sa.Column("round_id", sa.String(200), sa.ForeignKey("rounds.round_id"), primary_key=True),
    sa.Column("unit", sa.String(32), primary_key=True),
    sa.Column("epsilon", sa.Float, nullable=False),
    sa.Column("delta", sa.Float, nullable=False),
)
members = sa.Table(
    "members", metadata,
    sa.Column("round_id", sa.String(200), sa.ForeignKey("rounds.round_id"), primary_key=True),
    sa.Column("user_id", sa.String(200), sa.ForeignKey("users.user_id"), primary_key=True),
)
reports = sa.Table(
    "reports", metadata,
    sa.Column("round_id", sa.String(200), sa.ForeignKey("rounds.round_id"), primary_key=True),
    sa.Column("user_id", sa.String(200), sa.ForeignKey("users.user_id"), primary_key=True),
    sa.Column("payload", sa.Text, nullable=False),
    sa.Column("sha256", sa.String(64), nullable=False),
    sa.Column("received_at", sa.Float, nullable=False),
)

#: a closed round's result: metrics, privacy report, estimator information (JSON)
results = sa.Table(
    "results", metadata,
    sa.Column("round_id", sa.String(200), sa.ForeignKey("rounds.round_id"), primary_key=True),
    sa.Column("result", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)
#: the lifetime epsilon per unit of every enrolled user (the ledger's cap)
lifetime_budget = sa.Table(
    "lifetime_budget", metadata,
    sa.Column("unit", sa.String(32), primary_key=True),
    sa.Column("epsilon", sa.Float, nullable=False),
)


def _add_results_and_lifetime(conn: Connection) -> None:
    metadata.create_all(conn, tables=[results, lifetime_budget])
    conn.execute(sa.insert(lifetime_budget), [{"unit": u, "epsilon": e}
                                              for u, e in DEFAULT_LIFETIME.items()])


#: The steps from version i to i + 1, in order (step 0 creates the first schema).
MIGRATIONS: list[Callable[[Connection], None]] = [
    lambda conn: metadata.create_all(conn, tables=[users, rounds, round_charges, members,
                                                   reports]),
    _add_results_and_lifetime,
]
SCHEMA_VERSION = len(MIGRATIONS)


@dataclass(frozen=True)
class StoredReport:
    round_id: str
    user_id: str
    payload: str
    received_at: float


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: ids per ``IN (...)`` list: PostgreSQL's protocol caps a statement at 65535 parameters
_IN_CHUNK = 20_000


def _chunks(values: list[str]) -> Iterator[list[str]]:
    size = _IN_CHUNK
    for start in range(0, len(values), size):
        yield values[start:start + size]


def _check_id(value: object, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 200 or not value.isprintable():
        raise ServiceError(f"{what} must be a printable string of 1 to 200 characters, "
                           f"got {value!r}")
    return value


class Database:
    """The server's store at ``url`` (``sqlite:///path.db`` or ``postgresql://...``)."""

    def __init__(self, url: str, *, migrate: bool = True,
                 clock: Callable[[], float] = time.time) -> None:
        if url.startswith("postgresql://"):
            url = "postgresql+psycopg://" + url[len("postgresql://"):]
        try:
            self.engine: Engine = sa.create_engine(url, future=True)
        except (sa.exc.ArgumentError, ImportError) as e:
            raise ServiceError(f"database URL {url!r}: {e}") from None
        self.clock = clock
        if self.engine.dialect.name == "sqlite":
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        if migrate:
            try:
                self.migrate()
            except BaseException:
                self.engine.dispose()
                raise

    # ------------------------------------------------------------------ schema
    def version(self) -> int:
        """The schema version on disk (0: an empty database)."""
        with self.engine.connect() as conn:
            if not sa.inspect(conn).has_table("schema_version"):
                return 0
            v = conn.execute(sa.select(schema_version.c.version)).scalar()
            return int(v or 0)

    def migrate(self) -> int:
        """Apply the missing migration steps (one transaction each); returns the version."""
        current = self.version()
        if current > SCHEMA_VERSION:
            raise ServiceError(f"the database has schema version {current}, newer than this "
                               f"dpgl ({SCHEMA_VERSION}): upgrade dpgl")
        for step in range(current, SCHEMA_VERSION):
            with self._write() as conn:
                if step == 0:
                    schema_version.create(conn, checkfirst=True)
                MIGRATIONS[step](conn)
                conn.execute(sa.delete(schema_version))
                conn.execute(sa.insert(schema_version).values(version=step + 1))
        return SCHEMA_VERSION

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """A write transaction (SQLite: taken at BEGIN, so checks and writes are atomic)."""
        with self.engine.begin() as conn:
            if self.engine.dialect.name == "sqlite":
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            yield conn

    # ------------------------------------------------------------------ users
    def enroll(self, user_id: str) -> str:
        """Enrol a user once; returns her token (only its hash is stored)."""
        _check_id(user_id, "user id")
        token = secrets.token_urlsafe(32)
        try:
            with self._write() as conn:
                conn.execute(sa.insert(users).values(user_id=user_id,
                                                     token_sha256=_sha256(token),
                                                     enrolled_at=self.clock()))
        except sa.exc.IntegrityError:
            raise ServiceError(f"user {user_id!r} is already enrolled") from None
        return token

    def enroll_many(self, user_ids: list[str]) -> list[str]:
        """Enrol many users at once (the operator's bulk enrolment): their tokens, in order,
        hashed as :meth:`enroll` stores them; all or nothing, in one transaction (a
        duplicate id in ``user_ids`` or an id already enrolled refuses the lot)."""
        ids = [_check_id(u, "user id") for u in user_ids]
        if len(set(ids)) != len(ids):
            raise ServiceError("enroll_many: the user ids are not unique")
        tokens = [secrets.token_urlsafe(32) for _ in ids]
        now = self.clock()
        rows = [{"user_id": u, "token_sha256": _sha256(t), "enrolled_at": now}
                for u, t in zip(ids, tokens, strict=True)]
        if not rows:
            return []
        try:
            with self._write() as conn:
                for start in range(0, len(rows), 10_000):
                    conn.execute(sa.insert(users), rows[start:start + 10_000])
        except sa.exc.IntegrityError:
            raise ServiceError("enroll_many: some of the users are already enrolled; "
                               "nobody was enrolled") from None
        return tokens

    def authenticate(self, user_id: str, token: str) -> bool:
        """Whether ``token`` is ``user_id``'s (constant-time comparison of hashes)."""
        with self.engine.connect() as conn:
            stored = conn.execute(sa.select(users.c.token_sha256)
                                  .where(users.c.user_id == user_id)).scalar()
        return stored is not None and hmac.compare_digest(stored, _sha256(str(token)))

    def spent(self, user_id: str) -> dict[str, float]:
        """Epsilon reserved for ``user_id`` per unit: the charge of every round she is in."""
        with self.engine.connect() as conn:
            return self._spent(conn, [user_id]).get(user_id, {})

    @staticmethod
    def _spent(conn: Connection, user_ids: list[str]) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for chunk in _chunks(user_ids):
            q = (sa.select(members.c.user_id, round_charges.c.unit,
                           sa.func.sum(round_charges.c.epsilon))
                 .join(round_charges, round_charges.c.round_id == members.c.round_id)
                 .where(members.c.user_id.in_(chunk))
                 .group_by(members.c.user_id, round_charges.c.unit))
            for uid, unit, eps in conn.execute(q):
                out.setdefault(uid, {})[unit] = float(eps)
        return out

    # ------------------------------------------------------------------ rounds
    def open_round(self, round_id: str, spec: Mapping[str, Any], population: list[str],
                   charge: Mapping[str, tuple[float, float]],
                   lifetime: Mapping[str, float] | None = None, *,
                   deadline: float | None = None) -> None:
        """Open a round: every member of ``population`` must be enrolled, and each one's
        reserved epsilon plus ``charge`` (unit -> (epsilon, delta) per member, the
        randomizer's guarantee) must stay within ``lifetime`` (unit -> epsilon; default: the
        database's :meth:`lifetime`; a unit with no lifetime entry is refused). All or
        nothing, in one transaction."""
        _check_id(round_id, "round id")
        if lifetime is None:
            lifetime = self.lifetime()
        pop = sorted(set(population))
        if not pop:
            raise ServiceError("a round needs a non-empty population")
        for unit, (eps, delta) in charge.items():
            if not (math.isfinite(eps) and eps > 0 and 0 <= delta < 1):
                raise ServiceError(f"round charge for {unit}: need 0 < epsilon < inf and "
                                   f"0 <= delta < 1, got ({eps}, {delta})")
            if unit not in lifetime:
                raise ServiceError(f"no lifetime budget is set for {unit}")
        text = json.dumps(dict(spec), sort_keys=True)
        with self._write() as conn:
            found: set[str] = set()
            for chunk in _chunks(pop):  # a statement holds at most 65535 parameters (libpq)
                found.update(conn.execute(sa.select(users.c.user_id)
                                          .where(users.c.user_id.in_(chunk))
                                          .with_for_update()).scalars())
            missing = [u for u in pop if u not in found]
            if missing:
                raise ServiceError(f"{len(missing)} member(s) are not enrolled, e.g. "
                                   f"{missing[:3]}")
            spent = self._spent(conn, pop)
            over = [(u, unit) for u in pop for unit, (eps, _) in charge.items()
                    if spent.get(u, {}).get(unit, 0.0) + eps > lifetime[unit] * (1 + 1e-12)]
            if over:
                u, unit = over[0]
                raise BudgetExceededError(
                    f"round {round_id!r} would push {len({x for x, _ in over})} user(s) over "
                    f"their lifetime {unit} budget of {lifetime[unit]:g}, e.g. {u!r} (spent "
                    f"{spent.get(u, {}).get(unit, 0.0):g} + {charge[unit][0]:g})")
            try:
                conn.execute(sa.insert(rounds).values(
                    round_id=round_id, spec=text, status="open", created_at=self.clock(),
                    deadline=deadline))
            except sa.exc.IntegrityError:
                raise ServiceError(f"round {round_id!r} already exists") from None
            conn.execute(sa.insert(round_charges), [
                {"round_id": round_id, "unit": unit, "epsilon": float(eps),
                 "delta": float(delta)} for unit, (eps, delta) in charge.items()])
            conn.execute(sa.insert(members), [{"round_id": round_id, "user_id": u}
                                              for u in pop])

    def round(self, round_id: str) -> dict[str, Any]:
        """The round as published: its spec, status, deadline and per-member charge."""
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(rounds).where(rounds.c.round_id == round_id)).first()
            if row is None:
                raise NotFoundError(f"unknown round {round_id!r}")
            charge = {u: {"epsilon": e, "delta": d} for u, e, d in conn.execute(
                sa.select(round_charges.c.unit, round_charges.c.epsilon,
                          round_charges.c.delta).where(round_charges.c.round_id == round_id))}
        return {"round_id": row.round_id, "spec": json.loads(row.spec), "status": row.status,
                "created_at": row.created_at, "deadline": row.deadline, "charge": charge}

    def close_round(self, round_id: str) -> int:
        """Close a round (no more reports); returns how many reports it holds."""
        with self._write() as conn:
            n = conn.execute(sa.update(rounds).where(rounds.c.round_id == round_id)
                             .values(status="closed")).rowcount
            if n == 0:
                raise NotFoundError(f"unknown round {round_id!r}")
            return int(conn.execute(sa.select(sa.func.count()).select_from(reports)
                                    .where(reports.c.round_id == round_id)).scalar() or 0)

    # ------------------------------------------------------------------ reports
    def submit(self, round_id: str, user_id: str, payload: str) -> bool:
        """Store ``user_id``'s report for an open round she is a member of; committed before
        it returns. True: stored now; False: the same report was already stored (a retry).
        A different second report raises :class:`ReportConflictError` and changes nothing."""
        if not isinstance(payload, str):
            raise ServiceError("a report payload is text (JSON)")
        digest = _sha256(payload)
        try:
            return self._submit(round_id, user_id, payload, digest)
        except sa.exc.IntegrityError:
            # a concurrent submission for this user won the race: compare with what it stored
            with self.engine.connect() as conn:
                stored = conn.execute(sa.select(reports.c.sha256).where(
                    (reports.c.round_id == round_id) & (reports.c.user_id == user_id))).scalar()
            if stored == digest:
                return False
            raise ReportConflictError(f"user {user_id!r} already reported in round {round_id!r}; "
                                 "a second, different report is refused") from None

    def _submit(self, round_id: str, user_id: str, payload: str, digest: str) -> bool:
        with self._write() as conn:
            status = conn.execute(sa.select(rounds.c.status)
                                  .where(rounds.c.round_id == round_id)).scalar()
            if status is None:
                raise NotFoundError(f"unknown round {round_id!r}")
            member = conn.execute(sa.select(members.c.user_id).where(
                (members.c.round_id == round_id) & (members.c.user_id == user_id))).first()
            if member is None:
                raise NotMemberError(f"user {user_id!r} is not in round {round_id!r}'s "
                                     "population")
            stored = conn.execute(sa.select(reports.c.sha256).where(
                (reports.c.round_id == round_id) & (reports.c.user_id == user_id))).scalar()
            if stored is not None:
                if stored == digest:
                    return False
                raise ReportConflictError(f"user {user_id!r} already reported in round "
                                     f"{round_id!r}; a second, different report is refused")
            if status != "open":
                raise RoundClosedError(f"round {round_id!r} is {status}")
            deadline = conn.execute(sa.select(rounds.c.deadline)
                                    .where(rounds.c.round_id == round_id)).scalar()
            if deadline is not None and self.clock() > deadline:
                raise RoundClosedError(f"round {round_id!r}'s deadline has passed")
            conn.execute(sa.insert(reports).values(round_id=round_id, user_id=user_id,
                                                   payload=payload, sha256=digest,
                                                   received_at=self.clock()))
        return True

    def reports(self, round_id: str) -> list[StoredReport]:
        """A round's stored reports, by user id."""
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(reports).where(reports.c.round_id == round_id)
                                .order_by(reports.c.user_id))
            return [StoredReport(r.round_id, r.user_id, r.payload, r.received_at)
                    for r in rows]

    def report_count(self, round_id: str) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(reports)
                                    .where(reports.c.round_id == round_id)).scalar() or 0)

    def received_times(self, round_id: str) -> list[float]:
        """When each of a round's reports was stored (participation over time), sorted."""
        with self.engine.connect() as conn:
            return [float(t) for t in conn.execute(
                sa.select(reports.c.received_at).where(reports.c.round_id == round_id)
                .order_by(reports.c.received_at)).scalars()]

    def list_rounds(self) -> list[dict[str, Any]]:
        """Every round: id, status, created_at, deadline, population size, reports held."""
        with self.engine.connect() as conn:
            pop = dict(conn.execute(sa.select(members.c.round_id, sa.func.count())
                                    .group_by(members.c.round_id)).all())
            got = dict(conn.execute(sa.select(reports.c.round_id, sa.func.count())
                                    .group_by(reports.c.round_id)).all())
            done = set(conn.execute(sa.select(results.c.round_id)).scalars())
            rows = conn.execute(sa.select(rounds.c.round_id, rounds.c.status,
                                          rounds.c.created_at, rounds.c.deadline)
                                .order_by(rounds.c.created_at)).all()
        return [{"round_id": r.round_id, "status": r.status, "created_at": r.created_at,
                 "deadline": r.deadline, "population": int(pop.get(r.round_id, 0)),
                 "reports": int(got.get(r.round_id, 0)), "has_result": r.round_id in done}
                for r in rows]

    def budget_spent(self) -> dict[str, dict[str, float]]:
        """Every enrolled user's reserved epsilon per unit (users in no round: empty)."""
        with self.engine.connect() as conn:
            ids = list(conn.execute(sa.select(users.c.user_id)).scalars())
            spent = self._spent(conn, ids) if ids else {}
        return {u: spent.get(u, {}) for u in ids}

    def lifetime(self) -> dict[str, float]:
        """The lifetime epsilon per unit of every user (the ledger's cap)."""
        with self.engine.connect() as conn:
            return {u: float(e) for u, e in conn.execute(
                sa.select(lifetime_budget.c.unit, lifetime_budget.c.epsilon))}

    def set_lifetime(self, budgets: Mapping[str, float]) -> None:
        """Set the lifetime epsilon of the given units. Lowering is always allowed; a cap
        below what some user already holds makes every later round that charges her fail."""
        for unit, eps in budgets.items():
            if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps > 0):
                raise ServiceError(f"lifetime budget for {unit}: need 0 < epsilon < inf, "
                                   f"got {eps!r}")
        with self._write() as conn:
            for unit, eps in budgets.items():
                conn.execute(sa.delete(lifetime_budget).where(lifetime_budget.c.unit == unit))
                conn.execute(sa.insert(lifetime_budget).values(unit=unit, epsilon=float(eps)))

    def store_result(self, round_id: str, result: Mapping[str, Any]) -> None:
        """Store (or replace) a closed round's result."""
        text = json.dumps(dict(result), sort_keys=True, allow_nan=False)
        with self._write() as conn:
            conn.execute(sa.delete(results).where(results.c.round_id == round_id))
            conn.execute(sa.insert(results).values(round_id=round_id, result=text,
                                                   created_at=self.clock()))

    def result(self, round_id: str) -> dict[str, Any]:
        with self.engine.connect() as conn:
            text = conn.execute(sa.select(results.c.result)
                                .where(results.c.round_id == round_id)).scalar()
        if text is None:
            raise NotFoundError(f"round {round_id!r} has no result yet")
        return dict(json.loads(text))

    def close(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    """Durable, concurrent SQLite: WAL journal, fsync at commit, foreign keys on, and the
    driver's implicit transactions off (the layer issues BEGIN IMMEDIATE itself)."""
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()
