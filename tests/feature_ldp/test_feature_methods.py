"""The registered methods end to end on the synthetic graph: privacy accounting, determinism."""

import functools
import math
from dataclasses import dataclass
from typing import Any

import pytest

from dpgl.datasets import load_dataset
from dpgl.errors import ConfigError
from dpgl.experiments.config import RunConfig
from dpgl.experiments.execute import validate_config
from dpgl.methods import get_method, list_methods
from dpgl.methods.base import RunContext
from dpgl.privacy import Accountant
from dpgl.rng import make_rng

FAST = {"epochs": 8, "patience": None}


@functools.lru_cache(maxsize=1)
def _small_graph() -> Any:
    return load_dataset("csbm", num_nodes=300, num_classes=3, avg_degree=4.0,
                        num_features=16)


@dataclass
class _Result:
    metrics: dict[str, float]
    info: dict[str, Any]
    privacy: dict[str, Any]


def _run(method: str, epsilon: float | None = None, **params: object) -> _Result:
    """One run of ``method`` on a 300-node CSBM graph (execute_run's steps, small data)."""
    m = get_method(method)
    p = m.params_model("node").parse({**FAST, **params}, method)
    acc = Accountant()
    ctx = RunContext("node", _small_graph(), "gcn", p, epsilon, 0, make_rng(0), acc)
    with acc.active():  # the randomizers charge the active accountant when they draw
        out = m.fit(ctx)
    return _Result(out.metrics, out.info, acc.report().to_dict())


def _eps(report: dict, unit: str) -> float:
    e = report["totals"][unit]["epsilon"]
    return math.inf if e is None else float(e)


def test_methods_are_registered() -> None:
    names = set(list_methods("node"))
    assert {"lpgnn", "solitude", "solitude-link", "gcn-raw", "gcn-rnd", "gcn-ohd"} <= names


def test_lpgnn_accounting_and_determinism() -> None:
    a = _run("lpgnn", 1.0, feature_steps=2)
    b = _run("lpgnn", 1.0, feature_steps=2)
    assert a.metrics == b.metrics
    rep = a.privacy
    assert _eps(rep, "feature-LDP") == 1.0
    assert math.isinf(_eps(rep, "edge-LDP"))      # the server knows the graph
    assert math.isinf(_eps(rep, "label-LDP"))     # labels used as is by default
    private_labels = _run("lpgnn", 1.0, feature_steps=2, label_epsilon=2.0, label_steps=2)
    assert _eps(private_labels.privacy, "label-LDP") == 2.0
    assert private_labels.metrics != a.metrics
    gauss = _run("lpgnn", 1.0, feature_steps=2, feature_mechanism="gaussian")
    assert gauss.privacy["totals"]["feature-LDP"]["delta"] == pytest.approx(1e-4)


def test_solitude_per_user_total_is_the_sum() -> None:
    res = _run("solitude", 4.0, feature_epsilon=1.0, label_epsilon=0.5, label_steps=1)
    rep = res.privacy
    assert _eps(rep, "edge-LDP") == 4.0
    assert _eps(rep, "feature-LDP") == 1.0
    assert _eps(rep, "label-LDP") == 0.5
    assert rep["per_user"]["epsilon"] == pytest.approx(5.5)
    assert res.info["per_user_edge_feature_epsilon"] == pytest.approx(5.0)
    nolabel = _run("solitude", 4.0, variant="base")
    assert nolabel.privacy["per_user"]["epsilon"] is None  # labels not protected: say so
    assert nolabel.info["kept_edges"] == nolabel.info["noisy_edges"]


def test_solitude_link_uses_only_the_edge_part() -> None:
    res = _run("solitude-link", 6.0)
    rep = res.privacy
    assert _eps(rep, "edge-LDP") == 6.0
    assert math.isinf(_eps(rep, "feature-LDP"))
    assert res.info["kept_edges"] <= res.info["candidate_edges"] <= 2 * res.info["noisy_edges"]
    assert 0.0 <= res.metrics["test_accuracy"] <= 1.0


@pytest.mark.slow
def test_feature_baselines() -> None:
    raw = _run("gcn-raw", epochs=60)
    rnd = _run("gcn-rnd", epochs=60)
    ohd = _run("gcn-ohd", max_degree=8)
    assert ohd.info["feature_dim"] == 9
    assert raw.metrics["test_accuracy"] > rnd.metrics["test_accuracy"]
    assert "feature-LDP" not in rnd.privacy["totals"]  # features never read
    assert math.isinf(_eps(raw.privacy, "feature-LDP"))


