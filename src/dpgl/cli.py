"""Command-line interface (thin: parse, call the layers, print).

Every user error is a :class:`~dpgl.errors.DpglError`; it is printed as one line
(``error: ...``) with exit code 2, never as a traceback.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from dpgl.device import cpu_thread_defaults
from dpgl.errors import ConfigError, DpglError

cpu_thread_defaults()  # before anything imports torch (lazily, after the arguments)

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="dpgl: differentially private graph learning (train, run grids, report, audit).",
    pretty_exceptions_enable=False,
)
# piped or redirected output: wide enough that tables are not folded to 80 columns
# (COLUMNS still wins when set)
out = Console(highlight=False, soft_wrap=True,
              width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 200)
err = Console(stderr=True, highlight=False)


def _flags_without_metavar() -> None:
    """typer's rich help shows a flag as ``--json <bool>``; a flag takes no value, so it shows
    none (as in typer's plain help)."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich
    if getattr(shown, "dpgl_flag", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    display_type_rich.dpgl_flag = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_without_metavar()

DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir", help="Dataset directory (default: $DPGL_DATA_DIR, else the user cache)."
    ),
]


Download = Annotated[
    bool,
    typer.Option("--download", help="Download missing dataset files into the data directory "
                 "(each checked against its published checksum)."),
]


Quiet = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="No progress display on stderr (results and errors "
                 "still print). Without a terminal, progress is one plain line every few "
                 "seconds ($DPGL_PROGRESS_INTERVAL)."),
]


def _progress(quiet: bool) -> Any:
    """Show the progress of long steps on stderr (bars on a terminal, plain lines otherwise),
    or nothing with --quiet."""
    from dpgl import progress

    return progress.use(progress.reporter_for(quiet))


DeviceOption = Annotated[
    str,
    typer.Option("--device", help="Where to train: cpu (the default: the same numbers on every "
                 "machine), cuda, cuda:N, or auto (CUDA when available). Not part of a run's "
                 "key; the result records it (docs/gpu.md)."),
]

ExecutorOption = Annotated[str, typer.Option(
    help="Where runs execute: local (here, one after another), process (a pool of "
         "worker processes) or dask (a Dask cluster: --address, or a local one of "
         "--workers processes); this process alone writes the store.")]
WorkersOption = Annotated[int | None, typer.Option(
    min=1, help="Worker processes for --executor process, or for the local cluster of "
                "--executor dask without --address (default: the CPU count).")]
AddressOption = Annotated[str | None, typer.Option(
    help="With --executor dask: the scheduler of a running Dask cluster, "
         "tcp://HOST:PORT (docs/experiments.md).")]


