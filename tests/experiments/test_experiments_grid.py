"""Grid YAML parsing, validation and expansion."""

from __future__ import annotations

import sys
import textwrap
import types
from pathlib import Path

import pytest

from dpgl.errors import ConfigError, unknown_name
from dpgl.experiments.grid import GridSpec, load_grid

EXAMPLE = """
name: blink-quick
task: node
datasets: [cora, citeseer]
models: [gcn]
seeds: 3
epsilons: [1, 4, 8]
methods:
  - none
  - name: blink-hard
    params: {degree_share: [0.1, 0.5, 0.9]}
params:
  lr: [0.01, 5e-3]
  dropout: 0.5
selection: {metric: val_accuracy, report: [test_accuracy, test_f1], mode: max}
"""

PRIVATE = {"blink-hard", "rr", "priv"}


def is_private(method: str) -> bool:
    return method in PRIVATE


def write(tmp_path: Path, text: str, name: str = "grid.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_load_and_expand_counts(tmp_path):
    grid = load_grid(write(tmp_path, EXAMPLE))
    assert grid.name == "blink-quick"
    assert grid.seeds == [0, 1, 2]
    assert grid.epsilons == [1.0, 4.0, 8.0]
    assert grid.params == {"lr": [0.01, 0.005], "dropout": 0.5}  # 5e-3 read as a float
    assert grid.selection.report == ["test_accuracy", "test_f1"]
    runs = grid.expand(is_private)
    # none: 2 datasets x 2 lr x 3 seeds (no epsilon axis); blink: 2 x 3 eps x 3 share x 2 lr x 3
    assert len(runs) == 2 * 2 * 3 + 2 * 3 * 3 * 2 * 3 == 120
    assert len({r.key() for r in runs}) == 120
    nonpriv = [r for r in runs if r.method == "none"]
    assert {r.epsilon for r in nonpriv} == {None}
    assert all("degree_share" not in r.params for r in nonpriv)
    priv = [r for r in runs if r.method == "blink-hard"]
    assert {r.epsilon for r in priv} == {1.0, 4.0, 8.0}
    assert {r.params["degree_share"] for r in priv} == {0.1, 0.5, 0.9}
    assert all(r.params["dropout"] == 0.5 for r in runs)


def test_expansion_order_is_deterministic(tmp_path):
    grid = load_grid(write(tmp_path, EXAMPLE))
    a = [r.key() for r in grid.expand(is_private)]
    b = [r.key() for r in load_grid(write(tmp_path, EXAMPLE, "copy.yaml")).expand(is_private)]
    assert a == b
    runs = grid.expand(is_private)
    # documented order: dataset, model, method, epsilon, params (sorted names), seed
    head = [(r.dataset, r.method, r.epsilon, r.params["lr"], r.seed) for r in runs[:7]]
    assert head == [
        ("cora", "none", None, 0.01, 0), ("cora", "none", None, 0.01, 1),
        ("cora", "none", None, 0.01, 2), ("cora", "none", None, 0.005, 0),
        ("cora", "none", None, 0.005, 1), ("cora", "none", None, 0.005, 2),
        ("cora", "blink-hard", 1.0, 0.01, 0),
    ]
    assert runs[6].params == {"degree_share": 0.1, "dropout": 0.5, "lr": 0.01}
    assert runs[-1].dataset == "citeseer" and runs[-1].epsilon == 8.0
    assert runs[-1].params["degree_share"] == 0.9 and runs[-1].seed == 2


def test_method_params_override_and_method_epsilons():
    grid = GridSpec.from_dict({
        "name": "g", "datasets": "cora", "seeds": [5, 7], "epsilons": [1, 2, 3],
        "params": {"lr": [0.1, 0.2], "hidden": 16},
        "methods": [{"name": "rr", "params": {"lr": 0.05}, "epsilons": 8},
                    {"name": "priv"}],
    })
    runs = grid.expand(is_private)
    rr = [r for r in runs if r.method == "rr"]
    assert [(r.epsilon, r.params, r.seed) for r in rr] == [
        (8.0, {"hidden": 16, "lr": 0.05}, 5), (8.0, {"hidden": 16, "lr": 0.05}, 7)]
    assert len([r for r in runs if r.method == "priv"]) == 3 * 2 * 2
    assert all(r.model == "gcn" and r.task == "node" for r in runs)


def test_list_valued_parameter_is_wrapped_once():
    grid = GridSpec.from_dict({"name": "g", "datasets": ["d"], "seeds": 1, "methods": ["none"],
                               "params": {"dims": [[64, 64]], "act": ["relu", "elu"]}})
    runs = grid.expand(is_private)
    assert [r.params for r in runs] == [{"act": "relu", "dims": [64, 64]},
                                        {"act": "elu", "dims": [64, 64]}]


def test_duplicate_configurations_are_kept_once():
    grid = GridSpec.from_dict({"name": "g", "datasets": ["d"], "seeds": 2,
                               "methods": ["none", {"name": "none", "params": {}}]})
    assert len(grid.expand(is_private)) == 2


def test_private_method_without_epsilons():
    grid = GridSpec.from_dict({"name": "g", "datasets": ["d"], "seeds": 1, "methods": ["rr"]},
                              source="g.yaml")
    with pytest.raises(ConfigError, match=r"^g.yaml: methods\[0\]: method 'rr' is private and "
                                          r"needs epsilons"):
        grid.expand(is_private)


def test_nonprivate_method_with_own_epsilons():
    grid = GridSpec.from_dict({"name": "g", "datasets": ["d"], "seeds": 1,
                               "methods": [{"name": "none", "epsilons": [1]}]}, source="g.yaml")
    with pytest.raises(ConfigError, match="'none' is not private and takes no epsilon"):
        grid.expand(is_private)


BASE = "datasets: [cora]\nmethods: [none]\nseeds: 1\n"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("datasets: [cora\nmethods: [none]\n", "invalid YAML at line 2, column 8"),
        ("datasets: [a]\ndatasets: [b]\n", "duplicate key 'datasets' at line 2"),
        ("", "a grid must be a mapping of keys"),
        ("- cora\n- citeseer\n", "a grid must be a mapping of keys"),
        (BASE + "foo: 1\n", "unknown key 'foo'; allowed: name, task, datasets"),
        ("datasets: []\nmethods: [none]\nseeds: 1\n", "datasets: must not be empty"),
        ("datasets: [cora]\nmethods: []\nseeds: 1\n", "methods: must not be empty"),
        ("datasets: [cora]\nmethods: [none]\nseeds: []\n", "seeds: must not be empty"),
        ("datasets: [cora]\nmethods: [none]\nseeds: 0\n", "seeds: a number of seeds must be >= 1"),
        ("datasets: [cora]\nmethods: [none]\nseeds: 1.5\n", "seeds: must be a number of seeds"),
        ("datasets: [cora]\nmethods: [none]\nseeds: [0, -1]\n", "seeds must be integers >= 0"),
        ("datasets: [cora]\nmethods: [none]\nseeds: [1, 1]\n", "seeds: duplicate value 1"),
        ("datasets: [cora]\nmethods: [none]\n", "seeds: required field is missing"),
        (BASE + "epsilons: [1, -2]\n", "epsilons: every epsilon must be a finite number > 0"),
        (BASE + "epsilons: [abc]\n", "epsilons[0]: Input should be a valid number"),
        (BASE + "epsilons: []\nparams: {lr: []}\n", "params: lr: an axis must list at least"),
        (BASE + "params: {epsilon: 1}\n", "'epsilon' is not a hyper-parameter"),
        (BASE + "params: [1, 2]\n", "params: must be a mapping"),
        (BASE + "task: edge\n", "task: Input should be 'node' or 'graph', got 'edge'"),
        (BASE + "selection: {mode: up}\n", "selection.mode: Input should be 'max' or 'min'"),
        (BASE + "selection: {metrik: x}\n", "selection: unknown key 'metrik'; allowed: metric"),
        ("datasets: [cora]\nmethods: [{name: rr, parms: {}}]\nseeds: 1\n",
         "methods[0]: unknown key 'parms'; allowed: name, params, epsilons"),
        ("datasets: [cora]\nmethods: [{name: rr, params: {lr: []}}]\nseeds: 1\n",
         "methods[0].params: lr: an axis must list at least one value"),
        ("datasets: [cora]\nmethods: [5]\nseeds: 1\n", "methods[0]: Input should be a valid"),
        ("datasets: [cora, cora]\nmethods: [none]\nseeds: 1\n", "duplicate value 'cora'"),
    ],
)
def test_malformed_grid_is_one_line_config_error(tmp_path, text, fragment):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_grid(path)
    message = str(info.value)
    assert fragment in message, message
    assert message.startswith(str(path)), message
    assert "\n" not in message


