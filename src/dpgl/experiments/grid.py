"""Experiment grids: datasets x models x methods x epsilons x hyper-parameters x seeds,
described in YAML and expanded into a deterministic list of :class:`RunConfig`.

Schema (``docs/experiments.md`` has the long version)::

    name: blink-quick          # optional; defaults to the file name without extension
    task: node                 # node | graph
    datasets: [cora, citeseer] # a name or a non-empty list
    models: [gcn]              # default [gcn]
    seeds: 10                  # int n -> seeds 0..n-1, or an explicit list of ints >= 0
    epsilons: [1, 4, 8]        # total budgets, used by private methods only
    methods:
      - none                   # a bare name, or a mapping:
      - name: blink-hard
        params: {degree_share: [0.1, 0.5, 0.9]}   # lists are axes, scalars fixed
        epsilons: [1, 8]       # optional: this method's own epsilons
    params:                    # shared hyper-parameters (lists are axes)
      lr: [0.01, 0.005]
      dropout: 0.5
    data: {largest_component: true}   # dataset preprocessing (lists are axes)
    selection: {metric: val_accuracy, mode: max, report: [test_accuracy]}

Rules. A list under ``params`` is an axis; to fix a list-valued parameter, wrap it once more
(``hidden_dims: [[64, 64]]``). A method's ``params`` override the shared ones key by key.
Whether a method takes epsilon is asked of the ``is_private`` predicate given to
:meth:`GridSpec.expand`; a non-private method runs once with ``epsilon=None`` instead of once
per epsilon. Expansion order: dataset, model, method (file order), epsilon (file order),
hyper-parameter combination (parameter names sorted, values in file order), seed; repeated
configurations are kept once. YAML floats may be written ``1e-3`` (YAML 1.2 style); duplicate
keys are refused.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, PrivateAttr, field_validator

from dpgl.errors import ConfigError, DpglError, unknown_name
from dpgl.experiments.config import (
    DATA_OPTIONS,
    RESERVED_PARAMS,
    RunConfig,
    _Model,
    canonical_value,
)

#: A name check: a callable that raises (DpglError/LookupError/ValueError) or returns False
#: for an unknown name, or the collection of allowed names.
NameValidator = Callable[[str], Any] | Iterable[str]


# --------------------------------------------------------------------------------------
# YAML
# --------------------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """SafeLoader that reads ``1e-3`` as a float (YAML 1.2) and refuses duplicate keys (merge
    keys ``<<: *anchor`` are allowed)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *anchor` (merged, then overridden, by SafeLoader)
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if isinstance(key, (str, int, float, bool)) or key is None:
                if key in seen:
                    line = key_node.start_mark.line + 1
                    raise ConfigError(f"duplicate key {key!r} at line {line}")
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"grid file {str(path)!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        raise ConfigError(f"cannot read grid file {str(path)!r}: {reason}") from None
    try:
        return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = e.problem or e.context or "syntax error"
        raise ConfigError(f"{path}: invalid YAML{where}: {problem}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: invalid YAML: {str(e).splitlines()[0]}") from None


# --------------------------------------------------------------------------------------
# the schema
# --------------------------------------------------------------------------------------


def _as_list(v: Any) -> Any:
    """A scalar stands for a one-element list."""
    if v is None or isinstance(v, (list, tuple)):
        return v
    return [v]


def _non_empty_unique(v: list[Any]) -> list[Any]:
    if not v:
        raise ValueError("must not be empty")
    seen: list[Any] = []
    for x in v:
        if x in seen:
            raise ValueError(f"duplicate value {x!r}")
        seen.append(x)
    return v


def _check_param_grid(v: Any) -> dict[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise ValueError(f"must be a mapping of name: value or name: [values], got {v!r}")
    out: dict[str, Any] = {}
    for name, value in v.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"parameter names must be non-empty strings, got {name!r}")
        if name in RESERVED_PARAMS:
            raise ValueError(
                f"{name!r} is not a hyper-parameter; use the grid's "
                f"{'seeds' if name == 'seed' else name + 's'} key"
            )
        try:
            value = canonical_value(value, name)
        except ConfigError as e:
            raise ValueError(str(e)) from None
        if isinstance(value, list) and not value:
            raise ValueError(f"{name}: an axis must list at least one value (got [])")
        out[name] = value
    return out


def _check_epsilons(v: list[float] | None) -> list[float] | None:
    if v is None:
        return None
    for x in v:
        if not math.isfinite(x) or x <= 0:
            raise ValueError(f"every epsilon must be a finite number > 0, got {x!r}")
    return _non_empty_unique(v)


class MethodSpec(_Model):
    """One entry of ``methods``: a method name, its own parameter grid and (optionally) its
    own epsilons."""

    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    epsilons: list[float] | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must be a non-empty method name")
        return v

    @field_validator("params", mode="before")
    @classmethod
    def _params(cls, v: Any) -> Any:
        return _check_param_grid(v)

    @field_validator("epsilons", mode="before")
    @classmethod
    def _eps_list(cls, v: Any) -> Any:
        return _as_list(v)

    @field_validator("epsilons")
    @classmethod
    def _eps(cls, v: list[float] | None) -> list[float] | None:
        return _check_epsilons(v)


class SelectionSpec(_Model):
    """Model selection: pick the hyper-parameters with the best mean ``metric`` over seeds
    (``mode`` max or min), then report the ``report`` metrics over that configuration's
    seeds."""

    metric: str = "val_accuracy"
    mode: Literal["max", "min"] = "max"
    report: list[str] = Field(default_factory=lambda: ["test_accuracy"])

    @field_validator("report", mode="before")
    @classmethod
    def _report_list(cls, v: Any) -> Any:
        return _as_list(v)

    @field_validator("report")
    @classmethod
    def _report(cls, v: list[str]) -> list[str]:
        return _non_empty_unique(v)


def _default_is_private(method: str) -> bool:
    try:
        from dpgl.methods import get_method
    except ImportError:
        raise ConfigError(
            "cannot tell which methods are private: the dpgl.methods registry is unavailable; "
            "pass is_private= to GridSpec.expand"
        ) from None
    return bool(get_method(method).private)


def _trains(method: str, model: str, task: str) -> bool:
    """Whether ``method`` trains ``model`` (:meth:`dpgl.methods.Method.trains`; any model when
    the method is not registered or outside the node task)."""
    if task != "node":
        return True
    try:
        from dpgl.methods import get_method
        trains = getattr(get_method(method), "trains", None)
        return trains is None or trains(model)
    except (ImportError, ConfigError):
        return True


class GridSpec(_Model):
    """A grid of runs (see the module docstring for the YAML schema)."""

    name: str
    task: Literal["node", "graph"] = "node"
    datasets: list[str]
    models: list[str] = Field(default_factory=lambda: ["gcn"])
    methods: list[MethodSpec]
    epsilons: list[float] = Field(default_factory=list)
    seeds: list[int]
    params: dict[str, Any] = Field(default_factory=dict)
    #: dataset preprocessing (:data:`dpgl.experiments.config.DATA_OPTIONS`; lists are axes)
    data: dict[str, Any] = Field(default_factory=dict)
    selection: SelectionSpec = Field(default_factory=SelectionSpec)

    _source: str = PrivateAttr(default="grid")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must be a non-empty string")
        return v

    @field_validator("datasets", "models", mode="before")
    @classmethod
    def _lists(cls, v: Any) -> Any:
        return _as_list(v)

    @field_validator("methods", mode="before")
    @classmethod
    def _methods(cls, v: Any) -> Any:
        v = _as_list(v)
        if isinstance(v, (list, tuple)):
            return [{"name": m} if isinstance(m, str) else m for m in v]
        return v

    @field_validator("datasets", "models")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        for x in v:
            if not x.strip():
                raise ValueError("names must be non-empty strings")
        return _non_empty_unique(v)

    @field_validator("methods")
    @classmethod
    def _method_list(cls, v: list[MethodSpec]) -> list[MethodSpec]:
        if not v:
            raise ValueError("must not be empty")
        return v

    @field_validator("epsilons", mode="before")
    @classmethod
    def _eps_list(cls, v: Any) -> Any:
        return [] if v is None else _as_list(v)

    @field_validator("epsilons")
    @classmethod
    def _eps(cls, v: list[float]) -> list[float]:
        if not v:  # no epsilons: fine unless a private method needs them (see expand)
            return []
        return _check_epsilons(v) or []

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds_before(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError(f"must be a number of seeds (int >= 1) or a list of ints, got {v!r}")
        if isinstance(v, int):
            if v < 1:
                raise ValueError(f"a number of seeds must be >= 1, got {v}")
            return list(range(v))
        if isinstance(v, (list, tuple)):
            for s in v:
                if isinstance(s, bool) or not isinstance(s, int) or s < 0:
                    raise ValueError(f"seeds must be integers >= 0, got {s!r}")
            return v
        raise ValueError(f"must be a number of seeds (int >= 1) or a list of ints >= 0, "
                         f"got {v!r}")

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v: list[int]) -> list[int]:
        return _non_empty_unique(v)

    @field_validator("params", mode="before")
    @classmethod
    def _params(cls, v: Any) -> Any:
        return _check_param_grid(v)

    @field_validator("data", mode="before")
    @classmethod
    def _data(cls, v: Any) -> Any:
        v = _check_param_grid(v)
        unknown = sorted(set(v) - set(DATA_OPTIONS))
        if unknown:
            raise ValueError(f"unknown data option {unknown[0]!r}; allowed: "
                             f"{', '.join(DATA_OPTIONS)}")
        return v

    # ----------------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Any, source: str = "grid") -> GridSpec:
        """Validate a parsed grid; errors are one-line :class:`ConfigError` naming
        ``source`` and the offending field."""
        if not isinstance(data, Mapping):
            kind = "empty" if data is None else f"a {type(data).__name__}"
            raise ConfigError(f"{source}: a grid must be a mapping of keys (name, datasets, "
                              f"methods, seeds, ...), got {kind}")
        spec = cls.parse(dict(data), source)
        spec._source = source
        return spec

    @property
    def source(self) -> str:
        """Where the grid came from (file name), used in error messages."""
        return self._source

    def _fail(self, field: str, message: str) -> ConfigError:
        return ConfigError(f"{self._source}: {field}: {message}")

    def _check_names(self, kind: str, field: str, names: list[str],
                     validator: NameValidator | None) -> None:
        if validator is None:
            return
        if callable(validator):
            for i, name in enumerate(names):
                try:
                    ok = validator(name)
                except (DpglError, LookupError, ValueError) as e:
                    raise self._fail(f"{field}[{i}]", _error_text(e)) from None
                if ok is False:
                    raise self._fail(f"{field}[{i}]", f"unknown {kind} {name!r}")
            return
        allowed = list(validator)
        for i, name in enumerate(names):
            if name not in allowed:
                raise self._fail(f"{field}[{i}]", str(unknown_name(kind, name, allowed)))

    def validate_names(self, *, validate_dataset: NameValidator | None = None,
                       validate_method: NameValidator | None = None,
                       validate_model: NameValidator | None = None) -> None:
        """Check every dataset / method / model name; raise ConfigError on the first
        unknown one (with the allowed names when the validator knows them)."""
        self._check_names("dataset", "datasets", self.datasets, validate_dataset)
        self._check_names("method", "methods",
                          [m.name for m in self.methods], validate_method)
        self._check_names("model", "models", self.models, validate_model)

    def expand(self, is_private: Callable[[str], bool] | None = None, *,
               validate_dataset: NameValidator | None = None,
               validate_method: NameValidator | None = None,
               validate_model: NameValidator | None = None) -> list[RunConfig]:
        """All runs of the grid, in the deterministic order of the module docstring.

        ``is_private(method) -> bool`` says whether a method takes an epsilon (default: the
        ``private`` flag of ``dpgl.methods.get_method``). Name validators run first, so an
        unknown name fails before anything runs. A (method, model) pair the method does not
        train (:attr:`dpgl.methods.Method.models`) is left out of the product.
        """
        self.validate_names(validate_dataset=validate_dataset, validate_method=validate_method,
                            validate_model=validate_model)
        predicate = is_private or _default_is_private
        plans: list[tuple[MethodSpec, list[float | None], list[dict[str, Any]]]] = []
        for i, m in enumerate(self.methods):
            try:
                private = bool(predicate(m.name))
            except (DpglError, LookupError, ValueError) as e:
                raise self._fail(f"methods[{i}]", _error_text(e)) from None
            eps: list[float | None]
            if private:
                eps = list(m.epsilons if m.epsilons is not None else self.epsilons)
                if not eps:
                    raise self._fail(f"methods[{i}]", f"method {m.name!r} is private and "
                                     "needs epsilons; add `epsilons: [...]` to the grid")
            else:
                if m.epsilons is not None:
                    raise self._fail(f"methods[{i}].epsilons", f"method {m.name!r} is not "
                                     "private and takes no epsilon; remove its epsilons")
                eps = [None]
            twice = sorted(set(self.data) & (set(self.params) | set(m.params)))
            if twice:
                raise self._fail("data", f"{twice[0]!r} is given in both data and params")
            # one axis space: the run's data section is split off by RunConfig
            merged = {**self.data, **self.params, **m.params}
            plans.append((m, eps, _param_combinations(merged)))

        out: list[RunConfig] = []
        seen: set[str] = set()
        for dataset, model in itertools.product(self.datasets, self.models):
            for m, eps, combos in plans:
                if not _trains(m.name, model, self.task):
                    continue  # e.g. GAP with gcn: the method trains its own model
                for epsilon, params, seed in itertools.product(eps, combos, self.seeds):
                    cfg = RunConfig.parse(
                        {"task": self.task, "dataset": dataset, "method": m.name,
                         "model": model, "epsilon": epsilon, "seed": seed, "params": params},
                        f"{self._source}: run {dataset}/{model}/{m.name}",
                    )
                    k = cfg.key()
                    if k not in seen:
                        seen.add(k)
                        out.append(cfg)
        return out


def _error_text(e: BaseException) -> str:
    """An exception's message (KeyError's without the quotes str() adds)."""
    if isinstance(e, KeyError) and e.args:
        return str(e.args[0])
    return str(e)


def _param_combinations(grid: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Cartesian product of the list-valued entries (names sorted), scalars fixed."""
    names = sorted(grid)
    axes = [grid[n] if isinstance(grid[n], list) else [grid[n]] for n in names]
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*axes)]


def load_grid(path: str | Path) -> GridSpec:
    """Read and validate a grid YAML file. Every problem (missing file, YAML syntax,
    unknown key, wrong type, empty axis) is a one-line :class:`ConfigError` that names the
    file and the field."""
    p = Path(path)
    data = _read_yaml(p)
    if isinstance(data, Mapping) and "name" not in data:
        data = {"name": p.stem, **data}
    return GridSpec.from_dict(data, source=str(p))
