"""Small helpers shared by the benchmark scripts (each run as ``python benchmarks/NAME.py``,
which puts this folder on ``sys.path``)."""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path


def csv_items(text: str) -> list[str]:
    """The non-empty, stripped items of a comma-separated option ('' gives [])."""
    return [t.strip() for t in text.split(",") if t.strip()]


def chosen_names(ap: argparse.ArgumentParser, text: str, every: Iterable[str],
                 known: Iterable[str], kind: str) -> list[str]:
    """The names of a comma-separated option (``all``: ``every``); an unknown one is an
    argument error listing ``known``."""
    names = list(every) if text == "all" else csv_items(text)
    allowed = list(known)
    for n in names:
        if n not in allowed:
            ap.error(f"unknown {kind} {n!r}; choose from {', '.join(allowed)}")
    return names


def add_graph_step_args(ap: argparse.ArgumentParser) -> None:
    """The options of the one-epoch benchmarks on a random RR-sized graph (solitude_step.py,
    gat_step.py): device, graph size, repeats, seed, output folder."""
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    ap.add_argument("--nodes", type=int, default=22470, help="default: Facebook's")
    ap.add_argument("--edges", default="1e6", help="comma-separated numbers of directed edges")
    ap.add_argument("--features", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="folder for results.json")


def check_graph_step_args(ap: argparse.ArgumentParser, a: argparse.Namespace) -> None:
    """Check :func:`add_graph_step_args`' options (an argument error otherwise) and set
    ``a.edge_list``, the edge counts as ints."""
    try:
        a.edge_list = [int(float(t)) for t in csv_items(a.edges)]
    except ValueError:
        ap.error(f"--edges must be comma-separated numbers, got {a.edges!r}")
    if not a.edge_list or min(a.edge_list) < 1 or min(a.nodes, a.features, a.repeats) < 1:
        ap.error("--edges, --nodes, --features and --repeats must be positive")
    if a.device != "cpu" and not a.device.startswith("cuda"):
        ap.error(f"--device must be cpu, cuda or cuda:N, got {a.device!r}")


def random_graph_task(n: int, e: int, d: int, seed: int, device: str):
    """The graph-step benchmarks' task: ``e`` random directed edges on ``n`` nodes, sorted by
    target as RR reports come, no self-loops; ``d`` dense features, 4 classes, every other node
    a training node; and the CPU generator they were drawn from (for further draws), a
    ``sync`` for timing on ``device``. Returns (generator, edge_index, x, y, train, sync)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    dst = torch.sort(torch.randint(0, n, (e,), generator=g)).values
    src = torch.randint(0, n - 1, (e,), generator=g)
    src = src + (src >= dst).long()  # no self-loops
    ei = torch.stack([src, dst]).to(device)
    del src, dst
    x = torch.randn(n, d, generator=g).to(device)
    y = torch.randint(0, 4, (n,), generator=g).to(device)
    train = torch.arange(0, n, 2, device=device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    return g, ei, x, y, train, sync


def command_line(script: str, argv: list[str] | None) -> str:
    """The command that reproduces this invocation, for the results page."""
    return f"python benchmarks/{script} " + " ".join(
        shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))


def torch_on(device: str):
    """torch with one thread, after checking that ``device`` (cpu, cuda or cuda:N) is there:
    a one-line exit when CUDA is asked for and torch sees no GPU."""
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("error: --device cuda but torch sees no GPU")
    torch.set_num_threads(1)
    return torch


def write_results(out: Path | None, script: str, argv: list[str] | None, device: str,
                  rows: list[dict]) -> None:
    """``out/results.json`` (nothing when ``out`` is None): the command, the device's name,
    torch's version and the measured rows."""
    if out is None:
        return
    import json

    import torch

    out.mkdir(parents=True, exist_ok=True)
    name = torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu"
    (out / "results.json").write_text(json.dumps(
        {"command": command_line(script, argv), "device": name, "torch": torch.__version__,
         "rows": rows}, indent=2), encoding="utf-8")
    print(f"wrote {out / 'results.json'}")


def run_python(args: list[str], src: Path | None, env_extra: dict[str, str],
               timeout: float | None) -> tuple[int, str, dict]:
    """Run ``python ARGS`` with ``src`` first on the path (None: the installed dpgl);
    (status, stdout, usage) where usage holds this child's CPU seconds (user + system, all
    its threads), peak RSS (MB) and wall seconds (os.wait4)."""
    env = dict(os.environ, **env_extra)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, *args], stdout=out, stderr=err, env=env)
        try:
            _, status, ru = _wait4(proc.pid, timeout)
        except TimeoutError:
            proc.kill()
            _wait4(proc.pid, None)
            return -1, "", {"status": f"timeout (> {timeout or 0:.0f} s)"}
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        text, errs = out.read().decode(), err.read().decode()
    usage = {"cpu": ru.ru_utime + ru.ru_stime, "user": ru.ru_utime, "sys": ru.ru_stime,
             "rss_mb": ru.ru_maxrss / 1024, "wall": wall}
    if proc.returncode:
        lines = errs.strip().splitlines()
        usage["status"] = "error: " + (lines[-1] if lines else "?")
    return proc.returncode, text, usage


def _wait4(pid: int, timeout: float | None) -> tuple[int, int, resource.struct_rusage]:
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        got_pid, status, ru = os.wait4(pid, os.WNOHANG if deadline else 0)
        if got_pid:
            return got_pid, status, ru
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError
        time.sleep(0.05)