def test_missing_and_unreadable_files(tmp_path):
    with pytest.raises(ConfigError, match=r"grid file .*nope\.yaml' does not exist"):
        load_grid(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="cannot read grid file"):
        load_grid(tmp_path)  # a directory
    bad = tmp_path / "bin.yaml"
    bad.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ConfigError, match="cannot read grid file"):
        load_grid(bad)


def test_name_defaults_to_file_stem(tmp_path):
    assert load_grid(write(tmp_path, BASE, "my-grid.yaml")).name == "my-grid"


def _registry_lookup(kind, allowed):
    def check(name):
        if name not in allowed:
            raise unknown_name(kind, name, allowed)
    return check


def test_unknown_names_fail_before_any_run(tmp_path):
    grid = load_grid(write(tmp_path, EXAMPLE))
    with pytest.raises(ConfigError) as info:
        grid.expand(is_private, validate_dataset=["cora", "pubmed"])
    assert str(info.value) == (f"{tmp_path / 'grid.yaml'}: datasets[1]: unknown dataset "
                               "'citeseer'; choose one of: cora, pubmed")
    with pytest.raises(ConfigError, match=r"methods\[1\]: unknown method 'blink-hard'; "
                                          r"choose one of: none, rr"):
        grid.expand(is_private, validate_method=_registry_lookup("method", ["none", "rr"]))
    with pytest.raises(ConfigError, match=r"models\[0\]: unknown model 'gcn'"):
        grid.expand(is_private, validate_model=lambda name: name in ("sage",))
    # a predicate that raises a KeyError for unknown names also works
    calls = []

    def private_or_keyerror(name):
        calls.append(name)
        raise KeyError(f"no method {name}")

    with pytest.raises(ConfigError, match=r"methods\[0\]: no method none"):
        grid.expand(private_or_keyerror)
    # valid validators pass and do not change the result
    runs = grid.expand(is_private, validate_dataset=["cora", "citeseer"],
                       validate_method=["none", "blink-hard"], validate_model=["gcn"])
    assert len(runs) == 120


def test_default_is_private_asks_the_method_registry(monkeypatch):
    # a stand-in registry module (the real one imports torch: slow, and tested elsewhere)
    fake_module = types.ModuleType("dpgl.methods")

    class Fake:
        def __init__(self, private):
            self.private = private

    def fake_get_method(name):
        if name not in ("none", "rr"):
            raise unknown_name("method", name, ["none", "rr"])
        return Fake(name == "rr")

    fake_module.get_method = fake_get_method
    monkeypatch.setitem(sys.modules, "dpgl.methods", fake_module)
    grid = GridSpec.from_dict({"name": "g", "datasets": ["d"], "seeds": 1, "epsilons": [1, 2],
                               "methods": ["none", "rr"]})
    assert [(r.method, r.epsilon) for r in grid.expand()] == [
        ("none", None), ("rr", 1.0), ("rr", 2.0)]
    grid = GridSpec.from_dict({"name": "g", "datasets": ["d"], "seeds": 1,
                               "methods": ["no-such-method"]}, source="g.yaml")
    with pytest.raises(ConfigError, match=r"^g.yaml: methods\[0\]: unknown method "
                                          r"'no-such-method'; choose one of: none, rr$"):
        grid.expand()
