"""Where a grid's runs execute (issue #15): ``local`` (one after another in this process, the
default), ``process`` (a pool of worker processes on this machine) or ``dask`` (the workers of
a Dask distributed cluster, or of a local one started for the grid). Workers only compute; the
driver alone writes the run store (:func:`dpgl.experiments.runner.run_grid`), so the store's
guarantees (one row per finished run, nothing for a failed or interrupted one, resume after
``kill -9``) hold whatever happens to a worker. Runs are deterministic given their
configuration, so the stored rows, hence the tables, do not depend on the executor.
"""

from __future__ import annotations

import functools
import os
import re
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from dpgl.errors import ConfigError, one_line

__all__ = ["EXECUTORS", "Completed", "DaskExecutor", "ProcessExecutor", "check_executor",
           "make_executor", "with_threads"]

EXECUTORS = ("local", "process", "dask")

# [scheme://]host:port, host a name, an IPv4 address or a bracketed IPv6 address
_ADDRESS = re.compile(r"^(?:[a-z][a-z0-9+.-]*://)?(?:\[[0-9A-Fa-f:.]+\]|[^\s/:\[\]]+):\d{1,5}$")


def check_executor(name: str, address: str | None = None, workers: int | None = None) -> str:
    """An executor name and its flags, refused with a one-line reason (before heavy imports:
    nothing here imports dask): a known name; ``address`` (a Dask scheduler's
    ``[tcp://]HOST:PORT``) only with ``dask``, and not together with ``workers`` (the size of
    a cluster this process starts)."""
    from dpgl.errors import unknown_name
    if name not in EXECUTORS:
        raise unknown_name("executor", name, EXECUTORS)
    if address is not None:
        if name != "dask":
            raise ConfigError(f"--address is a Dask scheduler's address: give it with "
                              f"--executor dask, not --executor {name}")
        if not _ADDRESS.match(address):
            raise ConfigError(f"--address {address!r} is not a Dask scheduler address: "
                              "give tcp://HOST:PORT (e.g. tcp://10.0.0.5:8786)")
        if workers is not None:
            raise ConfigError("--workers sets the size of the local cluster started without "
                              "--address; the cluster at --address has its own workers "
                              "(dask worker --nworkers N)")
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


def _call(fn: Callable[[Any], Any], item: Any) -> tuple[Any, str | None, str, float]:
    """Run ``fn(item)`` in a worker, timed; errors come back as text (they may not
    pickle)."""
    t0 = time.perf_counter()
    try:
        return fn(item), None, "", time.perf_counter() - t0
    except Exception as exc:
        return None, one_line(exc), traceback.format_exc(), time.perf_counter() - t0


def with_threads(fn: Callable[[Any], Any], threads: int, item: Any) -> Any:
    """``fn(item)`` on ``threads`` torch intra-op threads: what a worker runs when the driver
    was told a thread count (a spawned process or a Dask worker starts with torch's default,
    every core, which oversubscribes a machine shared by several workers). Picklable as
    ``functools.partial(with_threads, fn, threads)``."""
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return fn(item)


def on_threads(fn: Callable[[Any], Any], threads: int | None,
               executor: Any) -> Callable[[Any], Any]:
    """``fn`` set to run on ``threads`` torch threads: here (this process's thread count is set
    now) and, when the runs go to an ``executor``'s workers, in each worker
    (:func:`with_threads`); ``threads`` None or 0: ``fn`` as it is, torch's default."""
    if not threads:
        return fn
    import torch

    torch.set_num_threads(threads)
    return fn if executor is None else functools.partial(with_threads, fn, threads)


def _worker_count(workers: int | None) -> int:
    n = workers if workers is not None else max(1, (os.cpu_count() or 1))
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"--workers must be an integer >= 1, got {workers!r}")
    return n


# seconds to reach a scheduler at --address and to wait for its first worker
CONNECT_TIMEOUT = 5.0

_NOT_STORED = "the run is not stored and runs again on resume"
_DIED = f"worker process died (killed or out of memory); {_NOT_STORED}"


class ProcessExecutor:
    """A pool of ``workers`` processes (spawned, so each worker starts clean: its own torch
    threads and seeds) on this machine. ``fn`` must be picklable (a module-level function or
    a ``functools.partial`` of one)."""

    name = "process"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = _worker_count(workers)

    def __enter__(self) -> ProcessExecutor:
        return self  # the pool lives for one map_unordered call

    def __exit__(self, *exc: object) -> None:
        pass

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
                    yield Completed(i, error=_DIED)
                    continue
                yield Completed(i, result, error, tb, seconds)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


