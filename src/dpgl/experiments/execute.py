"""Execute one run: load the dataset, validate the method's parameters, run the method with a
fresh accountant *activated* (every randomizer charges it when it draws), check the privacy
report against the request, and return metrics + privacy report + timing."""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpgl import __version__, progress
from dpgl.datasets import dataset_kind, load_dataset
from dpgl.device import DEFAULT_DEVICE, execution_environment, resolve_device
from dpgl.errors import ConfigError, PrivacyError
from dpgl.experiments.config import RunConfig, RunResult
from dpgl.methods.base import Method, RunContext, check_task, get_method
from dpgl.methods.params import DataParams, Params
from dpgl.nn.names import canonical_model_name
from dpgl.privacy import Unit
from dpgl.rng import make_rng

if TYPE_CHECKING:
    from dpgl.privacy import PrivacyReport

__all__ = ["check_report", "check_stored_report", "execute_run", "validate_config"]

#: Tolerance for comparing a report's epsilon with the requested budget (float round trips
#: such as eps -> flip probability -> eps).
_RTOL = 1e-9


@functools.lru_cache(maxsize=8)
def _cached_dataset(name: str, data_dir: str | None, options: tuple[tuple[str, Any], ...],
                    download: bool = False) -> Any:
    return load_dataset(name, data_dir, download=download, **dict(options))


def validate_config(config: RunConfig) -> None:
    """Check names and parameters without running anything (ConfigError on problems)."""
    _resolve(config)


def check_stored_report(config: RunConfig, privacy: dict[str, Any]) -> None:
    """The runner's check (:func:`check_report`) of a stored run's privacy report as an
    export keeps it: a run copied into a store from elsewhere meets the bar of one run here."""
    from dpgl.privacy import PrivacyReport

    method, params, _ = _resolve(config)
    check_report(method, params, config.epsilon, PrivacyReport.from_dict(privacy), stored=True)


def _check_data_params(method: Method, params: Params, data: DataParams) -> None:
    """Refuse dataset preprocessing that reads the private data of a protected unit before
    the users randomize (it would make every user's input depend on the others' data)."""
    units = set(method.budgets) if method.takes_epsilon(params) else set()
    if not units:
        return
    if data.normalize_features and units & {Unit.FEATURE_LDP, Unit.NODE_DP,
                                              Unit.BOUNDED_NODE_DP}:
        raise ConfigError(
            f"method {method.name!r}: normalize_features=true min-max scales every feature "
            "over all users, so each user's input would depend on the others' features; "
            "under feature-LDP/node-DP use the dataset's public feature range (or "
            "feature_low/feature_high)")
    if data.features == "one-hot-degree" and units & {Unit.EDGE_LDP, Unit.NODE_DP,
                                                        Unit.BOUNDED_NODE_DP}:
        raise ConfigError(
            f"method {method.name!r}: features='one-hot-degree' computes features from the "
            "true edges, which this method protects; use features='raw'")


def _resolve(config: RunConfig) -> tuple[Method, Params, DataParams]:
    """The config's method, validated parameters and data section, after every name and value
    check."""
    kind = dataset_kind(config.dataset)  # first: a dataset name needs no method module
    method = get_method(config.method)
    check_task(method, config.task)
    if kind != config.task:
        raise ConfigError(
            f"dataset {config.dataset!r} is a {kind}-classification dataset; use --task {kind}"
        )
    if config.task == "node":
        model = canonical_model_name(config.model)
        if not method.trains(model):
            raise ConfigError(
                f"method {config.method!r} trains {' or '.join(method.models)} only, not "
                f"{model!r}: use --model {method.models[0]}")
    params = method.params_model(config.task).parse(dict(config.params), config.method)
    if config.task == "node":
        method.check_model(params, canonical_model_name(config.model))
    takes = method.takes_epsilon(params)
    if takes and config.epsilon is None:
        raise ConfigError(f"method {config.method!r} is private: give an epsilon (--epsilon E)")
    if not takes and config.epsilon is not None:
        hint = "" if not method.private else " with these parameters"
        raise ConfigError(f"method {config.method!r} is non-private{hint}: it takes no epsilon")
    data = DataParams.parse(dict(config.data), config.method)
    _check_data_params(method, params, data)
    return method, params, data


def _budget(method: Method, params: Params, epsilon: float | None, param: str
            ) -> float | None:
    return epsilon if param == "epsilon" else getattr(params, param, None)


