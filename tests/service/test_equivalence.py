"""Equivalence (issue #14): N seeded devices submitting over HTTP to a real server give
exactly the estimator input of the in-process collection with the same seed, and the same
estimate. The per-user randomizers the devices run are the simulation's own classes; that
their per-user law is the law of the whole-graph simulation is tested with exact
probabilities in tests/mechanisms/ (test_per_user_report_follows_exact_law and
test_*simulation_matches_dense_reference), so accuracies from the reproductions carry over.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from dpgl.client import Device, PrivateData
from dpgl.collection import Round, collect_in_process, parse_round_spec
from dpgl.privacy import Accountant
from dpgl.service.app import ServerConfig, create_app
from dpgl.service.db import Database
from dpgl.service.operator import estimate_graph, open_round
from dpgl.service.server import ServerThread

N = 40
SEED = 11


def _graph(n: int, seed: int) -> dict[int, list[int]]:
    rng = np.random.default_rng(seed)
    adj: dict[int, set[int]] = {i: set() for i in range(n)}
    for _ in range(3 * n):
        a, b = rng.integers(0, n, size=2)
        if a != b:
            adj[int(a)].add(int(b))
            adj[int(b)].add(int(a))
    return {i: sorted(s) for i, s in adj.items()}


def _private(n: int) -> dict[int, PrivateData]:
    rng = np.random.default_rng(5)
    g = _graph(n, 3)
    return {i: PrivateData(neighbors=g[i], features=rng.random(12), label=int(i % 4))
            for i in range(n)}


def _over_http(tmp_path, spec_obj: dict, private: dict[int, PrivateData]) -> dict:
    db = Database(f"sqlite:///{tmp_path / 'c.db'}")
    spec = parse_round_spec(spec_obj)
    with ServerThread(create_app(db, ServerConfig(rate=1000, burst=1000))) as srv:
        devices = [Device(srv.url, str(i), seed=SEED) for i in range(N)]
        for d in devices:
            d.enroll()
        open_round(db, spec)
        with ThreadPoolExecutor(8) as pool:  # devices report concurrently, in any order
            list(pool.map(lambda i: devices[i].submit(spec.round_id, private[i]),
                          reversed(range(N))))
        for d in devices:
            d.close()
    rnd = Round(parse_round_spec(db.round(spec.round_id)["spec"]))
    stored = {rnd.index_of(s.user_id): rnd.parse_report(json.loads(s.payload),
                                                        rnd.index_of(s.user_id))
              for s in db.reports(spec.round_id)}
    db.close()
    assert len(stored) == N
    return rnd.assemble(stored)


@pytest.mark.parametrize("mechanism", ["rr", "dprr", "blink-hybrid", "locallap", "ldpgcn"])
def test_http_devices_give_the_in_process_estimator_input(tmp_path, mechanism: str) -> None:
    spec_obj = {"round_id": f"eq-{mechanism}", "population": {"size": N},
                "neighbors": {"mechanism": mechanism, "epsilon": 2.0},
                "features": {"epsilon": 2.0, "dim": 12},
                "labels": {"epsilon": 1.0, "classes": 4}}
    private = _private(N)
    got = _over_http(tmp_path, spec_obj, private)
    acc = Accountant()
    with acc.active():
        want = collect_in_process(parse_round_spec(spec_obj), private, SEED)
    assert got["neighbors"].equals(want["neighbors"])
    assert np.array_equal(got["features"], want["features"])
    assert np.array_equal(got["labels"], want["labels"])
    # ... so the estimates agree exactly too
    spec = parse_round_spec(spec_obj)
    rnd = Round(spec)
    ei_a, w_a, _ = estimate_graph(rnd, got["neighbors"], spec)
    ei_b, w_b, _ = estimate_graph(rnd, want["neighbors"], spec)
    assert ei_a.equal(ei_b)
    assert (w_a is None and w_b is None) or w_a.equal(w_b)
    # the in-process collection charged each user once (parallel composition over users)
    report = acc.report()
    assert report.total("edge-LDP").epsilon == pytest.approx(2.0)
    assert report.total("label-LDP").epsilon == pytest.approx(1.0)


def test_a_different_seed_gives_different_reports() -> None:
    """Control: the comparison above can fail (another seed, another estimator input)."""
    spec = parse_round_spec({"round_id": "s", "population": {"size": N},
                             "neighbors": {"mechanism": "rr", "epsilon": 1.0}})
    private = _private(N)
    a = collect_in_process(spec, private, SEED)
    b = collect_in_process(spec, private, SEED + 1)
    assert not a["neighbors"].equals(b["neighbors"])


def test_a_users_report_does_not_depend_on_the_others() -> None:
    """Each device's stream is derived from (seed, its index): the collection of a subset of
    users gives those users the same reports as the full collection."""
    spec = parse_round_spec({"round_id": "s", "population": {"size": N},
                             "neighbors": {"mechanism": "rr", "epsilon": 1.0}})
    private = _private(N)
    full = collect_in_process(spec, private, SEED)["neighbors"].reports
    half = collect_in_process(spec, {i: p for i, p in private.items() if i % 2 == 0},
                              SEED)["neighbors"].reports
    keep = full.user % 2 == 0
    assert np.array_equal(full.user[keep], half.user)
    assert np.array_equal(full.neighbor[keep], half.neighbor)
