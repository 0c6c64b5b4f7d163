"""Malformed report submissions, as hypothesis strategies, for fuzzing the collection
server's submission endpoint (issue #14): ``tests/service/test_fuzz.py`` runs a few hundred
against the ASGI app, ``benchmarks/collection_fuzz.py`` tens of thousands against a running
``dpgl serve``.

:func:`fuzz_rounds` declares small rounds that exercise every validator (RR, DPRR and Blink
neighbour lists, LocalLap and L-DpGCN Laplace vectors, multi-bit and 1-bit features, labels,
a round collecting all three, and a closed round). :class:`FuzzTarget` holds what a
generator needs: the rounds, the enrolled users' tokens, valid reports to start from, and
which users have already reported. :func:`requests` gives, per category
(:data:`CATEGORIES`), a strategy of :class:`FuzzRequest`: every request is refused by
construction (it is malformed, or its credentials are not the user's, or its user already
reported something else, or the round is closed), so a server that stores one, or answers
5xx, is wrong. Needs ``hypothesis`` (a development dependency), imported when a strategy is
built.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from dpgl.collection.round import PrivateData, Round, canonical_json
from dpgl.collection.spec import RoundSpec

__all__ = ["CATEGORIES", "CLOSED", "OUTSIDER", "FuzzRequest", "FuzzTarget", "fuzz_rounds",
           "prepare", "requests", "stored_state", "valid_report"]

#: the kinds of malformed submission, each a strategy of :func:`requests`
CATEGORIES = (
    "wrong_types", "missing_fields", "extra_fields", "out_of_range_ids",
    "unsorted_or_duplicate_ids", "self_id", "huge_ints", "floats", "nan_and_infinity",
    "bad_base64", "wrong_lengths", "deep_nesting", "not_json", "wrong_content", "oversized",
    "bad_tokens", "bad_user_ids", "bad_round_ids",
)

#: the closed round's id (every report to it is refused with 410)
CLOSED = "fz-closed"
#: an enrolled user in no round's population
OUTSIDER = "outsider-user"


def fuzz_rounds(n: int = 1000) -> list[RoundSpec]:
    """The fuzzed rounds over the population "0".."n-1"; the last one is to be closed."""
    pop = {"size": n}

    def spec(rid: str, **items: Any) -> RoundSpec:
        return RoundSpec.model_validate({"round_id": rid, "population": pop, **items})
    return [
        spec("fz-rr", neighbors={"mechanism": "rr", "epsilon": 2.0}),
        spec("fz-dprr", neighbors={"mechanism": "dprr", "epsilon": 2.0}),
        spec("fz-blink", neighbors={"mechanism": "blink-hybrid", "epsilon": 2.0}),
        spec("fz-lap", neighbors={"mechanism": "locallap", "epsilon": 2.0}),
        spec("fz-ldpgcn", neighbors={"mechanism": "ldpgcn", "epsilon": 2.0}),
        spec("fz-feat", features={"mechanism": "multibit", "epsilon": 2.0, "dim": 16, "m": 4}),
        spec("fz-feat1", features={"mechanism": "1bit", "epsilon": 2.0, "dim": 8}),
        spec("fz-labels", labels={"epsilon": 2.0, "classes": 5}),
        spec("fz-all", neighbors={"mechanism": "dprr", "epsilon": 1.0},
             features={"mechanism": "multibit", "epsilon": 1.0, "dim": 16, "m": 3},
             labels={"epsilon": 1.0, "classes": 7}),
        spec(CLOSED, labels={"epsilon": 1.0, "classes": 3}),
    ]


def valid_report(rnd: Round, index: int, seed: int = 0) -> dict[str, Any]:
    """A report user ``index`` could send in ``rnd`` (drawn by the round's randomizers)."""
    import numpy as np

    from dpgl.collection.items import user_rng
    n = len(rnd)
    rng = np.random.default_rng([seed, index])
    nb = np.unique(rng.integers(0, n, size=6))
    nb = nb[nb != index]
    spec = rnd.spec
    private = PrivateData(
        neighbors=nb.astype(np.int64),
        features=rng.random(spec.features.dim) if spec.features is not None else None,
        label=int(rng.integers(spec.labels.classes)) if spec.labels is not None else None)
    return rnd.device_report(private, index, user_rng(seed, index))


@dataclass
class FuzzTarget:
    """What the generators know about the server under test."""

    rounds: dict[str, Round]
    tokens: dict[str, str]                      # every enrolled user's token
    reported: dict[str, dict[str, dict[str, Any]]]  # round -> user -> the report it holds
    fresh: dict[str, dict[str, dict[str, Any]]]     # round -> user (not reported) -> valid
    outsider: str                               # enrolled, in no round's population
    limits: dict[str, int] = field(default_factory=dict)  # round -> request size limit

    @classmethod
    def build(cls, specs: list[RoundSpec], tokens: dict[str, str],
              reported: dict[str, dict[str, dict[str, Any]]], outsider: str,
              fresh_per_round: int = 20, seed: int = 0) -> FuzzTarget:
        rounds = {s.round_id: Round(s) for s in specs}
        fresh: dict[str, dict[str, dict[str, Any]]] = {}
        for rid, rnd in rounds.items():
            done = reported.get(rid, {})
            users = [u for u in rnd.users if u not in done][:fresh_per_round]
            fresh[rid] = {u: valid_report(rnd, rnd.index_of(u), seed) for u in users}
        from dpgl.service.app import MAX_BODY_BYTES
        limits = {rid: min(MAX_BODY_BYTES, rnd.max_bytes() + 1024)
                  for rid, rnd in rounds.items()}
        return cls(rounds, tokens, reported, fresh, outsider, limits)

    def open_rounds(self) -> list[str]:
        return sorted(r for r in self.rounds if r != CLOSED)

    def item(self, rid: str, key: str) -> Any:
        """Round ``rid``'s item ``key`` (its kind, spec and sizes), or None."""
        return self.rounds[rid].items.get(key)

    def kind(self, rid: str) -> str | None:
        """The neighbour item's kind (rr, dprr, blink, lap), None without one."""
        item = self.item(rid, "neighbors")
        return None if item is None else str(item.kind)


@dataclass(frozen=True)
class FuzzRequest:
    """One submission: ``POST /v1/rounds/{path}/reports`` with ``headers`` and ``body``
    (``stream``: sent in chunks without a Content-Length)."""

    category: str
    path: str                    # the round id segment, already percent-encoded
    headers: dict[str, str]
    body: bytes
    stream: bool = False
    note: str = ""

    @property
    def url_path(self) -> str:
        return f"/v1/rounds/{self.path}/reports"


def _dumps(obj: Any) -> bytes:
    """JSON text the way a sloppy client writes it (NaN tokens allowed, no sorting)."""
    return json.dumps(obj, allow_nan=True).encode("utf-8")


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}


