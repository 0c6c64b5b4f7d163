"""What one block of users computes (issue #15). Engine-free: plain functions of (store,
block, parameters) that any engine runs on any worker.

Every task that randomizes runs the mechanism's own randomizer objects under a fresh
:class:`~dpgl.privacy.Accountant` of the block, and returns what they recorded: the charge
comes from the objects that drew the noise, on the worker that drew it
(:func:`dpgl.distributed.sharded.merge_privacy` composes the blocks). A block reads only its
own users' rows of the input, so a user's report depends on her own data and the block's
stream alone.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpgl.distributed.blocks import UserBlocks
from dpgl.distributed.store import ShardStore
from dpgl.distributed.streams import block_generator
from dpgl.errors import unknown_name
from dpgl.privacy import Accountant

__all__ = ["BlockResult", "dprr_block", "features_block", "kprop_block", "labels_block",
           "peak_rss_mb"]


@dataclass(frozen=True)
class BlockResult:
    """What a block reports back: its index, how many outputs it wrote, what its randomizers
    recorded (an accountant state; empty for post-processing), the worker process and its
    peak resident memory so far (MB), and the block's wall time."""

    block: int
    outputs: int
    privacy: dict[str, Any] = field(default_factory=dict)
    pid: int = 0
    peak_rss_mb: float = 0.0
    seconds: float = 0.0


def peak_rss_mb() -> float:
    """This process's peak resident memory (MB): Linux's VmHWM, the high-water mark of its
    own address space (``ru_maxrss`` survives fork and exec, so a worker would report its
    parent's peak); ``ru_maxrss`` elsewhere."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _finish(block: int, outputs: int, acc: Accountant | None, t0: float) -> BlockResult:
    peak = peak_rss_mb()
    return BlockResult(block, int(outputs), acc.state_dict() if acc is not None else {},
                       os.getpid(), peak, time.perf_counter() - t0)


def dprr_block(root: str, blocks: UserBlocks, block: int, seed: int, mechanism: Any
               ) -> BlockResult:
    """DPRR reports of one block (:meth:`dpgl.mechanisms.DPRR.simulate_rows`): the reports
    go to ``dprr/block-*.npz`` (int32 ids) and each user's report size to
    ``dprr/report_size``."""
    t0 = time.perf_counter()
    store = ShardStore(root)
    lo, hi = blocks.bounds(block)
    indptr, indices = store.rows(lo, hi)
    acc = Accountant()
    with acc.active():
        user, neighbor, _ = mechanism.simulate_rows(indptr, indices, lo, store.num_users,
                                                    block_generator(seed, "dprr", block))
    store.put_block("dprr", block, user=user.astype(np.int32), neighbor=neighbor.astype(np.int32))
    store.write_rows("dprr", "report_size", lo,
                     np.bincount(user - lo, minlength=hi - lo).astype(np.int64))
    return _finish(block, user.size, acc, t0)


def labels_block(root: str, blocks: UserBlocks, block: int, seed: int, mechanism: Any
                 ) -> BlockResult:
    """k-ary RR on the block's labels (:class:`dpgl.mechanisms.LabelRR`), to
    ``labels/report``."""
    import torch
    t0 = time.perf_counter()
    store = ShardStore(root)
    lo, hi = blocks.bounds(block)
    acc = Accountant()
    with acc.active():
        out = mechanism.randomize(torch.from_numpy(store.labels(lo, hi)),
                                  block_generator(seed, "labels", block))
    store.write_rows("labels", "report", lo, out.numpy())
    return _finish(block, hi - lo, acc, t0)


def features_block(root: str, blocks: UserBlocks, block: int, seed: int, mechanism: Any
                   ) -> BlockResult:
    """The block's feature reports (:meth:`dpgl.mechanisms.FeatureRandomizer.encode`, what the
    devices send) to ``features/report`` and the server's rectified estimate (its
    :meth:`decode`, LPGNN Eq. 4) to ``features/estimate``."""
    t0 = time.perf_counter()
    store = ShardStore(root)
    lo, hi = blocks.bounds(block)
    acc = Accountant()
    with acc.active():
        enc = mechanism.encode(store.features(lo, hi), block_generator(seed, "features", block))
    store.write_rows("features", "report", lo, enc.astype(np.int8))
    store.write_rows("features", "estimate", lo, mechanism.decode(enc).astype(np.float32))
    return _finish(block, hi - lo, acc, t0)


def kprop_block(root: str, blocks: UserBlocks, block: int, source: tuple[str, str],
                target: tuple[str, str], aggregator: str) -> BlockResult:
    """One KProp step (LPGNN Alg. 2) for the block's rows over the DPRR reports (user v
    aggregates over the neighbors she reported, no self-loop): ``gcn`` weights
    d_v^-1/2 d_u^-1/2 with d the report sizes (D^-1/2 A D^-1/2, as
    :func:`dpgl.graph.kprop.kprop_matrix`), ``mean`` 1 / d_v. Post-processing of the reports:
    nothing is charged."""
    import scipy.sparse as sp
    t0 = time.perf_counter()
    store = ShardStore(root)
    lo, hi = blocks.bounds(block)
    rep = store.get_block("dprr", block)
    user, neighbor = rep["user"].astype(np.int64), rep["neighbor"].astype(np.int64)
    deg = store.array("dprr", "report_size")
    d_user = np.asarray(deg[lo:hi], dtype=np.float64)[user - lo]   # > 0: she reported
    if aggregator == "gcn":
        d_nb = np.asarray(deg[neighbor], dtype=np.float64)
        w = np.where(d_nb > 0, 1.0 / np.sqrt(d_user * np.maximum(d_nb, 1.0)), 0.0)
    elif aggregator == "mean":
        w = 1.0 / d_user
    else:
        raise unknown_name("KProp aggregator", aggregator, ("gcn", "mean"))
    w = w.astype(np.float32)
    a = sp.csr_matrix((w, (user - lo, neighbor)), shape=(hi - lo, store.num_users))
    x = store.array(*source)
    store.write_rows(*target, lo, np.asarray(a @ x, dtype=np.float32))
    return _finish(block, hi - lo, None, t0)
