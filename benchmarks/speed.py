"""Speed of the three bottlenecks of issue #13 item 7, before and after, measured the same way.

Cases (each in a fresh subprocess; CPU time = user + system of that process, all threads):

* ``blink``: Blink-Hard's users + server (``BlinkTransform(4, variant="hard").estimate``) on
  Cora, and the whole command ``dpgl train --dataset cora --method blink-hard --epsilon 4``.
* ``symrr``: SymRR's users + server graph (``SymRRTransform(1).estimate``) on a 10,000-node
  Chung-Lu power-law graph (average degree 10, as in ``benchmarks/edge_ldp.py``; ~13.4 million
  reported pairs).
* ``dpar``: the whole command ``dpgl train --dataset coauthor-cs --method dpar-gm --model mlp
  --epsilon 1`` (``--dpar-epochs`` sets ``-p epochs=E``; the default 200 is the full run).

"before" is the code at ``--baseline`` (default 2d2d5b5, the commit this work started from),
exported with ``git archive`` into a temporary folder and run with the same scripts; "after" is
this checkout's ``src``. The in-process cases report the first call of a fresh process
(``cold``: includes first-touch page faults of new memory, expensive in VMs) and the best of
``--repeats`` further calls (``warm``); the commands report their CPU time and peak RSS. Every
case also checks that before and after give the same output (edge_index hash, metrics).

Measured on the machine this was written on (a Firecracker VM with 2 cores shared with other
jobs, where first-touch page faults of new memory are expensive and torch's two OpenMP
threads spin whenever the other core is busy; CPU seconds, user + system, before -> after):

| case                                                    | before (2d2d5b5) | after          |
|---------------------------------------------------------|------------------|----------------|
| Blink-Hard estimate, Cora, eps 4 (first call / best)    | 2.37 / 2.07      | 0.079 / 0.071  |
| ``dpgl train ... blink-hard``, ``--threads 1``          | 7.82             | 5.69           |
|   of which the imports alone                            | 5.08             | 4.91           |
| ``dpgl train ... blink-hard``, default threads          | 13.5 - 14.7      | 9.2 - 9.7      |
| SymRR estimate, n 10^4, eps 1 (first call / best)       | 5.12 / 1.23      | 2.15 / 0.44    |
| ``dpgl train ... dpar-gm``, 200 epochs, ``--threads 1`` | 351 (1883 MB)    | 37.4 (1568 MB) |
| ``dpgl train ... dpar-gm``, 200 epochs, default threads | 809 (1929 MB)    | 177 - 268      |

Every case gave the same output before and after (edge_index hash; for the commands the
metrics and the number of estimated edges). The default-thread command rows are dominated by
the spinning threads under load (DPAR default threads: single runs at load 2-6; the after
runs' peak was 1628 MB).

    python benchmarks/speed.py --out bench-output/speed
    python benchmarks/speed.py --items symrr,blink --repeats 5 --out bench-output/speed
    python benchmarks/speed.py --items dpar --dpar-epochs 20 --out bench-output/speed
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import chosen_names, command_line, run_python

ITEMS = ("blink", "symrr", "dpar")
ROOT = Path(__file__).resolve().parents[1]
CLI = "from dpgl.cli import main; main()"
#: what ``dpgl train`` imports before it runs (its fixed start-up cost)
IMPORTS = "import dpgl.cli, dpgl.experiments.execute, dpgl.methods.edge_ldp, dpgl.datasets"


def _split() -> tuple[float, float]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def _timed_calls(call: object, repeats: int) -> tuple[dict, object]:
    """Run ``call()`` 1 + ``repeats`` times: the first call's CPU (user, system) and the best
    of the others; returns (timings, last result)."""
    times, result, cold = [], None, (0.0, 0.0)
    for k in range(1 + repeats):
        result = None  # the previous output is not kept alive during the next call
        u0, s0 = _split()
        result = call()  # type: ignore[operator]
        u1, s1 = _split()
        times.append((u1 - u0) + (s1 - s0))
        if k == 0:
            cold = (u1 - u0, s1 - s0)
    return {"cold": times[0], "cold_user": cold[0], "cold_sys": cold[1],
            "warm": min(times[1:] or times)}, result


def _digest(t: object) -> str:
    import numpy as np

    return hashlib.sha256(np.ascontiguousarray(np.asarray(t)).tobytes()).hexdigest()[:16]


# --------------------------------------------------------------------------- workers


def worker_blink(repeats: int) -> dict:
    """Blink-Hard (eps 4, degree share 0.1, seed 0) users + server on Cora."""
    from dpgl.datasets import load_dataset
    from dpgl.mechanisms.neighbor_list import undirected_pairs
    from dpgl.transforms import BlinkTransform

    data = load_dataset("cora")
    n = int(data.num_nodes)
    u, v = undirected_pairs(data.edge_index, n)
    def call() -> object:
        t = BlinkTransform(4.0, 0.1, variant="hard", seed=0)
        return t.estimate(u, v, n, t.rng)[0]

    res, ei = _timed_calls(call, repeats)
    return {**res, "output": _digest(ei.numpy()), "size": int(ei.shape[1]),  # type: ignore[attr-defined]
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def worker_symrr(graph: str, repeats: int) -> dict:
    """SymRR (eps 1, seed 0) users + server on the saved graph."""
    import numpy as np

    from dpgl.transforms import SymRRTransform

    g = np.load(graph)
    u, v, n = g["u"], g["v"], int(g["n"])
    def call() -> object:
        t = SymRRTransform(1.0, seed=0)
        return t.estimate(u, v, n, t.rng)[0]

    res, ei = _timed_calls(call, repeats)
    return {**res, "output": _digest(ei.numpy()), "size": int(ei.shape[1]),  # type: ignore[attr-defined]
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


# --------------------------------------------------------------------------- driver


def _worker_case(item: str, src: Path, graph: str, repeats: int, env: dict[str, str],
                 timeout: float) -> dict:
    args = [__file__, "--worker", item, "--repeats", str(repeats)]
    if item == "symrr":
        args += ["--graph", graph]
    rc, text, usage = run_python(args, src, env, timeout)
    if rc:
        return {"status": usage.get("status", "error")}
    res = json.loads(text.strip().splitlines()[-1])
    res["process_cpu"] = usage["cpu"]
    return res


def _cli_case(cli_args: list[str], src: Path, env: dict[str, str], timeout: float) -> dict:
    if cli_args and cli_args[0] == "-c":  # a plain Python snippet (the imports alone)
        rc, _, usage = run_python(cli_args, src, env, timeout)
        return {"status": usage.get("status", "error")} if rc else usage
    rc, text, usage = run_python(["-c", CLI, *cli_args, "--json"], src, env, timeout)
    if rc:
        return {"status": usage.get("status", "error")}
    try:
        out = json.loads(text)
    except json.JSONDecodeError:
        out = {}
    metrics = dict(out.get("metrics", {})) if isinstance(out, dict) else {}
    info = out.get("info", {}) if isinstance(out, dict) else {}
    if isinstance(info, dict) and "estimated_edges" in info:
        metrics["estimated_edges"] = info["estimated_edges"]
    usage["output"] = json.dumps(metrics, sort_keys=True)
    return usage


def export_baseline(rev: str, dest: Path) -> Path:
    """``git archive REV src`` into ``dest``; returns the exported ``src``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / "src"


