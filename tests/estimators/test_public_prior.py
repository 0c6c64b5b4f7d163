"""blink-pp's server (dpgl.estimators.public_prior): row sums and graphs against dense
references, the reduction to Blink without covariates, the moment fit on a planted model,
and that the estimate is a function of the reports and public data only."""

import numpy as np
import pytest
import torch
from scipy import special
from torch_geometric.data import Data

from dpgl.errors import ConfigError, GraphError
from dpgl.estimators.blink import BlinkServer
from dpgl.estimators.public_prior import (
    PairCovariates,
    PublicPriorServer,
    public_covariates,
    shrink_degrees,
)
from dpgl.graph.knn import knn_pairs
from dpgl.graph.pairs import pair_to_index
from dpgl.mechanisms.blink import BlinkClient
from dpgl.mechanisms.rr import DirectedReports


def _random_graph(n, p, rng):
    a = np.triu(rng.random((n, n)) < p, 1)
    return np.nonzero(a)


def _cov(n, rng, groups=3, knn=4):
    x = torch.from_numpy(rng.random((n, 6)).astype(np.float32))
    ku, kv = knn_pairs(x, knn)
    return PairCovariates(rng.integers(0, groups, n), ku, kv)


def _dense_logits(s: PublicPriorServer):
    n = s.num_nodes
    i, j = np.triu_indices(n, 1)
    keys = pair_to_index(i, j, n)
    k = np.isin(keys, s.k_keys).astype(float)
    h = (s.groups[i] == s.groups[j]).astype(float)
    x = np.zeros(i.size)
    pos = np.searchsorted(keys, s.rep_keys)
    x[pos] = s.rep_x
    prior = s.beta[i] + s.beta[j] + s.theta_k * k + s.theta_h * h
    return i, j, prior, x


def _fitted(n=60, eps=2.0, seed=0):
    rng = np.random.default_rng(seed)
    u, v = _random_graph(n, 0.08, rng)
    cli = BlinkClient(eps, 0.2)
    rep, noisy = cli.simulate(u, v, n, rng)
    return PublicPriorServer(cli.eps_a).fit(rep, noisy, _cov(n, rng),
                                            degree_noise_var=cli.degree.variance)


def test_rowsums_match_the_dense_sums():
    s = _fitted()
    i, j, prior, _ = _dense_logits(s)
    for shift in (0.0, -1.3):
        dense = np.zeros(s.num_nodes)
        p = special.expit(prior + shift)
        np.add.at(dense, i, p)
        np.add.at(dense, j, p)
        np.testing.assert_allclose(s._rowsums(s.beta, s.theta_k, s.theta_h, shift), dense,
                                   rtol=1e-9)


def test_the_fit_meets_its_moment_equations():
    s = _fitted()
    assert s.converged
    i, j, prior, _ = _dense_logits(s)
    keys = pair_to_index(i, j, s.num_nodes)
    p = special.expit(prior)
    assert p[np.isin(keys, s.k_keys)].sum() == pytest.approx(s.target_k, rel=1e-6)
    assert p[s.groups[i] == s.groups[j]].sum() == pytest.approx(s.target_h, rel=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_hard_hybrid_and_soft_are_exact(seed):
    s = _fitted(seed=seed, eps=[1.0, 3.0, 6.0, 2.0][seed])
    i, j, prior, x = _dense_logits(s)
    post = special.expit(prior + 2 * s.eps_a * (x - 1))
    n = s.num_nodes
    keys = pair_to_index(i, j, n)

    def keyset(est):
        return set(pair_to_index(est.u, est.v, n).tolist())

    assert keyset(s.hard()) == set(keys[post > 0.5].tolist())
    k2 = (int(np.floor(2 * post.sum())) + 1) // 2
    t = np.sort(post)[::-1][k2 - 1]
    hyb = s.hybrid()
    assert keyset(hyb) == set(keys[post >= t].tolist())
    assert hyb.info["total_mass"] == pytest.approx(post.sum(), rel=1e-9)
    soft = s.soft(floor=0.05)
    assert keyset(soft) == set(keys[post >= 0.05].tolist())


def test_without_covariates_it_is_blink():
    rng = np.random.default_rng(3)
    n = 80
    u, v = _random_graph(n, 0.06, rng)
    cli = BlinkClient(3.0, 0.2)
    rep, noisy = cli.simulate(u, v, n, rng)
    none = PairCovariates(np.arange(n), np.zeros(0, np.int64), np.zeros(0, np.int64))
    ours = PublicPriorServer(cli.eps_a).fit(rep, noisy, none)
    blink = BlinkServer(cli.eps_a).fit(rep, noisy)
    assert ours.theta_k == 0 and ours.theta_h == 0
    np.testing.assert_allclose(ours.beta, blink.beta, atol=1e-6)
    a, b = ours.hybrid(), blink.hybrid()
    np.testing.assert_array_equal(a.u, b.u)
    np.testing.assert_array_equal(a.v, b.v)
    np.testing.assert_allclose(a.weight, b.weight, rtol=1e-6)


def test_the_moments_recover_planted_covariate_effects():
    rng = np.random.default_rng(7)
    n = 1500
    groups = rng.integers(0, 4, n)
    x = torch.from_numpy(rng.normal(size=(n, 8)).astype(np.float32))
    ku, kv = knn_pairs(x, 5)
    beta = rng.normal(-3.0, 0.5, n)
    i, j = np.triu_indices(n, 1)
    k = np.isin(pair_to_index(i, j, n), pair_to_index(ku, kv, n))
    logit = beta[i] + beta[j] + 3.0 * k + 1.0 * (groups[i] == groups[j])
    a = rng.random(i.size) < special.expit(logit)
    cli = BlinkClient(6.0, 0.2)
    rep, noisy = cli.simulate(i[a], j[a], n, rng)
    s = PublicPriorServer(cli.eps_a).fit(rep, noisy, PairCovariates(groups, ku, kv),
                                         degree_noise_var=cli.degree.variance)
    assert s.theta_k == pytest.approx(3.0, abs=0.3)
    assert s.theta_h == pytest.approx(1.0, abs=0.2)


def test_shrinkage():
    d = np.array([1.0, 5.0, 9.0])
    np.testing.assert_allclose(shrink_degrees(d, 0.0), d)
    far = shrink_degrees(d, 1e6)
    np.testing.assert_allclose(far, 5.0, atol=1e-3)
    with pytest.raises(ConfigError):
        shrink_degrees(d, -1.0)


def test_knn_pairs_match_brute_force():
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.random((40, 5)).astype(np.float32))
    ku, kv = knn_pairs(x, 3)
    z = x / x.norm(dim=1, keepdim=True)
    sim = (z @ z.T).numpy()
    np.fill_diagonal(sim, -np.inf)
    top = np.argsort(-sim, axis=1)[:, :3]
    want = {(min(a, b), max(a, b)) for a in range(40) for b in top[a]}
    assert set(zip(ku.tolist(), kv.tolist(), strict=True)) == want
    with pytest.raises(ConfigError):
        knn_pairs(x, 0)


