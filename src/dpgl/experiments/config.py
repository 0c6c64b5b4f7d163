"""One run of an experiment: its configuration (:class:`RunConfig`) and its outcome
(:class:`RunResult`).

A run is identified by :meth:`RunConfig.key`, the sha256 of the configuration's canonical
JSON (sorted keys, integral floats written as integers so that ``1 == 1.0``, no whitespace).
Two configurations with the same key are the same run: the run store keeps one row per key,
which is what makes re-running a grid skip finished runs. :meth:`RunConfig.hparam_key` is the
same hash without the seed; it names a hyper-parameter configuration for model selection.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from dpgl.errors import ConfigError


def _numpy() -> Any:
    """NumPy if it is loaded, else None: a NumPy value can only exist once NumPy is imported,
    so the checks below never import it (argument errors stay fast)."""
    return sys.modules.get("numpy")

#: Fields of :class:`RunConfig` that may not be repeated inside ``params``.
RESERVED_PARAMS = ("task", "dataset", "method", "model", "epsilon", "seed", "data")

#: The dataset preprocessing options (:class:`dpgl.methods.params.DataParams`): a run's
#: ``data`` section. Given among ``params`` (``-p``, older grids) they move to ``data``.
DATA_OPTIONS = ("features", "normalize_features", "normalize_rows", "largest_component",
                "top_k_classes")


# --------------------------------------------------------------------------------------
# canonical JSON
# --------------------------------------------------------------------------------------


def canonical_value(value: Any, where: str = "value") -> Any:
    """``value`` as plain JSON data with one spelling per value.

    Integral floats become ints (``1.0 -> 1``), tuples become lists, NumPy scalars and
    arrays become Python numbers and lists. NaN is refused (it is not equal to itself, so
    it cannot identify a run); +-inf is kept. Raises :class:`ConfigError` for anything that
    is not JSON data (objects, sets, non-string keys).
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    np = _numpy()
    if np is not None and isinstance(value, np.ndarray):
        return canonical_value(value.tolist(), where)
    if np is not None and isinstance(value, np.generic):
        return canonical_value(value.item(), where)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isnan(value):
            raise ConfigError(f"{where} is NaN; use a number")
        if math.isfinite(value) and value.is_integer() and abs(value) < 2**53:
            return int(value)
        return float(value)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ConfigError(f"{where} has a non-string key {k!r}; keys must be strings")
            out[k] = canonical_value(v, f"{where}.{k}")
        return out
    if isinstance(value, (list, tuple)):
        return [canonical_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    raise ConfigError(
        f"{where} = {value!r} is a {type(value).__name__}; allowed: numbers, strings, booleans, "
        "null, lists and mappings"
    )


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value`` (sorted keys, compact, integral floats as ints)."""
    return json.dumps(canonical_value(value), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, allow_nan=True)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------------------
# pydantic errors -> one line
# --------------------------------------------------------------------------------------


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


class _FieldError(ConfigError):
    """A ConfigError raised while validating a nested model; keeps the field path so the
    enclosing model can report ``outer.inner: message``."""

    def __init__(self, text: str, loc: tuple[Any, ...], msg: str) -> None:
        super().__init__(text)
        self.loc = loc
        self.msg = msg


def _first_error(err: ValidationError) -> tuple[tuple[Any, ...], str]:
    """The first problem's field path and message, with every other problem appended
    (``; also field: message``), so that one run of a grid shows all of them."""
    errors = err.errors(include_url=False)
    loc, msg = _one_error(errors[0])
    for other in errors[1:]:
        where, text = _one_error(other)
        msg += f"; also {_loc(where)}: {text}" if where else f"; also {text}"
    return loc, msg


def _one_error(first: Any) -> tuple[tuple[Any, ...], str]:
    loc = tuple(first["loc"])
    msg = first["msg"]
    kind = first["type"]
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, _FieldError):
        loc, msg = loc + cause.loc, cause.msg
    elif kind == "value_error" and cause is not None:
        msg = str(cause)
    elif kind == "missing":
        msg = "required field is missing"
    elif "input" in first:
        shown = repr(first["input"])
        if len(shown) > 60:
            shown = shown[:57] + "..."
        msg = f"{msg}, got {shown}"
    return loc, msg


def format_validation_error(err: ValidationError, source: str) -> str:
    """A pydantic :class:`ValidationError` as one line: ``source: field: what is wrong``."""
    loc, msg = _first_error(err)
    where = _loc(loc)
    return f"{source}: {where}: {msg}" if where else f"{source}: {msg}"


class _Model(BaseModel):
    """Base of the experiment models: frozen, unknown keys refused, errors as ConfigError.

    Constructing one directly (``RunConfig(...)``) or through :meth:`parse` raises a
    one-line :class:`ConfigError` instead of pydantic's multi-line ``ValidationError``.
    (Pydantic calls an overridden ``__init__`` for nested models too; :class:`_FieldError`
    carries the inner field path out to the enclosing model's message.)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as e:
            loc, msg = _first_error(e)
            where = _loc(loc)
            text = f"{type(self).__name__}: {where}: {msg}" if where else \
                f"{type(self).__name__}: {msg}"
            raise _FieldError(text, loc, msg) from None

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            allowed = list(cls.model_fields)
            for key in data:
                if key not in allowed:
                    raise ValueError(f"unknown key {key!r}; allowed: {', '.join(allowed)}")
        return data

    @classmethod
    def parse(cls, data: Any, source: str | None = None) -> Any:
        """Validate ``data`` (a mapping); errors become one-line :class:`ConfigError`."""
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise ConfigError(format_validation_error(e, source or cls.__name__)) from None


# --------------------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------------------


class RunConfig(_Model):
    """Everything that determines one run: task, dataset, method, model, privacy budget,
    seed and the hyper-parameters / method options in ``params``.

    ``epsilon`` is the total budget of a private method (None for a non-private one).
    ``params`` holds JSON data only (numbers, strings, booleans, null, lists, mappings);
    integral floats are stored as ints so ``{"hidden": 64.0}`` and ``{"hidden": 64}`` are
    the same run.
    """

    task: Literal["node", "graph"] = "node"
    dataset: str
    method: str = "none"
    model: str = "gcn"
    epsilon: float | None = None
    seed: int = Field(0, ge=0)
    params: dict[str, Any] = Field(default_factory=dict)
    #: dataset preprocessing (:data:`DATA_OPTIONS`), apart from the method's parameters
    data: dict[str, Any] = Field(default_factory=dict)

    @field_validator("dataset", "method", "model")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v or v != v.strip():
            raise ValueError(f"must be a non-empty name without surrounding spaces, got {v!r}")
        return v

    @field_validator("epsilon", mode="before")
    @classmethod
    def _epsilon(cls, v: Any) -> Any:
        if v is None:
            return None
        if isinstance(v, bool):
            raise ValueError(f"must be a number > 0 or null, got {v!r}")
        try:
            value = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"must be a number > 0 or null, got {v!r}") from None
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"must be a finite number > 0 (or null for non-private), got {v!r}")
        return value

    @field_validator("seed", mode="before")
    @classmethod
    def _seed(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError(f"must be an integer >= 0, got {v!r}")
        np = _numpy()
        if np is not None and isinstance(v, np.integer):
            return int(v)
        return v

    @model_validator(mode="before")
    @classmethod
    def _data_section(cls, data: Any) -> Any:
        """Preprocessing options given among the params (``-p features=...``) belong to the
        ``data`` section: one place, whichever way they were given."""
        if isinstance(data, Mapping) and isinstance(data.get("params"), Mapping):
            moved = {k: v for k, v in data["params"].items() if k in DATA_OPTIONS}
            if moved:
                section = data.get("data") or {}
                if not isinstance(section, Mapping):
                    return data  # the field validator reports it
                twice = sorted(set(moved) & set(section))
                if twice:
                    raise ValueError(f"{twice[0]!r} is given in both data and params")
                data = {**data, "data": {**section, **moved},
                        "params": {k: v for k, v in data["params"].items()
                                   if k not in DATA_OPTIONS}}
        return data

    @field_validator("data", mode="before")
    @classmethod
    def _data(cls, v: Any) -> Any:
        def check(name: str) -> None:
            if name not in DATA_OPTIONS:
                raise ValueError(f"unknown data option {name!r}; allowed: "
                                 f"{', '.join(DATA_OPTIONS)}")

        return _json_mapping(v, "data", check)

    @model_validator(mode="before")
    @classmethod
    def _current_names(cls, data: Any) -> Any:
        """Old parameter names become the current ones (with a warning; docs/glossary.md), so
        that a run has one key whichever name its configuration used."""
        if isinstance(data, Mapping) and isinstance(data.get("params"), Mapping) \
                and data["params"]:
            model = _params_model(str(data.get("method", "none")), str(data.get("task", "node")))
            if model is not None:
                data = {**data, "params": model.canonical(data["params"])}
        return data

    @field_validator("params", mode="before")
    @classmethod
    def _params(cls, v: Any) -> Any:
        def check(name: str) -> None:
            if name in RESERVED_PARAMS:
                raise ValueError(
                    f"{name!r} is a run field, not a hyper-parameter; set it outside params"
                )

        return _json_mapping(v, "params", check)

    def canonical(self, *, seed: bool = True) -> dict[str, Any]:
        """The configuration as canonical JSON data (optionally without the seed). The data
        options are written among the params, as before there was a ``data`` section, so a
        run's key and stored JSON do not depend on where they were given."""
        data = self.model_dump()
        data["params"] = {**data["params"], **data.pop("data")}
        if not seed:
            del data["seed"]
        return canonical_value(data)

    def to_json(self) -> str:
        """Canonical JSON text of the whole configuration."""
        return canonical_json(self.canonical())

    def key(self) -> str:
        """Stable identifier of the run: sha256 (hex) of the canonical JSON."""
        return _sha256(canonical_json(self.canonical()))

    def hparam_key(self) -> str:
        """Identifier of the hyper-parameter configuration: the key of everything but the
        seed. Runs that differ only in their seed share it."""
        return _sha256(canonical_json(self.canonical(seed=False)))

    def label(self) -> str:
        """Short human-readable description (for progress displays and messages)."""
        eps = "-" if self.epsilon is None else f"{self.epsilon:g}"
        extra = ",".join(f"{k}={v}" for k, v in sorted({**self.params, **self.data}.items()))
        text = f"{self.dataset}/{self.model}/{self.method} eps={eps} seed={self.seed}"
        return f"{text} {extra}" if extra else text

    def __hash__(self) -> int:
        return hash(self.key())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunConfig):
            return NotImplemented
        return self.key() == other.key()


