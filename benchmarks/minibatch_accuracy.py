"""Full-batch vs neighbour-sampled mini-batch training on the same private estimated graph
(issue #15): test accuracy, time per epoch and peak memory.

For every dataset and seed the driver runs the edge-LDP method's own steps before training
(:meth:`dpgl.methods.edge_ldp.EdgeLDPMethod.estimate`: the run's split, the users' reports
and the server's estimate, charged to an accountant) and keeps the true graph as the
non-private reference; the trainer's seed is the run generator's next draw, as in a run
(:func:`dpgl.methods.common.train_node_model`). It saves the features (CSR), labels, splits,
graphs and seeds in a cache, then starts one worker process per (dataset, graph, model,
mode) that trains every seed with :func:`dpgl.methods.common.fit_node_model`, the function
runs call. So both modes see the same split, graph and seed. The preparation also trains
seed 0's private-graph full-batch GCN both from the cache and through
:func:`dpgl.experiments.execute.execute_run` and records whether the test accuracies are equal
(the cache reproduces the run path).

Memory: each worker reports the peak RSS over its training (sampled every 5 ms from
/proc/self/statm) minus its RSS just before training ("training MB": the model, optimizer,
activations, operators, sampled batches; the features and graphs are loaded before) and the
worker's peak RSS (VmHWM). The preparation runs in its own process per dataset (the dense
features and the estimator's peak stay out of the workers). Time: the trainer's seconds per
epoch spent training and spent on the validation inference (full forward, or layer-wise
inference over full-neighbour blocks), averaged over the epochs run. The machine may be
shared: times are upper bounds.

    python benchmarks/minibatch_accuracy.py --out results/minibatch
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

MODELS = ("gcn", "sage", "gat")
NAMES = {"facebook": "Facebook", "coauthor-physics": "Coauthor Physics",
         "gcn": "GCN", "sage": "GraphSAGE", "gat": "GAT"}


def _params(args: argparse.Namespace, mode: str) -> dict[str, Any]:
    """The training parameters of a mode (the shared ones plus the batching)."""
    base = {"hidden": args.hidden, "lr": args.lr, "weight_decay": args.weight_decay,
            "dropout": args.dropout}
    if mode == "full":
        return {**base, "epochs": args.epochs, "patience": args.patience}
    return {**base, "epochs": args.mini_epochs, "patience": args.mini_patience,
            "batch_size": args.batch_size, "fanout": args.fanout}


# ----------------------------------------------------------------------------- prepare


def prepare(args: argparse.Namespace, dataset: str, cache: Path) -> dict[str, Any]:
    """The cache of one dataset: features, labels and, per seed, the split, the private
    graph and the trainers' seeds, made by the method's own steps."""
    import scipy.sparse as sp
    import torch

    from dpgl.datasets import load_dataset
    from dpgl.methods import get_method
    from dpgl.methods.base import RunContext
    from dpgl.methods.common import node_split
    from dpgl.privacy import Accountant
    from dpgl.rng import make_rng

    data = load_dataset(dataset, args.data_dir)
    sp.save_npz(cache / f"{dataset}-x.npz", sp.csr_matrix(data.x.numpy()))
    np.save(cache / f"{dataset}-y.npy", data.y.numpy())
    np.save(cache / f"{dataset}-true.npy", data.edge_index.numpy())
    meta: dict[str, Any] = {"nodes": int(data.num_nodes), "edges": int(data.edge_index.size(1)),
                            "features": int(data.x.size(1)), "classes": int(data.y.max()) + 1,
                            "seeds": {}}
    for seed in range(args.seeds):
        entry: dict[str, Any] = {}
        for graph in ("private", "true"):
            name = args.method if graph == "private" else "none"
            method = get_method(name)
            params = method.params_model("node").parse(_params(args, "full"), name)
            acc = Accountant()
            ctx = RunContext(task="node", dataset=data, model="gcn", params=params,
                             epsilon=args.epsilon if graph == "private" else None, seed=seed,
                             rng=make_rng(seed), accountant=acc)
            start = time.perf_counter()
            with acc.active():
                if graph == "private":
                    split, est, _ = method.estimate(ctx)
                    ei = est.edge_index
                    w = getattr(est, "edge_weight", None)
                    np.save(cache / f"{dataset}-{seed}-private.npy", ei.numpy())
                    if w is not None:
                        np.save(cache / f"{dataset}-{seed}-private-w.npy",
                                torch.as_tensor(w).float().numpy())
                    entry["private_edges"] = int(ei.size(1))
                    entry["private_weighted"] = w is not None
                    entry["privacy"] = acc.report().to_dict()["summary"]
                else:
                    split = node_split(ctx, data)
            entry[f"{graph}_seconds"] = time.perf_counter() - start
            entry[f"{graph}_trainer_seed"] = int(ctx.rng.integers(2**31))
            for name, idx in zip(("train", "val", "test"), split, strict=True):
                np.save(cache / f"{dataset}-{seed}-{graph}-{name}.npy", idx.numpy())
        meta["seeds"][str(seed)] = entry
        print(f"[prepare] {dataset} seed {seed}: {entry['private_edges']} estimated edges "
              f"({entry['private_seconds']:.1f} s)", file=sys.stderr, flush=True)
    if not args.no_check:
        meta["check"] = check(args, dataset, cache, meta)
    return meta


def check(args: argparse.Namespace, dataset: str, cache: Path,
          meta: dict[str, Any]) -> dict[str, Any]:
    """The cache reproduces the run path: seed 0's private graph, full-batch GCN, trained
    from the cache and by :func:`~dpgl.experiments.execute.execute_run` (same numbers)."""
    from dpgl.experiments.config import RunConfig
    from dpgl.experiments.execute import execute_run
    cfg = RunConfig(dataset=dataset, method=args.method, model="gcn", epsilon=args.epsilon,
                    seed=0, params=_params(args, "full"))
    run = execute_run(cfg, data_dir=args.data_dir).metrics["test_accuracy"]
    ours = _train(args, {"dataset": dataset, "graph": "private", "model": "gcn",
                         "mode": "full", "cache": str(cache), "meta": meta}, [0])[0]
    out = {"config": cfg.label(), "run_test_accuracy": run,
           "cache_test_accuracy": ours["test_accuracy"], "equal": run == ours["test_accuracy"]}
    print(f"[check] {out}", file=sys.stderr, flush=True)
    return out


# ------------------------------------------------------------------------------ worker


class _PeakRSS:
    """Peak resident memory of this process, sampled every ``interval`` seconds."""

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.peak = self.now()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def now(self) -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self.page

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self.now())

    def __enter__(self) -> _PeakRSS:
        self.peak = self.now()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.now())


def worker(args: argparse.Namespace, job: dict[str, Any]) -> dict[str, Any]:
    """Train one (dataset, graph, model, mode) for every seed from the cache."""
    runs = _train(args, job, range(args.seeds))
    return {**{k: job[k] for k in ("dataset", "graph", "model", "mode")},
            "params": _params(args, job["mode"]), "runs": runs, "max_rss_mb": _vm_hwm_mb()}


def _vm_hwm_mb() -> float:
    """This process's peak resident memory (VmHWM; ``ru_maxrss`` would include the parent's
    from before ``exec``)."""
    with open("/proc/self/status") as f:
        line = next(ln for ln in f if ln.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def _train(args: argparse.Namespace, job: dict[str, Any], seeds: Any) -> list[dict[str, Any]]:
    import scipy.sparse as sp
    import torch

    from dpgl.methods import get_method
    from dpgl.methods.common import fit_node_model
    from dpgl.nn import PreparedGraph

    cache = Path(job["cache"])
    ds, graph_kind, model, mode = job["dataset"], job["graph"], job["model"], job["mode"]
    meta = job["meta"]
    x = sp.load_npz(cache / f"{ds}-x.npz").tocsr()
    y = torch.from_numpy(np.load(cache / f"{ds}-y.npy"))
    method = args.method if graph_kind == "private" else "none"
    params = get_method(method).params_model("node").parse(_params(args, mode), method)
    runs = []
    for seed in seeds:
        entry = meta["seeds"][str(seed)]
        if graph_kind == "private":
            ei = torch.from_numpy(np.load(cache / f"{ds}-{seed}-private.npy"))
            wf = cache / f"{ds}-{seed}-private-w.npy"
            w = torch.from_numpy(np.load(wf)) if wf.exists() else None
        else:
            ei = torch.from_numpy(np.load(cache / f"{ds}-true.npy"))
            w = None
        graph = PreparedGraph(ei, meta["nodes"], w)
        split = tuple(torch.from_numpy(np.load(cache / f"{ds}-{seed}-{graph_kind}-{name}.npy"))
                      for name in ("train", "val", "test"))
        with _PeakRSS() as mem:
            before = mem.peak
            start = time.perf_counter()
            out = fit_node_model(model, x, y, split, graph, params,  # type: ignore[arg-type]
                                 seed=entry[f"{graph_kind}_trainer_seed"])
            seconds = time.perf_counter() - start
        runs.append({"seed": seed, "test_accuracy": out.metrics["test_accuracy"],
                     "val_accuracy": out.metrics["val_accuracy"],
                     "train_accuracy": out.metrics["train_accuracy"],
                     "best_epoch": out.info["best_epoch"], "epochs_run": out.info["epochs_run"],
                     "train_epoch_seconds": out.info["train_epoch_seconds"],
                     "eval_epoch_seconds": out.info["eval_epoch_seconds"],
                     "seconds": seconds, "training_mb": (mem.peak - before) / 2**20,
                     "batches_per_epoch": out.info.get("batches_per_epoch"),
                     "mean_batch_nodes": out.info.get("mean_batch_nodes"),
                     "mean_batch_edges": out.info.get("mean_batch_edges")})
        print(f"[{ds} {graph_kind} {model} {mode}] seed {seed}: test "
              f"{out.metrics['test_accuracy']:.4f} in {seconds:.1f} s "
              f"({out.info['epochs_run']} epochs)", file=sys.stderr, flush=True)
    return runs


def investigate(args: argparse.Namespace, cache: Path) -> None:
    """``--investigate DATASET,GRAPH,MODEL --variants JSON``: mini-batch variants (changes of
    this script's options, e.g. ``{"fanout 25": {"fanout": [25, 25]}}``) trained from the
    cache of a finished run, every seed; prints validation accuracy first (what a choice may
    look at) and test accuracy for information."""
    import copy
    ds, graph, model = args.investigate.split(",")
    meta = json.loads((cache / f"{ds}-meta.json").read_text())
    variants = json.loads(args.variants) if args.variants else {"as run": {}}
    for name, change in variants.items():
        var = copy.copy(args)
        for key, value in change.items():
            if not hasattr(var, key):
                raise SystemExit(f"--variants: unknown option {key!r}")
            setattr(var, key, value)
        runs = _train(var, {"dataset": ds, "graph": graph, "model": model, "mode": "mini",
                            "cache": str(cache), "meta": meta}, range(args.seeds))
        val, test = ([r[k] for r in runs] for k in ("val_accuracy", "test_accuracy"))
        print(f"{ds} {graph} {model} | {name}: val {_ms(val, digits=2)} | test "
              f"{_ms(test, digits=2)} | epochs {[r['epochs_run'] for r in runs]} (best "
              f"{[r['best_epoch'] for r in runs]}) | train s/epoch "
              f"{np.mean([r['train_epoch_seconds'] for r in runs]):.2f}", flush=True)


# ------------------------------------------------------------------------------ report


def _ms(values: list[float], scale: float = 100.0, digits: int = 1) -> str:
    a = np.asarray(values, dtype=float) * scale
    return f"{a.mean():.{digits}f} ± {a.std(ddof=1) if a.size > 1 else 0.0:.{digits}f}"


def summarize(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    index = {(r["dataset"], r["graph"], r["model"], r["mode"]): r for r in results}
    for (ds, g, m, mode), r in index.items():
        if mode != "full" or (ds, g, m, "mini") not in index:
            continue
        mini = index[(ds, g, m, "mini")]
        full_acc = [x["test_accuracy"] for x in r["runs"]]
        mini_acc = [x["test_accuracy"] for x in mini["runs"]]
        diffs = [b - a for a, b in zip(full_acc, mini_acc, strict=True)]
        rows.append({
            "dataset": ds, "graph": g, "model": m,
            "full_test_accuracy": float(np.mean(full_acc)),
            "full_test_std": float(np.std(full_acc, ddof=1)) if len(full_acc) > 1 else 0.0,
            "mini_test_accuracy": float(np.mean(mini_acc)),
            "mini_test_std": float(np.std(mini_acc, ddof=1)) if len(mini_acc) > 1 else 0.0,
            "mini_minus_full": float(np.mean(diffs)),
            "mini_minus_full_std": float(np.std(diffs, ddof=1)) if len(diffs) > 1 else 0.0,
            "full_val_accuracy": float(np.mean([x["val_accuracy"] for x in r["runs"]])),
            "mini_val_accuracy": float(np.mean([x["val_accuracy"] for x in mini["runs"]])),
            **{f"{mode_}_{k}": float(np.mean([x[k] for x in rr["runs"]]))
               for mode_, rr in (("full", r), ("mini", mini))
               for k in ("train_epoch_seconds", "eval_epoch_seconds", "training_mb",
                         "epochs_run", "best_epoch")},
            "full_max_rss_mb": r["max_rss_mb"], "mini_max_rss_mb": mini["max_rss_mb"],
        })
    return rows


def write_readme(out: Path, args: argparse.Namespace, meta: dict[str, Any],
                 rows: list[dict[str, Any]], results: list[dict[str, Any]], command: str,
                 wall: float, stamp: str) -> None:
    checks = [m["check"] for m in meta.values() if m.get("check")]
    lines = [
        "# Mini-batch vs full-batch training on a private estimated graph (issue #15)",
        "",
        f"Command: `{command}`  ",
        f"Date: {stamp} UTC; wall time {wall / 60:.1f} min "
        f"on {platform.machine()} with {os.cpu_count()} cores, shared with another job (times "
        "are upper bounds).",
        "",
        f"Private graph: `{args.method}` at eps = {args.epsilon:g} (edge-LDP, default "
        "degree_share 0.1; the Blink grids' method and degree share), estimated once per "
        "dataset and seed by the method's own steps; reference: the true graph (`none`). "
        f"Seeds 0..{args.seeds - 1} (the split, the release and the trainer's seed of seed s "
        "are those of the run with seed s). Split 50/25/25 random. Both modes train the same "
        f"model: hidden {args.hidden}, dropout {args.dropout}, Adam lr {args.lr}, weight "
        f"decay {args.weight_decay}, 2 layers; model selection on validation accuracy "
        "(best epoch, patience).",
        "",
        f"* **full batch**: at most {args.epochs} epochs (one step each), patience "
        f"{args.patience}.",
        f"* **mini-batch**: {args.batch_size} seed nodes per batch, fanout "
        f"{args.fanout} (uniform without replacement; GCN normalised per sampled subgraph "
        f"with the estimator's weights), at most {args.mini_epochs} epochs (one step per "
        f"batch), patience {args.mini_patience}; validation and test by layer-wise "
        "full-neighbour inference over blocks of the same size (exact full-graph logits).",
        "",
        "Chosen before any run from the step counts (an epoch of mini-batches is "
        "ceil(train nodes / batch) Adam steps: 11 on Facebook, 17 on Physics), not tuned on "
        "test.",
        "",
        "## Test accuracy (%), mean ± std over seeds",
        "",
        "| dataset | graph | model | full batch | mini-batch | mini - full (paired) |",
        "|---|---|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {NAMES.get(r['dataset'], r['dataset'])} | {_graph_name(r['graph'], args)} | "
            f"{NAMES[r['model']]} | {100 * r['full_test_accuracy']:.1f} ± "
            f"{100 * r['full_test_std']:.1f} | {100 * r['mini_test_accuracy']:.1f} ± "
            f"{100 * r['mini_test_std']:.1f} | {100 * r['mini_minus_full']:+.1f} ± "
            f"{100 * r['mini_minus_full_std']:.1f} |")
    lines += [
        "",
        "## Time per epoch and memory",
        "",
        "Seconds per epoch: training (all batches) / validation inference; epochs run (best "
        "epoch); training MB: peak RSS during training minus the RSS before it (features, "
        "labels and graphs already loaded), mean over seeds; max RSS: the worker process's "
        "peak (Python, torch, the data).",
        "",
        "| dataset | graph | model | full s/epoch | mini s/epoch | full epochs | mini epochs "
        "| full training MB | mini training MB | full max RSS MB | mini max RSS MB |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {NAMES.get(r['dataset'], r['dataset'])} | {_graph_name(r['graph'], args)} | "
            f"{NAMES[r['model']]} | {r['full_train_epoch_seconds']:.3f} / "
            f"{r['full_eval_epoch_seconds']:.3f} | {r['mini_train_epoch_seconds']:.3f} / "
            f"{r['mini_eval_epoch_seconds']:.3f} | {r['full_epochs_run']:.0f} "
            f"({r['full_best_epoch']:.0f}) | {r['mini_epochs_run']:.0f} "
            f"({r['mini_best_epoch']:.0f}) | {r['full_training_mb']:.0f} | "
            f"{r['mini_training_mb']:.0f} | {r['full_max_rss_mb']:.0f} | "
            f"{r['mini_max_rss_mb']:.0f} |")
    lines += ["", "## Datasets and releases", ""]
    for ds, m in meta.items():
        edges = [s["private_edges"] for s in m["seeds"].values()]
        lines.append(f"* {NAMES.get(ds, ds)}: {m['nodes']:,} nodes, {m['edges']:,} directed "
                     f"edges, {m['features']:,} features, {m['classes']} classes; "
                     f"{args.method} eps {args.epsilon:g} kept {min(edges):,}-{max(edges):,} "
                     "weighted directed edges. Report: "
                     f"\"{next(iter(m['seeds'].values()))['privacy']}\"")
    if checks:
        lines += ["", "Consistency with the run path (`execute_run` of the same configuration, "
                  "seed 0): " + "; ".join(
                      f"{c['config']}: run {c['run_test_accuracy']:.4f}, cache "
                      f"{c['cache_test_accuracy']:.4f} ({'equal' if c['equal'] else 'DIFFERENT'})"
                      for c in checks) + "."]
    if (out / "INVESTIGATION.md").exists():
        lines += ["", "What these numbers say, and what moves mini-batch where it falls "
                  "behind (validation only, `--investigate`): "
                  "[INVESTIGATION.md](INVESTIGATION.md)."]
    lines += ["", "Per-run numbers: `results.json`.", ""]
    (out / "README.md").write_text("\n".join(lines), encoding="utf-8")


def _graph_name(graph: str, args: argparse.Namespace) -> str:
    return f"{args.method} eps {args.epsilon:g}" if graph == "private" else "true (non-private)"


# -------------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="facebook,coauthor-physics")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--graphs", default="private,true")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--method", default="blink-hybrid")
    ap.add_argument("--epsilon", type=float, default=4.0)
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--patience", type=int, default=50)
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--fanout", default="10,10")
    ap.add_argument("--mini-epochs", type=int, default=50)
    ap.add_argument("--mini-patience", type=int, default=10)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--cache", default=None, help="cache directory (default: OUT/cache)")
    ap.add_argument("--out", default="results/minibatch")
    ap.add_argument("--no-check", action="store_true", help="skip the run-path check")
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite OUT/README.md from OUT/results.json")
    ap.add_argument("--investigate", default=None, metavar="DATASET,GRAPH,MODEL",
                    help="train mini-batch variants from the cache of a finished run")
    ap.add_argument("--variants", default=None, help="JSON: {name: {option: value}}")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--prepare", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.fanout = [int(v) for v in str(args.fanout).split(",")]
    from dpgl.device import cpu_thread_defaults
    cpu_thread_defaults()
    if args.report_only:  # the README again from results.json (e.g. once INVESTIGATION.md
        out = Path(args.out)  # is written)
        saved = json.loads((out / "results.json").read_text())
        run_args = argparse.Namespace(**saved["args"])
        write_readme(out, run_args, saved["datasets"], saved["summary"], saved["runs"],
                     saved["command"], saved["wall_seconds"], saved["date"])
        return
    if args.investigate:
        investigate(args, Path(args.cache) if args.cache else Path(args.out) / "cache")
        return
    if args.prepare:
        cache = Path(args.cache) if args.cache else Path(args.out) / "cache"
        meta = prepare(args, args.prepare, cache)
        (cache / f"{args.prepare}-meta.json").write_text(json.dumps(meta))
        return
    if args.worker:
        job = json.loads(Path(args.worker).read_text())
        result = worker(args, job)
        Path(job["result"]).write_text(json.dumps(result))
        return
    start = time.perf_counter()
    out = Path(args.out)
    cache = Path(args.cache) if args.cache else out / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    command = "python " + " ".join(sys.argv)
    meta = {}
    for ds in args.datasets.split(","):  # each in its own process: the driver stays small
        subprocess.run([sys.executable, __file__, "--prepare", ds, *_forward(sys.argv[1:])],
                       check=True)
        meta[ds] = json.loads((cache / f"{ds}-meta.json").read_text())
    results = []
    for ds in args.datasets.split(","):
        for graph in args.graphs.split(","):
            for model in args.models.split(","):
                for mode in ("full", "mini"):
                    job = {"dataset": ds, "graph": graph, "model": model, "mode": mode,
                           "cache": str(cache), "meta": meta[ds],
                           "result": str(cache / f"job-{ds}-{graph}-{model}-{mode}.json")}
                    path = cache / f"job-{ds}-{graph}-{model}-{mode}-in.json"
                    path.write_text(json.dumps(job))
                    subprocess.run([sys.executable, __file__, "--worker", str(path),
                                    *_forward(sys.argv[1:])], check=True)
                    results.append(json.loads(Path(job["result"]).read_text()))
                    rows = summarize(results)
                    wall = time.perf_counter() - start
                    stamp = f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M}"
                    (out / "results.json").write_text(json.dumps(
                        {"command": command, "args": vars(args), "datasets": meta,
                         "summary": rows, "runs": results, "wall_seconds": wall,
                         "date": stamp}, indent=1))
                    write_readme(out, args, meta, rows, results, command, wall, stamp)
    print(f"done in {(time.perf_counter() - start) / 60:.1f} min: {out / 'README.md'}",
          file=sys.stderr)


def _forward(argv: list[str]) -> list[str]:
    """The driver's options for a worker (without --worker / --prepare and their values)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in ("--worker", "--prepare"):
            skip = True
        elif not a.startswith(("--worker=", "--prepare=")):
            out.append(a)
    return out


if __name__ == "__main__":
    main()