def _output_dir(path: Path, option: str) -> Path:
    """Create (or check) an output directory before any work: a path under a file, a
    read-only place or a file in its way is a one-line error now, not a traceback later."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"{option} {str(path)!r}: cannot create the directory "
                          f"({e.strerror or e})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"{option} {str(path)!r}: the directory is not writable")
    return path


def _parse_param(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise ConfigError(f"--param expects NAME=VALUE, got {text!r}")
    name, raw = text.split("=", 1)
    if not name.strip():
        raise ConfigError(f"--param expects NAME=VALUE, got {text!r} (no name)")
    import yaml

    try:
        value = yaml.safe_load(raw) if raw else ""
    except yaml.YAMLError:
        value = raw
    return name.strip(), value


@app.command()
def datasets(
    data_dir: DataDir = None, as_json: Annotated[bool, typer.Option("--json")] = False
) -> None:
    """List every known dataset, whether it is available locally, and its statistics."""
    from dpgl.datasets import dataset_info, list_datasets, resolve_data_dir

    root = resolve_data_dir(data_dir)
    if data_dir is not None and not root.is_dir():
        raise ConfigError(f"--data-dir {str(root)!r} is not a directory"
                          + ("" if root.exists() else " (it does not exist)"))
    infos = [dataset_info(name, root) for name in list_datasets()]
    if as_json:
        out.print_json(json.dumps([_info_dict(i) for i in infos]))
        return
    table = Table(title=f"datasets in {root}")
    for col in (
        "name",
        "kind",
        "available",
        "nodes",
        "edges",
        "features",
        "classes",
        "graphs",
        "note",
    ):
        table.add_column(
            col,
            justify="right"
            if col in ("nodes", "edges", "features", "classes", "graphs")
            else "left",
        )
    for i in infos:
        problems = (["missing: " + ", ".join(i.missing)] if i.missing else []) + [
            f"corrupt: {path} ({why})" for path, why in i.corrupt.items()]
        note = "; ".join([*problems, *([i.note] if i.note else [])])
        table.add_row(
            i.name,
            i.kind,
            "yes" if i.available else "no",
            _fmt(i.nodes),
            _fmt(i.edges),
            _fmt(i.features),
            _fmt(i.classes),
            _fmt(i.graphs),
            note,
        )
    out.print(table)


def _info_dict(info: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(info)


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.1f}"
    return f"{v:,}"


@app.command()
def methods(
    name: Annotated[str | None, typer.Argument(
        help="A method: show its setting and every hyper-parameter.")] = None,
    task: Annotated[str | None, typer.Option(help="node or graph")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the registered methods: the unit each protects with --epsilon and how it is
    spent; with a NAME, that method's setting and every hyper-parameter (-p NAME=VALUE)."""
    if task is not None and task not in ("node", "graph"):
        raise ConfigError(f"unknown task {task!r}; allowed: node, graph")
    from dpgl.methods import get_method, list_methods

    if name is not None:
        info = get_method(name).describe(task)
        if as_json:
            out.print_json(json.dumps(_json_safe(info)))
        else:
            _print_method(info)
        return
    if as_json:
        out.print_json(json.dumps(_json_safe([get_method(n).describe()
                                              for n in list_methods(task)])))
        return
    table = Table(caption="dpgl methods NAME: a method's setting and hyper-parameters")
    for col in ("method", "tasks", "protects (--epsilon)", "how --epsilon is spent",
                "description"):
        table.add_column(col)
    for name in list_methods(task):
        m = get_method(name)
        if m.private:
            others = [f"{u.value} ({p})" for u, p in m.budgets.items() if p != "epsilon"]
            unit = m.unit.value if m.unit is not None else "-"
            protects = unit + ("; also " + ", ".join(others) if others else "")
        else:
            protects = "nothing (non-private)"
        split = (m.budget_split or "-") if m.private else "-"
        table.add_row(name, ",".join(m.tasks), protects, split, m.summary)
    out.print(table)


