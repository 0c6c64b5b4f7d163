"""Sharded simulation and estimation (issue #15): the users' randomizers and the server's
sparse estimators run block by block on a Dask cluster (or in this process), with output
identical for any number of partitions or workers.

A :class:`ShardedRun` holds the shard store, the seed and the blocks. Each stage maps a
block task (:mod:`dpgl.distributed.tasks`) over a Dask bag whose partitions are runs of
consecutive blocks (:meth:`UserBlocks.partition`), so a partition is the engine's unit of
scheduling and a block the unit of randomness (:mod:`dpgl.distributed.streams`). Stages:

* :meth:`ShardedRun.dprr`: DPRR neighbor reports (edge-LDP), the server's graph is the
  reports as they are (the ``directed`` policy of :func:`dpgl.estimators.dprr.dprr_graph`);
* :meth:`ShardedRun.features`: LPGNN's multi-bit feature reports and rectified estimates
  (feature-LDP);
* :meth:`ShardedRun.labels`: k-ary RR labels (label-LDP);
* :meth:`ShardedRun.kprop`: KProp aggregation of the feature estimates over the reported
  graph, row block by row block (post-processing).

What a stage spends is what the blocks' randomizers recorded on the workers; blocks hold
disjoint users, so the run's accountant composes them in parallel (:func:`merge_privacy`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from dpgl import progress
from dpgl.distributed import tasks
from dpgl.distributed.blocks import DEFAULT_BLOCK_SIZE, UserBlocks
from dpgl.distributed.store import ShardStore
from dpgl.distributed.streams import check_seed
from dpgl.errors import ConfigError, PrivacyError, unknown_name
from dpgl.privacy import Accountant

__all__ = ["ShardedRun", "StageResult", "map_blocks", "merge_privacy"]


@dataclass
class StageResult:
    """One stage's outcome: outputs written, wall time, the peak resident memory of every
    worker process that ran a block (MB, by pid) and the blocks' results in block order."""

    stage: str
    outputs: int
    seconds: float
    peak_rss_mb: dict[int, float] = field(default_factory=dict)
    blocks: list[tasks.BlockResult] = field(default_factory=list)


def _run_group(fn: Callable[[int], tasks.BlockResult], group: Sequence[int]
               ) -> list[tasks.BlockResult]:
    return [fn(b) for b in group]


def map_blocks(fn: Callable[[int], tasks.BlockResult], groups: list[list[int]], *,
               client: Any = None, label: str = "blocks") -> list[tasks.BlockResult]:
    """``fn`` over every block, one Dask bag partition per group of blocks: on the
    distributed ``client``'s workers, or in this process (Dask's synchronous scheduler) when
    it is None. Results in block order; progress per partition."""
    import dask
    import dask.bag as db
    bag = db.from_sequence(groups, npartitions=len(groups)).map(partial(_run_group, fn))
    parts = bag.to_delayed()
    out: dict[int, tasks.BlockResult] = {}
    with progress.step(label, total=len(parts)) as s:
        if client is None:
            for part in parts:
                (results,), = dask.compute(part, scheduler="synchronous")
                out.update((r.block, r) for r in results)
                s.advance()
        else:
            from distributed import as_completed
            futures = client.compute(parts)
            for fut in as_completed(futures, loop=client.loop):
                (results,) = fut.result()
                out.update((r.block, r) for r in results)
                s.advance()
    return [out[b] for g in groups for b in g]


def merge_privacy(accountant: Accountant, name: str, results: Sequence[tasks.BlockResult]
                  ) -> None:
    """Record in ``accountant`` what the blocks' randomizers recorded: a parallel scope over
    the blocks (disjoint users; McSherry 2009), one member per distinct record (blocks that
    recorded the same parts are one member). A block that recorded nothing is refused: its
    reports would rest on no charge."""
    groups: dict[str, list[int]] = {}
    for r in results:
        if not r.privacy or not r.privacy.get("parts"):
            raise PrivacyError(f"block {r.block} of {name} wrote reports but its randomizers "
                               "recorded no charge")
        groups.setdefault(json.dumps(r.privacy, sort_keys=True), []).append(r.block)
    with accountant.parallel(name, "blocks of disjoint users: parallel composition") as scope:
        for state, blocks in groups.items():
            with scope.member(f"blocks {blocks[0]}..{blocks[-1]} ({len(blocks)})") as child:
                child.load_state_dict(json.loads(state))


