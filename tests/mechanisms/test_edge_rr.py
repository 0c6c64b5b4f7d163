"""RR and SymRR: exact per-user LDP, per-user function vs its exact law, sparse whole-graph
simulation vs a dense reference."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from _edge_graphs import binomial_ok, dense_adjacency, random_graph
from _speed_reference import reference_both_directions, reference_symrr_pairs
from dpgl.errors import PrivacyError
from dpgl.mechanisms.rr import RR, xor_sorted
from dpgl.mechanisms.symrr import SymRR
from dpgl.privacy import Unit
from dpgl.transforms import SymRRTransform


def rr_law(bits: tuple[int, ...], keep: float) -> dict[tuple[int, ...], float]:
    """Exact output law of RR on a bit tuple."""
    out = {}
    for y in itertools.product((0, 1), repeat=len(bits)):
        same = sum(int(a == b) for a, b in zip(bits, y, strict=True))
        out[y] = keep**same * (1 - keep) ** (len(bits) - same)
    return out


def max_log_ratio(p: dict, q: dict) -> float:
    return max(abs(np.log(p[y]) - np.log(q[y])) for y in p)


@pytest.mark.parametrize("eps", [0.5, 2.0])
@pytest.mark.parametrize("cls", [RR, SymRR])
def test_exact_edge_ldp_small_n(cls: type, eps: float) -> None:
    """All neighbor lists of user 2 among n = 5 users; neighbours differ in one bit."""
    mech = cls(eps)
    n, index = 5, 2
    bits_len = n - 1 if cls is RR else index
    worst = 0.0
    for x in itertools.product((0, 1), repeat=bits_len):
        for flip in range(bits_len):
            x2 = list(x)
            x2[flip] ^= 1
            worst = max(worst, max_log_ratio(rr_law(x, mech.keep_probability),
                                             rr_law(tuple(x2), mech.keep_probability)))
    assert worst <= eps + 1e-12
    assert worst == pytest.approx(eps)  # RR's bound is tight
    assert mech.guarantee.epsilon == eps and mech.guarantee.unit is Unit.EDGE_LDP


def test_per_user_report_follows_exact_law() -> None:
    """Empirical law of RR.report for one list vs the exact law (chi-square-like bound)."""
    rng = np.random.default_rng(0)
    mech, n, index = RR(1.0), 4, 1
    neighbors = np.array([0, 3])  # bits over j in (0, 2, 3): (1, 0, 1)
    law = rr_law((1, 0, 1), mech.keep_probability)
    reps = 6000
    counts: dict[tuple[int, ...], int] = dict.fromkeys(law, 0)
    for _ in range(reps):
        rep = mech.report(neighbors, n, index, rng)
        y = tuple(int(j in rep) for j in (0, 2, 3))
        assert index not in rep
        counts[y] += 1
    for y, p in law.items():
        assert binomial_ok(counts[y], reps, p)


def test_symrr_report_only_lower_part() -> None:
    rng = np.random.default_rng(1)
    out = SymRR(50.0).report(np.array([0, 2, 4]), 6, 3, rng)
    assert out.tolist() == [0, 2]  # eps = 50: no flips; bit 4 > index is not reported
    assert SymRR(1.0).relationship_guarantee.unit is Unit.RELATIONSHIP_DP


def dense_rr(adj: np.ndarray, flip: float, rng: np.random.Generator) -> np.ndarray:
    """Reference: every user flips every off-diagonal bit."""
    n = adj.shape[0]
    out = adj ^ (rng.random((n, n)) < flip)
    np.fill_diagonal(out, False)
    return out


def test_rr_simulation_matches_dense_reference() -> None:
    n, eps, reps = 40, 1.0, 150
    u, v = random_graph(n, 0.15, seed=3)
    adj = dense_adjacency(u, v, n)
    mech = RR(eps)
    rng = np.random.default_rng(4)
    stats = {"sparse": np.zeros(4), "dense": np.zeros(4)}
    off = ~np.eye(n, dtype=bool)
    deg_sparse, deg_dense = [], []
    for _ in range(reps):
        rep = mech.simulate(u, v, n, rng)
        got = np.zeros((n, n), dtype=bool)
        got[rep.user, rep.neighbor] = True
        assert not np.any(np.diag(got))
        ref = dense_rr(adj, mech.flip_probability, rng)
        for name, m in (("sparse", got), ("dense", ref)):
            both = m & m.T
            stats[name] += [np.sum(m & adj), np.sum(m & ~adj & off),
                            np.sum(both & adj) / 2, np.sum(m)]
        deg_sparse.append(got.sum(1))
        deg_dense.append(ref.sum(1))
    ones, zeros = adj.sum(), (~adj & off).sum()
    p, f = mech.keep_probability, mech.flip_probability
    for name in ("sparse", "dense"):
        s = stats[name]
        assert binomial_ok(s[0], reps * ones, p)  # 1 -> 1
        assert binomial_ok(s[1], reps * zeros, f)  # 0 -> 1
        assert binomial_ok(s[2], reps * ones / 2, p * p)  # both endpoints keep an edge
    # reported degrees: same mean and variance per user (sum over users)
    ds, dd = np.array(deg_sparse), np.array(deg_dense)
    assert abs(ds.mean() - dd.mean()) < 0.05 * dd.mean()
    assert abs(ds.var(axis=0).mean() / dd.var(axis=0).mean() - 1) < 0.15


def test_symrr_simulation_rates() -> None:
    n, eps, reps = 50, 0.8, 120
    u, v = random_graph(n, 0.1, seed=5)
    mech = SymRR(eps)
    rng = np.random.default_rng(6)
    true = set(zip(u.tolist(), v.tolist(), strict=True))
    kept = added = 0
    for _ in range(reps):
        a, b = mech.simulate(u, v, n, rng)
        assert np.all(a < b)
        got = set(zip(a.tolist(), b.tolist(), strict=True))
        kept += len(got & true)
        added += len(got - true)
    m, zeros = len(true), n * (n - 1) // 2 - len(true)
    assert binomial_ok(kept, reps * m, mech.keep_probability)
    assert binomial_ok(added, reps * zeros, mech.flip_probability)
    assert mech.expected_pairs(n, m) == pytest.approx(
        m * mech.keep_probability + zeros * mech.flip_probability)


def test_xor_sorted() -> None:
    a = np.array([1, 3, 5, 9])
    b = np.array([0, 3, 9, 10])
    assert xor_sorted(a, b).tolist() == [0, 1, 5, 10]
    assert xor_sorted(a, np.zeros(0, np.int64)).tolist() == a.tolist()


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), "x"])
def test_bad_epsilon(bad: object) -> None:
    with pytest.raises(PrivacyError):
        RR(bad)  # type: ignore[arg-type]
    with pytest.raises(PrivacyError):
        SymRR(bad)  # type: ignore[arg-type]


def test_same_seed_same_output() -> None:
    u, v = random_graph(30, 0.2, seed=7)
    a = RR(2.0).simulate(u, v, 30, np.random.default_rng(9))
    b = RR(2.0).simulate(u, v, 30, np.random.default_rng(9))
    assert np.array_equal(a.user, b.user) and np.array_equal(a.neighbor, b.neighbor)


@pytest.mark.parametrize(("n", "eps"), [(300, 1.0), (1200, 1.0), (1200, 4.0)])
def test_symrr_same_seed_output_as_before(n: int, eps: float) -> None:
    """The decoding and edge-building fast paths (issue #13 item 7) change no output: the
    transform's edge_index for a seed equals the code it replaced (tests/_speed_reference)."""
    u, v = random_graph(n, 0.01, seed=n)
    t = SymRRTransform(eps, seed=5)
    ei, ew = t.estimate(u, v, n, t.rng)
    a, b = reference_symrr_pairs(u, v, n, SymRR(eps).flip_probability,
                                 SymRRTransform(eps, seed=5).rng)
    ref, _ = reference_both_directions(a, b, None)
    assert ew is None and np.array_equal(ei.numpy(), ref)