def _print_method(info: dict[str, Any]) -> None:
    """``dpgl methods NAME``: the method's header, then one parameter table per task."""
    from rich.markup import escape

    from dpgl.methods.params import bounds_text, value_text

    out.print(f"[bold]{info['name']}[/bold]: {escape(info['summary'])}")
    rows = []
    if info["paper"]:
        rows.append(("paper", info["paper"]))
    models = ", ".join(info["models"]) if info["models"] else "any"
    rows.append(("tasks", f"{', '.join(info['tasks'])} (models: {models})"))
    if info["private"]:
        for p in info["protects"]:
            budget = ("--epsilon" if p["budget_parameter"] == "epsilon"
                      else f"-p {p['budget_parameter']}=E")
            delta = f", delta: -p {p['delta_parameter']}=D" if p["delta_parameter"] else ""
            rows.append(("protects", f"{p['what']} ({p['unit']}), budget {budget}{delta}"))
        rows.append(("--epsilon split", info["budget_split"]))
    else:
        rows.append(("protects", "nothing (non-private: takes no --epsilon)"))
    if info["public"]:
        rows.append(("assumed public", "; ".join(f"{p['what']} ({p['unit']})"
                                                 for p in info["public"])
                     + ": known to the server in this setting"))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        out.print(f"  {key.ljust(width)}  {escape(value)}")
    for task, params in info["params"].items():
        own = sum(p["group"] == "method" for p in params)
        table = Table(title=f"{task}-task parameters (-p NAME=VALUE)", title_justify="left",
                      caption=(f"above the line: {info['name']}'s own parameters; below: "
                               f"the {task} task's training parameters" if own else None),
                      caption_justify="left")
        for col in ("name", "type", "default", "bounds", "meaning"):
            table.add_column(col, justify="right" if col == "default" else "left")
        group = None
        for p in params:
            if group is not None and p["group"] != group:
                table.add_section()
            group = p["group"]
            table.add_row(p["name"], escape(p["type"]), escape(value_text(p["default"])),
                          bounds_text(p["bounds"]), escape(p["description"]))
        out.print()
        out.print(table)
        renamed = info["renamed"].get(task) or []
        if renamed:
            out.print("  renamed (old names still accepted for one release): " + "; ".join(
                f"{r['old']} -> {r['new']}" + (f" ({r['how']})" if r["how"] else "")
                for r in renamed))


@app.command()
def train(
    dataset: Annotated[str, typer.Option(help="Dataset name (see `dpgl datasets`).")],
    method: Annotated[str, typer.Option(help="Method name (see `dpgl methods`).")] = "none",
    model: Annotated[str, typer.Option(help="Model: mlp, gcn, sage, gat (node task).")] = "gcn",
    task: Annotated[str, typer.Option(help="node or graph.")] = "node",
    epsilon: Annotated[
        float | None, typer.Option(help="Total privacy budget (private methods).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed: the same seed gives the same numbers.")] = 0,
    non_private_fraction: Annotated[
        float | None,
        typer.Option(hidden=True, help="Deprecated: use -p non_private_fraction=F."),
    ] = None,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", "-p", metavar="NAME=VALUE",
                     help="Hyper-parameter NAME=VALUE (repeatable; see `dpgl methods METHOD`)."),
    ] = None,
    data_dir: DataDir = None,
    download: Download = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    quiet: Quiet = False,
    device: DeviceOption = "cpu",
) -> None:
    """Train and evaluate one run; print its metrics and privacy report."""
    from dpgl.device import check_device

    device = check_device(device)  # before the heavy imports
    from dpgl.experiments.config import RunConfig
    from dpgl.experiments.execute import execute_run, validate_config

    params = dict(_parse_param(p) for p in (param or []))
    if non_private_fraction is not None:  # the one way to pass a parameter is -p
        import warnings

        from dpgl.errors import DpglDeprecationWarning

        warnings.warn("--non-private-fraction F is deprecated: use -p non_private_fraction=F "
                      "(removed in the next release)", DpglDeprecationWarning, stacklevel=1)
        if "non_private_fraction" in params:
            raise ConfigError("give the non-private fraction once (-p non_private_fraction=F)")
        params["non_private_fraction"] = non_private_fraction
    config = RunConfig(
        task=task,
        dataset=dataset,
        method=method,
        model=model,
        epsilon=epsilon,
        seed=seed,
        params=params,
    )
    validate_config(config)  # every name and value, before torch is imported
    with _progress(quiet):
        result = execute_run(config, data_dir=data_dir, download=download, device=device)
    if as_json:
        payload = {"config": config.canonical(), **result.model_dump()}
        payload.update(result.metrics)
        sys.stdout.write(json.dumps(_json_safe(payload), sort_keys=True) + "\n")
        return
    table = Table(title=config.label())
    table.add_column("metric")
    table.add_column("value", justify="right")
    for k, v in sorted(result.metrics.items()):
        table.add_row(k, f"{v:.4f}")
    table.add_row("seconds", f"{result.timing['total']:.2f}")
    out.print(table)
    from dpgl.privacy import PrivacyReport

    out.print(PrivacyReport.from_dict(result.privacy).render(), markup=False)


