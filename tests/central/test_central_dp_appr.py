"""DP-APPR (DPAR Alg. 1 and 3): top-K selection, values, column clipping, exact check and a
statistical audit of the Gumbel top-K step."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from dpgl.central.dp_appr import (
    DPAPPRExponential,
    DPAPPRGaussian,
    cap_column_occurrences,
    clip_columns_l1,
    max_column_occurrences,
    topk_nonprivate,
)
from dpgl.errors import ConfigError
from dpgl.privacy.audit import epsilon_lower_bound


def test_topk_nonprivate_picks_the_largest_entries():
    appr = sp.csr_matrix(np.array([[0.5, 0.1, 0.3, 0.0], [0.0, 0.2, 0.1, 0.7]]))
    out = topk_nonprivate(appr, 2).toarray()
    assert np.allclose(out, [[0.5, 0, 0.3, 0], [0, 0.2, 0, 0.7]])


def test_em_option_one_releases_k_indices_with_values_one_over_k():
    rng = np.random.default_rng(0)
    appr = sp.csr_matrix(rng.random((5, 30)) * 1e-3)
    out = DPAPPRExponential(3, 1.0, clip=1e-3).release(appr, rng)
    assert out.shape == (5, 30)
    assert (np.diff(out.indptr) == 3).all()
    assert np.allclose(out.data, 1 / 3)


def test_em_with_large_epsilon_selects_the_true_top_k():
    rng = np.random.default_rng(1)
    scores = np.zeros((50, 20))
    scores[:, [2, 7]] = 1e-3
    out = DPAPPRExponential(2, 1e4, clip=1e-3).release(sp.csr_matrix(scores), rng)
    assert (out.toarray()[:, [2, 7]] > 0).all()


def test_em_clipping_makes_entries_above_c2_indistinguishable():
    # entries above C2 are clipped: vectors that differ only above C2 give the same law
    a = np.array([[0.9, 0.5, 0.0, 0.0]])
    b = np.array([[0.002, 0.7, 0.0, 0.0]])
    mech = DPAPPRExponential(2, 2.0, clip=1e-3)
    ra = mech.release(sp.csr_matrix(np.repeat(a, 200, 0)), np.random.default_rng(3))
    rb = mech.release(sp.csr_matrix(np.repeat(b, 200, 0)), np.random.default_rng(3))
    assert (ra != rb).nnz == 0


def test_em_option_two_values_are_noisy_clipped_values():
    rng = np.random.default_rng(2)
    scores = np.full((4000, 6), 1e-3)
    mech = DPAPPRExponential(2, 2.0, clip=1e-3, values="laplace", value_share=0.5)
    assert mech.value_mech.scale == pytest.approx(2 * 1e-3 / 1.0)   # K C2 / eps_v
    out = mech.release(sp.csr_matrix(scores), rng)
    raw = mech.value_mech.randomize(np.full(20000, 1e-3), np.random.default_rng(5))
    # released values are max(0, C2 + Lap(K C2 / eps_v)): same mean as the floored noise
    assert out.sum() / (4000 * 2) == pytest.approx(np.maximum(raw, 0).mean(), rel=0.05)


def test_em_guarantee_and_bad_input():
    mech = DPAPPRExponential(2, 0.7, clip=1e-3)
    assert mech.guarantee.epsilon == 0.7 and mech.guarantee.delta == 0
    assert mech.selector.scale == pytest.approx(2 * 1e-3 * 2 / 0.7)  # 2 C2 K / eps
    with pytest.raises(ConfigError):
        DPAPPRExponential(2, 1.0, values="median")
    with pytest.raises(ConfigError):
        DPAPPRExponential(2, 1.0, clip=0.0)


def _worst_pair(items: int, k: int, c2: float) -> tuple[np.ndarray, np.ndarray]:
    # every clipped entry moves by C2 (the largest change node removal can cause)
    p0 = np.where(np.arange(items) < k, 0.0, c2)
    p1 = np.where(np.arange(items) < k, c2, 0.0)
    return p0, p1


@pytest.mark.parametrize("k", [1, 2, 3])
def test_em_selection_exact_privacy_loss_is_at_most_epsilon(k):
    eps, c2 = 1.0, 1e-3
    mech = DPAPPRExponential(k, eps, clip=c2)
    for p0, p1 in [_worst_pair(5, k, c2), (np.array([c2, 0, 0, c2, 0]), np.zeros(5))]:
        sel0, lp0 = mech.selector.output_distribution(np.minimum(p0, c2))
        sel1, lp1 = mech.selector.output_distribution(np.minimum(p1, c2))
        assert (sel0 == sel1).all()
        assert np.max(np.abs(lp0 - lp1)) <= eps + 1e-9


def test_gumbel_topk_step_statistical_audit():
    """Empirical epsilon lower bound of DP-APPR-EM's selection on the worst neighbouring pair
    stays below the claim; a mechanism with half the Gumbel scale is caught."""
    eps, k, items, c2, trials = 1.0, 2, 4, 1e-3, 20_000
    p0, p1 = _worst_pair(items, k, c2)

    def events(mech: DPAPPRExponential, p: np.ndarray, seed: int) -> np.ndarray:
        out = mech.release(sp.csr_matrix(np.repeat(p[None], trials, 0)),
                           np.random.default_rng(seed)).toarray() > 0
        return np.stack([out[:, :k].all(1), out[:, 0]], axis=1)

    def lower_bound(mech: DPAPPRExponential) -> float:
        e0, e1 = events(mech, p0, 10), events(mech, p1, 11)
        alpha = 0.05 / (2 * e0.shape[1])
        best = 0.0
        for j in range(e0.shape[1]):
            c0, c1 = int(e0[:, j].sum()), int(e1[:, j].sum())
            best = max(best, epsilon_lower_bound(c1, c0, trials, 0.0, alpha),
                       epsilon_lower_bound(c0, c1, trials, 0.0, alpha),
                       epsilon_lower_bound(trials - c1, trials - c0, trials, 0.0, alpha),
                       epsilon_lower_bound(trials - c0, trials - c1, trials, 0.0, alpha))
        return best

    honest = DPAPPRExponential(k, eps, clip=c2)
    lb = lower_bound(honest)
    assert lb <= eps
    assert lb > 0.5 * eps          # the audit is not vacuous
    broken = DPAPPRExponential(k, 3 * eps, clip=c2)   # claims eps, spends 3 eps
    assert lower_bound(broken) > eps


def test_gm_clips_to_c1_and_selects_k():
    rng = np.random.default_rng(0)
    appr = sp.csr_matrix(np.array([[10.0, 0, 0, 0, 0, 0]]))
    mech = DPAPPRGaussian(2, 1e-6, clip=1e-2)
    assert mech.sensitivity == pytest.approx(np.sqrt(2) * 1e-2)
    out = mech.release(appr, rng).toarray()
    assert (out > 0).sum() <= 2 and out[0, 0] == pytest.approx(1e-2, abs=1e-4)


def test_gm_sensitivity_is_sqrt2_c1_for_nonnegative_vectors():
    """Two non-negative vectors clipped to l2 norm C1 are at most sqrt(2) C1 apart
    (a.b >= 0); orthogonal ones attain it. (2 C1 would be the bound for signed vectors.)"""
    rng = np.random.default_rng(0)
    c1 = 0.01
    bound = DPAPPRGaussian(1, 1.0, clip=c1).sensitivity
    for _ in range(2000):
        a, b = rng.random(6) * (rng.random(6) < 0.5), rng.random(6) * (rng.random(6) < 0.5)
        a *= min(1.0, c1 / max(np.linalg.norm(a), 1e-300)) * rng.random() ** 0.1
        b *= min(1.0, c1 / max(np.linalg.norm(b), 1e-300))
        assert np.linalg.norm(a - b) <= bound * (1 + 1e-12)
    e0, e1 = np.eye(6)[0] * c1, np.eye(6)[1] * c1
    assert np.linalg.norm(e0 - e1) == pytest.approx(bound)


def test_column_clipping_bounds_every_column_l1_norm():
    m = sp.csr_matrix(np.array([[0.5, 0.5, 0], [0.9, 0, 0.2], [0.8, 0.1, 0]]))
    c = clip_columns_l1(m, 1.0).toarray()
    assert np.abs(c).sum(0).max() <= 1.0 + 1e-12
    assert np.allclose(c[:, 1], [0.5, 0, 0.1])           # already within tau: unchanged
    n = clip_columns_l1(m, 1.0, mode="normalize").toarray()
    assert np.allclose(np.abs(n).sum(0), 1.0)


def test_cap_column_occurrences_keeps_diagonal_and_bounds_other_rows():
    rng = np.random.default_rng(0)
    dense = (rng.random((30, 30)) < 0.3).astype(float)
    np.fill_diagonal(dense, 1.0)
    capped = cap_column_occurrences(sp.csr_matrix(dense), 2)
    assert max_column_occurrences(capped) <= 2
    assert (capped.diagonal() == 1).all()
    assert max_column_occurrences(sp.csr_matrix(dense)) > 2
    for i, j in itertools.product(range(30), range(30)):
        if capped[i, j] != 0:
            assert dense[i, j] != 0