def chung_lu_file(path: Path, n: int) -> str:
    sys.path.insert(0, str(Path(__file__).parent))
    import numpy as np
    from edge_ldp import chung_lu_graph

    u, v = chung_lu_graph(n, 10.0, 0)
    np.savez(path, u=u, v=v, n=n)
    return str(path)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", default="all", help=f"all or a comma list of {', '.join(ITEMS)}")
    ap.add_argument("--baseline", default="2d2d5b5",
                    help="git revision measured as 'before' ('none': after only)")
    ap.add_argument("--repeats", type=int, default=3, help="warm calls after the cold one")
    ap.add_argument("--cli-repeats", type=int, default=2, help="runs of each short command")
    ap.add_argument("--dpar-epochs", type=int, default=200)
    ap.add_argument("--threads", type=int, default=0,
                    help="OMP/MKL threads of every case (0: library defaults)")
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument("--out", default="bench-output/speed", help="output folder")
    ap.add_argument("--worker", choices=ITEMS, help=argparse.SUPPRESS)
    ap.add_argument("--graph", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        res = worker_blink(args.repeats) if args.worker == "blink" else \
            worker_symrr(args.graph, args.repeats)
        print(json.dumps(res))
        return
    items = chosen_names(ap, args.items, ITEMS, ITEMS, "item")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = {} if args.threads <= 0 else {"OMP_NUM_THREADS": str(args.threads),
                                        "MKL_NUM_THREADS": str(args.threads)}
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"after": ROOT / "src"}
        if args.baseline != "none":
            trees = {"before": export_baseline(args.baseline, Path(tmp)), **trees}
        graph = chung_lu_file(Path(tmp) / "g.npz", 10_000) if "symrr" in items else ""
        cases: list[tuple[str, str, object]] = []
        if "blink" in items:
            cases.append(("blink", "Blink-Hard estimate (Cora, eps 4)", "worker"))
            cases.append(("blink", "dpgl train cora blink-hard eps 4",
                          ["train", "--dataset", "cora", "--method", "blink-hard",
                           "--epsilon", "4"]))
            cases.append(("blink", "its imports alone", ["-c", IMPORTS]))
        if "symrr" in items:
            cases.append(("symrr", "SymRR estimate (n 10^4, eps 1)", "worker"))
        if "dpar" in items:
            cases.append(("dpar", f"dpgl train coauthor-cs dpar-gm eps 1 ({args.dpar_epochs} "
                                  "epochs)",
                          ["train", "--dataset", "coauthor-cs", "--method", "dpar-gm",
                           "--model", "mlp", "--epsilon", "1", "-p",
                           f"epochs={args.dpar_epochs}"]))
        for item, label, how in cases:
            for side, src in trees.items():
                if how == "worker":
                    res = _worker_case(item, src, graph, args.repeats, env, args.timeout)
                else:
                    runs = [_cli_case(how, src, env, args.timeout)  # type: ignore[arg-type]
                            for _ in range(1 if item == "dpar" else args.cli_repeats)]
                    ok = [r for r in runs if "status" not in r]
                    res = min(ok, key=lambda r: r["cpu"]) if ok else runs[0]
                row = {"item": item, "case": label, "side": side, **res}
                rows.append(row)
                print(format_row(row), flush=True)
    table = format_table(rows)
    (out_dir / "speed.json").write_text(json.dumps(rows, indent=1))
    (out_dir / "speed.md").write_text(f"`{command_line('speed.py', argv)}`\n\n{table}")
    print(table)


