"""DPRR degree preservation (Eqs. 11 / 15 as derived), Poison(omega1, omega2) (Eq. 16) and
Defense(theta) (Eq. 17, Prop. 6)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import binom
from torch_geometric.data import Data

from dpgl.errors import ConfigError, DpglError
from dpgl.mechanisms.dprr import DPRR
from dpgl.mechanisms.poisoning import (
    apply_defense,
    defense_threshold,
    draw_poisoned_users,
    poison_lists,
    poison_reports,
)
from dpgl.mechanisms.rr import RR, DirectedReports
from dpgl.methods.graph_ldp import GraphLDPParams, randomize_graphs
from dpgl.privacy import RandomizedResponse
from dpgl.rng import make_rng


def circulant(n: int, half: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (u < v) of the circulant graph i ~ i +- 1..half: every degree is 2 * half."""
    i = np.repeat(np.arange(n), half)
    j = (i + np.tile(np.arange(1, half + 1), n)) % n
    return np.minimum(i, j), np.maximum(i, j)


def dprr_variance_bound(d: float, n: int, eps1: float, eps2: float) -> float:
    """Our Eq. 15: (d + 1/eps1) r + 2 r^2 / eps1^2, r = 1 + d (e^eps2 - 1) / (n - 1)."""
    r = 1.0 + d * (math.exp(eps2) - 1.0) / (n - 1)
    return (d + 1.0 / eps1) * r + 2.0 * r * r / eps1**2


@pytest.mark.parametrize("half", [10, 25])
def test_dprr_noisy_degree_nearly_unbiased_and_variance_bounded(half: int) -> None:
    n, d = 2000, 2 * half
    u, v = circulant(n, half)
    mech = DPRR(2.0, n_max=n, allocation="split")  # eps1 = 0.2, eps2 = 1.8
    eps1, eps2 = mech.budget(n)
    rng = make_rng(7)
    counts = np.stack([np.bincount(mech.simulate(u, v, n, rng)[0].user, minlength=n)
                       for _ in range(10)])
    mean, var = counts.mean(), counts.var()
    assert abs(mean - d) < 0.03 * d + 0.2, (mean, d)  # Eq. 11: E[count] ~= d for d << n
    bound = dprr_variance_bound(d, n, eps1, eps2)
    assert var <= bound, (var, bound)
    assert var > 0.3 * bound  # the bound is not vacuous (same order as the variance)