def check_report(method: Method, params: Params, epsilon: float | None,
                 report: PrivacyReport, *, stored: bool = False) -> None:
    """The runner's check of a finished run's privacy report against the request.

    Every run must record something (a non-private run records what it used as is). For a
    run that takes ``--epsilon``: the method's protected unit must be charged, every unit with
    a finite total must be one the method declares a budget for (:attr:`Method.budgets`), and
    no total may exceed its budget (``--epsilon`` or the named parameter). A unit whose total
    is "no privacy" fails too, unless the run's parameters chose that
    (:meth:`Method.unprotected_by_choice`). Raises :class:`PrivacyError`. ``stored``: the
    report as a run store's export keeps it (totals without the entries), e.g. a run copied
    from another machine's store: there it is empty when it has no totals.
    """
    name = method.name
    if report.empty if not stored else not report.totals:
        raise PrivacyError(f"method {name!r} recorded no privacy part: every run must state "
                           "what it released or used as is")
    if not method.takes_epsilon(params):
        return
    unit = method.unit
    if unit is None or unit not in report.totals:
        raise PrivacyError(f"method {name!r} is private but charged nothing for the unit it "
                           f"protects ({unit.value if unit else 'none declared'})")
    chosen = method.unprotected_by_choice(params)
    for u, g in report.totals.items():
        param = method.budgets.get(u)
        if math.isinf(g.epsilon):
            if param is not None and _budget(method, params, epsilon, param) is not None \
                    and u not in chosen:
                raise PrivacyError(f"method {name!r}: its report says NO PRIVACY for {u.value}, "
                                   f"which it protects with {param}")
            continue
        if param is None:
            raise PrivacyError(f"method {name!r} charged {u.value} ({g}) but declares no budget "
                               "for that unit")
        budget = _budget(method, params, epsilon, param)
        if budget is None:
            raise PrivacyError(f"method {name!r} charged {u.value} ({g}) but {param} is not set")
        if g.epsilon > budget * (1.0 + _RTOL) + 1e-12:
            raise PrivacyError(f"method {name!r} spent {u.value} epsilon {g.epsilon:.6g}, more "
                               f"than its budget {param}={budget:g}")
        delta_param = method.deltas.get(u)
        if g.delta > 0:
            allowed = getattr(params, delta_param, None) if delta_param else None
            if allowed is None:
                raise PrivacyError(f"method {name!r} spent {u.value} delta {g.delta:.3g} but "
                                   "declares no delta budget")
            if g.delta > float(allowed) * (1.0 + _RTOL):
                raise PrivacyError(f"method {name!r} spent {u.value} delta {g.delta:.3g}, more "
                                   f"than {delta_param}={allowed:g}")


def execute_run(config: RunConfig, *, data_dir: str | Path | None = None,
                download: bool = False, device: Any = DEFAULT_DEVICE) -> RunResult:
    """Run ``config`` once. Deterministic: the same config gives the same numbers on one
    device with one torch thread count (a CPU's float sums are split by thread, so runs that
    are sensitive to rounding, e.g. an MLP at a high learning rate, can differ between thread
    counts). ``download``: fetch missing dataset files (checksummed) into the data directory.
    ``device``: where the trainers run (``cpu``, ``cuda``, ``cuda:N`` or ``auto``,
    :mod:`dpgl.device`): an execution option, not part of the run's key; the result's
    ``info["device"]``, ``info["torch_threads"]`` and ``info["environment"]`` record the device,
    the thread count, and the library versions and CPU model."""
    import torch

    from dpgl.privacy import Accountant
    start = time.perf_counter()
    dev = resolve_device(device)
    method, params, data = _resolve(config)
    options = tuple(data.model_dump().items())
    with progress.step(f"loading {config.dataset}"):
        dataset = _cached_dataset(config.dataset, None if data_dir is None else str(data_dir),
                                  options, download)
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
        device=dev,
    )
    with accountant.active(), progress.step(config.label()):
        out = method.fit(ctx)
    end = time.perf_counter()
    # what the accountant recorded, read in the method's setting (what it assumes public)
    report = dataclasses.replace(accountant.report(), public=method.public)
    check_report(method, params, config.epsilon, report)
    info = dict(out.info)
    info["dpgl_version"] = __version__
    info["device"] = str(dev)
    info["torch_threads"] = torch.get_num_threads()
    info["environment"] = execution_environment()
    return RunResult(
        metrics=out.metrics,
        privacy=report.to_dict(),
        timing={"total": end - start, "load": loaded - start, "fit": end - loaded},
        info=info,
        diagnostics=dict(out.diagnostics),
    )