def format_row(r: dict) -> str:
    if "status" in r:
        return f"{r['case']:>45} {r['side']:>6}: {r['status']}"
    if "cold" in r:
        return (f"{r['case']:>45} {r['side']:>6}: cold {r['cold']:.3f} s (user "
                f"{r['cold_user']:.3f}, sys {r['cold_sys']:.3f})  warm {r['warm']:.3f} s CPU  "
                f"peak {r['rss_mb']:.0f} MB  output {r['output']}")
    return (f"{r['case']:>45} {r['side']:>6}: {r['cpu']:.2f} s CPU (user {r['user']:.2f}, "
            f"sys {r['sys']:.2f})  wall {r['wall']:.1f} s  peak {r['rss_mb']:.0f} MB")


def format_table(rows: list[dict]) -> str:
    lines = ["| case | before: CPU s | after: CPU s | speed-up | before: peak MB | "
             "after: peak MB | same output | user / sys s (before; after) |",
             "|---|---:|---:|---:|---:|---:|---|---|"]
    by_case: dict[str, dict[str, dict]] = {}
    for r in rows:
        by_case.setdefault(r["case"], {})[r["side"]] = r
    for case, sides in by_case.items():
        variants = [("cold", " (cold)"), ("warm", " (warm)")] \
            if any("cold" in r for r in sides.values()) else [("cpu", "")]
        b, a = sides.get("before"), sides.get("after")
        for key, suffix in variants:
            cells = ["-" if r is None else r.get("status", f"{r.get(key, 0):.3f}")
                     for r in (b, a)]
            try:
                speed = f"{float(cells[0]) / float(cells[1]):.1f}x"
            except (ValueError, ZeroDivisionError):
                speed = "-"
            same = "-" if not (b and a and "output" in b and "output" in a) else \
                ("yes" if b["output"] == a["output"] else "NO")
            mem = [f"{s['rss_mb']:.0f}" if s and "rss_mb" in s else "-" for s in (b, a)]
            uk, sk = ("cold_user", "cold_sys") if key == "cold" else ("user", "sys")
            split = "; ".join(f"{r[uk]:.2f} / {r[sk]:.2f}" if r and uk in r else "-"
                              for r in (b, a)) if key != "warm" else ""
            lines.append(f"| {case}{suffix} | {cells[0]} | {cells[1]} | {speed} | {mem[0]} | "
                         f"{mem[1]} | {same} | {split} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