def requests(target: FuzzTarget, category: str) -> Any:
    """The strategy of ``category``'s malformed submissions."""
    from hypothesis import strategies as st

    t = target
    open_ids = t.open_rounds()

    @st.composite
    def fresh_user(draw: Any, rounds: list[str] | None = None,
                   keys: tuple[str, ...] | None = None) -> tuple[str, str, dict[str, Any]]:
        """(round, user, a valid report of a user who has not reported in it)."""
        pool = [r for r in (rounds or open_ids)
                if keys is None or any(k in t.rounds[r].items for k in keys)]
        rid = draw(st.sampled_from(pool))
        uid = draw(st.sampled_from(sorted(t.fresh[rid])))
        return rid, uid, json.loads(json.dumps(t.fresh[rid][uid]))

    def request(rid: str, uid: Any, report: Any, note: str, *, token: str | None = None,
                body: bytes | None = None) -> FuzzRequest:
        tok = token if token is not None else t.tokens[str(uid)]
        if body is None:
            body = _dumps({"user_id": uid, "report": report})
        return FuzzRequest(category, quote(rid, safe=""), _auth(tok), body, note=note)

    def item_of(rid: str, keys: tuple[str, ...]) -> str:
        return next(k for k in keys if k in t.rounds[rid].items)

    json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10, 10),
                             st.floats(allow_nan=False, allow_infinity=False),
                             st.text(max_size=8))
    any_json = st.recursive(json_scalars, lambda c: st.lists(c, max_size=3)
                            | st.dictionaries(st.text(max_size=5), c, max_size=3),
                            max_leaves=8)

    def not_int(include_list: bool = True) -> Any:
        base = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False),
                         st.text(max_size=6), st.dictionaries(st.text(max_size=3),
                                                              json_scalars, max_size=2))
        return st.one_of(base, st.lists(json_scalars, max_size=3)) if include_list else base

    def int_fields(rep: dict[str, Any]) -> list[tuple[str, str]]:
        """(item, field) of every integer-valued field in a report."""
        out = []
        for key, obj in rep.items():
            for f, v in obj.items():
                if isinstance(v, int) and not isinstance(v, bool):
                    out.append((key, f))
        return out

    def list_fields(rep: dict[str, Any]) -> list[tuple[str, str]]:
        out = []
        for key, obj in rep.items():
            for f, v in obj.items():
                if isinstance(v, list):
                    out.append((key, f))
        return out

    # ------------------------------------------------------------------ categories
    @st.composite
    def wrong_types(draw: Any) -> FuzzRequest:
        rid, uid, rep = draw(fresh_user())
        where = draw(st.sampled_from(["report", "item", "field", "element"]))
        if where == "report":
            return request(rid, uid, draw(st.one_of(not_int(), st.integers())), "report")
        key = draw(st.sampled_from(sorted(rep)))
        if where == "item":
            rep[key] = draw(st.one_of(not_int(), st.integers()).filter(
                lambda v: not isinstance(v, dict)))
            return request(rid, uid, rep, f"{key} not an object")
        fld = draw(st.sampled_from(sorted(rep[key])))
        value = rep[key][fld]
        if where == "element" and isinstance(value, list):
            bad = draw(st.lists(not_int(), min_size=1, max_size=3))
            pos = draw(st.integers(0, len(value)))
            rep[key][fld] = value[:pos] + bad + value[pos:]
            return request(rid, uid, rep, f"{key}.{fld} element")
        if isinstance(value, str):
            rep[key][fld] = draw(st.one_of(st.none(), st.booleans(), st.integers(),
                                           st.floats(), st.lists(json_scalars, max_size=3),
                                           st.dictionaries(st.text(max_size=3), json_scalars,
                                                           max_size=2)))
        elif isinstance(value, list):
            rep[key][fld] = draw(st.one_of(st.none(), st.booleans(), st.integers(),
                                           st.floats(), st.text(max_size=8),
                                           st.dictionaries(st.text(max_size=3), json_scalars,
                                                           max_size=2)))
        else:
            rep[key][fld] = draw(not_int())
        return request(rid, uid, rep, f"{key}.{fld} type")

    @st.composite
    def missing_fields(draw: Any) -> FuzzRequest:
        rid, uid, rep = draw(fresh_user())
        what = draw(st.sampled_from(["user_id", "report", "both", "item", "field"]))
        if what in ("user_id", "report", "both"):
            top = {"user_id": uid, "report": rep}
            for k in (["user_id", "report"] if what == "both" else [what]):
                del top[k]
            return request(rid, uid, None, f"no {what}", body=_dumps(top))
        key = draw(st.sampled_from(sorted(rep)))
        if what == "item":
            del rep[key]
            return request(rid, uid, rep, f"no item {key}")
        fld = draw(st.sampled_from(sorted(rep[key])))
        del rep[key][fld]
        return request(rid, uid, rep, f"no {key}.{fld}")

    @st.composite
    def extra_fields(draw: Any) -> FuzzRequest:
        rid, uid, rep = draw(fresh_user())
        level = draw(st.sampled_from(["top", "report", "item"]))
        if level == "top":
            name = draw(st.text(max_size=12).filter(lambda s: s not in ("user_id", "report")))
            top = {"user_id": uid, "report": rep, name: draw(any_json)}
            return request(rid, uid, None, "extra top-level field", body=_dumps(top))
        if level == "report":
            name = draw(st.text(max_size=12).filter(lambda s: s not in rep))
            rep[name] = draw(any_json)
            return request(rid, uid, rep, f"extra item {name!r}")
        key = draw(st.sampled_from(sorted(rep)))
        name = draw(st.text(max_size=12).filter(lambda s: s not in rep[key]))
        rep[key][name] = draw(any_json)
        return request(rid, uid, rep, f"extra field in {key}")

    def id_rounds() -> list[str]:
        return [r for r in open_ids if t.kind(r) in ("rr", "dprr", "blink")]

    def lap_rounds() -> list[str]:
        return [r for r in open_ids if t.kind(r) == "lap"]

    def feat_rounds() -> list[str]:
        return [r for r in open_ids if "features" in t.rounds[r].items]

    @st.composite
    def out_of_range_ids(draw: Any) -> FuzzRequest:
        kind = draw(st.sampled_from(["neighbors", "features", "label"]))
        if kind == "neighbors":
            rid, uid, rep = draw(fresh_user(id_rounds()))
            n = len(t.rounds[rid])
            bad = draw(st.one_of(st.integers(max_value=-1), st.integers(min_value=n)))
            ids = sorted(set(rep["neighbors"]["neighbors"]) | {bad})
            rep["neighbors"]["neighbors"] = ids
            return request(rid, uid, rep, f"neighbor id {bad}")
        if kind == "features":
            rid, uid, rep = draw(fresh_user(feat_rounds()))
            d = t.item(rid, "features").spec.dim
            bad = draw(st.one_of(st.integers(max_value=-1), st.integers(min_value=d)))
            idx = rep["features"]["indices"]
            pos = draw(st.integers(0, len(idx) - 1))
            idx[pos] = bad
            rep["features"]["indices"] = sorted(idx)
            return request(rid, uid, rep, f"feature index {bad}")
        rid, uid, rep = draw(fresh_user(keys=("labels",)))
        k = t.item(rid, "labels").spec.classes
        rep["labels"]["label"] = draw(st.one_of(st.integers(max_value=-1),
                                                st.integers(min_value=k)))
        return request(rid, uid, rep, "label out of range")

    @st.composite
    def unsorted_or_duplicate_ids(draw: Any) -> FuzzRequest:
        feats = draw(st.booleans())
        if feats:
            rid, uid, rep = draw(fresh_user([r for r in feat_rounds()
                                             if t.item(r, "features").m >= 2]))
            lst = rep["features"]["indices"]
            fld = ("features", "indices")
        else:
            rid, uid, rep = draw(fresh_user(id_rounds()))
            n, me = len(t.rounds[rid]), t.rounds[rid].index_of(uid)
            lst = rep["neighbors"]["neighbors"]
            while len(lst) < 2:  # two valid ids to play with
                lst = sorted(set(lst) | {draw(st.integers(0, n - 1).filter(
                    lambda v: v != me))})
            fld = ("neighbors", "neighbors")
        how = draw(st.sampled_from(["duplicate", "reverse", "swap"]))
        if how == "duplicate":
            pos = draw(st.integers(0, len(lst) - 1))
            new = [*lst[:pos + 1], lst[pos], *lst[pos + 1:]]
            if fld[0] == "features":  # keep the length m: overwrite the next one
                new = new[:len(lst)]
                if len(set(new)) == len(new):
                    new[-1] = new[0]
        elif how == "reverse":
            new = list(reversed(lst))
        else:
            i = draw(st.integers(0, len(lst) - 2))
            new = [*lst[:i], lst[i + 1], lst[i], *lst[i + 2:]]
        rep[fld[0]][fld[1]] = new
        return request(rid, uid, rep, f"{how} in {fld[0]}.{fld[1]}")

    @st.composite
    def self_id(draw: Any) -> FuzzRequest:
        if draw(st.booleans()):
            rid, uid, rep = draw(fresh_user(id_rounds()))
            me = t.rounds[rid].index_of(uid)
            rep["neighbors"]["neighbors"] = sorted(set(rep["neighbors"]["neighbors"]) | {me})
            return request(rid, uid, rep, "own index in the neighbour list")
        rid, uid, rep = draw(fresh_user(lap_rounds()))
        import numpy as np
        me = t.rounds[rid].index_of(uid)
        vals = np.frombuffer(base64.b64decode(rep["neighbors"]["values"]), "<f8").copy()
        vals[me] = draw(st.floats(allow_nan=False, allow_infinity=False).filter(
            lambda v: v != 0.0))
        rep["neighbors"]["values"] = base64.b64encode(vals.tobytes()).decode()
        return request(rid, uid, rep, "LocalLap own entry non-zero")

    huge = st.one_of(st.integers(min_value=2**53 + 1), st.integers(max_value=-(2**53) - 1),
                     st.sampled_from([2**63, 2**64, -(2**63) - 1, 10**30, -(10**30),
                                      10**4000, 2**1000]))

    @st.composite
    def huge_ints(draw: Any) -> FuzzRequest:
        rid, uid, rep = draw(fresh_user())
        ints = int_fields(rep)
        lists = [(k, f) for k, f in list_fields(rep)]
        choices = [("int", x) for x in ints] + [("list", x) for x in lists]
        if not choices:
            rep[sorted(rep)[0]]["extra"] = draw(huge)
            return request(rid, uid, rep, "huge int in an extra field")
        kind, (key, fld) = draw(st.sampled_from(choices))
        if kind == "int":
            rep[key][fld] = draw(huge)
        else:
            lst = rep[key][fld]
            pos = draw(st.integers(0, max(len(lst) - 1, 0)))
            value = draw(huge)
            if lst:
                lst[pos] = value
            else:
                lst.append(value)
        return request(rid, uid, rep, f"huge int in {key}.{fld}")

    @st.composite
    def floats(draw: Any) -> FuzzRequest:
        rid, uid, rep = draw(fresh_user())
        choices = [("int", x) for x in int_fields(rep)] + \
            [("list", x) for x in list_fields(rep) if rep[x[0]][x[1]]]
        fl = st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                       st.integers(-5, 5).map(float), st.just(-0.0), st.just(1e308))
        if not choices:  # an empty neighbour list: give it a float element
            key = sorted(rep)[0]
            fld = sorted(rep[key])[0]
            rep[key][fld] = [draw(fl)]
            return request(rid, uid, rep, "float element")
        kind, (key, fld) = draw(st.sampled_from(choices))
        if kind == "int":
            rep[key][fld] = draw(fl)
        else:
            lst = rep[key][fld]
            pos = draw(st.integers(0, len(lst) - 1))
            lst[pos] = float(lst[pos]) if draw(st.booleans()) else draw(fl)
        return request(rid, uid, rep, f"float in {key}.{fld}")

    @st.composite
    def nan_and_infinity(draw: Any) -> FuzzRequest:
        rid, uid, rep = draw(fresh_user())
        how = draw(st.sampled_from(["token", "string", "lap-values"]))
        if how == "lap-values":
            rid, uid, rep = draw(fresh_user(lap_rounds()))
            import numpy as np
            vals = np.frombuffer(base64.b64decode(rep["neighbors"]["values"]), "<f8").copy()
            me = t.rounds[rid].index_of(uid)
            pos = draw(st.integers(0, len(vals) - 1).filter(lambda p: p != me))
            vals[pos] = draw(st.sampled_from([math.nan, math.inf, -math.inf]))
            rep["neighbors"]["values"] = base64.b64encode(vals.tobytes()).decode()
            return request(rid, uid, rep, "NaN/inf encoded in LocalLap values")
        value: Any = draw(st.sampled_from([math.nan, math.inf, -math.inf])) if how == "token" \
            else draw(st.sampled_from(["NaN", "nan", "Infinity", "-Infinity", "inf", "1e999"]))
        slots = [("int", x) for x in int_fields(rep)] + \
            [("list", x) for x in list_fields(rep)] + \
            [("str", (k, f)) for k, o in rep.items() for f, v in o.items()
             if isinstance(v, str)]
        kind, (key, fld) = draw(st.sampled_from(slots))
        if kind == "list":
            rep[key][fld] = [*rep[key][fld], value]
        else:
            rep[key][fld] = value
        return request(rid, uid, rep, f"{how} {value!r} in {key}.{fld}")

    @st.composite
    def bad_base64(draw: Any) -> FuzzRequest:
        rid, uid, rep = draw(fresh_user(lap_rounds()))
        text: str = rep["neighbors"]["values"]
        how = draw(st.sampled_from(["char", "padding", "urlsafe", "whitespace", "unicode",
                                    "truncate-pad"]))
        if how == "char":
            pos = draw(st.integers(0, len(text) - 3))
            text = text[:pos] + draw(st.sampled_from(list("!@#$%^&*()[]{}.,;:?\\\"'`~")))\
                + text[pos + 1:]
        elif how == "padding":
            text = text.rstrip("=") + draw(st.sampled_from(["=", "==", "===", "A=", "=A",
                                                            "A", "AA"]))
        elif how == "urlsafe":
            pos = draw(st.integers(0, len(text) - 3))
            text = text[:pos] + draw(st.sampled_from(["-", "_"])) + text[pos + 1:]
        elif how == "whitespace":
            pos = draw(st.integers(0, len(text) - 1))
            text = text[:pos] + draw(st.sampled_from([" ", "\n", "\t", "\r\n"])) + \
                text[pos + 1:]
        elif how == "unicode":
            pos = draw(st.integers(0, len(text) - 1))
            no_surrogates: Any = ("Cs",)
            ch = draw(st.characters(min_codepoint=128, exclude_categories=no_surrogates))
            text = text[:pos] + ch + text[pos + 1:]
        else:
            cut = draw(st.integers(1, 8))
            text = text[:-cut] + "=" * cut
            if text == rep["neighbors"]["values"]:
                text = "*" + text[1:]
        if text == rep["neighbors"]["values"]:  # the draw happened to restore it
            text = "*" + text[1:]
        rep["neighbors"]["values"] = text
        return request(rid, uid, rep, f"base64 {how}")

    @st.composite
    def wrong_lengths(draw: Any) -> FuzzRequest:
        import numpy as np
        if draw(st.booleans()):
            rid, uid, rep = draw(fresh_user(lap_rounds()))
            n = len(t.rounds[rid])
            k = draw(st.integers(0, 2 * n + 3).filter(lambda v: v != n))
            vals = np.zeros(k, "<f8")
            raw = vals.tobytes()
            if draw(st.booleans()) and k > 0:  # or bytes that are not a whole float
                raw = raw[:-draw(st.integers(1, 7))]
            rep["neighbors"]["values"] = base64.b64encode(raw).decode()
            return request(rid, uid, rep, f"{len(raw)} bytes of values, n = {n}")
        rid, uid, rep = draw(fresh_user(feat_rounds()))
        item = t.item(rid, "features")
        fld = draw(st.sampled_from(["indices", "signs", "both"]))
        m = item.m
        size = draw(st.integers(0, item.spec.dim + 2).filter(lambda v: v != m))
        idx = list(range(size))
        signs = [1] * size
        if fld in ("indices", "both"):
            rep["features"]["indices"] = idx
        if fld in ("signs", "both"):
            rep["features"]["signs"] = signs
        return request(rid, uid, rep, f"features {fld} of length {size}, m = {m}")

    @st.composite
    def deep_nesting(draw: Any) -> FuzzRequest:
        rid, uid, rep = draw(fresh_user(lap_rounds() if draw(st.booleans()) else None))
        depth = draw(st.one_of(st.integers(2, 60), st.integers(900, 1100),
                               st.integers(1100, 4000)))
        opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
        nested = opener * depth + "1" + closer * depth
        where = draw(st.sampled_from(["report", "item", "field", "user_id", "top"]))
        key = sorted(rep)[0]
        fld = sorted(rep[key])[0]
        marker = "\u0000NESTED\u0000"
        if where == "top":
            return request(rid, uid, None, f"depth {depth} document",
                           body=nested.encode())
        if where == "report":
            top = {"user_id": uid, "report": marker}
        elif where == "item":
            rep[key] = marker
            top = {"user_id": uid, "report": rep}
        elif where == "field":
            rep[key][fld] = marker
            top = {"user_id": uid, "report": rep}
        else:
            top = {"user_id": marker, "report": rep}
        text = json.dumps(top).replace(json.dumps(marker), nested)
        return request(rid, uid, None, f"depth {depth} in {where}", body=text.encode())

    @st.composite
    def not_json(draw: Any) -> FuzzRequest:
        rid, uid, rep = draw(fresh_user())
        good = _dumps({"user_id": uid, "report": rep})
        how = draw(st.sampled_from(["bytes", "utf8-invalid", "empty", "truncated",
                                    "trailing", "utf16", "bom", "single-quotes", "scalar",
                                    "text"]))
        if how == "bytes":
            body = draw(st.binary(max_size=300))
        elif how == "utf8-invalid":
            pos = draw(st.integers(0, len(good)))
            body = good[:pos] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80",
                                                      b"\xf8\x88\x80\x80\x80"])) + good[pos:]
        elif how == "empty":
            body = b""
        elif how == "truncated":
            body = good[:draw(st.integers(0, len(good) - 1))]
        elif how == "trailing":
            body = good + draw(st.sampled_from([b"x", b"}", b",", b"{}", b" 1", b"\x00"]))
        elif how == "utf16":
            body = good.decode().encode(draw(st.sampled_from(["utf-16", "utf-16-le",
                                                              "utf-32"])))
        elif how == "bom":
            body = b"\xef\xbb\xbf" + good
        elif how == "single-quotes":
            body = good.replace(b'"', b"'")
        elif how == "scalar":
            body = _dumps(draw(st.one_of(json_scalars, st.lists(json_scalars, max_size=3))))
        else:
            body = draw(st.text(max_size=200)).encode("utf-8", "surrogatepass")
        try:  # keep only what the server cannot read as a submission object
            obj = json.loads(body.decode("utf-8"))
            if isinstance(obj, dict) and set(obj) == {"user_id", "report"}:
                body = b"[" + body
        except (ValueError, UnicodeDecodeError, RecursionError):
            pass
        return request(rid, uid, None, how, body=body)

    @st.composite
    def wrong_content(draw: Any) -> FuzzRequest:
        how = draw(st.sampled_from(["other-round-shape", "second-different-report",
                                    "closed-round", "outsider", "content-type"]))
        if how == "other-round-shape":
            rid, uid, _ = draw(fresh_user())
            other = draw(st.sampled_from([r for r in open_ids
                                          if _shape(t, r) != _shape(t, rid)]))
            rep = json.loads(json.dumps(next(iter(t.fresh[other].values()))))
            return request(rid, uid, rep, f"a {other} report sent to {rid}")
        if how == "second-different-report":
            rid = draw(st.sampled_from(sorted(r for r in t.reported if t.reported[r]
                                              and r != CLOSED)))
            uid = draw(st.sampled_from(sorted(t.reported[rid])))
            have = canonical_json(t.reported[rid][uid])
            pool = [canonical_json(v) for v in t.fresh[rid].values()]
            text = draw(st.sampled_from([p for p in pool if p != have]))
            return request(rid, uid, json.loads(text), "a second, different report (409)")
        if how == "closed-round":
            rid = CLOSED
            uid = draw(st.sampled_from(sorted(t.fresh[rid])))
            return request(rid, uid, t.fresh[rid][uid], "a valid report to a closed round")
        if how == "outsider":
            rid, uid, rep = draw(fresh_user())
            return request(rid, t.outsider, rep, "a user outside the population (403)")
        rid, uid, rep = draw(fresh_user())
        rep = draw(st.sampled_from([{}, [], "report", {"x": 1}]))
        r = request(rid, uid, rep, "wrong content type")
        headers = dict(r.headers)
        headers["Content-Type"] = draw(st.sampled_from(["text/plain", "application/xml",
                                                        "multipart/form-data",
                                                        "application/x-www-form-urlencoded"]))
        return FuzzRequest(category, r.path, headers, r.body, note=r.note)

    @st.composite
    def oversized(draw: Any) -> FuzzRequest:
        rid, uid, rep = draw(fresh_user(
            [r for r in open_ids if t.limits[r] < 64 * 2**20]))
        limit = t.limits[rid]
        size = draw(st.one_of(st.integers(limit + 1, limit + 64),
                              st.integers(limit + 1, 4 * limit),
                              st.integers(2**20, 8 * 2**20)))
        good = _dumps({"user_id": uid, "report": rep})
        pad = draw(st.sampled_from([b" ", b"0", b"\x00"]))
        body = good[:-1] + pad * max(size - len(good), 1) + b"}"
        stream = draw(st.booleans())
        r = request(rid, uid, rep, f"{len(body)} bytes, limit {limit}"
                    + (" (chunked)" if stream else ""), body=body)
        return FuzzRequest(category, r.path, r.headers, r.body, stream, r.note)

    @st.composite
    def bad_tokens(draw: Any) -> FuzzRequest:
        rid, uid, rep = draw(fresh_user())
        mine = t.tokens[uid]
        body = _dumps({"user_id": uid, "report": rep})
        how = draw(st.sampled_from(["none", "basic", "empty", "other-user", "random",
                                    "altered", "truncated", "extended", "long",
                                    "no-scheme", "outsider"]))
        headers = {"Content-Type": "application/json"}
        if how == "basic":
            headers["Authorization"] = "Basic " + base64.b64encode(
                f"{uid}:{mine}".encode()).decode()
        elif how == "empty":
            # (a value ending in white space is not a legal header: clients refuse it)
            headers["Authorization"] = draw(st.sampled_from(["Bearer", "", "bearer",
                                                             "Bearer\t-"]))
        elif how == "other-user":
            other = draw(st.sampled_from(sorted(u for u in t.tokens if u != uid)))
            headers["Authorization"] = f"Bearer {t.tokens[other]}"
        elif how == "random":
            tok = draw(st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126),
                               min_size=1, max_size=80))
            headers["Authorization"] = f"Bearer {tok}"
        elif how == "altered":
            pos = draw(st.integers(0, len(mine) - 1))
            ch = draw(st.sampled_from("ABCDEFabcdef0123456789-_").filter(
                lambda c: c != mine[pos]))
            headers["Authorization"] = f"Bearer {mine[:pos]}{ch}{mine[pos + 1:]}"
        elif how == "truncated":
            headers["Authorization"] = f"Bearer {mine[:draw(st.integers(1, len(mine) - 1))]}"
        elif how == "extended":
            headers["Authorization"] = f"Bearer {mine}" + draw(st.text(
                alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1,
                max_size=5))
        elif how == "long":
            headers["Authorization"] = "Bearer " + "A" * draw(st.integers(1000, 12000))
        elif how == "no-scheme":
            headers["Authorization"] = mine
        elif how == "outsider":
            headers["Authorization"] = f"Bearer {t.tokens[t.outsider]}"
        return FuzzRequest(category, quote(rid, safe=""), headers, body, note=how)

    @st.composite
    def bad_user_ids(draw: Any) -> FuzzRequest:
        rid, uid, rep = draw(fresh_user())
        bad = draw(st.one_of(
            st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
            st.lists(st.just(uid), min_size=1, max_size=2), st.just({"id": uid}),
            st.sampled_from(["", " ", f" {uid}", f"{uid} ", f"{uid}\u0000", "\u0000",
                             "\ud800", f"{uid}\udc80", "x" * 201, "x" * 5000,
                             "\u202e" + uid, uid + "\n", "nobody", "-1", "1e3",
                             str(len(t.rounds[rid]))]),
            st.text(max_size=12).filter(lambda s: s not in t.tokens)))
        token = draw(st.sampled_from([t.tokens[uid], t.tokens[t.outsider]]))
        top = {"user_id": bad, "report": rep}
        return request(rid, uid, None, f"user_id {bad!r:.40}", token=token,
                       body=json.dumps(top, ensure_ascii=True).encode())

    @st.composite
    def bad_round_ids(draw: Any) -> FuzzRequest:
        _rid, uid, rep = draw(fresh_user())
        seg = draw(st.one_of(
            st.sampled_from(["nope", "%00", "fz-rr%00", "%ff", "%c3%28", "%ed%a0%80",
                             "..", "%2e%2e", "fz-rr%2Fx", "x" * 300, "x" * 5000, "%20",
                             "fz-rr%20", "FZ-RR", "fz-rr%0a", "%e2%80%ae", "%25"]),
            st.text(min_size=1, max_size=20).map(lambda s: quote(s, safe="")).filter(
                lambda s: s not in {quote(r, safe="") for r in t.rounds})),
        )
        body = _dumps({"user_id": uid, "report": rep})
        return FuzzRequest(category, seg, _auth(t.tokens[uid]), body,
                           note=f"round {seg[:40]!r}")

    table: dict[str, Callable[[], Any]] = {
        "wrong_types": wrong_types, "missing_fields": missing_fields,
        "extra_fields": extra_fields, "out_of_range_ids": out_of_range_ids,
        "unsorted_or_duplicate_ids": unsorted_or_duplicate_ids, "self_id": self_id,
        "huge_ints": huge_ints, "floats": floats, "nan_and_infinity": nan_and_infinity,
        "bad_base64": bad_base64, "wrong_lengths": wrong_lengths,
        "deep_nesting": deep_nesting, "not_json": not_json, "wrong_content": wrong_content,
        "oversized": oversized, "bad_tokens": bad_tokens, "bad_user_ids": bad_user_ids,
        "bad_round_ids": bad_round_ids,
    }
    return table[category]()