def _json_safe(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_json_safe(x) for x in v]
    return v


@app.command()
def run(
    grid: Annotated[Path, typer.Argument(help="Grid YAML file.")],
    store: Annotated[
        Path | None, typer.Option(help="SQLite run store (default: runs/<grid name>.sqlite).")
    ] = None,
    data_dir: DataDir = None,
    download: Download = False,
    quiet: Quiet = False,
    report_dir: Annotated[
        Path | None, typer.Option("--report", help="Write tables and plots here when done.")
    ] = None,
    device: DeviceOption = "cpu",
    executor: ExecutorOption = "local",
    workers: WorkersOption = None,
    address: AddressOption = None,
    threads: Annotated[
        int | None, typer.Option("--threads", min=1, help="torch threads per run (default: "
                                 "torch's, every core; with --executor, in each worker).")
    ] = None,
) -> None:
    """Run a grid; finished runs are stored and skipped when the grid is run again."""
    import contextlib
    import functools

    from dpgl.device import check_device, resolve_device
    from dpgl.experiments.executors import check_executor, make_executor, on_threads

    device = check_device(device)  # before the heavy imports
    check_executor(executor, address, workers)
    from dpgl.experiments.execute import execute_run, validate_config
    from dpgl.experiments.grid import load_grid
    from dpgl.methods import get_method

    spec = load_grid(grid)
    configs = spec.expand(lambda m: get_method(m).private)
    for c in configs:
        validate_config(c)
    dev = resolve_device(device)
    path = store or Path("runs") / f"{spec.name}.sqlite"
    _output_dir(path.parent, "--store's directory")
    if report_dir is not None:
        _output_dir(report_dir, "--report")
    from dpgl.experiments.report import write_report
    from dpgl.experiments.runner import run_grid
    from dpgl.experiments.store import RunStore
    pool = make_executor(executor, workers, address)
    fn = on_threads(functools.partial(execute_run, data_dir=data_dir, download=download,
                                      device=dev), threads, pool)
    with RunStore(path) as st, _progress(quiet):
        # a Dask executor connects (or starts its local cluster) before the grid starts, and
        # lets go of the cluster before the report
        with pool if pool is not None else contextlib.nullcontext():
            outcome = run_grid(
                configs,
                st,
                fn,
                progress=not quiet,
                grid_name=spec.name,
                executor=pool,
            )
        err.print(outcome.summary())
        if report_dir is not None:
            for p in write_report(
                st,
                report_dir,
                selection=spec.selection,
                keys=[c.key() for c in configs],
                title=spec.name,
            ):
                err.print(f"wrote {p}")
    if not outcome.ok:
        raise typer.Exit(1)


@app.command()
def report(
    store: Annotated[Path, typer.Argument(help="SQLite run store written by `dpgl run`.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory.")] = Path("report"),
    grid: Annotated[Path | None, typer.Option(help="Grid YAML: use its selection rule.")] = None,
) -> None:
    """Turn stored runs into mean +- std tables (markdown, CSV) and privacy-utility plots."""
    from dpgl.experiments.grid import load_grid
    from dpgl.experiments.report import write_report
    from dpgl.experiments.store import RunStore

    if not store.exists():
        raise ConfigError(f"run store {store} does not exist")
    _output_dir(out_dir, "--out")
    selection = load_grid(grid).selection if grid else None
    with RunStore(store) as st:
        paths = write_report(st, out_dir, selection=selection)
    for p in paths:
        out.print(f"wrote {p}")
    md = [p for p in paths if p.suffix == ".md"]
    if md:
        out.print(md[0].read_text())


