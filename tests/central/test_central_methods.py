"""End-to-end runs of the node-level DP methods on the small synthetic graph (csbm): the
privacy report, the paper-vs-verified accounting and determinism."""

import math

import pytest

from dpgl.errors import ConfigError
from dpgl.experiments.config import RunConfig
from dpgl.experiments.execute import execute_run
from dpgl.methods import get_method, list_methods

FAST = {"epochs": 2, "batch_size": 100}


def _run(method, eps=None, **params):
    return execute_run(RunConfig(dataset="csbm", method=method, model="mlp", epsilon=eps,
                                 seed=3, params={**FAST, **params}))


def _total(r):
    return r.privacy["totals"]["node-DP"]


def test_registered_names():
    names = set(list_methods("node"))
    for n in ("dpar-em0", "dpar-em1", "dpar-gm", "dpar-nonprivate", "features-dpsgd",
              "features-nonprivate", "gap-ndp", "gap-nonprivate", "sage-ndp",
              "sage-nonprivate"):
        assert n in names
        assert get_method(n).private == (not n.endswith("nonprivate"))


@pytest.mark.parametrize("method", ["dpar-em0",
                                    pytest.param("dpar-em1", marks=pytest.mark.slow),
                                    pytest.param("dpar-gm", marks=pytest.mark.slow)])
def test_dpar_verified_accounting_meets_target(method):
    r = _run(method, 4.0, subsample=0.5, num_sources=20)
    tot = _total(r)
    assert tot["epsilon"] <= 4.0 + 1e-6
    assert tot["epsilon"] > 3.5                   # calibrated, not wasteful
    assert tot["delta"] <= 1e-4 + 1e-12
    assert 0.0 <= r.metrics["test_accuracy"] <= 1.0
    assert r.info["max_other_occurrences"] <= 2


def test_dpar_appr_only_run_spends_the_whole_budget_on_appr_and_says_training_is_not_private():
    r = _run("dpar-em0", 2.0, subsample=0.5, num_sources=20, sgd="nonprivate")
    assert r.info["noise_multiplier"] is None
    assert r.privacy["summary"].endswith("Not protected: features and labels (used as is).")
    assert _total(r)["epsilon"] is None               # the model as a whole is not private
    appr = [e for e in r.privacy["entries"] if e["kind"] != "nonprivate"]
    assert len(appr) == 1 and "DP-APPR-EM" in appr[0]["details"]
    assert 1.9 < appr[0]["epsilon"] <= 2.0 + 1e-6      # the DP-APPR release spends the whole eps
    assert "DP-SGD" not in appr[0]["details"]
    # the DP-APPR part gets the whole eps: a larger per-vector budget than with DP-SGD on
    dp = _run("dpar-em0", 2.0, subsample=0.5, num_sources=20)
    assert r.info["appr_vector_epsilon"] > 2.5 * dp.info["appr_vector_epsilon"]
    assert "DP-SGD" in dp.privacy["entries"][0]["details"]


def test_dpar_appr_selection_recall_grows_with_the_budget():
    """The recall of the true top-K among the released indices is an evaluation-only
    diagnostic (computed from the true APPR): near chance at a tiny budget, near 1 with an
    enormous one (C2 large enough not to tie the scores). It is stored apart from info."""
    lo = _run("dpar-em0", 0.1, subsample=0.5, num_sources=20, sgd="nonprivate", clip_em=1.0)
    hi = _run("dpar-em0", 50000.0, subsample=0.5, num_sources=20, sgd="nonprivate",
              clip_em=1.0)
    assert 0.0 <= lo.diagnostics["appr_topk_recall"] < 0.3
    assert hi.diagnostics["appr_topk_recall"] > 0.95
    assert "appr_topk_recall" not in hi.info


@pytest.mark.slow
def test_dpar_paper_accounting_reports_the_verified_epsilon():
    """accounting='paper' takes paper_epsilon, not --epsilon; the report records what the
    noise really spends (far more than the paper's figure)."""
    r = _run("dpar-em0", None, subsample=0.5, num_sources=20, accounting="paper",
             paper_epsilon=1.0)
    assert r.info["paper_epsilon"] == pytest.approx(1.0, rel=1e-4)
    assert _total(r)["epsilon"] > 1.0
    with pytest.raises(ConfigError, match="takes no epsilon"):
        _run("dpar-em0", 1.0, accounting="paper", paper_epsilon=1.0)


@pytest.mark.slow
def test_dpar_is_deterministic_and_nonprivate_says_so():
    a = _run("dpar-em0", 2.0, subsample=0.5, num_sources=10)
    b = _run("dpar-em0", 2.0, subsample=0.5, num_sources=10)
    assert a.metrics == b.metrics
    n = _run("dpar-nonprivate", None, subsample=0.5, num_sources=10)
    assert _total(n)["epsilon"] is None and "Nothing is protected" in n.privacy["summary"]


def test_gap_and_sage_state_bounded_degree_node_dp_and_refuse_a_graph_above_the_bound():
    g = _run("gap-ndp", 2.0, encoder_epochs=1, epochs=1, batch_size=200, max_degree=20)
    tot = g.privacy["totals"]["bounded-degree node-DP"]
    assert 1.9 < tot["epsilon"] <= 2.0 + 1e-6
    assert [e["name"] for e in g.privacy["entries"]] == [
        "encoder DP-SGD", "aggregation perturbation",
        "classifier DP-SGD (on released aggregates)"]
    assert "node-DP" not in g.privacy["totals"]
    with pytest.raises(ConfigError, match="above max_degree=5"):
        _run("gap-ndp", 2.0, encoder_epochs=1, epochs=1, max_degree=5)
    with pytest.raises(ConfigError, match="above max_degree=5"):
        _run("sage-ndp", 2.0, epochs=1, max_degree=5)


@pytest.mark.slow
def test_baselines_meet_their_targets():
    s = _run("sage-ndp", 8.0, epochs=1, max_degree=20)
    assert 7.9 < s.privacy["totals"]["bounded-degree node-DP"]["epsilon"] <= 8.0 + 1e-6
    f = _run("features-dpsgd", 2.0, subsample=0.5)
    assert 1.9 < _total(f)["epsilon"] <= 2.0 + 1e-6
    assert not math.isinf(_total(f)["epsilon"])