def test_bad_covariates_are_refused():
    with pytest.raises(GraphError):
        PairCovariates(np.zeros(3, np.int64), np.array([2]), np.array([1])).check(3)


def test_the_estimate_reads_the_reports_not_the_graph():
    """Two different true graphs, the same reports (forced): the same estimate."""
    from dpgl.transforms import PublicPriorTransform
    rng = np.random.default_rng(1)
    n = 50
    fixed = DirectedReports(*np.nonzero(rng.random((n, n)) < 0.1), n)
    keep = fixed.user != fixed.neighbor
    fixed = DirectedReports(fixed.user[keep], fixed.neighbor[keep], n)
    noisy = rng.integers(1, 8, n).astype(float)
    x = torch.from_numpy(rng.random((n, 4)).astype(np.float32))
    cov = public_covariates(x, torch.from_numpy(rng.integers(0, 3, n)),
                            torch.arange(0, n, 2), knn=3)
    outs = []
    for p in (0.05, 0.3):
        u, v = _random_graph(n, p, rng)
        ei = torch.from_numpy(np.stack([np.r_[u, v], np.r_[v, u]]))
        t = PublicPriorTransform(2.0, 0.1, "hybrid", 0, covariates=cov)
        t.mechanism.simulate = lambda *a, **k: (fixed, noisy)
        outs.append(t(Data(x=x, edge_index=ei, num_nodes=n)))
    assert torch.equal(outs[0].edge_index, outs[1].edge_index)
    assert torch.equal(outs[0].edge_weight, outs[1].edge_weight)


def test_covariates_are_computed_once_per_input_and_cannot_be_changed():
    """The same public inputs give the cached covariates (the object computed the first
    time, equal to a fresh computation, read-only); another split or kNN size recomputes."""
    from dpgl.estimators import public_prior

    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.random((60, 8)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 3, 60))
    train = torch.arange(30)
    first = public_prior.public_covariates(x, y, train, knn=3, epochs=20)
    assert public_prior.public_covariates(x.clone(), y.clone(), train.clone(), knn=3,
                                          epochs=20) is first
    fresh = public_prior._public_covariates(x, y, train, knn=3, groups=True, epochs=20,
                                            lr=0.05, weight_decay=5e-4)
    for a, b in zip((first.groups, first.ku, first.kv), (fresh.groups, fresh.ku, fresh.kv),
                    strict=True):
        assert np.array_equal(a, b)
        with pytest.raises(ValueError, match="read-only"):
            a[:1] = 0
    assert public_prior.public_covariates(x, y, torch.arange(1, 31), knn=3,
                                          epochs=20) is not first
    assert public_prior.public_covariates(x, y, train, knn=4, epochs=20) is not first
