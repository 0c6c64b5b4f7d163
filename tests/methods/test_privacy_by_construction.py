"""The privacy report is made by the code that draws the noise, and the runner checks it:
methods never compute a budget, the report opens with one plain sentence, a private run whose
report is empty or over budget fails, one report per user, splits never read private labels,
and values computed from private data are stored apart as diagnostics."""

from __future__ import annotations

import ast
import pathlib
from typing import ClassVar

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

import dpgl.methods as methods_pkg
from _cli import run_cli
from dpgl.errors import PrivacyError
from dpgl.experiments.config import RunConfig
from dpgl.experiments.execute import check_report, execute_run
from dpgl.mechanisms.features import FeatureRange
from dpgl.methods.base import _REGISTRY, Method, MethodOutput, RunContext, register
from dpgl.methods.params import NodeParams, Params
from dpgl.privacy import Accountant, Guarantee, RandomizedResponse, Unit
from dpgl.transforms import CollectFeatures, CollectLabels

METHODS_DIR = pathlib.Path(methods_pkg.__file__).parent


def test_methods_never_compute_a_budget() -> None:
    """No method module spends a guarantee or builds one: the randomizers charge what they
    draw (spend_nonprivate, a declaration that data is used as is, is allowed)."""
    offenders = []
    for path in METHODS_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                if name in ("spend", "spend_gaussian", "spend_rdp", "Guarantee"):
                    offenders.append(f"{path.name}:{node.lineno} {name}")
    assert not offenders, offenders


# --------------------------------------------------------------------------- runner checks


class _P(NodeParams):
    factor: float = 1.0
    charge: bool = True


class _Fake(Method):
    """A private test method that charges ``factor`` x epsilon (or nothing)."""

    name = "test-fake-private"
    private = True
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": _P}
    budgets: ClassVar[dict[Unit, str]] = {Unit.EDGE_LDP: "epsilon"}
    budget_split = "factor x epsilon to RR on the bits (or nothing)"

    def fit_node(self, ctx: RunContext) -> MethodOutput:
        p = ctx.params
        assert isinstance(p, _P) and ctx.epsilon is not None
        if p.charge:
            RandomizedResponse(p.factor * ctx.epsilon, Unit.EDGE_LDP, label="bits").charge()
        return MethodOutput({"test_accuracy": 0.5})


@pytest.fixture()
def fake() -> type[Method]:
    register(_Fake)
    yield _Fake
    _REGISTRY.pop(_Fake.name, None)


def _run(eps: float, **params: object):
    return execute_run(RunConfig(dataset="csbm", method="test-fake-private", epsilon=eps,
                                 seed=0, params=params))


def test_the_runner_accepts_a_run_within_budget(fake: type[Method]) -> None:
    r = _run(2.0)
    assert r.privacy["summary"].startswith("Protected: each user's neighbour list, eps = 2")


def test_the_runner_rejects_an_empty_report(fake: type[Method]) -> None:
    with pytest.raises(PrivacyError, match="recorded no privacy part"):
        _run(2.0, charge=False)


def test_the_runner_rejects_an_over_budget_report(fake: type[Method]) -> None:
    with pytest.raises(PrivacyError, match="more than its budget epsilon=2"):
        _run(2.0, factor=1.5)


def test_the_runner_rejects_a_charge_on_an_undeclared_unit() -> None:
    acc = Accountant()
    acc.spend("x", Guarantee(0.5, 0.0, Unit.EDGE_LDP))
    acc.spend("y", Guarantee(0.5, 0.0, Unit.FEATURE_LDP))
    with pytest.raises(PrivacyError, match="declares no budget"):
        check_report(_Fake(), _P(), 1.0, acc.report())
    acc2 = Accountant()
    acc2.spend("x", Guarantee(0.5, 0.0, Unit.EDGE_LDP))
    acc2.spend_nonprivate("x as is", "oops", Unit.EDGE_LDP)
    with pytest.raises(PrivacyError, match="NO PRIVACY for edge-LDP"):
        check_report(_Fake(), _P(), 1.0, acc2.report())
    acc3 = Accountant()
    acc3.spend("x", Guarantee(0.5, 1e-6, Unit.EDGE_LDP))
    with pytest.raises(PrivacyError, match="delta"):
        check_report(_Fake(), _P(), 1.0, acc3.report())


class _PD(NodeParams):
    private: bool = True
    feature_epsilon: float | None = 1.0
    delta: float = 1e-5
    raw_features: bool = False


