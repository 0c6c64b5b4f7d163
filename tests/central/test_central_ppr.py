"""ISTA approximate PPR vs. power-iteration PPR (dpgl.graph.ppr)."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from dpgl.errors import ConfigError, GraphError
from dpgl.graph.ppr import adjacency, ista_ppr, power_iteration_ppr, ppr_power_iteration_logits


def _graph(n: int = 40, m: int = 90, seed: int = 0) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    ei = rng.integers(0, n, (2, m))
    ei = ei[:, ei[0] != ei[1]]
    return adjacency(torch.from_numpy(ei), n)


def test_power_iteration_is_a_fixed_point_and_a_distribution():
    a = _graph()
    p = power_iteration_ppr(a, [0, 3], 0.25)
    deg = np.asarray(a.sum(1)).ravel()
    s = np.zeros_like(p)
    s[0, 0] = s[1, 3] = 1
    walk = 0.5 * (p + (a @ (p / deg).T).T)
    assert np.allclose(p, 0.25 * s + 0.75 * walk, atol=1e-10)
    assert np.allclose(p.sum(1), 1.0)
    assert (p >= 0).all()


def test_ista_converges_to_power_iteration_for_tiny_rho():
    a = _graph()
    src = [0, 5, 7, 11]
    exact = power_iteration_ppr(a, src, 0.25)
    approx = ista_ppr(a, src, 0.25, rho=1e-9, tol=1e-4, max_iter=100_000).toarray()
    assert np.abs(approx - exact).max() < 1e-6


@pytest.mark.parametrize("rho", [1e-4, 1e-3, 1e-2])
def test_ista_error_within_its_tolerance_and_sparse(rho):
    a = _graph(seed=1)
    src = [1, 2, 3]
    tol = 1e-4
    exact = power_iteration_ppr(a, src, 0.25)
    approx = ista_ppr(a, src, 0.25, rho=rho, tol=tol, max_iter=100_000).toarray()
    vol = a.sum()
    err = np.abs(approx - exact).sum(1)
    # ||p - p*||_1 <= (1 + tol) rho vol(G); ISTA under-estimates entrywise
    assert (err <= (1 + tol) * rho * vol + 1e-9).all()
    assert (approx <= exact + 1e-9).all()
    if rho >= 1e-2:
        assert (approx > 0).sum(1).max() < a.shape[0]  # l1 regularisation gives sparse rows


def test_ista_output_is_sparse_csr_one_row_per_source():
    a = _graph()
    out = ista_ppr(a, [4, 9], rho=1e-3)
    assert sp.isspmatrix_csr(out) and out.shape == (2, a.shape[0])


def test_bad_input():
    a = _graph()
    with pytest.raises(ConfigError):
        ista_ppr(a, [0], alpha=1.5)
    with pytest.raises(GraphError):
        ista_ppr(a, [999])
    no_loops = adjacency(torch.tensor([[0], [1]]), 3, self_loops=False)
    with pytest.raises(GraphError, match="degree"):
        ista_ppr(no_loops, [0])


def test_power_iteration_logits_matches_manual_steps():
    a = _graph(n=10, m=20)
    h = np.random.default_rng(0).normal(size=(10, 3))
    z = ppr_power_iteration_logits(a, h, alpha=0.25, steps=2).numpy()
    deg = np.asarray(a.sum(1)).ravel()
    w = sp.diags(0.75 / deg) @ a
    manual = h.copy()
    for _ in range(2):
        manual = w @ manual + 0.25 * h
    assert np.allclose(z, manual, atol=1e-5)
    assert np.allclose(ppr_power_iteration_logits(a, h, steps=0).numpy(), h, atol=1e-6)