@app.command()
def audit(
    mechanism: Annotated[str, typer.Argument(help="Audit name (see --list).")] = "",
    epsilon: Annotated[float, typer.Option(help="The epsilon to audit.")] = 1.0,
    trials: Annotated[
        int | None, typer.Option(help="Runs per neighbouring input (default: the audit's).")
    ] = None,
    confidence: Annotated[float, typer.Option(help="Clopper-Pearson confidence.")] = 0.95,
    seed: Annotated[int, typer.Option()] = 0,
    spend_twice: Annotated[
        bool, typer.Option("--spend-twice", help="Audit the variant that draws with twice "
                           "its claim (the audit must FAIL it).")
    ] = False,
    param: Annotated[
        list[str] | None, typer.Option("--param", "-p", metavar="NAME=VALUE",
                                       help="Audit parameter NAME=VALUE (repeatable).")
    ] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the audits.")] = False,
    quiet: Quiet = False,
) -> None:
    """Audit a randomizer end to end, a central method's training, or a primitive: FAIL when
    the empirical epsilon lower bound exceeds what the code charges."""
    from dpgl.audit.registry import list_audits, parse_named_params, run_named_audit

    if list_ or not mechanism:
        table = Table(title="audits (dpgl audit NAME --epsilon E)")
        for col in ("name", "kind", "what is audited"):
            table.add_column(col)
        for a in list_audits():
            table.add_row(a.name, a.kind, a.description)
        out.print(table)
        return
    params = parse_named_params(mechanism, param or [])
    with _progress(quiet):
        res = run_named_audit(mechanism, epsilon, trials=trials, confidence=confidence,
                              seed=seed, spend_twice=spend_twice, **params)
    out.print(res.render(), end="", markup=False)
    if not res.passed:
        raise typer.Exit(1)


