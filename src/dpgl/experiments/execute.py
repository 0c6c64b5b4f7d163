"""Execute one run: load the dataset, validate the method's parameters, run the method
with a fresh accountant, and return metrics + privacy report + timing."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

from dpgl import __version__
from dpgl.datasets import dataset_kind, load_dataset
from dpgl.errors import ConfigError
from dpgl.experiments.config import RunConfig, RunResult
from dpgl.methods.base import Method, RunContext, check_task, get_method
from dpgl.methods.params import DataParams, Params
from dpgl.nn.models import canonical_model_name
from dpgl.privacy import Accountant
from dpgl.rng import make_rng

_DATA_FIELDS = tuple(DataParams.model_fields)


@functools.lru_cache(maxsize=8)
def _cached_dataset(name: str, data_dir: str | None, options: tuple[tuple[str, Any], ...]) -> Any:
    return load_dataset(name, data_dir, **dict(options))


def validate_config(config: RunConfig) -> None:
    """Check names and parameters without running anything (ConfigError on problems)."""
    _resolve(config)


def _resolve(config: RunConfig) -> tuple[Method, Params]:
    """The config's method and validated parameters, after every name and value check."""
    method = get_method(config.method)
    check_task(method, config.task)
    kind = dataset_kind(config.dataset)
    if kind != config.task:
        raise ConfigError(
            f"dataset {config.dataset!r} is a {kind}-classification dataset; use --task {kind}"
        )
    if config.task == "node":
        canonical_model_name(config.model)
    if method.private and config.epsilon is None:
        raise ConfigError(f"method {config.method!r} is private: give an epsilon (--epsilon E)")
    if not method.private and config.epsilon is not None:
        raise ConfigError(f"method {config.method!r} is non-private: it takes no epsilon")
    return method, method.params_model(config.task).parse(dict(config.params), config.method)


def execute_run(config: RunConfig, *, data_dir: str | Path | None = None) -> RunResult:
    """Run ``config`` once. Deterministic: the same config gives the same numbers."""
    start = time.perf_counter()
    method, params = _resolve(config)
    options = tuple((k, getattr(params, k)) for k in _DATA_FIELDS)
    dataset = _cached_dataset(config.dataset, None if data_dir is None else str(data_dir), options)
    loaded = time.perf_counter()
    accountant = Accountant()
    ctx = RunContext(
        task=config.task,
        dataset=dataset,
        model=canonical_model_name(config.model) if config.task == "node" else config.model,
        params=params,
        epsilon=config.epsilon,
        seed=config.seed,
        rng=make_rng(config.seed),
        accountant=accountant,
    )
    out = method.fit(ctx)
    end = time.perf_counter()
    report = accountant.report()
    info = dict(out.info)
    info["dpgl_version"] = __version__
    return RunResult(
        metrics=out.metrics,
        privacy=report.to_dict(),
        timing={"total": end - start, "load": loaded - start, "fit": end - loaded},
        info=info,
    )
