"""DPAR's DP-SGD stage under node removal: given the same DP-APPR release, removing node v may
change v's own example and the <= max_other examples whose rows contain v, and nothing else
(the bound the multi-term RDP charge assumes); and the noise follows the public cap."""

import numpy as np
import pytest
import scipy.sparse as sp

from dpgl.methods.dpar import DPARParams, _propagation_matrix


def _examples(pi: sp.csr_matrix, present: np.ndarray) -> dict[int, dict[int, tuple]]:
    """Node i's example as {column: (weight, which feature)}: an absent column's feature is
    the zero row."""
    out = {}
    for i in np.flatnonzero(present):
        row = pi.getrow(i).tocoo()
        out[int(i)] = {int(j): (round(float(w), 12), bool(present[j]))
                       for j, w in zip(row.col, row.data, strict=True) if w != 0}
    return out


def _changed(release: sp.csr_matrix, sources: np.ndarray, present: np.ndarray, v: int,
             p: DPARParams) -> tuple[set[int], set[int]]:
    """(examples other than v's that differ when v is removed, rows that contain v)."""
    n = present.size
    pi = _propagation_matrix(release, sources, n, p, private=True)
    gone = present.copy()
    gone[v] = False
    pi_gone = _propagation_matrix(release, sources, n, p, private=True)
    a, b = _examples(pi, present), _examples(pi_gone, gone)
    changed = {i for i in b if a[i] != b[i]}
    holders = {i for i in a if i != v and v in a[i]}
    return changed, holders


def test_removing_a_source_does_not_readmit_other_rows_entries():
    # 4 ids, sources {0, 1} both releasing column 2, cap 1: row 0 holds the one slot of
    # column 2. Capping over the present rows alone gave row 1 that slot once 0 is removed.
    release = sp.csr_matrix(np.array([[0, 0, .5, 0], [0, 0, .5, 0]]))
    p = DPARParams(max_other=1, tau=10.0)
    changed, holders = _changed(release, np.array([0, 1]), np.ones(4, bool), 0, p)
    assert holders == set()
    assert changed == set()


def test_removing_a_source_does_not_rescale_other_rows():
    # column 2 is clipped by its l1 norm: with row 0 gone from the norm, row 1 and the
    # identity row of 2 would be scaled differently.
    release = sp.csr_matrix(np.array([[0, 0, .8, 0], [0, 0, .8, 0]]))
    p = DPARParams(max_other=2, tau=1.0)
    changed, _ = _changed(release, np.array([0, 1]), np.ones(4, bool), 0, p)
    assert changed == set()


@pytest.mark.parametrize("seed", range(30))
def test_one_node_changes_at_most_max_other_other_examples(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 14))
    m = int(rng.integers(1, n))
    k = int(rng.integers(1, 4))
    sources = np.sort(rng.choice(n, size=m, replace=False))
    release = sp.lil_matrix((m, n))
    for r in range(m):
        release[r, rng.choice(n, size=k, replace=False)] = rng.uniform(0.05, 1.0, size=k)
    present = rng.random(n) < 0.8
    p = DPARParams(max_other=int(rng.integers(0, 3)), tau=float(rng.choice([0.5, 1.0, 5.0])),
                   column_mode=str(rng.choice(["clip", "normalize"])))
    for v in np.flatnonzero(present):
        changed, holders = _changed(sp.csr_matrix(release), sources, present, int(v), p)
        assert changed <= holders, (v, changed, holders)
        assert len(holders) <= p.max_other


def test_sgd_noise_follows_the_public_cap_not_the_measured_occurrences():
    from dpgl.experiments.config import RunConfig
    from dpgl.experiments.execute import execute_run

    def run(cap):
        return execute_run(RunConfig(
            dataset="csbm", method="dpar-em0", model="mlp", epsilon=4.0, seed=3,
            params={"epochs": 2, "batch_size": 100, "subsample": 0.5, "num_sources": 20,
                    "max_other": cap}))

    lo, hi = run(8), run(40)
    # the caps do not bind on this graph: Pi is the same, only the public cap differs
    assert lo.info["max_other_occurrences"] == hi.info["max_other_occurrences"] < 8
    assert hi.info["noise_multiplier"] > lo.info["noise_multiplier"] * 1.2
