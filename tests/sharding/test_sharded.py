"""Sharded simulation and estimation (issue #15): identical output for any partitioning,
the block law of DPRR, KProp equal to the in-memory propagation, and charges from the
blocks' randomizers."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from dpgl.distributed import ShardedRun, ShardStore, UserBlocks, block_generator, merge_privacy
from dpgl.distributed.tasks import BlockResult
from dpgl.errors import ConfigError, GraphError, PrivacyError
from dpgl.graph.kprop import kprop, kprop_matrix
from dpgl.mechanisms import DPRR
from dpgl.mechanisms.features import FeatureRandomizer
from dpgl.mechanisms.labels import LabelRR
from dpgl.mechanisms.rr import DirectedReports
from dpgl.privacy import Accountant, Unit

N, D, K = 3000, 6, 3
BLOCK = 128          # 24 blocks


def _graph(n: int, seed: int) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    m = 6 * n
    u, v = rng.integers(0, n, m), rng.integers(0, n, m)
    a = sp.coo_matrix((np.ones(m, np.int8), (u, v)), shape=(n, n)).tocsr()
    a = ((a + a.T) > 0).astype(np.int8).tolil()
    a.setdiag(0)
    a = a.tocsr()
    a.eliminate_zeros()
    a.sort_indices()
    return a


@pytest.fixture(scope="module")
def users(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    a = _graph(N, 0)
    rng = np.random.default_rng(1)
    return {"indptr": a.indptr, "indices": a.indices,
            "features": rng.random((N, D)).astype(np.float32),
            "labels": rng.integers(0, K, N)}


def _store(root: Path, users: dict[str, np.ndarray]) -> ShardStore:
    return ShardStore.create(root, users["indptr"], users["indices"],
                             features=users["features"], labels=users["labels"])


def _mechanisms() -> tuple[DPRR, FeatureRandomizer, LabelRR]:
    return DPRR(2.0), FeatureRandomizer(3.0, D, "multibit"), LabelRR(2.0, K)


def _run_all(run: ShardedRun) -> None:
    dprr, feats, labels = _mechanisms()
    run.dprr(dprr)
    run.features(feats)
    run.labels(labels)
    run.kprop(2, "gcn")


def _digest(root: Path) -> dict[str, str]:
    """SHA-256 of every output file (the inputs and metadata excluded)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*.np*"))
            if p.parts[-2] != "input"}


def test_partitions_give_identical_outputs(tmp_path: Path, users: dict) -> None:
    digests = {}
    for parts in (1, 2, 8):
        run = ShardedRun(_store(tmp_path / str(parts), users), seed=7, block_size=BLOCK,
                         partitions=parts)
        _run_all(run)
        digests[parts] = _digest(tmp_path / str(parts))
    assert len(digests[1]) == 1 + 24 + 3 + 2   # report sizes, 24 blocks, 3 arrays, 2 steps
    assert digests[1] == digests[2] == digests[8]
    # control: another seed changes every randomized output
    other = ShardedRun(_store(tmp_path / "other", users), seed=8, block_size=BLOCK,
                       partitions=2)
    _run_all(other)
    changed = {k for k, v in _digest(tmp_path / "other").items() if v != digests[1][k]}
    assert {"labels/report.npy", "features/report.npy", "dprr/block-000000.npz"} <= changed


def test_local_cluster_gives_the_same_outputs(tmp_path: Path, users: dict) -> None:
    """Two worker processes of a local Dask cluster on loopback, started and stopped here."""
    from dpgl.distributed import connect
    local = ShardedRun(_store(tmp_path / "local", users), seed=3, block_size=BLOCK)
    _run_all(local)
    with connect(workers=2) as client:
        run = ShardedRun(_store(tmp_path / "cluster", users), seed=3, block_size=BLOCK,
                         partitions=4, client=client)
        dprr, feats, labels = _mechanisms()
        res = run.dprr(dprr)
        run.features(feats)
        run.labels(labels)
        run.kprop(2, "gcn")
    assert len(res.peak_rss_mb) == 2                    # both workers ran blocks
    assert _digest(tmp_path / "local") == _digest(tmp_path / "cluster")


def test_kprop_equals_the_in_memory_propagation(tmp_path: Path, users: dict) -> None:
    for aggregator in ("gcn", "mean"):
        run = ShardedRun(_store(tmp_path / aggregator, users), seed=5, block_size=BLOCK,
                         partitions=3)
        dprr, feats, _ = _mechanisms()
        run.dprr(dprr)
        run.features(feats)
        run.kprop(2, aggregator)
        user, neighbor = run.reports()
        ei = DirectedReports(user, neighbor, N).edge_index()
        adj = kprop_matrix(ei, N, aggregator=aggregator)
        x = torch.from_numpy(np.array(run.store.array("features", "estimate")))
        want = kprop(x, adj, 2).numpy()
        got = np.array(run.store.array("kprop", "step-2"))
        assert np.abs(want).max() > 0.1
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_dprr_block_law(users: dict) -> None:
    """Given the noisy degrees, a true neighbor is reported with probability p q_i and a
    non-neighbor with (1 - p) q_i (DPRR Eq. 6): z-scores over 400 draws of 40 users."""
    n = 40
    a = _graph(n, 3)
    mech = DPRR(3.0)
    _, rr = mech.randomizers(n)
    p = rr.keep_probability
    truth = a.toarray().astype(bool)
    hits = np.zeros((n, n))
    expect = np.zeros((n, n))
    var = np.zeros((n, n))
    for t in range(400):
        u, v, noisy = mech.simulate_rows(a.indptr, a.indices, 0, n, block_generator(t, "s", 0))
        q = np.clip(np.maximum(noisy, 0) / (np.maximum(noisy, 0) * (2 * p - 1)
                                           + (n - 1) * (1 - p)), 0, 1)
        rate = np.where(truth, p, 1 - p) * q[:, None]
        np.fill_diagonal(rate, 0.0)
        hits[u, v] += 1
        expect += rate
        var += rate * (1 - rate)
    for mask in (truth, ~truth & ~np.eye(n, dtype=bool)):
        z = (hits[mask].sum() - expect[mask].sum()) / np.sqrt(var[mask].sum())
        assert abs(z) < 4.5, z
    assert np.all(np.diag(hits) == 0)


