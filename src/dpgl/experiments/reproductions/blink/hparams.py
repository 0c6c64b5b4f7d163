"""The Blink authors' published hyper-parameters, one set per (dataset, model, method, eps).

``authors_hparams.csv`` (columns ``dataset,model,method,epsilon,param,value``) holds the
choices the authors' grid search stored (github.com/zhxchd/Blink_GNN
``scripts/output/best_hp.json`` and ``bl_best_hp.json``; Zhu, Tan & Xiao, CCS 2023), in their
names mapped to dpgl's methods (``do`` -> dropout, ``wd`` -> weight_decay, ``delta`` ->
degree_share; non-private GNN ``none``, features-only ``mlp`` with model ``mlp``).

A configuration whose params carry the marker ``hparams: authors`` gets them
(:func:`apply`, the reproduction's ``prepare`` hook): the marker is removed and lr, weight
decay, dropout, hidden size, epochs and the method's own parameters are replaced by the
authors' values for that configuration; where the CSV has no entry the grid's values stay.
:func:`authors_params` says, per configuration, what was taken, adapted or kept.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dpgl.errors import ConfigError
from dpgl.experiments.config import RunConfig
from dpgl.nn.names import canonical_model_name

CSV = Path(__file__).with_name("authors_hparams.csv")

#: the marker: ``params: {hparams: authors}``
MARKER = "hparams"
MARKER_VALUE = "authors"

#: the authors' parameter name -> dpgl's, for every method ...
_SHARED = {"lr": "lr", "weight_decay": "weight_decay", "dropout": "dropout", "hidden": "hidden",
           "epochs": "epochs", "degree_share": "degree_share", "phase1_share": "phase1_share"}
#: ... and Solitude's own names (github.com/zhxchd/Blink_GNN src/solitude/server.py)
_SOLITUDE = {"lr_theta": "lr", "lr_adj": "adj_lr", "weight_decay": "weight_decay",
             "dropout": "dropout", "hidden": "hidden", "epochs": "epochs"}
_INTEGER = {"hidden", "epochs"}

#: dpgl's Blink takes a degree share in (0, 1); the authors chose 1.0 on Facebook (prior only)
DEGREE_SHARE_MAX = 0.9

#: what is kept, and why, for an authors' parameter dpgl does not take
_KEPT = {
    # the authors' Solitude adds lam1 ||A - A~||_F + lam2 ||A||_1 to the loss, dpgl's (Eq. 14)
    # a squared Frobenius term and a proximal L1 step: the values do not carry over
    "lam1": "lam1/lam2 not taken (another regulariser): dpgl's lambda1/lambda2",
    "lam2": None,  # said with lam1
}


@dataclass(frozen=True)
class AuthorsParams:
    """The authors' parameters of one configuration as dpgl's (``params``); ``status`` is
    ``"authors"`` (all taken), ``"adapted"`` (some adapted or kept, ``notes`` say which) or
    ``"none"`` (no published entry: the grid's values)."""

    params: dict[str, Any]
    status: str
    notes: tuple[str, ...] = field(default_factory=tuple)


@functools.cache
def _table() -> dict[tuple[str, str, str, float | None], dict[str, float]]:
    frame = pd.read_csv(CSV)
    out: dict[tuple[str, str, str, float | None], dict[str, float]] = {}
    for r in frame.itertuples(index=False):
        eps = None if pd.isna(r.epsilon) else float(r.epsilon)
        out.setdefault((r.dataset, r.model, r.method, eps), {})[r.param] = float(r.value)
    return out


def published(dataset: str, model: str, method: str, epsilon: float | None
              ) -> dict[str, float] | None:
    """The authors' stored choice for this configuration, in the CSV's names (None: none).
    ``mlp`` is looked up under model ``mlp`` whatever the run's model."""
    model = "mlp" if method == "mlp" else canonical_model_name(model)
    return _table().get((dataset, model, method, None if epsilon is None else float(epsilon)))


def authors_params(dataset: str, model: str, method: str, epsilon: float | None
                   ) -> AuthorsParams:
    """dpgl's parameters for the authors' choice of this configuration (see the module)."""
    raw = published(dataset, model, method, epsilon)
    if raw is None:
        return AuthorsParams({}, "none", ("no published hyper-parameters: the grid's values",))
    names = _SOLITUDE if method.startswith("solitude") else _SHARED
    params: dict[str, Any] = {}
    notes: list[str] = []
    for name, value in sorted(raw.items()):
        if name == "gat_heads":
            if value != 1:
                raise ConfigError(f"{CSV.name}: {dataset}/{model}/{method} has gat_heads="
                                  f"{value:g}; dpgl's GAT has one head")
            continue  # dpgl's GAT is single-head, as the authors'
        if name in _KEPT:
            if _KEPT[name]:
                notes.append(str(_KEPT[name]))
            continue
        if name not in names:
            raise ConfigError(f"{CSV.name}: {dataset}/{model}/{method}: parameter {name!r} "
                              "has no dpgl counterpart")
        target = names[name]
        if target == "degree_share" and value > DEGREE_SHARE_MAX:
            notes.append(f"degree_share {value:g} run at {DEGREE_SHARE_MAX:g} (dpgl's share is "
                         "below 1)")
            value = DEGREE_SHARE_MAX
        params[target] = int(value) if target in _INTEGER and math.isfinite(value) else value
    return AuthorsParams(params, "adapted" if notes else "authors", tuple(notes))


def apply(cfg: RunConfig) -> RunConfig:
    """``cfg`` with the authors' parameters when its params carry ``hparams: authors`` (the
    marker removed); unmarked configurations are returned as they are."""
    if MARKER not in cfg.params:
        return cfg
    marker = cfg.params[MARKER]
    if marker != MARKER_VALUE:
        raise ConfigError(f"{MARKER}={marker!r}: the only value is {MARKER_VALUE!r} (the Blink "
                          "authors' per-configuration hyper-parameters)")
    rest = {k: v for k, v in cfg.params.items() if k != MARKER}
    chosen = authors_params(cfg.dataset, cfg.model, cfg.method, cfg.epsilon)
    return RunConfig.parse({**cfg.model_dump(), "params": {**rest, **chosen.params}},
                           f"{CSV.name}: {cfg.label()}")
