"""Mutation closers (docs/mutation.md): DP-APPR releases charge the rows they released with
the noise they drew. GM: Gaussian noise of std sigma on rows clipped to l2 <= C1, charged as
one Gaussian step per row with noise multiplier sigma / (sqrt(2) C1); EM: Gumbel top-K with
scale 2 C2 K / eps per row (plus Laplace values), charged M times by optimal composition."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from dpgl.central.dp_appr import DPAPPRExponential, DPAPPRGaussian
from dpgl.privacy import (
    Accountant,
    Guarantee,
    Unit,
    gaussian_epsilon,
    optimal_composition,
)


def test_gm_release_charges_one_gaussian_step_per_row_under_its_unit() -> None:
    sigma, clip, rows = 0.05, 0.02, 7
    mech = DPAPPRGaussian(3, sigma, clip=clip, unit=Unit.EDGE_DP)
    assert mech.sensitivity == pytest.approx(math.sqrt(2) * clip)
    assert mech.noise_multiplier == pytest.approx(sigma / (math.sqrt(2) * clip))
    acc = Accountant(delta=1e-5)
    with acc.active():
        mech.release(np.random.default_rng(0).random((rows, 40)), np.random.default_rng(1))
    report = acc.report()
    assert report.total(Unit.NODE_DP) is None
    total = report.total(Unit.EDGE_DP)
    assert total is not None
    want = gaussian_epsilon(sigma / (math.sqrt(2) * clip), 1e-5, steps=rows)
    assert total.epsilon == pytest.approx(want, rel=1e-6)
    (entry,) = report.entries
    assert entry.count == rows
    # charge() on its own: one step by default
    acc1 = Accountant(delta=1e-5)
    with acc1.active():
        mech.charge()
    one = acc1.report().total(Unit.EDGE_DP)
    assert one is not None
    assert one.epsilon == pytest.approx(gaussian_epsilon(mech.noise_multiplier, 1e-5), rel=1e-6)


def test_gm_noise_has_std_sigma_on_clipped_rows() -> None:
    """Rows of norm 100 are clipped to C1: a row of the released top-K values is then the
    clipped row plus N(0, sigma^2), so the k released values of an all-equal row average to
    C1 / sqrt(n) plus noise."""
    n, k, sigma, clip = 400, 400, 0.01, 0.5
    mech = DPAPPRGaussian(k, sigma, clip=clip)
    big = np.full((50, n), 5.0)                     # row norm 100 >> C1
    out = mech.release(big, np.random.default_rng(2)).toarray()
    # k = n: every entry released (floored at 0, never reached here)
    assert float(out.mean()) == pytest.approx(clip / math.sqrt(n), rel=0.02)
    assert float(out.std()) == pytest.approx(sigma, rel=0.03)


def test_em_release_charges_each_row_by_optimal_composition() -> None:
    eps, k, clip, rows, slack = 2.0, 4, 1e-3, 6, 1e-6
    mech = DPAPPRExponential(k, eps, clip=clip, delta_slack=slack, unit=Unit.EDGE_DP)
    assert mech.selector.scale == pytest.approx(2 * clip * k / eps)
    assert mech.guarantee == Guarantee.pure(eps, Unit.EDGE_DP)
    acc = Accountant()
    with acc.active():
        mech.release(np.random.default_rng(3).random((rows, 30)) * 1e-3,
                     np.random.default_rng(4))
    total = acc.report().total(Unit.EDGE_DP)
    assert total is not None
    want = optimal_composition(Guarantee.pure(eps, Unit.EDGE_DP), rows, slack)
    assert total.epsilon == pytest.approx(want.epsilon)
    assert total.delta == pytest.approx(want.delta)


def test_em_with_laplace_values_splits_the_budget_and_composes_both_parts() -> None:
    eps, k, clip, share = 1.0, 5, 1e-2, 0.3
    mech = DPAPPRExponential(k, eps, clip=clip, values="laplace", value_share=share)
    assert mech.selector.epsilon == pytest.approx((1 - share) * eps)
    assert mech.value_mech is not None
    assert mech.value_mech.scale == pytest.approx(k * clip / (share * eps))
    assert mech.guarantee == Guarantee.pure(eps, Unit.NODE_DP)
    assert set(mech.parts()) == {"top-K", "values"}
    acc = Accountant()
    with acc.active():
        out = mech.release(sp.csr_matrix(np.full((3, 20), 1e-2)), np.random.default_rng(5))
    assert out.shape == (3, 20)
    total = acc.report().total(Unit.NODE_DP)
    assert total is not None
    assert total.epsilon == pytest.approx(
        optimal_composition(Guarantee.pure(eps, Unit.NODE_DP), 3, 0.0).epsilon)


def test_gm_clips_every_row_to_c1_on_its_own() -> None:
    """Square input (as many sources as universe ids): each row is scaled by its own factor
    min(1, C1 / ||row||), so every released row has norm <= C1 and short rows are untouched."""
    clip = 0.1
    rows = np.diag([10.0, 0.05, 3.0, 0.0]) + 0.01
    mech = DPAPPRGaussian(4, 1e-9, clip=clip)
    out = mech.release(rows, np.random.default_rng(6)).toarray()
    norms = np.linalg.norm(rows, axis=1)
    want = rows * np.minimum(1.0, clip / norms)[:, None]
    assert np.allclose(out, want, atol=1e-6)
    assert np.all(np.linalg.norm(out, axis=1) <= clip + 1e-6)
