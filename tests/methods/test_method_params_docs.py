"""Discovery: every hyper-parameter is described in its pydantic model (the one copy), and
`dpgl methods NAME` lists it with its type, default and bounds; the CLI's help is clean."""

from __future__ import annotations

import json

import pytest

from _cli import run_cli
from dpgl.cli import app
from dpgl.methods import get_method, list_methods
from dpgl.methods.params import NodeParams


def _models() -> list[tuple[str, str, type]]:
    return [(name, task, model) for name in list_methods()
            for task, model in get_method(name).params_for_task.items()]


def test_every_parameter_of_every_method_has_a_one_line_description() -> None:
    """A field without ``Field(description=...)`` (or a subclass override of a described
    one, which inherits it) fails here, so `dpgl methods NAME` cannot silently rot."""
    missing = [f"{name} ({task}): {field}" for name, task, model in _models()
               for field, info in model.model_fields.items()
               if not (info.description or "").strip()]
    assert not missing, missing
    multi_line = [f"{model.__name__}.{field}" for _, _, model in _models()
                  for field, info in model.model_fields.items() if "\n" in info.description]
    assert not multi_line, multi_line


def test_an_override_keeps_the_description_of_the_field_it_overrides() -> None:
    lpgnn = get_method("lpgnn").params_model("node")
    assert lpgnn.model_fields["epochs"].default == 300
    assert (lpgnn.model_fields["epochs"].description
            == NodeParams.model_fields["epochs"].description)
    # an override may say more (GAP's epochs train the classifier)
    gap = get_method("gap-ndp").params_model("node").model_fields["epochs"]
    assert gap.description == "classifier training epochs"


def test_describe_derives_type_default_and_bounds_from_the_model() -> None:
    info = {p["name"]: p for p in get_method("lpgnn").describe()["params"]["node"]}
    assert info["feature_steps"]["bounds"] == {"ge": 0, "le": 256}
    assert info["m"]["type"] == "int or best|max" and info["m"]["default"] == "best"
    assert info["label_epsilon"]["type"] == "float or unset"
    assert info["feature_mechanism"]["choices"] == ["multibit", "1bit", "gaussian", "laplace"]
    assert info["feature_mechanism"]["group"] == "method"
    assert info["epochs"]["group"] == "training" and info["epochs"]["default"] == 300


def test_methods_name_lists_parameters_with_defaults(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    code, out, err = run_cli(capsys, "methods", "blink-hard")
    assert code == 0, err
    assert out.startswith("blink-hard: Blink:")
    for needle in ("Zhu, Tan & Xiao", "CCS 2023", "each user's neighbour list (edge-LDP), "
                   "budget --epsilon", "degree_share to the noisy degree, the rest to RR",
                   "each user's feature vector (feature-LDP)"):
        assert needle in out, needle
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
            for line in out.splitlines() if line.startswith("│")}
    assert rows["degree_share"][:3] == ["float", "0.1", "(0, 1)"]
    assert rows["degree_share"][3].startswith("share of epsilon for the noisy degree")
    assert rows["epochs"][:3] == ["int", "200", ">= 1"]
    assert rows["patience"][:2] == ["int or unset", "50"]
    assert next(iter(rows)) == "degree_share"  # the method's own parameters first


def test_methods_name_json_and_renamed_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "methods", "dprr", "--json")
    assert code == 0
    info = json.loads(out)
    assert info["tasks"] == ["node", "graph"] and set(info["params"]) == {"node", "graph"}
    share = next(p for p in info["params"]["graph"] if p["name"] == "degree_share")
    assert share["default"] == 0.1 and share["bounds"] == {"gt": 0, "lt": 1}
    assert {"old": "alpha", "new": "degree_share", "how": "new = 1 - old"} in info["renamed"][
        "node"]
    code, out, _ = run_cli(capsys, "methods", "dprr", "--task", "node")
    assert "alpha -> degree_share (new = 1 - old)" in out
    assert "graph-task parameters" not in out
    code, out, _ = run_cli(capsys, "methods", "--json", "--task", "graph")
    assert {m["name"] for m in json.loads(out)} == set(list_methods("graph"))


def test_unknown_method_name_suggests_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "methods", "blink-hrd")
    assert code == 2 and not out
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("error: unknown method 'blink-hrd'; choose one of: ")
    assert err.strip().endswith("did you mean 'blink-hard'?")
    code, _, err = run_cli(capsys, "methods", "blink-hard", "--task", "graph")
    assert code == 2 and "does not support task 'graph'" in err


@pytest.mark.parametrize("command", ["", *sorted(c.name or c.callback.__name__
                                                 for c in app.registered_commands)])
def test_help_shows_flags_without_a_metavar_and_help_on_one_line(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run_cli(capsys, *([command] if command else []), "--help")
    assert code == 0
    assert "<bool>" not in out
    if command == "train":
        assert any(line.split()[1:2] == ["--download"] and "Download missing" in line
                   for line in out.splitlines() if line.startswith("│"))
    if not command:  # the command list: one line per command at 200 columns
        listed = [line for line in out.splitlines() if line.startswith("│ ")]
        # + --help; the command groups (collect, client) are listed too
        assert len(listed) == 1 + len(app.registered_commands) + len(app.registered_groups)