@app.command()
def reproduce(
    name: Annotated[str, typer.Argument(help="Reproduction name (see --list).")] = "",
    quick: Annotated[
        bool, typer.Option("--quick/--full", help="Reduced grid (documented) or the full one.")
    ] = True,
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Output directory (default: the protocol's own, "
                                  "e.g. results/blink and results/blink-quick; "
                                  "docs/reproductions.md).")
    ] = None,
    data_dir: DataDir = None,
    list_: Annotated[bool, typer.Option("--list", help="List the reproductions.")] = False,
    only: Annotated[
        list[str] | None,
        typer.Option("--only", metavar="DATASET|STEP", help="Run only this step's runs (its "
                     "label, e.g. Blink's full-grid block cora-gcn) or this dataset's "
                     "(repeatable; steps and datasets combine: --only xyeps --only cora is "
                     "xyeps on Cora; a step that measures without runs, e.g. LPGNN's rq2, runs "
                     "only when named) and write no report: several processes can fill one "
                     "store; then --report-only."),
    ] = None,
    method: Annotated[
        list[str] | None,
        typer.Option("--method", metavar="METHOD", help="Run only this method's runs "
                     "(repeatable); writes no report, like --only."),
    ] = None,
    skip_method: Annotated[
        list[str] | None,
        typer.Option("--skip-method", metavar="METHOD", help="Run every method's runs but "
                     "this one's (repeatable; e.g. a slow one, for later); writes no report."),
    ] = None,
    epsilon: Annotated[
        list[float] | None,
        typer.Option("--epsilon", metavar="EPS", min=0.0, help="Run only the runs at this "
                     "epsilon (repeatable); writes no report, like --only."),
    ] = None,
    seed: Annotated[
        list[int] | None,
        typer.Option("--seed", metavar="SEED", min=0, help="Run only the runs with this seed "
                     "(repeatable; e.g. seeds 0-2 of every point first); writes no report."),
    ] = None,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", metavar="KEY=VALUE", help="Run only the runs whose parameters "
                     "set KEY to VALUE (repeatable, YAML value; e.g. one configuration of a "
                     "method: --method blink-pp --param covariates=none); writes no report."),
    ] = None,
    report_only: Annotated[
        bool, typer.Option("--report-only", help="Run nothing: rewrite the README, tables and "
                           "plots from the stored runs (runs.sqlite, else runs.jsonl).")
    ] = False,
    threads: Annotated[
        int | None, typer.Option("--threads", min=1, help="torch threads per run (default: "
                                 "the reproduction's spec.yaml, 1 where it says so).")
    ] = None,
    merge: Annotated[
        list[Path] | None,
        typer.Option("--merge", metavar="RUNS.JSONL", help="First add the runs stored in "
                     "this export of another copy of the store (e.g. another machine's "
                     "runs.jsonl; repeatable); runs already stored are kept."),
    ] = None,
    device: DeviceOption = "cpu",
    executor: ExecutorOption = "local",
    workers: WorkersOption = None,
    address: AddressOption = None,
    quiet: Quiet = False,
) -> None:
    """Regenerate a paper's tables and plots (resumable: finished runs are reused; a clean
    checkout resumes from the committed runs.jsonl).

    With --executor the runs execute in worker processes or on a Dask cluster (each on
    --threads torch threads), e.g. a GPU host's missing runs in one command
    (docs/reproductions.md)."""
    import contextlib

    from dpgl.device import check_device
    from dpgl.experiments.executors import check_executor, make_executor

    device = check_device(device)  # before the heavy imports
    check_executor(executor, address, workers)
    params = tuple(_parse_param(p) for p in param or [])
    for m in merge or ():
        if not m.is_file():
            raise ConfigError(f"--merge {str(m)!r}: no such file (a runs.jsonl export)")
    from dpgl.experiments import reproductions

    if list_ or not name:
        for key, repro in sorted(reproductions.available().items()):
            out.print(f"{key}: {repro.summary}")
        return
    repro = reproductions.get(name)
    target = _output_dir(out_dir or repro.default_out(quick), "--out")
    pool = None if report_only else make_executor(executor, workers, address)
    # a Dask executor connects (or starts its local cluster) once, before the first run
    with _progress(quiet), pool if pool is not None else contextlib.nullcontext():
        written = repro.run(target, quick=quick, data_dir=data_dir, console=out,
                            only=tuple(only or ()), report_only=report_only, threads=threads,
                            methods=tuple(method or ()), skip_methods=tuple(skip_method or ()),
                            epsilons=tuple(epsilon or ()), seeds=tuple(seed or ()),
                            params=params, merge=tuple(merge or ()), device=device,
                            executor=pool)
    for p in written:
        out.print(f"wrote {p}")


@app.command()
def demo(
    output: Annotated[
        Path, typer.Option(help="Output directory for the store, table and plot.")
    ] = Path("demo-output"),
    seeds: Annotated[int, typer.Option(help="Seeds per configuration.")] = 3,
    quiet: Quiet = False,
    device: DeviceOption = "cpu",
) -> None:
    """The default demo: a small privacy-utility comparison on the built-in synthetic graph
    (no files, no network)."""
    from dpgl.device import check_device, resolve_device

    dev = resolve_device(check_device(device))
    _output_dir(output, "--output")
    from dpgl.experiments.demo import run_demo

    with _progress(quiet):
        run_demo(output, seeds=seeds, console=out, device=dev)


# ---------------------------------------------------------------------------- collection
DbOption = Annotated[str, typer.Option(
    "--db", help="Database: a file path or sqlite:///PATH (SQLite), or postgresql://...")]
DEFAULT_DB = "dpgl-collection.db"

collect = typer.Typer(no_args_is_help=True, help="Operate collection rounds (the server's "
                      "database): create a round from YAML, close it (estimate and train).")
client = typer.Typer(no_args_is_help=True, help="A device: enrol with a server and submit "
                     "one randomized report for a round.")
app.add_typer(collect, name="collect")
app.add_typer(client, name="client")


