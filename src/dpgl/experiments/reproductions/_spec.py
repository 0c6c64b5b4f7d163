"""A reproduction as data (see ``docs/reproductions.md``).

A reproduction is a package ``reproductions/<name>/`` holding

* ``spec.yaml``: ``name``, ``summary``, ``threads`` (torch intra-op threads of the runs;
  ``dpgl reproduce --threads`` overrides), ``timings`` (keep ``timings.json``), ``settings``
  (free data for the hook) and ``protocols: {quick: [...], full: [...]}``, each an ordered
  list of steps ``{label, grids: [...]}`` (a grid is a mapping in the ``dpgl run`` format or
  the name of a YAML file next to the spec) or ``{label, measure: <hook function>}`` (a
  computation without training); ``extra`` lists grids whose stored runs are reported but
  never run;
* ``paper.csv`` (optional): the paper's reference numbers;
* ``README.md.j2``: the README template (Jinja2);
* ``__init__.py``: the hook, ``report(ctx) -> dict`` (tables and plots from the runs; the
  dict goes to the template) and optionally ``prepare(config) -> config``.

Outputs go to ``out_dir``: the run store ``runs.sqlite`` (git-ignored), its export
``runs.jsonl`` (committed; the report reads it, so a clean checkout regenerates every table and
the README byte-identically), tables, plots and ``README.md``.
"""

from __future__ import annotations

import functools
import importlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from dpgl.errors import ConfigError
from dpgl.experiments.config import RunConfig
from dpgl.experiments.grid import GridSpec, _read_yaml, load_grid
from dpgl.experiments.reproductions._tables import Runs, render_readme
from dpgl.methods import get_method


def _sets(params: dict[str, Any], pairs: tuple[tuple[str, Any], ...]) -> bool:
    """Whether ``params`` sets every key of ``pairs`` to its value (``--param``)."""
    return all(key in params and params[key] == value for key, value in pairs)


def is_private(name: str) -> bool:
    """Whether method ``name`` takes an epsilon (the grid-expansion predicate)."""
    return bool(get_method(name).private)


@dataclass
class Step:
    label: str
    grids: list[GridSpec] = field(default_factory=list)
    measure: str | None = None


@dataclass
class Context:
    """What a hook's ``report`` gets: the reproduction, the protocol, the output directory and
    the stored runs (``None`` when neither a store nor an export exists)."""

    repro: Reproduction
    quick: bool
    out_dir: Path
    runs: Runs | None

    def frame(self, configs: list[RunConfig]) -> pd.DataFrame:
        """The stored runs of exactly these configurations (empty frame without runs)."""
        return self.runs.frame(configs) if self.runs is not None else pd.DataFrame()

    def path(self, name: str) -> Path:
        return self.out_dir / name

    def completeness(self) -> list[tuple[str, int, int]]:
        """(step label, runs stored, runs planned) of every step that runs grids."""
        out = []
        for step in self.repro.steps(self.quick):
            if step.grids:
                configs = {c.key(): c for g in step.grids for c in self.repro.expand(g)}
                done = self.runs.count(configs.values()) if self.runs is not None else 0
                out.append((step.label, done, len(configs)))
        return out