def test_feature_baselines_with_private_labels() -> None:
    """LPGNN's eps_x = infinity rows and fully private baselines (CCS version): the labels
    through k-RR, trained as lpgnn trains on reported labels; unset, the labels as is."""
    clean = _run("gcn-raw")
    assert math.isinf(_eps(clean.privacy, "label-LDP"))
    noisy = _run("gcn-raw", label_epsilon=1.0, label_steps=2)
    assert _eps(noisy.privacy, "label-LDP") == 1.0
    assert math.isinf(_eps(noisy.privacy, "feature-LDP"))  # raw features: said so
    assert noisy.metrics != clean.metrics
    assert _run("gcn-raw", label_epsilon=1.0, label_steps=2).metrics == noisy.metrics
    ce = _run("gcn-raw", label_epsilon=1.0, label_denoise="none")
    assert ce.metrics != noisy.metrics
    rnd = _run("gcn-rnd", label_epsilon=2.0, label_steps=1)
    assert _eps(rnd.privacy, "label-LDP") == 2.0
    assert "feature-LDP" not in rnd.privacy["totals"]  # features never read
    with pytest.raises(ConfigError, match="full batch"):
        _run("gcn-raw", label_epsilon=1.0, label_steps=2, batch_size=64)


def test_bad_parameters_are_one_line_errors() -> None:
    with pytest.raises(ConfigError, match="feature_mechanism"):
        validate_config(RunConfig(dataset="csbm", method="lpgnn", epsilon=1.0,
                                  params={"feature_mechanism": "nope"}))
    with pytest.raises(ConfigError, match="epsilon"):
        validate_config(RunConfig(dataset="csbm", method="solitude"))


def test_noise_capped_selection_caps_at_the_krr_keep_probability(monkeypatch) -> None:
    """``select_epoch_by: lpgnn-noise-capped`` (the LPGNN authors' rule) caps at k-RR's keep
    probability e^eps_y / (e^eps_y + k - 1): public, from eps_y and the number of classes
    (3 on the small graph); 1 with labels as is. Refused where it does not apply."""
    import dpgl.train.node as node
    seen: list[tuple[float, bool]] = []
    rule = node.noise_capped_better

    def spy(score, best, keep):
        seen.append((keep, best is None))
        return rule(score, best, keep)

    monkeypatch.setattr(node, "noise_capped_better", spy)
    capped = {"select_epoch_by": "lpgnn-noise-capped"}
    for method, eps, extra in (("lpgnn", 1.0, {"feature_steps": 2}), ("gcn-rnd", None, {}),
                               ("gcn-raw", None, {"label_denoise": "none"})):
        for eps_y in (0.5, 2.0):
            seen.clear()
            res = _run(method, eps, label_epsilon=eps_y, label_steps=0, **capped, **extra)
            keep = math.exp(eps_y) / (math.exp(eps_y) + 3 - 1)
            assert len(seen) == FAST["epochs"] and seen[0][1]  # every epoch; the first kept
            assert [k for k, _ in seen] == pytest.approx([keep] * len(seen))
            assert 1 <= res.info["best_epoch"] <= FAST["epochs"]
    seen.clear()
    _run("gcn-raw", **capped)  # labels as is: nothing to cap
    assert {k for k, _ in seen} == {1.0}
    # the default rule is unchanged (the same metrics as before the option existed)
    assert _run("gcn-raw", label_epsilon=1.0, label_steps=2).metrics == \
        _run("gcn-raw", label_epsilon=1.0, label_steps=2, select_epoch_by="val_accuracy").metrics
    with pytest.raises(ConfigError, match="only lpgnn, gcn-raw"):
        _run("none", **capped)  # the non-private GNN
    with pytest.raises(ConfigError, match="batch_size"):
        _run("gcn-raw", batch_size=64, **capped)


def test_label_rr_keep_probability_is_krr_s() -> None:
    import torch

    from dpgl.mechanisms.labels import LabelRR
    from dpgl.methods.lpgnn import reported_labels
    mech = LabelRR(1.0, 7)
    assert mech.keep_probability == pytest.approx(math.e / (math.e + 6))
    assert float(mech.transition_matrix()[0, 0]) == pytest.approx(mech.keep_probability)
    y = torch.zeros(20_000, dtype=torch.long)
    with Accountant().active():
        kept = float((mech.randomize(y, make_rng(0)) == 0).float().mean())
    assert kept == pytest.approx(mech.keep_probability, abs=0.01)
    rep = reported_labels(y, mech, None)
    assert rep is not None and rep.keep_probability == mech.keep_probability
    assert rep.transition is None  # cross-entropy: plain validation loss
    assert reported_labels(None, None, None) is None