def _db_url(db: str) -> str:
    """A database option as a SQLAlchemy URL (a plain path is a SQLite file)."""
    if db.startswith(("sqlite://", "postgresql://", "postgresql+psycopg://")):
        return db
    if "://" in db:
        raise ConfigError(f"--db: unsupported database URL {db!r} (sqlite:///PATH or "
                          "postgresql://...)")
    parent = Path(db).expanduser().resolve().parent
    if not parent.is_dir():
        raise ConfigError(f"--db: directory {str(parent)!r} does not exist")
    return f"sqlite:///{Path(db).expanduser().resolve()}"


@app.command()
def serve(
    db: DbOption = DEFAULT_DB,
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")
                    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port.")] = 8000,
    rate: Annotated[float, typer.Option(min=0.001, help="Requests per second per token "
                                        "(sustained).")] = 5.0,
    burst: Annotated[int, typer.Option(min=1, help="Requests per token at once.")] = 10,
) -> None:
    """Run the collection server (HTTP API and web pages) over a SQLite or PostgreSQL
    database."""
    url = _db_url(db)
    from dpgl.service.server import serve as run_server
    err.print(f"dpgl collection server on http://{host}:{port} (database {url})")
    run_server(url, host=host, port=port, rate=rate, burst=burst)


@collect.command("create")
def collect_create(
    spec: Annotated[Path, typer.Argument(help="Round spec (YAML).")],
    db: DbOption = DEFAULT_DB,
) -> None:
    """Open a round from a YAML spec: every member must be enrolled and stay within her
    lifetime budget."""
    url = _db_url(db)
    from dpgl.collection import load_round_spec
    from dpgl.service.operator import open_round
    rs = load_round_spec(spec)
    charge = open_round(url, rs)
    parts = ", ".join(f"eps={e:g} {u}" for u, (e, _d) in charge.items())
    out.print(f"opened round {rs.round_id!r}: {len(rs.population)} users, {parts} per user")


@collect.command("close")
def collect_close(
    round_id: Annotated[str, typer.Argument(help="The round to close.")],
    db: DbOption = DEFAULT_DB,
    data_dir: Annotated[Path | None, typer.Option(help="Dataset directory (public data "
                                                  "for training).")] = None,
    quiet: Quiet = False,
) -> None:
    """Close a round: no more reports; run the estimator on the stored reports, train the
    round's model, and store the result (served at /v1/rounds/ID/result)."""
    url = _db_url(db)
    from dpgl.service.operator import close_round
    with _progress(quiet):
        result = close_round(url, round_id, data_dir=data_dir)
    _print_result(result)


def _print_result(result: dict[str, Any]) -> None:
    part = result["participation"]
    out.print(f"round {result['round_id']!r}: {part['reports']}/{part['population']} reports "
              f"({100 * part['rate']:.1f}%)")
    if result["status"] != "done":
        out.print(f"not estimated: {result['reason']}")
        return
    for k, v in result.get("metrics", {}).items():
        out.print(f"  {k}: {v:.4f}" if isinstance(v, float) else f"  {k}: {v}")
    out.print(result["privacy"]["text"])


@collect.command("demo")
def collect_demo(
    output: Annotated[Path, typer.Option(help="Directory for the database and the result.")
                      ] = Path("collect-demo"),
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port of the local server "
                                      "(0: any free port).")] = 8000,
    keep_serving: Annotated[bool, typer.Option(
        "--serve/--no-serve", help="Keep serving the result page after the round.")] = True,
    quiet: Quiet = False,
) -> None:
    """A local server on SQLite and a population of simulated devices (Cora's users): they
    enrol, randomize their neighbour lists with Blink and submit over HTTP; the round is
    closed, a GCN is trained, and the result page shows accuracy and budget."""
    _output_dir(output, "--output")
    from dpgl.service.demo import run_collection_demo
    with _progress(quiet):
        run_collection_demo(output, port=port, keep_serving=keep_serving, console=out)