class Reproduction:
    """One reproduction, loaded from its package directory."""

    def __init__(self, package: str) -> None:
        self.hooks: ModuleType = importlib.import_module(package)
        self.dir = Path(self.hooks.__file__ or "").parent
        spec = _read_yaml(self.dir / "spec.yaml")
        self.name: str = spec["name"]
        self.summary: str = spec["summary"]
        self.threads: int | None = spec.get("threads")
        self.keep_timings: bool = bool(spec.get("timings", False))
        self.settings: dict[str, Any] = spec.get("settings", {})
        self._protocols: dict[str, list[dict[str, Any]]] = spec["protocols"]
        self._extra: dict[str, list[Any]] = spec.get("extra", {})
        self._out: dict[str, str] = spec.get("out", {})

    def default_out(self, quick: bool) -> Path:
        """Where the protocol's results go without ``--out``: ``results/<name>``, or the
        spec's ``out`` entry for that protocol (Blink: the full grid in ``results/blink``,
        the quick one in ``results/blink-quick``)."""
        return Path("results") / self._out.get("quick" if quick else "full", self.name)

    # ------------------------------------------------------------------------- grids

    def _grid(self, g: Any) -> GridSpec:
        if isinstance(g, str):
            return load_grid(self.dir / g)
        return GridSpec.from_dict(g, source=f"{self.name}/spec.yaml: {g.get('name', 'grid')}")

    def steps(self, quick: bool) -> list[Step]:
        return [Step(s["label"], [self._grid(g) for g in s.get("grids", [])], s.get("measure"))
                for s in self._protocols["quick" if quick else "full"]]

    def expand(self, grid: GridSpec) -> list[RunConfig]:
        prepare = getattr(self.hooks, "prepare", None)
        configs = grid.expand(is_private)
        return [prepare(c, self) for c in configs] if prepare else configs

    def configs(self, quick: bool, *labels: str) -> list[RunConfig]:
        """The runs of the protocol (of the steps whose label starts with one of ``labels``,
        or of the ``extra`` grid named ``labels[0]``), each once, in run order."""
        protocol = "quick" if quick else "full"
        if labels and labels[0] in self._extra.get(protocol, {}):
            grids = [self._grid(g) for g in self._extra[protocol][labels[0]]]
        else:
            grids = [g for s in self.steps(quick) if not labels or s.label.startswith(labels)
                     for g in s.grids]
        out: dict[str, RunConfig] = {}
        for g in grids:
            out.update((c.key(), c) for c in self.expand(g) if c.key() not in out)
        return list(out.values())

    def reported_configs(self, quick: bool) -> list[RunConfig]:
        """Every run the report reads: the protocol's and the ``extra`` grids'."""
        extra = [c for k in self._extra.get("quick" if quick else "full", {})
                 for c in self.configs(quick, k)]
        return list({c.key(): c for c in [*self.configs(quick), *extra]}.values())

    def paper(self, name: str = "paper.csv") -> pd.DataFrame:
        """The paper's reference numbers (``paper.csv``, or another CSV of the package such as
        a second version's numbers; empty when there is none)."""
        p = self.dir / name
        return pd.read_csv(p) if p.exists() else pd.DataFrame()

    # ------------------------------------------------------------------------- running

    def run(self, out_dir: Path, *, quick: bool, data_dir: Path | None, console: Any,
            only: tuple[str, ...] = (), report_only: bool = False,
            threads: int | None = None, methods: tuple[str, ...] = (),
            skip_methods: tuple[str, ...] = (),
            epsilons: tuple[float, ...] = (), seeds: tuple[int, ...] = (),
            params: tuple[tuple[str, Any], ...] = (),
            merge: tuple[Path, ...] = (), device: str = "cpu",
            executor: Any = None) -> list[Path]:
        """Run the protocol's steps (resumable), then write the report. ``only``: step labels
        and dataset names; run just the runs of these steps on these datasets (a kind not
        named is not filtered: ``("xyeps", "cora")`` is the xyeps step on Cora, ``("cora",)``
        every step on Cora; a name that is a step label counts as one; a step that measures
        without runs, such as LPGNN's ``rq2``, runs only when named) and write no report
        (several processes may share the store); ``methods`` / ``skip_methods``: run only these
        methods' runs / all but these; ``epsilons`` / ``seeds``: only the runs at these
        epsilons / seeds; ``params``: ``(key, value)`` pairs, only the runs whose parameters
        set every key to its value (e.g. one configuration of a method; all five also write no
        report);
        ``report_only``: run nothing, rewrite the report from the stored runs. A missing
        ``runs.sqlite`` is first restored from the committed ``runs.jsonl`` (so a clean
        checkout resumes); ``merge``: exports (``runs.jsonl``) of other copies of this
        protocol's store (another machine's) whose runs are added to this one first.
        ``device``: where the runs train (:func:`dpgl.device.resolve_device`; not part of a
        run's key, each run records its device). ``executor``: where they execute (None: here,
        one after another; a :class:`~dpgl.experiments.executors.ProcessExecutor` or
        :class:`~dpgl.experiments.executors.DaskExecutor`: in its workers, each on ``threads``
        torch threads, while this process alone writes the store)."""
        from dpgl.experiments.execute import execute_run
        from dpgl.experiments.reproductions._tables import EXPORT, restore
        from dpgl.experiments.runner import run_grid
        from dpgl.experiments.store import RunStore

        out_dir.mkdir(parents=True, exist_ok=True)
        store = out_dir / "runs.sqlite"
        if merge or not report_only:
            known = [c for q in (quick, not quick) for c in self.reported_configs(q)]
            if not store.exists() and (out_dir / EXPORT).exists():
                n_restored = restore(store, out_dir / EXPORT, known)
                if console is not None:
                    console.print(f"restored {n_restored} stored runs from {out_dir / EXPORT}")
            for source in merge:
                n_merged = restore(store, source, known)
                if console is not None:
                    console.print(f"merged {n_merged} new runs from {source}")
        if report_only:
            return self.report(out_dir, quick=quick)
        self._check_filters(quick, (*methods, *skip_methods), epsilons, seeds, params)
        only_steps, only_data = self._split_only(quick, only)
        partial = bool(only or methods or skip_methods or epsilons or seeds or params)
        from dpgl.experiments.executors import on_threads
        fn = on_threads(functools.partial(execute_run, data_dir=data_dir, device=device),
                        threads or self.threads, executor)
        started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        timings: dict[str, float] = {}
        recomputed: list[str] = []
        for step in self.steps(quick):
            t0 = time.perf_counter()
            if step.measure and (not only or step.label in only_steps):
                # a computation without runs: every time, or when --only names its step
                getattr(self.hooks, step.measure)(self, out_dir, quick, data_dir)
                recomputed.append(step.label)
            for grid in step.grids:
                configs = [c for c in self.expand(grid)
                           if (not only_steps or step.label in only_steps)
                           and (not only_data or c.dataset in only_data)
                           and (not methods or c.method in methods)
                           and c.method not in skip_methods
                           and (not epsilons or c.epsilon in epsilons)
                           and (not seeds or c.seed in seeds)
                           and _sets(c.params, params)]
                if not configs:
                    continue
                with RunStore(store) as s:
                    outcome = run_grid(configs, s, fn, progress=console is not None,
                                       grid_name=grid.name, console=console,
                                       executor=executor)
                if console is not None:
                    console.print(f"{step.label}: {outcome.summary()}")
            timings[step.label] = timings.get(step.label, 0.0) + time.perf_counter() - t0
        written = [save_timings(out_dir, quick, started, timings, recomputed=tuple(recomputed))
                   ] if self.keep_timings and not partial else []
        if partial:
            if console is not None:
                console.print("report not written (--only / --method / --skip-method / "
                              "--epsilon / --seed / --param); write it with --report-only once "
                              "every process has finished")
            return written
        return [*written, *self.report(out_dir, quick=quick)]

    def _split_only(self, quick: bool, only: tuple[str, ...]
                    ) -> tuple[set[str], set[str]]:
        """``--only`` names as (step labels, dataset names); a name that is neither is an
        error."""
        if not only:
            return set(), set()
        labels = {s.label for s in self.steps(quick)}
        datasets = {c.dataset for c in self.configs(quick)}
        if unknown := sorted(set(only) - labels - datasets):
            raise ConfigError(
                f"the {self.name} {'quick' if quick else 'full'} protocol has no step or dataset "
                f"{', '.join(unknown)} (steps: {', '.join(s.label for s in self.steps(quick))}; "
                f"datasets: {', '.join(sorted(datasets))})")
        return {o for o in only if o in labels}, {o for o in only if o not in labels}

    def _check_filters(self, quick: bool, names: tuple[str, ...],
                       epsilons: tuple[float, ...], seeds: tuple[int, ...] = (),
                       params: tuple[tuple[str, Any], ...] = ()) -> None:
        """A ``--method`` / ``--skip-method`` name, an ``--epsilon``, a ``--seed`` or a
        ``--param`` that no run of the protocol uses is an error."""
        if not names and not epsilons and not seeds and not params:
            return
        configs = self.configs(quick)
        protocol = f"the {self.name} {'quick' if quick else 'full'} protocol"
        used = {c.method for c in configs}
        unknown = sorted(set(names) - used)
        if unknown:
            raise ConfigError(f"{protocol} runs no method {', '.join(unknown)} (it runs: "
                              f"{', '.join(sorted(used))})")
        eps = {c.epsilon for c in configs if c.epsilon is not None}
        if missing := sorted(set(epsilons) - eps):
            raise ConfigError(f"{protocol} runs no epsilon {', '.join(f'{e:g}' for e in missing)}"
                              f" (it runs: {', '.join(f'{e:g}' for e in sorted(eps))})")
        used_seeds = {c.seed for c in configs}
        if missing_seeds := sorted(set(seeds) - used_seeds):
            raise ConfigError(f"{protocol} runs no seed {', '.join(map(str, missing_seeds))}"
                              f" (it runs seeds {min(used_seeds)}-{max(used_seeds)})")
        for key, value in params:
            if not any(_sets(c.params, ((key, value),)) for c in configs):
                values = sorted({json.dumps(c.params[key]) for c in configs if key in c.params})
                raise ConfigError(
                    f"{protocol} runs no configuration with {key} = {json.dumps(value)} ("
                    + (f"its values of {key}: {', '.join(values)})" if values
                       else f"no run sets {key})"))
        if params and not any(_sets(c.params, params) for c in configs):
            raise ConfigError(f"{protocol} runs no configuration with "
                              + ", ".join(f"{k} = {json.dumps(v)}" for k, v in params))

    def report(self, out_dir: Path, *, quick: bool) -> list[Path]:
        """Tables, plots and README from the stored runs (``runs.sqlite`` if present, which is
        first exported to ``runs.jsonl``; else the committed ``runs.jsonl``); runs nothing."""
        runs = Runs.load(out_dir, self.reported_configs(quick))
        ctx = Context(self, quick, out_dir, runs)
        variables = self.hooks.report(ctx)
        written: list[Path] = variables.pop("written", [])
        if runs is not None and runs.exported is not None:
            written.insert(0, runs.exported)
        readme = out_dir / "README.md"
        text = render_readme(self.dir / "README.md.j2", quick=quick, repro=self,
                             paper=self.paper(), runs=runs, **variables)
        readme.write_text(text, encoding="utf-8")
        return [*written, readme]


def save_timings(out_dir: Path, quick: bool, started: str, timings: dict[str, float], *,
                 recomputed: tuple[str, ...] = ()) -> Path:
    """Write ``timings.json``, adding the times already recorded there by earlier
    invocations of the same protocol (a resumed run adds the time of the runs it added);
    ``recomputed`` steps are redone every time and keep only this invocation's time. Other
    keys of an earlier file of the same protocol are kept."""
    path = out_dir / "timings.json"
    before = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    if before.get("quick") != quick:
        before = {}
    for k, v in before.get("seconds", {}).items():
        if k not in recomputed:
            timings[k] = timings.get(k, 0.0) + float(v)
    saved = {**before, "started": before.get("started", started), "quick": quick,
             "seconds": timings}
    path.write_text(json.dumps(saved, indent=2), encoding="utf-8")
    return path