def _json_mapping(v: Any, where: str, check: Any) -> Any:
    """A ``name: value`` mapping of JSON data (None: empty), every name passing ``check``."""
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise ValueError(f"must be a mapping of name: value, got {type(v).__name__}")
    for name in v:
        check(name)
    try:
        return canonical_value(dict(v), where)
    except ConfigError as e:
        raise ValueError(str(e)) from None


def _params_model(method: str, task: str) -> Any:
    """The parameter model of a registered method and task (None when either is unknown: the
    run's validation reports that with the list of names)."""
    from dpgl.methods import get_method

    try:
        return get_method(method).params_model(task)
    except (ConfigError, KeyError):
        return None


def _float_map(v: Any, field: str) -> dict[str, float]:
    if not isinstance(v, Mapping):
        raise ValueError(f"must be a mapping of name: number, got {type(v).__name__}")
    out: dict[str, float] = {}
    for k, x in v.items():
        if not isinstance(k, str):
            raise ValueError(f"has a non-string key {k!r}")
        if x is None:  # undefined (e.g. AUC with one class): stored as NaN
            out[k] = math.nan
            continue
        np = _numpy()
        numpy_number = np is not None and isinstance(x, (np.integer, np.floating))
        if isinstance(x, bool) or not (isinstance(x, (int, float)) or numpy_number):
            raise ValueError(f"{field}[{k!r}] must be a number, got {x!r}")
        out[k] = float(x)
    return out