@dataclass
class ShardedRun:
    """A sharded run over the users of ``store``: ``seed`` fixes every block's stream,
    ``partitions`` groups the blocks (any value gives the same output), ``client`` is a
    ``distributed.Client`` (:func:`dpgl.distributed.cluster.connect`) or None (this
    process). Charges go to ``accountant`` (a fresh one by default)."""

    store: ShardStore
    seed: int
    block_size: int = DEFAULT_BLOCK_SIZE
    partitions: int = 1
    client: Any = None
    accountant: Accountant = field(default_factory=Accountant)

    def __post_init__(self) -> None:
        self.seed = check_seed(self.seed)
        self.blocks = UserBlocks(self.store.num_users, self.block_size)
        self.groups = self.blocks.partition(self.partitions)

    def _stage(self, stage: str, fn: Callable[[int], tasks.BlockResult],
               charged: bool) -> StageResult:
        t0 = time.perf_counter()
        results = map_blocks(fn, self.groups, client=self.client,
                             label=f"{stage}: {len(self.blocks)} blocks")
        if charged:
            merge_privacy(self.accountant, stage, results)
        peak: dict[int, float] = {}
        _keep_peaks(peak, ((r.pid, r.peak_rss_mb) for r in results))
        return StageResult(stage, sum(r.outputs for r in results),
                           time.perf_counter() - t0, peak, results)

    def dprr(self, mechanism: Any) -> StageResult:
        """Every user's DPRR report (:class:`dpgl.mechanisms.DPRR`); outputs = reported
        neighbors in all."""
        n = self.store.num_users
        self.store.allocate("dprr", "report_size", (n,), "int64")
        fn = partial(tasks.dprr_block, str(self.store.root), self.blocks, seed=self.seed,
                     mechanism=mechanism)
        return self._stage("dprr", fn, charged=True)

    def labels(self, mechanism: Any) -> StageResult:
        """Every user's label report (:class:`dpgl.mechanisms.LabelRR`)."""
        self.store.allocate("labels", "report", (self.store.num_users,), "int64")
        fn = partial(tasks.labels_block, str(self.store.root), self.blocks, seed=self.seed,
                     mechanism=mechanism)
        return self._stage("labels", fn, charged=True)

    def features(self, mechanism: Any) -> StageResult:
        """Every user's feature report (:class:`dpgl.mechanisms.FeatureRandomizer`, bit
        encoders) and the server's rectified estimate."""
        d = self.store.feature_dim
        if getattr(mechanism, "d", d) != d:
            raise ConfigError(f"the feature mechanism is for d={mechanism.d}, the store's "
                              f"features have d={d}")
        n = self.store.num_users
        self.store.allocate("features", "report", (n, d), "int8")
        self.store.allocate("features", "estimate", (n, d), "float32")
        fn = partial(tasks.features_block, str(self.store.root), self.blocks, seed=self.seed,
                     mechanism=mechanism)
        return self._stage("features", fn, charged=True)

    def kprop(self, steps: int, aggregator: str = "gcn") -> StageResult:
        """``steps`` KProp steps of the feature estimates over the DPRR reports, to
        ``kprop/step-K``; run :meth:`dprr` and :meth:`features` first."""
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ConfigError(f"KProp steps must be an integer >= 1, got {steps!r}")
        from dpgl.graph.kprop import AGGREGATORS
        if aggregator not in AGGREGATORS:
            raise unknown_name("KProp aggregator", aggregator, AGGREGATORS)
        x = self.store.array("features", "estimate")
        self.store.array("dprr", "report_size")
        source = ("features", "estimate")
        total = StageResult("kprop", 0, 0.0)
        for k in range(1, steps + 1):
            target = ("kprop", f"step-{k}")
            self.store.allocate(*target, x.shape, "float32")
            fn = partial(tasks.kprop_block, str(self.store.root), self.blocks, source=source,
                         target=target, aggregator=aggregator)
            res = self._stage(f"kprop step {k}", fn, charged=False)
            total.outputs, total.seconds = res.outputs, total.seconds + res.seconds
            _keep_peaks(total.peak_rss_mb, res.peak_rss_mb.items())
            total.blocks = res.blocks
            source = target
        return total

    def reports(self) -> tuple[np.ndarray, np.ndarray]:
        """All DPRR reports (user, neighbor), sorted (in memory: for tests and small runs)."""
        parts = [self.store.get_block("dprr", b) for b in self.blocks]
        return (np.concatenate([p["user"] for p in parts]).astype(np.int64),
                np.concatenate([p["neighbor"] for p in parts]).astype(np.int64))


def _keep_peaks(peaks: dict[int, float], seen: Iterable[tuple[int, float]]) -> None:
    """Raise each worker's entry in ``peaks`` (pid -> MB) to the largest value ``seen``."""
    for pid, mb in seen:
        peaks[pid] = max(peaks.get(pid, 0.0), mb)
