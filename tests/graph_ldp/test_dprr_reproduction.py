"""The DPRR reproduction's grids (no training)."""

from __future__ import annotations

import pytest

from dpgl.experiments.reproductions import dprr


@pytest.fixture(autouse=True)
def _n_max(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = {"imdb-binary": 136, "reddit-binary": 3782, "imdb-multi": 89}
    monkeypatch.setattr(dprr, "_n_max", lambda ds: sizes[ds])


def test_fig4_shares_runs_with_fig10_and_fig5() -> None:
    f4 = {c.key() for c in dprr.fig4_configs("reddit-binary", True, [0.0, 0.2])}
    f10 = dprr.fig10_configs("reddit-binary", True, [0.0, 0.5])
    shared = [c for c in f10 if c.key() in f4]
    assert len(shared) == 1 and "defense_theta" not in shared[0].params
    assert len(f10) == 6  # 2 baselines (with / without defense) + 2 attacks x 2
    defended = dprr.fig10_configs("reddit-binary", True, [0.0, 0.5], thetas=(0.05,),
                                  attacks=("all-ones",))
    assert len(defended) == 2 and all("defense_theta" in c.params for c in defended)
    assert not any(c.method == "rr" for c in dprr.fig4_configs("reddit-binary", True))
    assert any(c.method == "rr" for c in dprr.fig4_configs("imdb-binary", True))


def test_fig5_skips_undefined_eq8_points() -> None:
    cfgs = dprr.fig5_configs("imdb-binary", True)
    dprr_eps = sorted({c.epsilon for c in cfgs if c.method == "dprr"})
    assert dprr_eps == [0.5, 2.0]  # sqrt(8 / 135) = 0.243 >= 0.2; eps = 1 is in Fig. 4
    assert sorted({c.epsilon for c in cfgs if c.method == "rr"}) == [0.2, 0.5, 2.0]


def test_fig6_eq8_only_where_it_differs() -> None:
    cfgs = dprr.fig6_configs("reddit-binary", True)
    eq8 = sorted(c.params["alpha"] for c in cfgs if c.params["allocation"] == "eq8")
    assert eq8 == [0.8, 0.9]  # sqrt(8 / 3781) = 0.046 > (1 - alpha) 0.2 only there
    assert len([c for c in cfgs if c.params["allocation"] == "split"]) == 5


def test_extra_seeds_reuse_the_seed_0_runs_and_the_report_reads_only_the_plan() -> None:
    one = {c.key() for c in dprr.fig4_configs("reddit-binary", True, [0.0, 0.2])}
    three = dprr.fig4_configs("reddit-binary", True, [0.0, 0.2], seeds=3)
    assert {c.seed for c in three} == {0, 1, 2}
    assert {c.key() for c in three if c.seed == 0} == one
    plan_keys = {c.key() for _, cs in dprr.quick_plan(True) for c in cs}
    assert {c.key() for c in three} <= plan_keys
    # an earlier protocol's run (15 epochs) is not part of the plan, so not reported
    old = dprr._grid("dprr-fig4", "reddit-binary", [{"name": "nonpriv-full"}], [1.0], 1,
                     {**dprr.QUICK_ARCH, "epochs": 15, "patience": 5})
    assert old[0].key() not in plan_keys
    assert {c.key() for _, cs in dprr.quick_plan(True, "imdb") for c in cs}.isdisjoint(
        {c.key() for _, cs in dprr.quick_plan(True, "reddit") for c in cs})