@client.command("enroll")
def client_enroll(
    server: Annotated[str, typer.Option(help="Server URL, e.g. http://127.0.0.1:8000.")],
    user: Annotated[str, typer.Option(help="This device's user id.")],
    state: Annotated[Path, typer.Option(help="Device state file (token, ledger, reports).")],
) -> None:
    """Enrol a user once; the token is kept in the device's state file."""
    from dpgl.client import Device
    with Device(server, user, state=state) as dev:
        dev.enroll()
    out.print(f"enrolled {user!r}; token kept in {state}")


@client.command("submit")
def client_submit(
    server: Annotated[str, typer.Option(help="Server URL, e.g. http://127.0.0.1:8000.")],
    user: Annotated[str, typer.Option(help="This device's user id.")],
    round_id: Annotated[str, typer.Option("--round", help="The round to report in.")],
    state: Annotated[Path, typer.Option(help="Device state file (token, ledger, reports).")],
    neighbors: Annotated[str | None, typer.Option(
        help="This user's neighbours as user ids, comma-separated.")] = None,
    features: Annotated[str | None, typer.Option(
        help="This user's feature vector, comma-separated numbers.")] = None,
    label: Annotated[int | None, typer.Option(help="This user's label.")] = None,
    lifetime: Annotated[float, typer.Option(min=0.0, help="The most epsilon this device "
                                            "spends per unit, over all rounds.")] = 8.0,
) -> None:
    """Randomize this user's data with the round's randomizer (on this device) and submit
    the report; retries send the same report."""
    feats = None
    if features is not None:
        try:
            feats = [float(x) for x in features.split(",")]
        except ValueError:
            raise ConfigError(f"--features: expected comma-separated numbers, got "
                              f"{features!r}") from None
    from dpgl.client import Device, PrivateData
    with Device(server, user, state=state, lifetime=lifetime) as dev:
        nb = None
        if neighbors is not None:
            rnd, _ = dev.round(round_id)
            nb = sorted(rnd.index_of(x.strip()) for x in neighbors.split(",") if x.strip())
        res = dev.submit(round_id, PrivateData(neighbors=nb, features=feats, label=label))
    spent = ", ".join(f"{u} {e:g}" for u, e in res.charge.items())
    out.print(f"{'stored' if res.stored else 'already stored'}: round {round_id!r} "
              f"(spent {spent})")


# Each command's help is its docstring, whose first paragraph typer's rich mode prints with
# the source line breaks in `dpgl --help`: give it that paragraph on one line.
for _info in [*app.registered_commands, *collect.registered_commands,
              *client.registered_commands]:
    if _info.help is None and _info.callback is not None:
        _first, *_rest = (inspect.getdoc(_info.callback) or "").split("\n\n")
        _info.help = "\n\n".join([" ".join(_first.split()), *_rest])


def _one_line_warnings() -> None:
    """dpgl's own warnings (old names, clipping) as one line each, without a source line."""
    import warnings

    from dpgl.errors import DpglDeprecationWarning

    default = warnings.showwarning
    if getattr(default, "dpgl_one_line", False):
        return  # installed by an earlier main() in this process

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        if issubclass(category, DpglDeprecationWarning):
            sys.stderr.write(f"warning: {' '.join(str(message).split())}\n")
        else:
            default(message, category, filename, lineno, file, line)

    show.dpgl_one_line = True  # type: ignore[attr-defined]
    warnings.showwarning = show


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning user errors into one-line messages."""
    _one_line_warnings()
    try:
        app(args=argv, prog_name="dpgl")
    except DpglError as e:
        sys.stderr.write(f"error: {' '.join(str(e).split())}\n")  # always exactly one line
        sys.exit(2)
    except OSError as e:  # a file or directory the user named (reading or writing)
        where = f"{e.filename}: " if e.filename else ""
        sys.stderr.write(f"error: {where}{e.strerror or e}\n")
        sys.exit(2)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
