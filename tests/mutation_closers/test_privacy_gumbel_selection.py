"""Mutation closers (docs/mutation.md): Gumbel top-k releases exactly the k largest noisy
scores of each row, in order (the peeling exponential mechanism it charges for), never more
indices, another row's or column's order, or a partition of other elements."""

from __future__ import annotations

import numpy as np
import pytest

from dpgl.privacy import GumbelTopK
from dpgl.rng import make_rng


def _scores(rows: int, n: int, seed: int) -> np.ndarray:
    # distinct scores far apart compared with the (tiny) Gumbel scale used below
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(n) for _ in range(rows)]).astype(float)


@pytest.mark.parametrize(("rows", "n", "k"), [(1, 9, 3), (5, 12, 5), (4, 4, 4), (3, 6, 6),
                                               (6, 20, 6), (2, 30, 7)])
def test_select_returns_the_top_k_of_each_row_in_order(rows: int, n: int, k: int) -> None:
    mech = GumbelTopK(k, 1e6 * k, sensitivity=1.0)       # scale 2e-6: noise cannot reorder
    scores = _scores(rows, n, seed=rows * 100 + n)
    got = mech.select(scores, make_rng(0))
    want = np.argsort(-scores, axis=-1)[:, :k]
    assert got.shape == (rows, k)
    assert np.array_equal(got, want)
    one = mech.select(scores[0], make_rng(1))
    assert one.shape == (k,)
    assert np.array_equal(one, want[0])


def test_select_is_random_with_the_stated_scale() -> None:
    """With scale b, P[item 0 first] among two items with score gap g is
    1 / (1 + exp(-g / b)) (Gumbel-max): the draw uses the scale the guarantee states."""
    mech = GumbelTopK(1, 1.0, sensitivity=0.5)           # b = 2 * 0.5 / 1 = 1
    assert mech.scale == pytest.approx(1.0)
    scores = np.tile([1.0, 0.0], (40_000, 1))
    first = mech.select(scores, make_rng(2))[:, 0]
    assert float(np.mean(first == 0)) == pytest.approx(1 / (1 + np.exp(-1.0)), abs=0.01)