def test_rr_degree_is_biased_for_comparison() -> None:
    n, d = 2000, 20
    u, v = circulant(n, d // 2)
    counts = np.bincount(RR(2.0).simulate(u, v, n, make_rng(1)).user, minlength=n)
    assert counts.mean() > 10 * d  # RR's reported degree ~ (n - 1)(1 - p): not degree-preserving


def test_defense_threshold_matches_worked_example() -> None:
    assert defense_threshold(100, 0.9, 0.05) == pytest.approx(92.5, abs=0.1)
    # tau grows with n and shrinks with theta
    assert defense_threshold(200, 0.9, 0.05) > defense_threshold(100, 0.9, 0.05)
    assert defense_threshold(100, 0.9, 0.01) > defense_threshold(100, 0.9, 0.05)


def test_defense_threshold_is_the_chernoff_bound() -> None:
    n, eps2, theta = 300, 1.3, 0.1
    mu = (n - 1) * RandomizedResponse(eps2).keep_probability
    tau = defense_threshold(n, eps2, theta)
    delta = tau / mu - 1.0
    assert math.exp(-delta**2 * mu / (2 + delta)) == pytest.approx(theta, rel=1e-9)


@pytest.mark.parametrize("kind", ["rr", "dprr"])
def test_defense_false_positive_rate_at_most_theta(kind: str) -> None:
    # worst case for honest users: the complete graph (every bit 1 w.p. p before sampling);
    # the paper's example n = 100, eps2 = 0.9, theta = 0.05 (tau ~= 92.5 < n - 1)
    n, theta = 100, 0.05
    iu, ju = np.triu_indices(n, 1)
    rng = make_rng(3)
    flagged = total = 0
    for _ in range(20):
        if kind == "rr":
            reports, eps2 = RR(0.9).simulate(iu, ju, n, rng), 0.9
        else:
            mech = DPRR(1.0, n_max=n, allocation="split", alpha=0.9)
            reports, _ = mech.simulate(iu, ju, n, rng)
            eps2 = mech.budget(n)[1]
        assert eps2 == pytest.approx(0.9)
        _, mask = apply_defense(reports, eps2, theta)
        flagged += int(mask.sum())
        total += n
    assert flagged / total <= theta
    # Prop. 6 exactly for the worst honest user: P[Bin(n - 1, p) >= tau] <= theta
    tau = defense_threshold(n, 0.9, theta)
    assert binom.sf(math.ceil(tau) - 1, n - 1, RandomizedResponse(0.9).keep_probability) <= theta
    assert tau <= n - 1  # an all-ones list is flagged


def test_defense_drops_only_flagged_lists() -> None:
    n = 100
    user = np.concatenate([np.zeros(99, np.int64), np.ones(3, np.int64)])
    nb = np.concatenate([np.arange(1, 100), [0, 2, 3]])
    reports = DirectedReports(user, nb, n)
    kept, mask = apply_defense(reports, 0.9, 0.05)
    assert mask[0] and not mask[1:].any()
    assert np.array_equal(kept.user, np.ones(3)) and np.array_equal(kept.neighbor, [0, 2, 3])


def test_poison_lists_presets_and_exact_cases() -> None:
    n = 400
    u, v = circulant(n, 5)
    users = np.array([3, 50, 399])
    a, b = poison_lists(users, u, v, n, 1.0, 1.0, make_rng(0))
    assert a.size == 3 * (n - 1) and not np.any(a == b)
    a, b = poison_lists(users, u, v, n, 1.0, 0.0, make_rng(0))  # the true lists
    true = {(int(x), int(y)) for x, y in zip(np.r_[u, v], np.r_[v, u], strict=True)
            if x in users}
    assert set(zip(a.tolist(), b.tolist(), strict=True)) == true
    a, _ = poison_lists(np.arange(n), u, v, n, 0.5, 0.5, make_rng(0))
    assert a.size / n == pytest.approx((n - 1) / 2, rel=0.02)
    with pytest.raises(DpglError, match="omega1"):
        poison_lists(users, u, v, n, 1.5, 0.5, make_rng(0))


def test_poison_reports_changes_only_chosen_users() -> None:
    n = 200
    u, v = circulant(n, 4)
    reports, _ = DPRR(1.0, n_max=n).simulate(u, v, n, make_rng(1))
    users = draw_poisoned_users(n, 0.1, make_rng(2))
    assert users.size == 20
    out = poison_reports(reports, users, u, v, 1.0, 1.0, make_rng(3))
    chosen = np.isin(out.user, users)
    assert np.bincount(out.user[chosen], minlength=n)[users].tolist() == [n - 1] * 20
    before = np.isin(reports.user, users)
    assert np.array_equal(out.user[~chosen], reports.user[~before])
    assert np.array_equal(out.neighbor[~chosen], reports.neighbor[~before])


def _graph(n: int, half: int, label: int) -> Data:
    u, v = circulant(n, half)
    ei = torch.from_numpy(np.stack([np.r_[u, v], np.r_[v, u]]))
    return Data(edge_index=ei, y=torch.tensor([label]), num_nodes=n)


def test_attack_only_touches_training_graphs_and_chosen_users() -> None:
    graphs = [_graph(80 + 10 * i, 3, i % 2) for i in range(6)]
    train = frozenset({0, 2, 5})
    clean_p = GraphLDPParams()
    attack_p = GraphLDPParams(poison="all-ones", poison_fraction=0.25)
    clean, _ = randomize_graphs("dprr", graphs, 1.0, clean_p, make_rng(11))
    attacked, info = randomize_graphs("dprr", graphs, 1.0, attack_p, make_rng(11),
                                      poison_graphs=train)
    assert info["poisoned_users"] == sum(round(0.25 * g.num_nodes) for i, g in
                                         enumerate(graphs) if i in train)
    for i, (c, a) in enumerate(zip(clean, attacked, strict=True)):
        n = graphs[i].num_nodes
        if i not in train:
            assert a.poisoned.size == 0
            assert np.array_equal(c.reports.user, a.reports.user)
            assert np.array_equal(c.reports.neighbor, a.reports.neighbor)
            continue
        assert a.poisoned.size == round(0.25 * n)
        bad = np.isin(a.reports.user, a.poisoned)
        assert np.all(np.bincount(a.reports.user[bad], minlength=n)[a.poisoned] == n - 1)
        c_bad = np.isin(c.reports.user, a.poisoned)
        assert np.array_equal(c.reports.user[~c_bad], a.reports.user[~bad])
        assert np.array_equal(c.reports.neighbor[~c_bad], a.reports.neighbor[~bad])


def test_defense_removes_all_ones_but_not_random_poison() -> None:
    graphs = [_graph(300, 5, i % 2) for i in range(4)]
    train = frozenset(range(4))
    ones = GraphLDPParams(poison="all-ones", poison_fraction=0.2, defense_theta=0.05)
    rand = GraphLDPParams(poison="random", poison_fraction=0.2, defense_theta=0.05)
    _, info_ones = randomize_graphs("dprr", graphs, 1.0, ones, make_rng(5), poison_graphs=train)
    _, info_rand = randomize_graphs("dprr", graphs, 1.0, rand, make_rng(5), poison_graphs=train)
    assert info_ones["defense_tpr"] == 1.0
    assert info_rand["defense_tpr"] == 0.0
    assert info_ones["defense_fpr"] <= 0.05 and info_rand["defense_fpr"] <= 0.05


def test_params_validation() -> None:
    parse = GraphLDPParams.parse
    with pytest.raises(ConfigError, match="poison_fraction"):
        parse({"poison": "random", "poison_fraction": 0.6}, "dprr")
    with pytest.raises(ConfigError, match="custom"):
        parse({"poison": "custom", "poison_fraction": 0.1}, "dprr")
    with pytest.raises(ConfigError, match="poison="):
        parse({"poison_fraction": 0.1}, "dprr")
    with pytest.raises(ConfigError, match="non_private_fraction"):
        parse({"non_private_fraction": 1.0}, "dprr")
    p = parse({"poison": "custom", "poison_omega1": 0.2, "poison_omega2": 0.7,
               "poison_fraction": 0.1}, "dprr")
    assert p.omegas == (0.2, 0.7)