class DaskExecutor:
    """The workers of a Dask distributed cluster: the scheduler at ``address``
    (``tcp://HOST:PORT``, started with ``dask scheduler``), or, without one, a cluster of
    ``workers`` processes (one thread each) on this machine's loopback interface. Connected
    (the local cluster started) for a ``with`` block, or else for one :meth:`map_unordered`
    call, and closed after it. ``fn`` travels by pickle (cloudpickle): the workers need the
    same dpgl (and dask) install and the data directory the runs read.

    A worker that dies while running a run: the scheduler gives the run to another worker; a
    run that was on ``retries + 1`` dying workers (the scheduler's ``allowed-failures``; for a
    cluster at ``address`` the scheduler's own setting, Dask's default 3) is reported as
    failed, not stored, and runs again on resume. The driver alone writes the store, so a
    retried run is stored once. ``timeout`` (default :data:`CONNECT_TIMEOUT`): seconds to
    reach the scheduler and to wait for its first worker; an unreachable scheduler is a
    one-line :class:`ConfigError`."""

    name = "dask"

    def __init__(self, address: str | None = None, workers: int | None = None, *,
                 retries: int = 1, timeout: float | None = None) -> None:
        if address is not None:
            check_executor("dask", address, workers)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ConfigError(f"retries must be an integer >= 0, got {retries!r}")
        self.address = address
        self.workers = _worker_count(workers) if address is None else None
        self.retries = retries
        self.timeout = CONNECT_TIMEOUT if timeout is None else timeout
        self._client: Any = None
        self._cluster: Any = None

    def __enter__(self) -> DaskExecutor:
        """Connect (or start the local cluster) now, for every :meth:`map_unordered` until
        the ``with`` ends; the CLI does this before the grid starts, so an unreachable
        scheduler is refused before anything runs."""
        if self._client is None:
            self._client, self._cluster = self._connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Disconnect, and close the local cluster if this executor started one."""
        from dpgl.distributed.cluster import close_quietly
        client, cluster = self._client, self._cluster
        self._client = self._cluster = None
        close_quietly(client, cluster)

    def _connect(self) -> tuple[Any, Any]:
        """(client, the cluster this executor started or None)."""
        from dpgl.distributed.cluster import open_client, start_local_cluster
        if self.address is not None:
            return open_client(self.address, self.timeout), None
        # one run per worker at a time, so a worker's death charges only the run it was
        # running against its retries
        cluster = start_local_cluster(self.workers, retries=self.retries,
                                      one_task_per_worker=True)
        try:
            return open_client(cluster, self.timeout), cluster
        except BaseException:
            cluster.close()
            raise

    def map_unordered(self, fn: Callable[[Any], Any], items: Sequence[Any]
                      ) -> Iterator[Completed]:
        """``fn`` over ``items`` on the cluster's workers, yielded as they finish (the
        contract of :meth:`ProcessExecutor.map_unordered`). Leaving early (an error, Ctrl-C)
        cancels the runs not yet finished (and, outside a ``with``, disconnects and closes the
        local cluster)."""
        if not items:
            return
        if self._client is None:  # not in a ``with``: connected for this call only
            with self:
                yield from self._map(fn, items)
        else:
            yield from self._map(fn, items)

    def _map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Completed]:
        from distributed import as_completed
        client = self._client
        batch = uuid.uuid4().hex[:8]
        futures = {client.submit(_call, fn, item, key=f"dpgl-run-{batch}-{i}", pure=False): i
                   for i, item in enumerate(items)}
        try:
            for fut in as_completed(futures, loop=client.loop):
                i = futures.pop(fut)
                try:
                    result, error, tb, seconds = fut.result()
                except Exception as exc:  # lost workers, a lost scheduler, unpickling
                    done = Completed(i, error=_dask_error(exc),
                                     traceback=traceback.format_exc())
                else:
                    done = Completed(i, result, error, tb, seconds)
                fut.release()  # the result lives on the worker until released
                yield done
        finally:
            if futures:  # left early: the runs not yet finished are not wanted
                client.cancel(list(futures))


def _dask_error(exc: BaseException) -> str:
    """A failed Dask task as one line (not the run's own error: ``_call`` catches those)."""
    from concurrent.futures import CancelledError

    from distributed import KilledWorker
    if isinstance(exc, KilledWorker):
        return ("worker process died (killed or out of memory) on every worker that tried it "
                f"(the scheduler's allowed-failures); {_NOT_STORED}")
    if isinstance(exc, CancelledError):  # e.g. the scheduler died: scheduler-connection-lost
        return f"cancelled by Dask ({getattr(exc, 'reason', 'unknown')}); {_NOT_STORED}"
    return f"{one_line(exc)}; {_NOT_STORED}"


def make_executor(name: str, workers: int | None = None, address: str | None = None
                  ) -> ProcessExecutor | DaskExecutor | None:
    """The executor called ``name`` (None: ``local``, the runner's own loop)."""
    check_executor(name, address, workers)
    if name == "local":
        return None
    if name == "dask":
        return DaskExecutor(address, workers)
    return ProcessExecutor(workers)
