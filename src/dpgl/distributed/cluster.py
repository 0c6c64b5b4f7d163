"""Connecting to a Dask cluster (issue #15): an existing scheduler (``address``) or a local
cluster of worker processes on loopback, started here and stopped on exit.

Dask distributed, not Ray (docs/scale.md): a pure-Python wheel of a few MB, a local cluster
that starts in about a second inside a test, ``dask scheduler`` / ``dask worker`` to build a
real one, and Dask bags whose partitions are our blocks of users. Only this package imports
the engine; the library's core never does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from dpgl.errors import ConfigError

__all__ = ["connect"]


@contextlib.contextmanager
def connect(address: str | None = None, *, workers: int = 2,
            memory_limit: str | None = None, timeout: float = 10.0) -> Iterator[Any]:
    """A ``distributed.Client``: of the scheduler at ``address`` (``tcp://host:port``), or of
    a local cluster of ``workers`` single-threaded worker processes on 127.0.0.1 (no
    dashboard), closed on exit. An unreachable address is a one-line :class:`ConfigError`."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers must be an integer >= 1, got {workers!r}")
    from distributed import Client, LocalCluster
    if address is not None:
        try:
            client = Client(address, timeout=timeout)
        except (OSError, TimeoutError, ValueError) as exc:
            raise ConfigError(f"cannot reach the Dask scheduler at {address}: "
                              f"{' '.join(str(exc).split())}") from None
        try:
            yield client
        finally:
            client.close()
        return
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           host="127.0.0.1", dashboard_address=None,
                           memory_limit=memory_limit or "auto")
    try:
        client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
    finally:
        cluster.close()
