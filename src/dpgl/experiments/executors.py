"""Where a grid's runs execute (issue #15): ``local`` (one after another in this process, the
default) or ``process`` (a pool of worker processes on this machine). Workers only compute; the
driver alone writes the run store (:func:`dpgl.experiments.runner.run_grid`), so the store's
guarantees (one row per finished run, nothing for a failed or interrupted one, resume after
``kill -9``) hold whatever happens to a worker. Runs are deterministic given their
configuration, so the stored rows, hence the tables, do not depend on the executor.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from dpgl.errors import ConfigError

__all__ = ["EXECUTORS", "Completed", "ProcessExecutor", "check_executor", "make_executor"]

EXECUTORS = ("local", "process")


def check_executor(name: str) -> str:
    """An executor name, refused with the list of known ones (before heavy imports)."""
    from dpgl.errors import unknown_name
    if name not in EXECUTORS:
        raise unknown_name("executor", name, EXECUTORS)
    return name


@dataclass(frozen=True)
class Completed:
    """One finished run: its position in the submitted list, its result or its error (one
    line, plus the worker's traceback), and its wall time in the worker."""

    index: int
    result: Any = None
    error: str | None = None
    traceback: str = ""
    seconds: float = 0.0


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _call(fn: Callable[[Any], Any], item: Any) -> tuple[Any, str | None, str, float]:
    """Run ``fn(item)`` in a worker, timed; errors come back as text (they may not
    pickle)."""
    t0 = time.perf_counter()
    try:
        return fn(item), None, "", time.perf_counter() - t0
    except Exception as exc:
        return None, _one_line(exc), traceback.format_exc(), time.perf_counter() - t0


class ProcessExecutor:
    """A pool of ``workers`` processes (spawned, so each worker starts clean: its own torch
    threads and seeds) on this machine. ``fn`` must be picklable (a module-level function or
    a ``functools.partial`` of one)."""

    name = "process"

    def __init__(self, workers: int | None = None) -> None:
        n = workers if workers is not None else max(1, (os.cpu_count() or 1))
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"--workers must be an integer >= 1, got {workers!r}")
        self.workers = n

    def map_unordered(self, fn: Callable[[Any], Any], items: Sequence[Any]
                      ) -> Iterator[Completed]:
        """``fn`` over ``items``, yielded as they finish. A worker that dies (killed, out of
        memory) fails the runs it held and those still queued: they are reported as errors,
        never stored, and run again when the grid is resumed."""
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed
        from concurrent.futures.process import BrokenProcessPool
        pool = ProcessPoolExecutor(max_workers=self.workers,
                                   mp_context=multiprocessing.get_context("spawn"))
        futures = {pool.submit(_call, fn, item): i for i, item in enumerate(items)}
        try:
            for fut in as_completed(futures):
                i = futures[fut]
                try:
                    result, error, tb, seconds = fut.result()
                except BrokenProcessPool:
                    yield Completed(i, error="worker process died (killed or out of memory); "
                                    "the run is not stored and runs again on resume")
                    continue
                yield Completed(i, result, error, tb, seconds)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def make_executor(name: str, workers: int | None = None) -> ProcessExecutor | None:
    """The executor called ``name`` (None: ``local``, the runner's own loop)."""
    check_executor(name)
    if name == "local":
        return None
    return ProcessExecutor(workers)
