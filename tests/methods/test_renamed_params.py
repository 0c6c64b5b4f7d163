"""Issue #12, finding 3: one name per idea (docs/glossary.md). Old parameter names still work
for one release, with a DpglDeprecationWarning, and give the same run (same key, same
numbers) as the current names."""

from __future__ import annotations

import json
import sqlite3

import pytest

from dpgl.errors import ConfigError, DpglDeprecationWarning
from dpgl.experiments.config import RunConfig, RunResult
from dpgl.experiments.store import SCHEMA_VERSION, RunStore
from dpgl.methods.dpar import DPARParams
from dpgl.methods.edge_ldp import DPRRParams
from dpgl.methods.graph_ldp import GraphLDPParams
from dpgl.methods.lpgnn import LpgnnParams
from dpgl.transforms import DPRRTransform, LocalLapTransform

RENAMES = [  # (params model, old name, old value, new name, new value)
    (DPRRParams, "alpha", 0.8, "degree_share", pytest.approx(0.2)),
    (GraphLDPParams, "alpha", 0.75, "degree_share", 0.25),
    (GraphLDPParams, "degree_fraction", 0.3, "degree_share", 0.3),
    (LpgnnParams, "steps", 8, "feature_steps", 8),
    (LpgnnParams, "gaussian_delta", 1e-5, "delta", 1e-5),
    (DPARParams, "alpha", 0.15, "teleport", 0.15),
]


@pytest.mark.parametrize(("model", "old", "value", "new", "expected"), RENAMES)
def test_old_name_works_with_a_warning(model, old, value, new, expected) -> None:
    with pytest.warns(DpglDeprecationWarning, match=f"'{old}' is now called '{new}'"):
        p = model.parse({old: value}, "m")
    assert getattr(p, new) == expected
    assert not hasattr(p, old) or old in type(p).model_fields  # the old name is not a field
    with pytest.warns(DpglDeprecationWarning):
        assert getattr(model(**{old: value}), new) == expected


@pytest.mark.parametrize(("model", "old", "value", "new", "expected"), RENAMES)
def test_old_and_new_name_together_is_an_error(model, old, value, new, expected) -> None:
    with pytest.raises(ConfigError, match=f"'{old}' is the old name of '{new}'"):
        model.parse({old: value, new: value}, "m")


def test_unknown_names_are_still_refused() -> None:
    with pytest.raises(ConfigError, match="has no parameter 'stepz'"):
        LpgnnParams.parse({"stepz": 2}, "lpgnn")


def test_run_key_does_not_depend_on_the_name_used() -> None:
    new = RunConfig(dataset="cora", method="lpgnn", epsilon=1.0, params={"feature_steps": 2})
    with pytest.warns(DpglDeprecationWarning):
        old = RunConfig(dataset="cora", method="lpgnn", epsilon=1.0, params={"steps": 2})
    assert old.params == {"feature_steps": 2}
    assert old.key() == new.key() and old.hparam_key() == new.hparam_key()
    # the same name means different things for different methods: only the method's own
    # renames apply (DPAR's alpha is the PPR teleport, DPRR's the RR share)
    with pytest.warns(DpglDeprecationWarning):
        dpar = RunConfig(dataset="cora", method="dpar-em0", model="mlp", epsilon=1.0,
                         params={"alpha": 0.2})
    assert dpar.params == {"teleport": 0.2}


def test_default_dprr_split_is_bit_identical() -> None:
    # 1 - 0.1 == 0.9 exactly: the default degree share gives the paper's alpha = 0.9
    assert DPRRTransform(1.0, seed=0).mechanism.alpha == 0.9
    with pytest.warns(DpglDeprecationWarning):
        old = DPRRTransform(1.0, alpha=0.9, nonprivate_fraction=0.2, seed=0)
    assert old.mechanism.alpha == 0.9 and old.non_private_fraction == 0.2
    with pytest.warns(DpglDeprecationWarning):
        lap = LocalLapTransform(1.0, degree_fraction=0.3, seed=0)
    assert lap.mechanism.degree_share == 0.3
    assert "degree_share=0.1" in repr(DPRRTransform(1.0, seed=0))


def test_store_renames_old_names_once(tmp_path) -> None:
    """A version-2 store whose configurations use an old name: opening it renames the name,
    recomputes the key (the one the current name gives) and keeps the results."""
    path = tmp_path / "runs.sqlite"
    config = RunConfig(dataset="cora", method="lpgnn", epsilon=1.0, params={"feature_steps": 3})
    with RunStore(path) as store:
        store.put(config, RunResult(metrics={"test_accuracy": 0.5}, privacy={}, timing={},
                                    info={}))
    old_config = json.loads(config.to_json())
    old_config["params"] = {"steps": 3}
    old_key = "0" * 64
    conn = sqlite3.connect(path)
    conn.execute("UPDATE runs SET key = ?, config_json = ?", (old_key,
                                                              json.dumps(old_config)))
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    with RunStore(path) as store:
        df = store.to_frame()
        assert list(df["key"]) == [config.key()]
        row = store.get(config.key())
        assert row is not None and row["metrics"] == {"test_accuracy": 0.5}
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
    assert json.loads(conn.execute("SELECT config_json FROM runs").fetchone()[0])["params"] \
        == {"feature_steps": 3}
    conn.close()
