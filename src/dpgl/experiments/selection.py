"""Hyper-parameter selection from stored runs, charged (docs/privacy.md, "Hyper-parameter
selection"); :func:`dpgl.experiments.report.summarize` is the uncharged selection papers use
(the best mean validation score over seeds, with no privacy cost).

Within a group (default dataset, model, method, epsilon) the candidates are the stored
configurations; the parameters whose values differ between them are what is selected, and
the method says what choosing them costs (:meth:`dpgl.methods.Method.selection_cost`):

* ``post-processing`` (local model, server-side parameters only): every candidate processes
  the same collection; the charged epsilon is the run's.
* ``collections`` (local model, a parameter the users' randomizers read): one collection per
  distinct value of those parameters, c of them; the untrusted server sees every report, so
  the per-user cost is the basic composition c x eps (Dwork & Roth 2014, Thm 3.16).
  :func:`local_at_total_budget` states the accuracy at a total per-user budget E honestly:
  the selection over c collections at E / c each, and a fixed public default at E.
* ``private selection`` (central model): :func:`simulate_private_selection` replays Papernot &
  Steinke (2022) on the stored runs with :class:`dpgl.privacy.PrivateSelection`, charged from
  the runs' stored RDP curves.

Charged selections choose per seed, on that seed's own validation score (each seed stands for
one deployment); the uncharged one chooses by the mean over seeds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpgl.errors import ConfigError
from dpgl.experiments.grid import SelectionSpec

DEFAULT_GROUP_BY = ("dataset", "model", "method", "epsilon")

__all__ = ["local_at_total_budget", "per_seed_selection", "selection_costs",
           "simulate_private_selection", "stored_curves"]


def _params(row: pd.Series) -> dict[str, Any]:
    return json.loads(row["params"]) if isinstance(row.get("params"), str) else {}


def varying(g: pd.DataFrame) -> list[str]:
    """The parameters whose values differ between the configurations of ``g``."""
    configs = [_params(r) for _, r in g.drop_duplicates("hparam_key").iterrows()]
    names = sorted({k for c in configs for k in c})
    return [n for n in names
            if len({json.dumps(c.get(n), sort_keys=True) for c in configs}) > 1]


def _spec(selection: SelectionSpec | None) -> tuple[str, str, list[str]]:
    s = selection or SelectionSpec()
    return s.metric, s.mode, list(s.report)


def _choose(g: pd.DataFrame, metric: str, mode: str) -> pd.Series:
    """The row of ``g`` (one seed's candidates) with the best ``metric`` (first key on ties;
    NaN scores never win unless all are NaN)."""
    g = g.sort_values("hparam_key", kind="mergesort")
    scores = g[metric].astype(float)
    if scores.isna().all():
        return g.iloc[0]
    best = scores.max() if mode == "max" else scores.min()
    return g[scores == best].iloc[0]


def per_seed_selection(df: pd.DataFrame, *, selection: SelectionSpec | None = None,
                       group_by: Sequence[str] = DEFAULT_GROUP_BY) -> pd.DataFrame:
    """Each seed chooses its configuration on its own validation score; the report metrics'
    mean and sample std (ddof 1) over seeds. One row per group: group columns, ``n_seeds``,
    ``n_configs``, ``<m>_mean``, ``<m>_std``."""
    metric, mode, report = _spec(selection)
    rows = []
    for values, g in df.groupby(list(group_by), dropna=False, sort=True):
        chosen = pd.DataFrame([_choose(s, metric, mode) for _, s in g.groupby("seed")])
        row: dict[str, Any] = dict(zip(group_by, values, strict=True))
        row["n_seeds"], row["n_configs"] = len(chosen), int(g["hparam_key"].nunique())
        for m in report:
            v = chosen[m].astype(float)
            row[f"{m}_mean"] = float(v.mean())
            row[f"{m}_std"] = float(v.std(ddof=1)) if v.count() > 1 else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def _collections(g: pd.DataFrame, names: Iterable[str]) -> list[pd.Series]:
    """One stored run per distinct value combination of the randomizer parameters ``names``
    among the candidates (of the first seed): the collections the selection needs."""
    names = list(names)
    first = g[g["seed"] == g["seed"].min()].sort_values("hparam_key", kind="mergesort")
    runs: dict[str, pd.Series] = {}
    for _, r in first.iterrows():
        runs.setdefault(json.dumps([_params(r).get(n) for n in names]), r)
    return list(runs.values())


def _charged(runs: Iterable[pd.Series], unit: Any) -> float:
    """The per-user epsilon of ``runs`` as separate collections: the total each run's privacy
    report recorded for ``unit``, composed in an accountant (basic composition: the server
    sees every collection)."""
    from dpgl.privacy import Accountant, Guarantee

    acc = Accountant()
    eps, delta = f"privacy_total_{unit.value}_epsilon", f"privacy_total_{unit.value}_delta"
    for i, r in enumerate(runs):
        if eps not in r or pd.isna(r[eps]):
            raise ConfigError(f"the stored runs hold no finite {unit.value} total ({eps!r})")
        acc.spend(f"collection {i + 1}", Guarantee(float(r[eps]), float(r.get(delta, 0.0)),
                                                   unit))
    total = acc.report().total(unit)
    return math.nan if total is None else total.epsilon


def selection_costs(df: pd.DataFrame, *, task: str = "node",
                    group_by: Sequence[str] = DEFAULT_GROUP_BY) -> pd.DataFrame:
    """Per group: the candidates (``n_configs``), the parameters selected (``selected``), what
    the selection costs (``cost``: ``no selection`` with one candidate, else
    :meth:`~dpgl.methods.Method.selection_cost`), the collections it needs (``collections``,
    local model) and the per-user epsilon the uncharged selection really spent
    (``spent_epsilon``: the stored runs' recorded totals of the method's unit, one per
    collection, composed in an accountant; NaN for a non-private method and for a central
    selection, which :func:`simulate_private_selection` charges)."""
    from dpgl.methods import get_method

    rows = []
    for values, g in df.groupby(list(group_by), dropna=False, sort=True):
        row: dict[str, Any] = dict(zip(group_by, values, strict=True))
        names = varying(g)
        method = get_method(str(row.get("method", g["method"].iloc[0])))
        cost = method.selection_cost(task, names) if names else "no selection"
        reach = method.params_model(task).randomizer_params & set(names)
        runs = _collections(g, reach if cost == "collections" else [])
        c = len(runs)
        spent = (_charged(runs, method.unit) if method.private and cost != "private selection"
                 else math.nan)
        row.update(n_configs=int(g["hparam_key"].nunique()), selected=", ".join(names),
                   cost=cost, collections=c, spent_epsilon=spent)
        rows.append(row)
    return pd.DataFrame(rows)


def _headline(frame: pd.DataFrame, per_seed: bool, selection: SelectionSpec | None
              ) -> tuple[float, float]:
    """Mean and std of the first report metric of one epsilon's runs: chosen per seed, or by
    the mean over seeds (:func:`~dpgl.experiments.report.summarize`); NaN without runs."""
    from dpgl.experiments.report import summarize

    metric, mode, report = _spec(selection)
    if frame.empty:
        return math.nan, math.nan
    s = (per_seed_selection(frame, selection=selection, group_by=["epsilon"]) if per_seed
         else summarize(frame, metric=metric, mode=mode, report=report, group_by=["epsilon"]))
    return float(s[f"{report[0]}_mean"].iloc[0]), float(s[f"{report[0]}_std"].iloc[0])


def local_at_total_budget(df: pd.DataFrame, *, selection: SelectionSpec | None = None,
                          task: str = "node", defaults: Mapping[str, Any] | None = None,
                          group_by: Sequence[str] = ("dataset", "model", "method")
                          ) -> pd.DataFrame:
    """For every local-model group whose selection needs c > 1 collections, one row per total
    per-user budget E (the stored epsilons and c x each of them, up to the largest stored):

    * ``published``: the uncharged selection (:func:`~dpgl.experiments.report.summarize`) at
      per-collection eps = E, which really spends c x E per user;
    * ``fixed``: no selection of the randomizer parameters, their ``defaults`` (a public
      choice; default: the method's defaults) at eps = E, per-seed choice of the rest;
    * ``charged``: the per-seed selection over all candidates from c collections at E / c
      each: c x E / c = E per user.

    Columns ``<kind>_mean`` / ``<kind>_std`` of the first report metric (NaN where the grid
    has no runs), ``collections``, ``default`` (the fixed values, as text), and
    ``published_spent`` / ``charged_spent``: the per-user epsilon those selections spend, from
    the runs' recorded totals composed in an accountant."""
    from dpgl.methods import get_method

    out = []
    for values, g in df.groupby(list(group_by), dropna=False, sort=True):
        key = dict(zip(group_by, values, strict=True))
        method = get_method(str(g["method"].iloc[0]))
        if not method.private:
            continue
        names = varying(g)
        reach = sorted(method.params_model(task).randomizer_params & set(names))
        if not reach:
            continue
        fields = method.params_model(task).model_fields
        fixed = {n: (defaults or {}).get(n, fields[n].default) for n in reach}
        c = len(_collections(g, reach))
        stored = sorted(float(e) for e in g["epsilon"].dropna().unique())
        totals = sorted({*stored, *(c * e for e in stored if c * e <= max(stored))})
        is_default = pd.Series([all(_params(r).get(n, fields[n].default) == v
                                    for n, v in fixed.items()) for _, r in g.iterrows()],
                               index=g.index)
        for total in totals:
            at = g[np.isclose(g["epsilon"], total)]
            below = g[np.isclose(g["epsilon"], total / c)]
            row = {**key, "total_epsilon": total, "collections": c,
                   "published_spent": _charged(_collections(at, reach), method.unit)
                   if len(at) else math.nan,
                   "charged_spent": _charged(_collections(below, reach), method.unit)
                   if len(below) else math.nan,
                   "default": ", ".join(f"{n}={v:g}" if isinstance(v, float) else f"{n}={v}"
                                        for n, v in fixed.items())}
            for kind, frame, per_seed in (("published", at, False),
                                          ("fixed", at[is_default[at.index]], True),
                                          ("charged", below, True)):
                row[f"{kind}_mean"], row[f"{kind}_std"] = _headline(frame, per_seed,
                                                                     selection)
            out.append(row)
    return pd.DataFrame(out)


def stored_curves(rows: Iterable[Mapping[str, Any]], unit: str) -> dict[str, np.ndarray]:
    """Run key -> the RDP curve of ``unit`` its privacy report stores (runs without one are
    left out)."""
    from dpgl.privacy.rdp import check_curve

    return {r["key"]: check_curve(r["privacy"]["rdp"][unit], f"run {r['key'][:8]}'s curve")
            for r in rows if unit in (r.get("privacy", {}).get("rdp") or {})}


def simulate_private_selection(df: pd.DataFrame, curves: Mapping[str, np.ndarray], *,
                               unit: str, delta: float, seed: int = 0, eta: float = 0.0,
                               mean_runs: float | None = None,
                               selection: SelectionSpec | None = None,
                               group_by: Sequence[str] = DEFAULT_GROUP_BY) -> pd.DataFrame:
    """Papernot & Steinke (2022) replayed on stored runs, per group and seed: a
    :class:`~dpgl.privacy.PrivateSelection` (K truncated negative binomial with ``eta`` and
    E[K] = ``mean_runs``, default the number of candidates) draws K and the K candidates with
    a generator seeded by ``seed``, and charges an accountant from the candidates' stored
    curves (``curves``: run key -> RDP curve of ``unit``); the drawn run with the best
    validation score gives the test score. A drawn candidate reuses its stored run (a real
    selection trains it afresh). Columns: group columns, ``n_configs``, ``mean_runs``,
    ``charged_epsilon`` (at ``delta``, the largest over seeds), ``<m>_mean`` / ``<m>_std``
    over seeds, ``n_seeds``; groups with one candidate or a run without a curve are left
    out."""
    from dpgl.privacy import Accountant, PrivateSelection, TruncatedNegativeBinomial

    metric, mode, report = _spec(selection)
    if not df.empty and "key" not in df:
        raise ConfigError("simulate_private_selection needs the runs' keys (column 'key')")
    rng = np.random.default_rng(seed)
    rows = []
    for values, g in df.groupby(list(group_by), dropna=False, sort=True):
        m = int(g["hparam_key"].nunique())
        if m < 2 or not g["key"].isin(list(curves)).all():
            continue
        mean = float(mean_runs) if mean_runs is not None else float(m)
        reps = TruncatedNegativeBinomial.with_mean(eta, mean)
        picked, spent = [], []
        for _, s in g.groupby("seed", sort=True):
            s = s.sort_values("hparam_key", kind="mergesort")
            sel = PrivateSelection(reps, len(s), base_curve=[curves[k] for k in s["key"]],
                                   unit=unit)
            acc = Accountant(delta=delta)
            with acc.active():
                runs = sel.draw(rng)
            total = acc.report().total(unit)
            assert total is not None
            spent.append(total.epsilon)
            drawn = s.iloc[runs]
            scores = drawn[metric].astype(float).to_numpy()
            best = PrivateSelection.best(scores if mode == "max" else -scores)
            picked.append(drawn.iloc[best] if best is not None else None)
        row: dict[str, Any] = dict(zip(group_by, values, strict=True))
        row.update(n_configs=m, mean_runs=reps.mean, charged_epsilon=max(spent),
                   n_seeds=len(picked))
        chosen = pd.DataFrame([p for p in picked if p is not None])
        for r in report:
            v = chosen[r].astype(float) if not chosen.empty else pd.Series(dtype=float)
            row[f"{r}_mean"] = float(v.mean()) if v.count() else math.nan
            row[f"{r}_std"] = float(v.std(ddof=1)) if v.count() > 1 else math.nan
        rows.append(row)
    return pd.DataFrame(rows)
