"""One run end to end on the built-in synthetic graph (no files needed)."""

import math

import pytest

from dpgl.errors import ConfigError
from dpgl.experiments.config import RunConfig
from dpgl.experiments.execute import execute_run, validate_config

FAST = {"epochs": 40, "patience": 20}


def _cfg(**kw) -> RunConfig:
    base = {"dataset": "csbm", "method": "none", "model": "gcn", "seed": 0, "params": FAST}
    base.update(kw)
    return RunConfig(**base)


def test_gcn_beats_mlp_on_csbm_and_runs_are_deterministic() -> None:
    gcn = execute_run(_cfg())
    again = execute_run(_cfg())
    mlp = execute_run(_cfg(method="mlp"))
    assert gcn.metrics == again.metrics
    assert gcn.metrics["test_accuracy"] > mlp.metrics["test_accuracy"] + 0.05
    assert 0.0 <= mlp.metrics["test_accuracy"] <= 1.0
    other_seed = execute_run(_cfg(seed=1))
    assert other_seed.metrics != gcn.metrics


def test_privacy_report_says_nothing_is_protected_for_the_non_private_baseline() -> None:
    res = execute_run(_cfg())
    report = res.privacy
    text = str(report).lower()
    assert "edge-ldp" in text and "feature-ldp" in text
    totals = report["totals"]
    assert all(t["epsilon"] is None or math.isinf(float(t["epsilon"])) for t in totals.values())


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"method": "nope"}, "unknown method 'nope'"),
        ({"dataset": "coraa"}, "unknown dataset 'coraa'"),
        ({"model": "gcnn"}, "unknown model 'gcnn'"),
        ({"epsilon": 1.0}, "non-private: it takes no epsilon"),
        ({"params": {"lrr": 1}}, "no parameter 'lrr'"),
        ({"task": "graph"}, "node-classification dataset"),
    ],
)
def test_bad_configs_fail_before_running(kw: dict, msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        validate_config(_cfg(**kw))