class _FakeDelta(Method):
    """A method whose privacy depends on its parameters: edge-LDP (epsilon, delta) and a
    feature budget by name; takes epsilon only when ``private``; features left unprotected
    only when ``raw_features`` chose it."""

    name = "test-fake-delta"
    private = True
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": _PD}
    budgets: ClassVar[dict[Unit, str]] = {Unit.EDGE_LDP: "epsilon",
                                          Unit.FEATURE_LDP: "feature_epsilon"}
    deltas: ClassVar[dict[Unit, str]] = {Unit.EDGE_LDP: "delta"}
    budget_split = "edge and feature budgets as given"

    def takes_epsilon(self, params: Params) -> bool:
        assert isinstance(params, _PD)
        return params.private

    def unprotected_by_choice(self, params: Params) -> set[Unit]:
        assert isinstance(params, _PD)
        return {Unit.FEATURE_LDP} if params.raw_features else set()

    def fit_node(self, ctx: RunContext) -> MethodOutput:  # pragma: no cover - never run
        raise NotImplementedError


def _report(*parts: tuple[str, Unit, float, float]):
    """A report charging (name, unit, epsilon, delta) in this order (inf: used as is)."""
    acc = Accountant()
    for name, unit, eps, delta in parts:
        if eps == float("inf"):
            acc.spend_nonprivate(name, "as is", unit)
        else:
            acc.spend(name, Guarantee(eps, delta, unit))
    return acc.report()


def test_the_runners_check_reads_the_methods_own_parameters() -> None:
    """Each rule of the check against a method whose privacy depends on its parameters:
    the delta budget, a budget named by a parameter, the unit left unprotected only by
    choice, a public unit before an over-budget one, and takes_epsilon read from params."""
    m = _FakeDelta()
    ok = _report(("x", Unit.EDGE_LDP, 1.0, 1e-5), ("f", Unit.FEATURE_LDP, 1.0, 0.0))
    check_report(m, _PD(), 1.0, ok)
    with pytest.raises(PrivacyError, match=r"delta 1\.5e-05, more than delta=1e-05"):
        check_report(m, _PD(), 1.0, _report(("x", Unit.EDGE_LDP, 1.0, 1.5e-5)))
    with pytest.raises(PrivacyError, match="feature-LDP epsilon 2, more than its budget"):
        check_report(m, _PD(), 1.0, _report(("x", Unit.EDGE_LDP, 1.0, 0.0),
                                            ("f", Unit.FEATURE_LDP, 2.0, 0.0)))
    raw = _report(("x", Unit.EDGE_LDP, 1.0, 0.0), ("f", Unit.FEATURE_LDP, float("inf"), 0.0))
    with pytest.raises(PrivacyError, match="NO PRIVACY for feature-LDP"):
        check_report(m, _PD(), 1.0, raw)
    check_report(m, _PD(raw_features=True), 1.0, raw)  # chosen: accepted
    # a unit used as is (no budget) first does not end the check of the units after it
    with pytest.raises(PrivacyError, match="edge-LDP epsilon 3, more than its budget"):
        check_report(m, _PD(feature_epsilon=None), 1.0,
                     _report(("f", Unit.FEATURE_LDP, float("inf"), 0.0),
                             ("x", Unit.EDGE_LDP, 3.0, 0.0)))
    # not private by its parameters: only an empty report is refused
    check_report(m, _PD(private=False), None, _report(("x", Unit.EDGE_LDP, 9.0, 0.0)))
    with pytest.raises(PrivacyError, match="more than its budget"):
        check_report(m, _PD(private=True), 1.0, _report(("x", Unit.EDGE_LDP, 9.0, 0.0)))


def test_a_stored_report_gets_the_runners_check_on_its_totals() -> None:
    """A run copied from another store keeps its report as the export does (totals, no
    entries): the runner's check reads the totals there; a report with entries but no totals
    is empty; and check_stored_report checks a stored run of a registered method."""
    from dpgl.experiments.execute import check_stored_report
    from dpgl.privacy import PrivacyReport

    acc = Accountant()
    acc.spend("x", Guarantee(1.0, 0.0, Unit.EDGE_LDP))
    full = acc.report().to_dict()
    compact = {k: v for k, v in full.items() if k not in ("entries", "notes")}
    check_report(_Fake(), _P(), 1.0, PrivacyReport.from_dict(compact), stored=True)
    with pytest.raises(PrivacyError, match="recorded no privacy part"):
        check_report(_Fake(), _P(), 1.0, PrivacyReport.from_dict(compact))  # not stored
    with pytest.raises(PrivacyError, match=r"more than its budget epsilon=0\.5"):
        check_report(_Fake(), _P(), 0.5, PrivacyReport.from_dict(compact), stored=True)
    with pytest.raises(PrivacyError, match="recorded no privacy part"):
        check_report(_Fake(), _P(), 1.0, PrivacyReport.from_dict({**compact, "totals": {}}),
                     stored=True)
    rr = RunConfig(dataset="csbm", method="rr", epsilon=1.0)
    check_stored_report(rr, compact)
    with pytest.raises(PrivacyError, match=r"more than its budget epsilon=0\.5"):
        check_stored_report(rr.model_copy(update={"epsilon": 0.5}), compact)