def test_block_reads_only_its_rows(users: dict) -> None:
    """A block's output is the same whether computed alone or inside a bigger graph: it
    depends on its own users' lists and its stream only."""
    mech = DPRR(2.0)
    indptr, indices = users["indptr"], users["indices"]
    lo, hi = 256, 384
    rows_ptr = indptr[lo:hi + 1] - indptr[lo]
    rows_idx = indices[indptr[lo]:indptr[hi]]
    a = mech.simulate_rows(rows_ptr, rows_idx, lo, N, block_generator(1, "dprr", 2))
    b = mech.simulate_rows(rows_ptr.copy(), rows_idx.copy(), lo, N, block_generator(1, "dprr", 2))
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert a[0].min() >= lo and a[0].max() < hi


def test_charges_compose_in_parallel_over_blocks(tmp_path: Path, users: dict) -> None:
    run = ShardedRun(_store(tmp_path, users), seed=1, block_size=BLOCK, partitions=2)
    _run_all(run)
    report = run.accountant.report()
    assert report.totals[Unit.EDGE_LDP].epsilon == pytest.approx(2.0)
    assert report.totals[Unit.FEATURE_LDP].epsilon == pytest.approx(3.0)
    assert report.totals[Unit.LABEL_LDP].epsilon == pytest.approx(2.0)
    # a block whose randomizers recorded nothing is refused (its reports rest on no charge)
    silent = [BlockResult(0, 10, {}), BlockResult(1, 10, {"parts": []})]
    with pytest.raises(PrivacyError, match="recorded no charge"):
        merge_privacy(Accountant(), "dprr", silent)


def test_a_mechanism_that_does_not_charge_is_caught(tmp_path: Path, users: dict) -> None:
    class Silent(DPRR):
        def simulate_rows(self, indptr, indices, first, num_users, rng):  # type: ignore
            n = num_users
            return (np.full(1, first), np.full(1, (first + 1) % n), np.zeros(1))

    run = ShardedRun(_store(tmp_path, users), seed=1, block_size=1024)
    with pytest.raises(PrivacyError, match="recorded no charge"):
        run.dprr(Silent(2.0))


def test_blocks_and_partitions() -> None:
    blocks = UserBlocks(1000, 64)
    assert blocks.num_blocks == 16 and blocks.bounds(15) == (960, 1000)
    for k in (1, 2, 3, 8, 40):
        groups = blocks.partition(k)
        assert [b for g in groups for b in g] == list(range(16))
        assert len(groups) == min(k, 16) and all(groups)
    with pytest.raises(ConfigError, match="partitions"):
        blocks.partition(0)
    with pytest.raises(ConfigError, match="block_size"):
        UserBlocks(1000, 0)
    with pytest.raises(ConfigError, match="block must be"):
        blocks.bounds(16)


def test_streams_are_per_block_and_reproducible() -> None:
    a = block_generator(1, "dprr", 0).random(4)
    assert np.array_equal(a, block_generator(1, "dprr", 0).random(4))
    for other in (block_generator(1, "dprr", 1), block_generator(2, "dprr", 0),
                  block_generator(1, "labels", 0)):
        assert not np.array_equal(a, other.random(4))
    with pytest.raises(ConfigError, match="seed"):
        block_generator(-1, "dprr", 0)
    with pytest.raises(ConfigError, match="block"):
        block_generator(1, "dprr", -1)


def test_bad_input_is_a_clear_error(tmp_path: Path, users: dict) -> None:
    with pytest.raises(ConfigError, match="not a shard store"):
        ShardStore(tmp_path / "nowhere")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "meta.json").write_text("{not json")
    with pytest.raises(ConfigError, match="corrupt"):
        ShardStore(tmp_path / "bad")
    mech = DPRR(2.0)
    with pytest.raises(GraphError, match="self-loop"):
        mech.simulate_rows(np.array([0, 1]), np.array([5]), 5, 10, block_generator(0, "x", 0))
    with pytest.raises(GraphError, match="sorted"):
        mech.simulate_rows(np.array([0, 2]), np.array([3, 2]), 0, 10, block_generator(0, "x", 0))
    with pytest.raises(GraphError, match="does not fit"):
        mech.simulate_rows(np.array([0, 0, 0]), np.array([], int), 9, 10,
                           block_generator(0, "x", 0))
    run = ShardedRun(_store(tmp_path / "s", users), seed=1, block_size=BLOCK)
    with pytest.raises(ConfigError, match="run that stage first"):
        run.kprop(1)
    with pytest.raises(ConfigError, match="d=4"):
        run.features(FeatureRandomizer(1.0, 4))
