"""The device SDK: one user's side of a collection round (issue #14).

A :class:`Device` enrols once (its token is kept in its state file), reads a published round,
and submits one report. It builds the round's randomizers itself from the published spec
(:mod:`dpgl.collection`, the simulation's own classes), so what it draws and what it is
charged come from one object, and it keeps its own ledger: it refuses a round whose charge
would take it over its lifetime budget, or whose published charge is lower than what its
randomizers spend. A report is drawn once per round and written to the state file *before*
it is sent: a retry (after a timeout, a 5xx, a restart of the device) sends the same bytes,
never a fresh draw, so the server stores it once and the user spends once.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpgl.collection.round import PrivateData, Round, canonical_json
from dpgl.collection.spec import parse_round_spec
from dpgl.errors import DpglError

if TYPE_CHECKING:
    import httpx

__all__ = ["Device", "DeviceError", "SubmitResult"]

#: what a device may spend per unit over its lifetime unless told otherwise
DEFAULT_LIFETIME = 8.0
#: statuses a device retries (with back-off): rate limited, server errors
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


def _retry_after(value: str | None) -> float:
    """Seconds a ``Retry-After`` header asks for (at most 60; 0 when absent or a date)."""
    try:
        return min(max(float(value), 0.0), 60.0) if value is not None else 0.0
    except ValueError:
        return 0.0


class DeviceError(DpglError):
    """A round the device refuses, or a server answer it cannot accept."""


@dataclass(frozen=True)
class SubmitResult:
    round_id: str
    stored: bool          # False: the server already held this exact report (a retry)
    attempts: int
    charge: dict[str, float]


class Device:
    """User ``user_id``'s device talking to the server at ``server``.

    ``state``: a JSON file holding the token, the ledger and the drawn reports (None: in
    memory only). ``lifetime``: the most epsilon the device will ever spend, per unit (one
    number: every unit). ``seed``: a reproducible simulated device (the report of user i is
    drawn from :func:`dpgl.collection.user_rng` (seed, i)); None (deployment) draws from OS
    entropy. ``client``: an ``httpx.Client`` to use (tests and benchmarks).
    """

    def __init__(self, server: str, user_id: str, *, state: str | Path | None = None,
                 lifetime: float | dict[str, float] = DEFAULT_LIFETIME,
                 seed: int | None = None, client: httpx.Client | None = None,
                 retries: int = 8, backoff: float = 0.1, timeout: float = 30.0) -> None:
        import httpx
        self.server, self.user_id, self.seed = server.rstrip("/"), user_id, seed
        self.lifetime = lifetime
        self.retries, self.backoff = int(retries), float(backoff)
        self._own_client = client is None
        self.http = client or httpx.Client(timeout=timeout)
        self.state_path = None if state is None else Path(state)
        self._state: dict[str, Any] = {"user_id": user_id, "token": None, "spent": {},
                                       "rounds": {}}
        if self.state_path is not None and self.state_path.exists():
            try:
                loaded = json.loads(self.state_path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                raise DeviceError(f"device state {str(self.state_path)!r} cannot be read: "
                                  f"{e}") from None
            if not isinstance(loaded, dict) or loaded.get("user_id") != user_id:
                raise DeviceError(f"device state {str(self.state_path)!r} belongs to another "
                                  "user")
            self._state = loaded

    # ------------------------------------------------------------------ state
    def _save(self) -> None:
        if self.state_path is None:
            return
        tmp = self.state_path.with_name(self.state_path.name + ".tmp")
        try:
            # readable by this user only: the state holds the bearer token
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with open(fd, "w", encoding="utf-8") as f:
                f.write(json.dumps(self._state))
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o600)  # a leftover .tmp file keeps its old mode under O_CREAT
            os.replace(tmp, self.state_path)
        except OSError as e:
            raise DeviceError(f"cannot write device state {str(self.state_path)!r}: "
                              f"{e.strerror}") from None

    @property
    def token(self) -> str | None:
        return self._state.get("token")

    @property
    def spent(self) -> dict[str, float]:
        """What this device has spent per unit (its own ledger)."""
        return dict(self._state["spent"])

    def _cap(self, unit: str) -> float:
        if isinstance(self.lifetime, dict):
            return float(self.lifetime.get(unit, 0.0))
        return float(self.lifetime)

    # ------------------------------------------------------------------ HTTP
    def _request(self, method: str, path: str, **kw: Any) -> Any:
        import httpx
        last = ""
        wait = 0.0
        for attempt in range(self.retries + 1):
            try:
                r = self.http.request(method, self.server + path, **kw)
            except httpx.HTTPError as e:
                last = f"{type(e).__name__}: {e}"
            else:
                if r.status_code not in RETRY_STATUS:
                    return r, attempt + 1
                last = f"HTTP {r.status_code}"
                wait = _retry_after(r.headers.get("retry-after"))
            if attempt < self.retries:
                time.sleep(max(min(self.backoff * 2**attempt, 5.0), wait))
                wait = 0.0
        raise DeviceError(f"{method} {path}: no answer after {self.retries + 1} attempts "
                          f"({last})")

    @staticmethod
    def _message(r: Any) -> str:
        try:
            return str(r.json().get("error", r.text))
        except ValueError:
            return r.text[:200]

    def close(self) -> None:
        if self._own_client:
            self.http.close()

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ protocol
    def enroll(self) -> None:
        """Enrol once; the token is kept in the device state (a second call does nothing)."""
        if self.token is not None:
            return
        r, _ = self._request("POST", "/v1/enroll", json={"user_id": self.user_id})
        if r.status_code != 201:
            raise DeviceError(f"enrolment refused: {self._message(r)}")
        self._state["token"] = r.json()["token"]
        self._save()

    def round(self, round_id: str) -> tuple[Round, dict[str, Any]]:
        """The published round (rebuilt locally) and the server's per-unit charge."""
        r, _ = self._request("GET", f"/v1/rounds/{round_id}")
        if r.status_code != 200:
            raise DeviceError(f"round {round_id!r}: {self._message(r)}")
        try:
            info = r.json()
            spec, charge = info["spec"], dict(info.get("charge") or {})
            for c in charge.values():
                # numbers only (a NaN would pass every comparison with the device's own)
                if not all(type(c[k]) in (int, float) and math.isfinite(c[k]) and c[k] >= 0
                           for k in ("epsilon", "delta")):
                    raise ValueError
        except (ValueError, TypeError, KeyError, AttributeError):
            raise DeviceError(f"round {round_id!r}: the server's answer is not a published "
                              "round (spec and per-unit charge as numbers)") from None
        return Round(parse_round_spec(spec)), charge

    def prepare(self, round_id: str, private: PrivateData) -> str:
        """Draw this user's report for the round once (or return the one already drawn):
        checks the round against the device's ledger, runs the randomizers under the
        device's own accountant, records the spend and saves the report."""
        from dpgl.collection.items import user_rng
        from dpgl.privacy import Accountant
        from dpgl.rng import make_rng
        done = self._state["rounds"].get(round_id)
        if done is not None:
            return str(done["body"])
        rnd, published = self.round(round_id)
        if rnd.spec.round_id != round_id:
            raise DeviceError(f"the server published round {rnd.spec.round_id!r} for "
                              f"{round_id!r}")
        index = rnd.index_of(self.user_id)
        deadline = rnd.spec.deadline_ts()
        if deadline is not None and time.time() > deadline:
            raise DeviceError(f"round {round_id!r}'s deadline has passed: nothing drawn")
        own = rnd.charge()
        for unit, (eps, delta) in own.items():
            declared = published.get(unit)
            if declared is None or declared["epsilon"] + 1e-12 < eps or \
                    declared["delta"] + 1e-15 < delta:
                raise DeviceError(f"round {round_id!r} declares a {unit} charge of "
                                  f"{declared}, but its randomizer spends epsilon={eps:g}, "
                                  f"delta={delta:g}: refused")
            if self._state["spent"].get(unit, 0.0) + eps > self._cap(unit) * (1 + 1e-12):
                raise DeviceError(
                    f"round {round_id!r} would take this device over its lifetime {unit} "
                    f"budget ({self._state['spent'].get(unit, 0.0):g} spent + {eps:g} > "
                    f"{self._cap(unit):g}): refused")
        rng = user_rng(self.seed, index) if self.seed is not None else \
            make_rng(None, secure=True)
        acc = Accountant()
        with acc.active():
            report = rnd.device_report(private, index, rng)
        recorded = acc.report()
        for unit, (eps, _) in own.items():
            got = recorded.total(unit)
            if got is None or abs(got.epsilon - eps) > 1e-9:
                raise DeviceError(f"the randomizers recorded {got} for {unit}, not the "
                                  f"round's {eps:g}: refused")
            self._state["spent"][unit] = self._state["spent"].get(unit, 0.0) + eps
        body = canonical_json({"user_id": self.user_id, "report": report})
        self._state["rounds"][round_id] = {"body": body, "charge": {u: c[0] for u, c in
                                                                    own.items()},
                                           "acknowledged": False}
        self._save()
        return body

    def submit(self, round_id: str, private: PrivateData) -> SubmitResult:
        """Enrol if needed, draw the report once, and send it until the server acknowledges
        it (201 stored, or 200: it already held these bytes)."""
        if self.token is None:
            self.enroll()
        body = self.prepare(round_id, private)
        r, attempts = self._request(
            "POST", f"/v1/rounds/{round_id}/reports", content=body.encode("utf-8"),
            headers={"Authorization": f"Bearer {self.token}",
                     "Content-Type": "application/json"})
        if r.status_code not in (200, 201):
            raise DeviceError(f"report refused (HTTP {r.status_code}): {self._message(r)}")
        entry = self._state["rounds"][round_id]
        entry["acknowledged"] = True
        self._save()
        return SubmitResult(round_id, r.status_code == 201, attempts, dict(entry["charge"]))
