"""The declared randomizer-side parameters (``Params.randomizer_params``) against the reports:
for a fixed seed, changing a server-side parameter leaves every user's report byte-identical
(choosing it on validation is post-processing of one collection), changing a declared
randomizer parameter changes them (one collection per value). docs/privacy.md,
"Hyper-parameter selection"."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest

from dpgl.experiments.config import RunConfig
from dpgl.experiments.execute import execute_run
from dpgl.mechanisms.blink import BlinkClient
from dpgl.mechanisms.dprr import DPRR
from dpgl.mechanisms.features import FeatureRandomizer
from dpgl.mechanisms.labels import LabelRR
from dpgl.methods import get_method, list_methods

FAST = {"epochs": 2, "patience": 1}


def _digest(value: Any) -> bytes:
    """Bytes of what a randomizer returned (arrays, tensors, reports), recursively."""
    if isinstance(value, (tuple, list)):
        return b"|".join(_digest(v) for v in value)
    if hasattr(value, "user") and hasattr(value, "neighbor"):   # DirectedReports
        return _digest((value.user, value.neighbor))
    if hasattr(value, "numpy"):                                  # a torch tensor
        value = value.detach().cpu().numpy()
    return np.ascontiguousarray(np.asarray(value)).tobytes()


@pytest.fixture
def reports(monkeypatch: pytest.MonkeyPatch):
    """Run a configuration; return the sha256 of everything the users' randomizers sent."""
    sent: list[bytes] = []
    for cls, name in ((BlinkClient, "simulate_lists"), (DPRR, "simulate_lists"),
                      (FeatureRandomizer, "privatize"), (LabelRR, "randomize")):
        original = getattr(cls, name)

        def record(self, *args, __original=original, **kwargs):
            out = __original(self, *args, **kwargs)
            sent.append(_digest(out))
            return out

        monkeypatch.setattr(cls, name, record)

    def run(method: str, **params: Any) -> str:
        sent.clear()
        execute_run(RunConfig(dataset="csbm", method=method, epsilon=2.0, seed=3,
                              params={**FAST, **params}))
        assert sent, f"{method}: no randomizer output was captured"
        return hashlib.sha256(b"||".join(sent)).hexdigest()

    return run


@pytest.mark.parametrize("method, base, server_side, randomizer_side", [
    ("blink-hard", {"degree_share": 0.1},
     {"lr": 0.05, "dropout": 0.2, "hidden": 8, "train_ratio": 0.3},
     {"degree_share": 0.5}),
    ("dprr", {"degree_share": 0.3, "allocation": "split"},
     {"symmetrize": "or", "weight_decay": 0.0},
     {"degree_share": 0.6}),
    ("dprr", {"degree_share": 0.3, "allocation": "split"},  # Blink's protocol: server side
     {"direction": "reported", "split": "blink-fixed", "select_epoch_by": "val_loss"},
     {"degree_share": 0.6}),
    ("lpgnn", {"label_epsilon": 2.0, "m": 4},
     {"feature_steps": 2, "aggregator": "mean", "label_steps": 2, "forward_correction": False},
     {"m": 8}),
    ("lpgnn", {"label_epsilon": 2.0},
     {"self_loops": True}, {"label_epsilon": 1.0}),
])
def test_declared_randomizer_params_are_those_that_change_the_reports(
        reports, method: str, base: dict[str, Any], server_side: dict[str, Any],
        randomizer_side: dict[str, Any]) -> None:
    declared = get_method(method).params_model("node").randomizer_params
    assert not set(server_side) & declared and set(randomizer_side) <= declared
    reference = reports(method, **base)
    for name, value in server_side.items():
        assert reports(method, **{**base, name: value}) == reference, name
    assert get_method(method).selection_cost("node", server_side) == "post-processing"
    for name, value in randomizer_side.items():
        assert reports(method, **{**base, name: value}) != reference, name
    assert get_method(method).selection_cost("node", randomizer_side) == "collections"


def test_every_declaration_names_parameters() -> None:
    for name in list_methods():
        m = get_method(name)
        for task in m.tasks:
            model = m.params_model(task)
            assert model.randomizer_params <= set(model.model_fields), (name, task)


def test_selection_cost_by_model() -> None:
    assert get_method("none").selection_cost("node", ["lr"]) == "none"
    assert get_method("dpar-em0").selection_cost("node", ["appr_share"]) == "private selection"
    assert get_method("gap-ndp").selection_cost("node", ["lr"]) == "private selection"
    assert get_method("solitude").selection_cost("node", ["feature_epsilon"]) == "collections"
    assert get_method("solitude").selection_cost("node", ["variant"]) == "post-processing"