def _shape(t: FuzzTarget, rid: str) -> tuple[Any, ...]:
    """What a round's report looks like: its items, each item's fields, and the sizes a
    report must have (population, feature dimension and sample count, classes). Two rounds
    of different shapes refuse each other's reports."""
    out: list[Any] = []
    rnd = t.rounds[rid]
    some = next(iter(t.fresh[rid].values()))
    for key in rnd.items:
        item = t.item(rid, key)
        sizes: tuple[int, ...] = (len(rnd),)
        if key == "features":
            sizes = (item.spec.dim, item.m)
        elif key == "labels":
            sizes = (item.spec.classes,)
        out.append((key, tuple(sorted(some[key])), sizes))
    return tuple(out)


def prepare(db: Any, n: int = 1000, *, baseline: int = 5, seed: int = 0,
            fresh_per_round: int = 20) -> FuzzTarget:
    """Set up a database for fuzzing and return the target: the population "0".."n-1" and
    an outsider enrolled (in bulk), every :func:`fuzz_rounds` round opened, users
    "0".."baseline-1" of every round holding a valid report (so that a refused request
    has something to leave unchanged), and the closed round closed."""
    from dpgl.service.operator import open_round
    specs = fuzz_rounds(n)
    db.set_lifetime({"edge-LDP": 1000.0, "feature-LDP": 1000.0, "label-LDP": 1000.0})
    ids = [str(i) for i in range(n)] + [OUTSIDER]
    tokens = dict(zip(ids, db.enroll_many(ids), strict=True))
    reported: dict[str, dict[str, dict[str, Any]]] = {}
    for spec in specs:
        open_round(db, spec)
        rnd = Round(spec)
        reported[spec.round_id] = {}
        for i in range(baseline):
            rep = valid_report(rnd, i, seed + 1)
            db.submit(spec.round_id, str(i), canonical_json(rep))
            reported[spec.round_id][str(i)] = rep
    db.close_round(CLOSED)
    return FuzzTarget.build(specs, tokens, reported, OUTSIDER, fresh_per_round, seed)


def stored_state(db: Any) -> dict[str, tuple[int, str]]:
    """Per round: (stored reports, SHA-256 over their user ids and payload hashes)."""
    import hashlib

    import sqlalchemy as sa

    from dpgl.service.db import reports
    out: dict[str, tuple[int, str]] = {}
    with db.engine.connect() as conn:
        rows = conn.execute(sa.select(reports.c.round_id, reports.c.user_id,
                                      reports.c.sha256).order_by(reports.c.round_id,
                                                                 reports.c.user_id)).all()
    by: dict[str, list[str]] = {}
    for rid, uid, sha in rows:
        by.setdefault(rid, []).append(f"{uid}:{sha}")
    for rid, lst in by.items():
        out[rid] = (len(lst), hashlib.sha256("\n".join(lst).encode()).hexdigest())
    return out
