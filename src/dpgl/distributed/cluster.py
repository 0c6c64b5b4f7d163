"""Connecting to a Dask cluster (issue #15): an existing scheduler (``address``) or a local
cluster of worker processes on loopback, started here and stopped on exit. Used by the
sharded runs (:mod:`dpgl.distributed.sharded`) and the grid executor
(:class:`dpgl.experiments.executors.DaskExecutor`).

Dask distributed, not Ray (docs/scale.md): a pure-Python wheel of a few MB, a local cluster
that starts in about a second inside a test, ``dask scheduler`` / ``dask worker`` to build a
real one, and Dask bags whose partitions are our blocks of users. Only this package and the
grid executor import the engine, inside functions; the library's core never does.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from dpgl.errors import ConfigError, one_line

__all__ = ["CONNECT_TIMEOUT", "close_quietly", "connect", "open_client", "start_local_cluster"]

#: Seconds to reach a scheduler and to wait for its first worker.
CONNECT_TIMEOUT = 5.0


def start_local_cluster(workers: int, *, retries: int | None = None,
                        one_task_per_worker: bool = False) -> Any:
    """A ``LocalCluster`` of ``workers`` single-threaded worker processes on 127.0.0.1: no
    dashboard, the scheduler's HTTP endpoints on a free loopback port (8787 may be taken),
    logs silenced (the caller reports failures). ``retries``: the scheduler's
    ``allowed-failures`` (how often a task whose worker died is retried);
    ``one_task_per_worker``: a worker holds only the task it runs (worker-saturation 1), so
    a worker's death charges only that task."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers must be an integer >= 1, got {workers!r}")
    import dask
    from distributed import LocalCluster
    settings: dict[str, Any] = {}
    if retries is not None:
        settings["distributed.scheduler.allowed-failures"] = retries
    if one_task_per_worker:
        settings["distributed.scheduler.worker-saturation"] = 1.0
    with dask.config.set(settings):
        return LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address=None,
            scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
            silence_logs=logging.CRITICAL)


def open_client(target: Any, timeout: float = CONNECT_TIMEOUT) -> Any:
    """A ``distributed.Client`` of ``target`` (a cluster object, or a scheduler address
    ``tcp://HOST:PORT`` that must answer and have a worker within ``timeout`` seconds; else
    a one-line :class:`ConfigError`)."""
    from distributed import Client
    if not isinstance(target, str):
        return Client(target, timeout=timeout, set_as_default=False)
    try:
        client = Client(target, timeout=timeout, set_as_default=False)
    except (OSError, ValueError) as exc:  # refused, unknown host, timed out
        raise ConfigError(f"cannot reach the Dask scheduler at {target}: {one_line(exc)} "
                          "(is `dask scheduler` running there?)") from None
    try:
        client.wait_for_workers(1, timeout=timeout)
    except TimeoutError:
        client.close()
        raise ConfigError(f"the Dask scheduler at {target} has no workers after {timeout:g} s "
                          f"(start some: dask worker {target})") from None
    except BaseException:
        client.close()
        raise
    return client


def close_quietly(client: Any, cluster: Any = None) -> None:
    """Close ``client`` (a client whose scheduler died logs its cancelled reconnection as a
    traceback: silenced, the caller has reported what was lost) and the local ``cluster``."""
    log = logging.getLogger("distributed.client")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        if client is not None:
            client.close()
    finally:
        log.setLevel(level)
        if cluster is not None:
            cluster.close()


@contextlib.contextmanager
def connect(address: str | None = None, *, workers: int = 2,
            timeout: float = CONNECT_TIMEOUT) -> Iterator[Any]:
    """A ``distributed.Client`` of the scheduler at ``address``, or of a local cluster of
    ``workers`` single-threaded processes on 127.0.0.1 (:func:`start_local_cluster`), closed
    on exit."""
    cluster = None if address is not None else start_local_cluster(workers)
    try:
        client = open_client(address if address is not None else cluster, timeout)
    except BaseException:
        if cluster is not None:
            cluster.close()
        raise
    try:
        yield client
    finally:
        close_quietly(client, cluster)
