"""Finding 3 of issue #11: DPAR's private top-K must not be able to name an added node with
probability zero without it. DP-APPR now scores every id of the public universe (absent ids
score 0; an absent source's row is all zeros), so the exact probability of every output,
including the ones that contain the added node, changes by at most e^eps. Sources come from
the public universe and DP-SGD's sampling rate and step count from its public size."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from dpgl.central.dp_appr import DPAPPRExponential
from dpgl.methods.dpar import DPARParams, _appr, _setup
from dpgl.privacy import Accountant, GumbelTopK, Unit


def _graph(with_v: bool) -> tuple[Data, np.ndarray]:
    """A 6-id universe; node 5 (v) is connected to 0 and 1 when present."""
    edges = [(0, 1), (1, 2), (2, 3), (3, 4), (0, 2)]
    if with_v:
        edges += [(5, 0), (5, 1)]
    ids = np.arange(6) if with_v else np.arange(5)
    u = [a for a, b in edges] + [b for a, b in edges]
    w = [b for a, b in edges] + [a for a, b in edges]
    data = Data(x=torch.zeros(len(ids), 2), edge_index=torch.tensor([u, w]),
                num_nodes=len(ids))
    return data, ids


def _scores(with_v: bool, p: DPARParams, sources: np.ndarray) -> np.ndarray:
    data, ids = _graph(with_v)
    appr = _appr(data, ids, 6, sources, p)
    assert appr.shape == (sources.size, 6)                  # one column per universe id
    return np.minimum(appr.toarray(), p.clip_em)


def test_every_output_has_the_same_support_with_and_without_the_node() -> None:
    p = DPARParams(k=2, clip_em=1e-1, rho=0.0, ista_tol=1e-6)
    sources = np.array([0, 3, 5])                            # 5 = v: absent in one world
    s_with, s_without = _scores(True, p, sources), _scores(False, p, sources)
    assert np.all(s_without[2] == 0)                         # an absent source scores 0
    assert np.all(s_without[:, 5] == 0) and s_with[0, 5] > 0  # v scores 0 when absent
    eps = 1.0
    mech = DPAPPRExponential(p.k, eps, clip=p.clip_em)
    topk: GumbelTopK = mech.selector
    worst = 0.0
    for r in range(sources.size):
        sel, lp_with = topk.output_distribution(s_with[r])
        _, lp_without = topk.output_distribution(s_without[r])
        assert np.all(np.isfinite(lp_with)) and np.all(np.isfinite(lp_without))
        names_v = np.any(sel == 5, axis=1)
        assert names_v.any() and np.all(np.exp(lp_without[names_v]) > 0)
        worst = max(worst, float(np.max(np.abs(lp_with - lp_without))))
    assert worst <= eps + 1e-9


def test_the_old_present_only_selection_has_an_unbounded_loss() -> None:
    """Negative control (the code before the fix): the candidates were the present nodes,
    so an output naming v had probability > 0 with v and exactly 0 without it."""
    p = DPARParams(k=2, clip_em=1e-1, rho=0.0, ista_tol=1e-6)
    s_with = _scores(True, p, np.array([0]))[0]
    topk = DPAPPRExponential(p.k, 1.0, clip=p.clip_em).selector
    sel, lp = topk.output_distribution(s_with)
    sel_old, lp_old = topk.output_distribution(s_with[:5])   # v not a candidate
    p_v_with = float(np.exp(lp[np.any(sel == 5, axis=1)]).sum())
    p_v_without = float(np.exp(lp_old[np.any(sel_old == 5, axis=1)]).sum()) if sel_old.size \
        else 0.0
    assert p_v_with > 0 and p_v_without == 0.0       # log ratio: infinite


def test_sources_and_dpsgd_rates_come_from_the_public_universe() -> None:
    p = DPARParams(num_sources=3, subsample=0.5, batch_size=10, epochs=2)
    a = _setup(40, p, np.random.default_rng(7))
    b = _setup(40, p, np.random.default_rng(7))
    assert np.array_equal(a.sources, b.sources) and a.sources.max() < 40
    assert a.n_public == 20 and a.q == pytest.approx(10 / 20) and a.steps == 2 * 2
    # the charge of the release covers every source row, present or not
    acc = Accountant(delta=1e-5)
    with acc.active():
        DPAPPRExponential(2, 1.0, clip=0.1, delta_slack=1e-6).release(
            sp.csr_matrix(np.zeros((3, 6))), np.random.default_rng(0))
    entry = acc.report().entries[0]
    assert entry.count == 3 and entry.unit is Unit.NODE_DP