def test_every_registered_private_method_declares_its_unit_and_split() -> None:
    from dpgl.methods import get_method, list_methods

    for name in list_methods():
        m = get_method(name)
        if m.private:
            assert m.unit is not None, name
            assert m.budget_split, name


@pytest.mark.parametrize("args, first_line", [
    (["--method", "blink-hard", "--epsilon", "4"],
     "Protected: each user's neighbour list, eps = 4 edge-LDP (RR (eps_a) 3.6 + noisy degree "
     "(eps_d) 0.4). Not protected: node features and labels (assumed public in this setting)."),
    (["--method", "lpgnn", "--epsilon", "2"],
     "Protected: each user's feature vector, eps = 2 feature-LDP (features). Not protected: "
     "labels (used as is); graph (assumed public in this setting)."),
    (["--method", "dpar-em0", "--model", "mlp", "--epsilon", "4", "-p", "num_sources=10"],
     "Protected: each node of the training graph with its features, label and edges, eps = 4, "
     "delta = 0.0001 node-DP (DPAR on a Poisson node subsample)."),
    (["--method", "none"],
     "Nothing is protected: neighbor lists, features and labels used as is."),
])
def test_reports_open_with_one_plain_sentence(capsys: pytest.CaptureFixture[str],
                                              args: list[str], first_line: str) -> None:
    """`dpgl train` prints the privacy report after the metrics: its first line is one plain
    sentence from what the accountant recorded, read in the method's setting; no run of a
    method whose setting assumes features and labels public shouts NO PRIVACY."""
    code, out, err = run_cli(capsys, "train", "--dataset", "csbm", "-p", "epochs=2", *args)
    assert code == 0, err
    report = out[out.index("Protected:" if first_line.startswith("Protected") else "Nothing"):]
    assert report.splitlines()[0] == first_line
    assert "NO PRIVACY" not in report


# --------------------------------------------------------------------------- finding 4


def test_one_report_per_user_features() -> None:
    x = torch.rand(20, 4)
    col = CollectFeatures(1.0, feature_range=FeatureRange(0, 1), seed=0)
    acc = Accountant()
    with acc.active():
        r5 = col.user_report(5, x[5].numpy())
        out = col(Data(x=x)).x
        again = col(Data(x=x)).x
    assert np.allclose(out[5].numpy(), r5)              # the matrix reuses user 5's report
    assert torch.equal(out, again)
    # two draws (user 5 alone, then the 19 others): each charged once, never re-drawn
    assert len(acc.report().entries) == 2


def test_one_report_per_user_labels() -> None:
    y = torch.randint(0, 3, (30,))
    col = CollectLabels(1.0, 3, seed=0)
    r7 = col.user_report(7, int(y[7]))
    out = col(Data(y=y)).y
    assert int(out[7]) == r7 and torch.equal(out, col(Data(y=y)).y)


def test_stratified_splits_read_only_the_reported_labels(monkeypatch) -> None:
    """With label-LDP, stratification uses the users' reports, never the true labels."""
    import dpgl.graph.splits as splits

    seen: list[torch.Tensor] = []
    orig = splits.random_node_split

    def spy(*a, **kw):
        seen.append(kw["labels"])
        return orig(*a, **kw)

    monkeypatch.setattr(splits, "random_node_split", spy)
    r = execute_run(RunConfig(dataset="csbm", method="lpgnn", epsilon=1.0, seed=0,
                              params={"epochs": 2, "feature_steps": 1, "stratify": True,
                                      "label_epsilon": 0.5}))
    from dpgl.datasets import load_dataset

    true = load_dataset("csbm").y
    assert len(seen) == 1 and not torch.equal(seen[0], true)   # reports differ from truth
    assert r.privacy["totals"]["label-LDP"]["epsilon"] == pytest.approx(0.5)


def test_private_data_diagnostics_are_stored_apart() -> None:
    r = execute_run(RunConfig(dataset="csbm", method="rr", epsilon=4.0, seed=0,
                              params={"epochs": 2}))
    assert "true_edges" in r.diagnostics and "true_edges" not in r.info
    lp = execute_run(RunConfig(dataset="csbm", method="lpgnn", epsilon=1.0, seed=0,
                               params={"epochs": 2, "feature_steps": 1, "label_epsilon": 1.0}))
    assert "label_noise_rate_train" in lp.diagnostics
    assert "label_noise_rate_train" not in lp.info