class RunResult(_Model):
    """What one finished run produced.

    ``metrics``: numbers such as ``test_accuracy``, ``val_accuracy`` (fractions, not
    percent). ``privacy``: ``PrivacyReport.to_dict()`` (opaque JSON here). ``timing``:
    seconds (``total``, ``fit``, ...). ``info``: other JSON data computed from released or
    public data. ``diagnostics``: evaluation-only values computed from private data (never
    part of a release; stored apart and labelled as such).
    """

    metrics: dict[str, float]
    privacy: dict[str, Any] = Field(default_factory=dict)
    timing: dict[str, float] = Field(default_factory=dict)
    info: dict[str, Any] = Field(default_factory=dict)
    diagnostics: dict[str, Any] = Field(default_factory=dict)

    @field_validator("metrics", mode="before")
    @classmethod
    def _metrics(cls, v: Any) -> Any:
        return _float_map(v, "metrics")

    @field_validator("timing", mode="before")
    @classmethod
    def _timing(cls, v: Any) -> Any:
        return _float_map(v, "timing")

    @field_validator("privacy", "info", "diagnostics", mode="before")
    @classmethod
    def _json(cls, v: Any) -> Any:
        if v is None:
            return {}
        if not isinstance(v, Mapping):
            raise ValueError(f"must be a mapping, got {type(v).__name__}")
        return _jsonable(dict(v))


def _jsonable(value: Any) -> Any:
    """Plain JSON data (NumPy scalars/arrays converted; NaN and inf kept; other objects as
    their ``str``) for the free-form ``privacy`` and ``info`` dictionaries."""
    np = _numpy()
    if np is not None and isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if np is not None and isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return str(value)
