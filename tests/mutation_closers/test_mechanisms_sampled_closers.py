"""Mutation closers (docs/mutation.md): the whole-graph simulations of the edge-LDP
randomizers draw the law of the per-user mechanisms (every bit position can be reported,
every pair score carries its own noise, the lazily revealed non-edge scores follow the
Laplace tail), and Mironov's U* maps its random bits to the doubles the snapping theorem
assumes, down to the subnormal range."""

from __future__ import annotations

import math

import numpy as np

from dpgl.graph.pairs import num_pairs
from dpgl.mechanisms import DPRR, RR, LocalLap
from dpgl.mechanisms.lap import pair_noise_survival
from dpgl.privacy.snapping import uniform_double


class _ScriptedWords(np.random.Generator):
    """A Generator whose uint64 words come from a fixed script (U* draws its randomness only
    from ``rng.integers(0, 2**64, dtype=uint64)``), to reach branches of probability 2^-1022."""

    def __init__(self, words: list[int]) -> None:
        super().__init__(np.random.PCG64(0))
        self.words = list(words)

    def integers(self, low, high=None, size=None, dtype=np.int64,  # type: ignore[override]
                 endpoint=False):
        assert dtype is np.uint64 and low == 0 and high == 2**64
        n = 1 if size is None else int(np.prod(size))
        out = np.array([self.words.pop(0) for _ in range(n)], dtype=np.uint64)
        return out if size is not None else out[0]


def _random_graph(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    keys = rng.choice(num_pairs(n), size=m, replace=False)
    iu, ju = np.triu_indices(n, 1)
    return iu[keys].astype(np.int64), ju[keys].astype(np.int64)


def test_dprr_simulation_can_report_every_non_edge_position() -> None:
    """Every user's n - 1 bits go through RR + sampling: on the empty graph every ordered
    pair (i, j), i != j, is reported with the same probability (a position that is never
    reported as a non-edge would expose the true edges reported there)."""
    n = 6
    mech = DPRR(0.5, alpha=0.5, allocation="split")
    rng = np.random.default_rng(11)
    counts = np.zeros((n, n), dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    for _ in range(300):
        reports, _noisy = mech.simulate(empty, empty, n, rng)
        np.add.at(counts, (reports.user, reports.neighbor), 1)
    assert np.all(np.diag(counts) == 0)
    off = counts[~np.eye(n, dtype=bool)]
    assert off.min() >= 0.6 * off.mean() > 0


def test_rr_report_ids_stay_in_range() -> None:
    """A user's RR report lists node ids in [0, n) without her own id, and every other id
    appears with probability 1 / (1 + e^eps) on the empty list."""
    n, eps = 5, 0.3
    rr = RR(eps)
    rng = np.random.default_rng(5)
    counts = np.zeros(n + 3, dtype=np.int64)
    trials = 400
    for _ in range(trials):
        out = rr.report(np.zeros(0, dtype=np.int64), n, 2, rng)
        assert out.size == 0 or (out.min() >= 0 and out.max() < n)
        np.add.at(counts, out, 1)
    assert counts[2] == 0
    assert np.all(counts[n:] == 0)
    flip = 1.0 / (1.0 + math.exp(eps))
    others = counts[[0, 1, 3, 4]] / trials
    assert np.all(np.abs(others - flip) < 0.1)


def test_lap_candidates_edge_scores_carry_two_independent_laplace_draws_each() -> None:
    """The score of a true pair is A_ij + A_ji + L_ij + L_ji with fresh L's per pair: across
    pairs the noise has variance 4 b^2 (a draw shared by all pairs would leave 2 b^2) and
    mean 0."""
    n, m = 400, 4000
    u, v = _random_graph(n, m, 3)
    mech = LocalLap(1.0, variant="ldpgcn")
    b = mech.scale
    cand = mech.candidates(u, v, n, np.random.default_rng(7))
    assert cand.edge_values.shape == (m,)
    noise = cand.edge_values - 2.0
    assert abs(noise.mean()) < 0.15 * b
    assert 3.4 * b * b < noise.var() < 4.6 * b * b


def test_lap_candidates_lowered_cutoffs_reveal_the_exact_tail_count() -> None:
    """After lowering the cutoff twice, the revealed non-edges are those whose score
    L1 + L2 exceeds the last cutoff: Binomial(N0, S(t)) of them, all above t."""
    n = 700
    mech = LocalLap(1.0, variant="ldpgcn")
    b = mech.scale
    empty = np.zeros(0, dtype=np.int64)
    cand = mech.candidates(empty, empty, n, np.random.default_rng(19))
    n0 = num_pairs(n)
    cand.lower_cutoff(4.0 * b)
    first = cand.zero_keys.size
    assert abs(first - n0 * pair_noise_survival(4.0 * b, b)) < 6 * math.sqrt(n0 * 0.03)
    cand.lower_cutoff(3.0 * b)
    s = pair_noise_survival(3.0 * b, b)
    expected = n0 * s
    assert abs(cand.zero_keys.size - expected) < 6 * math.sqrt(expected)
    assert np.all(cand.zero_values > 3.0 * b)
    assert np.unique(cand.zero_keys).size == cand.zero_keys.size
    # the layer (3b, 4b] is in law the tail above 3b minus the tail above 4b
    layer = cand.zero_values[first:]
    assert np.all(layer <= 4.0 * b)


def test_ldpgcn_t_upper_bound_is_beyond_the_noisy_total() -> None:
    """L-DpGCN's T = (sum of all noisy entries) / 2 has standard deviation b sqrt(N); the
    candidate set is fixed before T is drawn only if the bound sits ~8 standard deviations
    above m, so that T never exceeds it."""
    n, m = 300, 600
    u, v = _random_graph(n, m, 23)
    mech = LocalLap(1.0, variant="ldpgcn")
    b = mech.scale
    sd = b * math.sqrt(num_pairs(n))
    ts = []
    for seed in range(12):
        cand = mech.candidates(u, v, n, np.random.default_rng(100 + seed))
        bound = cand.t_upper_bound()
        assert bound >= m + 7.5 * sd
        cand.ensure(bound)
        above = cand.above_cutoff()
        t = cand.noisy_total() / 2.0
        ts.append(t)
        assert t < bound <= above
    assert float(np.std(ts)) > 0.3 * sd  # the total really is that noisy


def test_uniform_double_subnormal_branch_is_uniform_over_positive_subnormals() -> None:
    """With 1022+ leading zero bits U* lies among the positive subnormals m 2^-1074
    (m = the 52 significand bits): 3 bits -> exactly 3 * 2^-1074."""
    words = [3] + [0] * 20       # top 11 bits zero, then 20 x 53 zero bits of the stream
    u = uniform_double(1, _ScriptedWords(words))
    assert u.tolist() == [3 * 2.0**-1074]
    big = (1 << 52) - 5
    u = uniform_double(1, _ScriptedWords([big] + [0] * 20))
    assert u.tolist() == [math.ldexp(float(big), -1074)]
    assert 0 < u[0] < 2.0**-1022


def test_uniform_double_subnormal_redraws_a_zero_significand() -> None:
    """U* never returns 0: a zero significand in the subnormal range is redrawn from the 52
    low bits of a fresh word (5 -> 5 * 2^-1074)."""
    words = [0] + [0] * 20 + [(7 << 52) | 5]
    u = uniform_double(1, _ScriptedWords(words))
    assert u.tolist() == [5 * 2.0**-1074]
