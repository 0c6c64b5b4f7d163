"""Blink server: sorted/series row sums vs dense, beta-model MLE moment equations, posterior
formula, Hard/Hybrid/Soft vs a dense reference implementation of Blink's server."""

from __future__ import annotations

import numpy as np
import pytest

from _edge_graphs import random_graph
from dpgl.errors import ConfigError, GraphError, PrivacyError
from dpgl.estimators.blink import (
    BlinkServer,
    clip_degrees,
    dense_posterior,
    fit_beta,
    posterior,
    sigmoid_rowsums,
)
from dpgl.graph.pairs import undirected_counts
from dpgl.mechanisms.blink import BlinkClient
from dpgl.mechanisms.rr import DirectedReports


def dense_rowsums(b: np.ndarray, shift: float) -> np.ndarray:
    s = 1 / (1 + np.exp(-(b[:, None] + b[None, :] + shift)))
    np.fill_diagonal(s, 0)
    return s.sum(1)


@pytest.mark.parametrize("shift", [0.0, -3.0, 2.5])
def test_series_rowsums_equal_dense(shift: float) -> None:
    rng = np.random.default_rng(0)
    n = 2500
    b = np.concatenate([rng.normal(-4, 1.5, n - 40), rng.normal(2, 1, 40)])  # hubs: band
    ref = dense_rowsums(b, shift)
    series = sigmoid_rowsums(b, shift, method="series")
    dense = sigmoid_rowsums(b, shift, method="dense")
    assert np.max(np.abs(series - ref)) < 1e-9
    assert np.max(np.abs(dense - ref)) < 1e-9


def test_series_rowsums_wide_range() -> None:
    """Betas spanning a huge range (exercises the overflow-safe prefix sums)."""
    for b in (np.linspace(-30, 12, 1500), np.linspace(-25, 21, 1200)):  # 2nd: log-domain path
        for shift in (0.0, -8.0):
            got = sigmoid_rowsums(b, shift, method="series")
            assert np.max(np.abs(got - dense_rowsums(b, shift))) < 1e-9


def dense_fixed_point(d: np.ndarray, iters: int = 3000) -> np.ndarray:
    """Reference: Blink Algorithm 2 on dense matrices (CDS map), damped by 1/2."""
    b = np.zeros_like(d)
    n = d.size
    for _ in range(iters):
        r = 1.0 / (np.exp(-b)[None, :] + np.exp(b)[:, None])
        r[np.arange(n), np.arange(n)] = 0
        b = 0.5 * b + 0.5 * (np.log(d) - np.log(r.sum(1)))
    return b


def test_fit_beta_moment_equations() -> None:
    rng = np.random.default_rng(1)
    n = 400
    u, v = random_graph(n, 0.03, seed=2)
    d = clip_degrees(np.bincount(np.concatenate([u, v]), minlength=n) + rng.laplace(0, 2, n), n)
    fit = fit_beta(d, method="series")
    assert fit.converged and fit.iterations < 500
    s = sigmoid_rowsums(fit.beta, 0.0, method="dense")
    assert np.max(np.abs(s - d) / d) < 1e-9
    assert np.max(np.abs(fit_beta(d, method="dense").beta - fit.beta)) < 1e-8
    assert np.max(np.abs(dense_fixed_point(d) - fit.beta)) < 1e-6


def test_fit_beta_errors_and_clipping() -> None:
    d = clip_degrees(np.array([-5.0, 0.5, 3.0, 100.0]), 4)
    assert d.tolist() == [1.0, 1.0, 2.0, 2.0]
    with pytest.raises(GraphError):
        fit_beta(np.array([0.0, 1.0, 1.0]))
    with pytest.raises(GraphError):
        clip_degrees(np.array([1.0, 2.0]), 4)
    with pytest.raises(GraphError):
        clip_degrees(np.array([1.0, np.nan, 1.0, 1.0]), 4)


def test_posterior_equals_blink_likelihood_formula() -> None:
    """P = L1 prior / (L1 prior + L0 (1 - prior)) with RR flip probability f."""
    eps_a = 1.3
    f = 1 / (1 + np.exp(eps_a))
    bi, bj = np.array([-2.0, 0.4, 1.0]), np.array([-1.0, 0.3, -3.0])
    prior = 1 / (1 + np.exp(-(bi + bj)))
    for x in (0, 1, 2):
        l1 = [f * f, f * (1 - f), (1 - f) ** 2][x]
        l0 = [(1 - f) ** 2, f * (1 - f), f * f][x]
        ref = l1 * prior / (l1 * prior + l0 * (1 - prior))
        assert np.allclose(posterior(bi, bj, x, eps_a), ref, rtol=1e-12, atol=0)


def core_graph(n: int, core: int, p: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Sparse G(n, p) plus a clique on the first ``core`` nodes (hubs with a high prior)."""
    u, v = random_graph(n, p, seed)
    iu, ju = np.triu_indices(core, 1)
    keys = np.unique(np.concatenate([u * n + v, iu * n + ju]))
    return keys // n, keys % n


def dense_reference(server: BlinkServer, reports: DirectedReports) -> dict:
    """Blink's server on the dense posterior matrix (Hard: > 1/2; Hybrid: top sum(P))."""
    p = dense_posterior(reports, server.beta, server.eps_a)
    n = p.shape[0]
    iu, ju = np.triu_indices(n, 1)
    hard = {(a, b) for a, b in zip(iu, ju, strict=True) if p[a, b] > 0.5}
    k = int(p.sum())
    kth = np.sort(p.ravel())[::-1][k - 1]
    hybrid = {(a, b): p[a, b] for a, b in zip(iu, ju, strict=True) if p[a, b] >= kth}
    return {"p": p, "hard": hard, "hybrid": hybrid, "mass": p.sum() / 2}


@pytest.mark.parametrize(("eps", "share", "n", "core"),
                         [(4.0, 0.1, 300, 0), (1.0, 0.5, 200, 60), (2.0, 0.3, 250, 30)])
def test_hard_hybrid_soft_equal_dense_reference(eps: float, share: float, n: int,
                                                core: int) -> None:
    u, v = core_graph(n, core, 0.01, seed=3) if core else random_graph(n, 0.03, seed=3)
    client = BlinkClient(eps, share)
    rng = np.random.default_rng(4)
    reports, noisy = client.simulate(u, v, n, rng)
    server = BlinkServer(client.eps_a, method="series").fit(reports, noisy)
    ref = dense_reference(server, reports)
    assert server.total_mass() == pytest.approx(ref["mass"], rel=1e-10)
    hard = server.hard()
    assert set(zip(hard.u.tolist(), hard.v.tolist(), strict=True)) == ref["hard"]
    if core == 60:
        assert hard.info["unreported_kept"] > 0  # hub pairs nobody reported enter Hard
    hyb = server.hybrid()
    got = dict(zip(zip(hyb.u.tolist(), hyb.v.tolist(), strict=True), hyb.weight.tolist(),
                   strict=True))
    assert set(got) == set(ref["hybrid"])
    assert max(abs(got[k] - ref["hybrid"][k]) for k in got) < 1e-12
    soft = server.soft()
    assert soft.u.size == n * (n - 1) // 2
    assert np.max(np.abs(soft.weight - ref["p"][soft.u, soft.v])) < 1e-12


def _server_on_core_graph(eps: float, n: int = 400) -> tuple[BlinkServer, np.ndarray]:
    """Blink's server on a 400-node graph with a dense core, and its dense posteriors."""
    u, v = core_graph(n, 10, 0.02, seed=5)
    client = BlinkClient(eps, 0.2)
    reports, noisy = client.simulate(u, v, n, np.random.default_rng(6))
    server = BlinkServer(client.eps_a).fit(reports, noisy)
    return server, dense_posterior(reports, server.beta, server.eps_a)


def test_soft_approximation_bounds_dropped_mass() -> None:
    n = 400
    server, p = _server_on_core_graph(2.0, n)
    for tol in (1e-2, 1e-4):
        est = server.soft(exact_max_n=10, mass_tol=tol)
        info = est.info
        kept = p[est.u, est.v].sum()
        assert info["dropped_mass"] == pytest.approx(p.sum() / 2 - kept, abs=1e-8)
        assert info["dropped_mass"] <= info["dropped_bound"] + 1e-9
        assert info["dropped_mass"] <= tol * info["total_mass"] + 1e-9
        assert est.u.size < n * (n - 1) // 2  # it did drop something
        assert np.all(est.weight >= info["floor"])
    with pytest.raises(ConfigError, match="max_pairs"):
        server.soft(exact_max_n=10, mass_tol=1e-12, max_pairs=10)


def test_soft_beyond_max_pairs_is_the_dense_matrix_of_every_posterior() -> None:
    """Where the bounded pairs would exceed ``max_pairs``, ``dense_max_n`` opts into the exact
    dense matrix: every posterior (float32), symmetric, zero diagonal; without it, an error."""
    n = 400
    server, p = _server_on_core_graph(1.0, n)
    est = server.soft(exact_max_n=10, mass_tol=1e-12, max_pairs=10, dense_max_n=n)
    assert est.u.size == 0 and est.info["dense"] and est.info["dropped_mass"] == 0.0
    d = est.dense.numpy()
    assert d.dtype == np.float32 and d.shape == (n, n)
    assert np.array_equal(d, d.T) and not np.any(np.diag(d))
    assert np.max(np.abs(d - p)) < 1e-7  # float32 of the float64 posteriors
    assert est.info["total_mass"] == pytest.approx(p.sum() / 2, rel=1e-10)
    with pytest.raises(ConfigError, match="dense matrix"):
        est.edge_index()
    with pytest.raises(ConfigError, match=f"dense_max_n >= {n}"):
        server.soft(exact_max_n=10, mass_tol=1e-12, max_pairs=10, dense_max_n=n - 1)


def test_fit_pairs_is_fit_on_the_tabulated_reports_and_checks_them() -> None:
    """The transform tabulates the reports and drops them before the posteriors are built
    (:meth:`BlinkServer.fit_pairs`): the same server as :meth:`BlinkServer.fit`, with the
    pairs' node ids in int32; malformed pairs are one-line errors."""
    n = 300
    u, v = random_graph(n, 0.03, seed=3)
    client = BlinkClient(1.0, 0.5)
    reports, noisy = client.simulate(u, v, n, np.random.default_rng(4))
    a = BlinkServer(client.eps_a).fit(reports, noisy)
    keys, counts = undirected_counts(reports.user, reports.neighbor, n)
    b = BlinkServer(client.eps_a).fit_pairs(keys, counts, noisy, n)
    assert a.rep_u.dtype == np.int32 and set(a.rep_x.tolist()) == {1, 2}
    for name in ("rep_keys", "rep_x", "rep_u", "rep_v", "rep_p", "beta"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.total_mass() == b.total_mass()
    ref = dense_posterior(reports, a.beta, a.eps_a)
    np.testing.assert_allclose(a.rep_p, ref[a.rep_u, a.rep_v], rtol=0, atol=1e-15)
    for bad_keys, bad_counts in [(keys[::-1], counts), (keys, counts + 1),
                                 (keys.astype(np.float64), counts),
                                 (np.array([n * (n - 1) // 2]), np.array([1]))]:
        with pytest.raises(GraphError, match="reported pairs"):
            BlinkServer(client.eps_a).fit_pairs(bad_keys, bad_counts, noisy, n)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.2, 1.5, float("nan")])
def test_bad_degree_share(bad: float) -> None:
    with pytest.raises(PrivacyError, match="degree_share"):
        BlinkClient(1.0, bad)


def test_client_guarantee_parts() -> None:
    c = BlinkClient(3.0, 0.25)
    assert c.eps_d == pytest.approx(0.75) and c.eps_a == pytest.approx(2.25)
    assert c.guarantee.epsilon == 3.0
    assert sum(g.epsilon for g in c.parts().values()) == pytest.approx(3.0)
    rep = c.report(np.array([1, 2]), 5, 0, np.random.default_rng(0))
    assert 0 not in rep.neighbors and np.isfinite(rep.noisy_degree)


# ------------------------------------------------------------------ default row sums vs dense
# Since issue #13 item 7 the row sums are the series at every size (they were dense up to
# 4096 nodes); the dense sums stay the reference. The server's output must not change.


@pytest.mark.parametrize("eps", [1.0, 4.0, 8.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_default_row_sums_give_the_dense_servers_output(eps: float, seed: int) -> None:
    n = 600
    u, v = core_graph(n, 20, 0.01, seed=seed)
    client = BlinkClient(eps, 0.1)
    reports, noisy = client.simulate(u, v, n, np.random.default_rng(seed))
    fast = BlinkServer(client.eps_a).fit(reports, noisy)
    dense = BlinkServer(client.eps_a, method="dense").fit(reports, noisy)
    # the default took the series path
    assert np.array_equal(sigmoid_rowsums(fast.beta), sigmoid_rowsums(fast.beta, method="series"))
    assert fast.beta_fit.converged and dense.beta_fit.converged
    assert fast.beta_fit.iterations == dense.beta_fit.iterations
    assert np.max(np.abs(fast.beta - dense.beta)) < 1e-12
    assert fast.total_mass() == pytest.approx(dense.total_mass(), rel=1e-13)
    for variant in ("hard", "hybrid", "soft"):
        a, b = getattr(fast, variant)(), getattr(dense, variant)()
        assert np.array_equal(a.u, b.u) and np.array_equal(a.v, b.v), variant
        if variant != "hard":
            assert np.max(np.abs(a.weight - b.weight)) < 1e-12


def test_auto_row_sums_are_dense_only_when_the_band_is_most_pairs() -> None:
    rng = np.random.default_rng(0)
    n = 800
    sparse = rng.normal(-4.0, 1.0, n)   # few pairs with prior in the band
    crowded = rng.normal(0.0, 0.5, n)   # almost every pair in the band (a dense graph)
    assert np.array_equal(sigmoid_rowsums(sparse), sigmoid_rowsums(sparse, method="series"))
    assert np.array_equal(sigmoid_rowsums(crowded), sigmoid_rowsums(crowded, method="dense"))
    for b in (sparse, crowded):
        for shift in (0.0, -6.0):
            s = sigmoid_rowsums(b, shift, method="series")
            d = sigmoid_rowsums(b, shift, method="dense")
            assert np.max(np.abs(s - d) / d) < 1e-13


@pytest.mark.slow
@pytest.mark.parametrize("eps", [1.0, 4.0, 8.0])
def test_cora_estimates_identical_to_dense_row_sums(eps: float) -> None:
    """On Cora (seeds 0-2) the default server gives the dense server's Hard and Hybrid edge
    sets exactly (weights to 1e-12)."""
    from dpgl.datasets import load_dataset
    from dpgl.errors import DpglError
    from dpgl.mechanisms.neighbor_list import undirected_pairs

    try:
        data = load_dataset("cora")
    except DpglError as e:
        pytest.skip(f"Cora not available: {e}")
    n = int(data.num_nodes)
    u, v = undirected_pairs(data.edge_index, n)
    for seed in (0, 1, 2):
        client = BlinkClient(eps, 0.1)
        reports, noisy = client.simulate(u, v, n, np.random.default_rng(seed))
        fast = BlinkServer(client.eps_a).fit(reports, noisy)
        dense = BlinkServer(client.eps_a, method="dense").fit(reports, noisy)
        assert np.max(np.abs(fast.beta - dense.beta)) < 1e-12
        for variant in ("hard", "hybrid"):
            a, b = getattr(fast, variant)(), getattr(dense, variant)()
            assert np.array_equal(a.u, b.u) and np.array_equal(a.v, b.v)
            if variant == "hybrid":
                assert np.max(np.abs(a.weight - b.weight)) < 1e-12


@pytest.mark.parametrize("spread, shift", [(1.0, 8.0), (1.0, 9.5), (0.3, 9.5), (2.0, 4.0)])
def test_adaptive_row_sums_narrow_the_band_instead_of_going_dense(spread: float,
                                                                  shift: float) -> None:
    """Where the default band holds most pairs (a shift that centres the pair logits on 0),
    ``adaptive`` narrows the band rather than summing every pair, and stays as accurate as
    the dense sums; where the band is sparse it is exactly ``auto``."""
    rng = np.random.default_rng(3)
    b = rng.normal(-4.0, spread, 1500)
    ref = dense_rowsums(b, shift)
    got = sigmoid_rowsums(b, shift, method="adaptive")
    assert np.max(np.abs(got - ref) / ref) < 1e-12
    assert not np.array_equal(got, sigmoid_rowsums(b, shift, method="dense"))  # not dense
    assert np.array_equal(sigmoid_rowsums(b, 0.0, method="adaptive"),
                          sigmoid_rowsums(b, 0.0, method="auto"))
