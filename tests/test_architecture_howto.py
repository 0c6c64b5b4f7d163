"""docs/architecture.md's two recipes, followed literally in a test (issue #12): a new
randomizer ("How to add a randomizer") and a new method that uses it, for both tasks ("How to
add a method"), registered here only and run end to end through the real runner.

What the recipes put in ``src/dpgl/mechanisms/<name>.py``, ``src/dpgl/methods/<name>.py`` and
the ``LOCAL_AUDITS`` table of ``src/dpgl/audit/local.py`` lives in this file instead: the
methods are registered by a fixture (and taken out of ``dpgl.methods.base._REGISTRY`` after
the test), the audit entry is added with ``monkeypatch.setitem``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import pytest
import torch
from pydantic import Field, model_validator
from scipy import special

from dpgl.audit.local import LOCAL_AUDITS, claim_of
from dpgl.audit.registry import list_audits, run_named_audit
from dpgl.errors import ConfigError, DpglError, PrivacyError
from dpgl.experiments.config import RunConfig
from dpgl.experiments.execute import execute_run, validate_config
from dpgl.mechanisms.rr import DirectedReports
from dpgl.methods import list_methods
from dpgl.methods.base import _REGISTRY, Method, MethodOutput, RunContext, register
from dpgl.methods.common import node_split, train_node_model
from dpgl.methods.graph_ldp import GraphLDPParams, GraphRandomizer
from dpgl.methods.params import NodeParams, Params
from dpgl.privacy import Accountant, Guarantee, Randomizer, Unit
from dpgl.privacy.audit import AuditableMechanism, AuditSetup
from dpgl.privacy.guarantee import check_epsilon

# =========================================================================== the randomizer
# (the recipe's src/dpgl/mechanisms/neighbour_bits.py)


class NeighbourBitsRR(Randomizer):
    """Warner RR on bits computed from one user's neighbour list, where adding or removing one
    neighbour changes at most one of her bits: her "has at least one neighbour" bit, or each
    bit of her list. Every bit is kept with probability e^eps / (1 + e^eps), so a user's
    report is eps-edge LDP (Warner 1965). Every draw charges the active accountant once: every
    user of the population sent one report."""

    def __init__(self, epsilon: float, *, label: str = "neighbour bits RR") -> None:
        self.epsilon = check_epsilon(epsilon)  # the one stored noise parameter
        self.label = label

    @property
    def guarantee(self) -> Guarantee:
        """eps-edge LDP: the two outputs of one bit have likelihood ratio at most e^eps."""
        return Guarantee.pure(self.epsilon, Unit.EDGE_LDP)

    @property
    def keep_probability(self) -> float:
        return float(special.expit(self.epsilon))

    def probability(self, output: np.ndarray, bits: np.ndarray) -> float:
        """Exact P(output | bits) for one report (independent bits)."""
        same = np.asarray(output, dtype=bool) == np.asarray(bits, dtype=bool)
        keep = self.keep_probability
        return float(np.prod(np.where(same, keep, 1.0 - keep)))

    def randomize(self, bits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Every user's report (one row or entry per user); charges once."""
        b = np.asarray(bits, dtype=bool)
        flips = rng.random(b.shape) >= self.keep_probability
        self.charge()
        return b ^ flips

    def report_lists(self, users: np.ndarray, num_nodes: int, rng: np.random.Generator
                     ) -> np.ndarray:
        """Every user's noisy "has at least one neighbour" bit; ``users[k]`` is the owner of
        the k-th entry of the directed lists (user, neighbour)."""
        has = np.zeros(num_nodes, dtype=bool)
        has[np.asarray(users, dtype=np.int64)] = True
        return self.randomize(has, rng)

    def _repr_args(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon}


# =========================================================================== the method
# (the recipe's src/dpgl/methods/neighbour_bit.py)


class NeighbourBitParams(NodeParams):
    bit_scale: float = Field(1.0, gt=0)  # the feature value of a reported 1


class NeighbourBitGraphParams(GraphLDPParams):
    @model_validator(mode="after")
    def _no_customized_setting(self) -> NeighbourBitGraphParams:
        if self.non_private_fraction > 0:
            raise ValueError("neighbour-bit has no customized setting (non_private_fraction)")
        return self


MAX_DENSE_NODES = 200


class NeighbourBitsGraph(GraphRandomizer):
    """The graph task's client: every user sends every bit of her list through
    :class:`NeighbourBitsRR` (dense, for small graphs: RR on an n x n matrix)."""

    def __init__(self, epsilon: float | None, params: GraphLDPParams, *,
                 n_max: int | None = None) -> None:
        super().__init__(epsilon, params, n_max=n_max)
        assert epsilon is not None
        self.rr = NeighbourBitsRR(epsilon, label="neighbour list bits")

    def reports(self, u: np.ndarray, v: np.ndarray, n: int, private: np.ndarray,
                rng: np.random.Generator) -> tuple[DirectedReports, np.ndarray | None]:
        if n > MAX_DENSE_NODES:
            raise ConfigError(f"neighbour-bit is dense: graphs of at most {MAX_DENSE_NODES} "
                              f"nodes, got {n}")
        adj = np.zeros((n, n), dtype=bool)
        adj[u, v] = adj[v, u] = True
        off = ~np.eye(n, dtype=bool)
        noisy = np.zeros((n, n), dtype=bool)
        noisy[off] = self.rr.randomize(adj[off].reshape(n, n - 1), rng).ravel()
        user, neighbour = np.nonzero(noisy)  # row-major: sorted by (user, neighbour)
        return DirectedReports(user.astype(np.int64), neighbour.astype(np.int64), n), None

    def expected_reports(self, graphs: list[Any]) -> float:
        p = self.rr.keep_probability
        return float(sum(int(g.edge_index.size(1)) * p
                         + (int(g.num_nodes) * (int(g.num_nodes) - 1)
                            - int(g.edge_index.size(1))) * (1 - p) for g in graphs))


class NeighbourBitMethod(Method):
    """Node task: the server trains an MLP on the features (known to it) and each user's noisy
    "has a neighbour" bit; graph task: GIN-0 on the noisy lists of every graph."""

    name = "test-neighbour-bit"
    tasks = ("node", "graph")
    private = True
    models = ("mlp",)  # no edge reaches the node-task server
    summary = "test: noisy 'has a neighbour' bit as a feature (node), RR lists (graph)"
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": NeighbourBitParams,
                                                          "graph": NeighbourBitGraphParams}
    graph_randomizer = NeighbourBitsGraph
    budgets: ClassVar[dict[Unit, str]] = {Unit.EDGE_LDP: "epsilon"}
    budget_split = "all of epsilon to RR on the user's bits"

    def randomizer(self, ctx: RunContext) -> NeighbourBitsRR:
        assert ctx.epsilon is not None
        return NeighbourBitsRR(ctx.epsilon, label="has-a-neighbour bit")

    def fit_node(self, ctx: RunContext) -> MethodOutput:
        data, p = ctx.dataset, ctx.params
        assert isinstance(p, NeighbourBitParams)
        split = node_split(ctx, data)
        n = int(data.num_nodes)
        users = data.edge_index[0].numpy()
        bits = self.randomizer(ctx).report_lists(users, n, ctx.rng.spawn(1)[0])
        acc = ctx.accountant
        acc.spend_nonprivate("node features", "known to the server", Unit.FEATURE_LDP)
        acc.spend_nonprivate("labels", "training labels known to the server", Unit.LABEL_LDP)
        x = torch.cat([data.x, p.bit_scale * torch.from_numpy(bits).float()[:, None]], 1)
        out = train_node_model(ctx, x, data.y, split, None, model="mlp")
        out.info["reported_ones"] = int(bits.sum())              # released data
        out.diagnostics["true_ones"] = int(np.unique(users).size)  # private data
        return out


class OverspendingMethod(NeighbourBitMethod):
    """A buggy variant: its randomizer draws (and so charges) twice the budget."""

    name = "test-neighbour-bit-overspend"
    tasks = ("node",)
    graph_randomizer = None
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": NeighbourBitParams}

    def randomizer(self, ctx: RunContext) -> NeighbourBitsRR:
        assert ctx.epsilon is not None
        return NeighbourBitsRR(2.0 * ctx.epsilon)


@pytest.fixture()
def registered() -> Iterator[None]:
    for cls in (NeighbourBitMethod, OverspendingMethod):
        register(cls)
    yield
    for cls in (NeighbourBitMethod, OverspendingMethod):
        _REGISTRY.pop(cls.name, None)


# =========================================================================== randomizer tests


def test_exact_output_probabilities_on_a_small_input() -> None:
    """eps = ln 3: keep 3/4, flip 1/4; the two bits (0, 1) give (0, 1) w.p. 9/16 etc., the
    probabilities sum to 1, neighbouring inputs are within e^eps, and the sampler draws them."""
    rr = NeighbourBitsRR(math.log(3.0))
    x = np.array([0, 1])
    want = {(0, 0): 3 / 16, (0, 1): 9 / 16, (1, 0): 1 / 16, (1, 1): 3 / 16}
    for out, p in want.items():
        assert rr.probability(np.array(out), x) == pytest.approx(p, abs=1e-15)
    outputs = [np.array(o) for o in itertools.product([0, 1], repeat=2)]
    assert sum(rr.probability(o, x) for o in outputs) == pytest.approx(1.0, abs=1e-15)
    for o in outputs:  # x and x' = (1, 1) differ in one bit
        ratio = rr.probability(o, x) / rr.probability(o, np.array([1, 1]))
        assert 1 / 3 - 1e-12 <= ratio <= 3 + 1e-12
    draws = rr.randomize(np.tile(x, (40_000, 1)), np.random.default_rng(0))
    codes = draws[:, 0] * 2 + draws[:, 1]
    freq = np.bincount(codes.astype(int), minlength=4) / len(codes)
    for (a, b), p in want.items():
        assert abs(freq[2 * a + b] - p) < 5 * math.sqrt(p * (1 - p) / len(codes))


def test_the_randomizer_states_its_guarantee_and_charges_when_it_draws() -> None:
    rr = NeighbourBitsRR(0.7)
    assert rr.guarantee == Guarantee(0.7, 0.0, Unit.EDGE_LDP)
    rng = np.random.default_rng(0)
    rr.report_lists(np.array([0, 1]), 3, rng)  # outside an accountant: no-op, no error
    acc = Accountant()
    with acc.active():
        rr.report_lists(np.array([0, 1]), 3, rng)
        assert acc.total(Unit.EDGE_LDP) == Guarantee(0.7, 0.0, Unit.EDGE_LDP)
        rr.report_lists(np.array([0, 1]), 3, rng)  # the same users again: it adds up
    assert len(acc) == 2
    assert acc.total(Unit.EDGE_LDP).epsilon == pytest.approx(1.4)


# the audit entry (the recipe's LOCAL_AUDITS row): the code path the method runs, user 0's
# list {} vs {1}, the other users' lists fixed; a trial = one population of 4 users
_OTHERS = np.array([1, 2, 2, 3])  # the owners of the other users' list entries


def _audit_neighbour_bit(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    def run(e: float, which: int, trials: int, rng: np.random.Generator) -> np.ndarray:
        owners = np.r_[_OTHERS, 0] if which else _OTHERS
        users = (np.arange(trials)[:, None] * 4 + owners[None, :]).ravel()
        bits = NeighbourBitsRR(e).report_lists(users, 4 * trials, rng).reshape(trials, 4)
        return np.c_[bits[:, 0], bits[:, 1:].sum(1)].astype(np.float64)

    claim = claim_of(lambda: run(eps, 1, 1, np.random.default_rng(0)), Unit.EDGE_LDP)
    return AuditSetup(claim, "user 0's list {} vs {1} (others fixed)",
                      ("user 0's bit", "others' bits"),
                      lambda n, which, rng: run(f * eps, which, n, rng))


def test_the_randomizer_passes_its_audit_and_twice_its_budget_fails(monkeypatch) -> None:
    monkeypatch.setitem(LOCAL_AUDITS, "test-neighbour-bit", AuditableMechanism(
        "test-neighbour-bit", "has-a-neighbour bit (NeighbourBitsRR.report_lists)",
        _audit_neighbour_bit, kind="randomizer", trials=8000))
    assert "test-neighbour-bit" in {a.name for a in list_audits() if a.kind == "randomizer"}
    ok = run_named_audit("test-neighbour-bit", 1.0, seed=0)
    assert ok.passed and ok.claimed_epsilon == pytest.approx(1.0), ok.render()
    broken = run_named_audit("test-neighbour-bit", 1.0, seed=0, spend_twice=True)
    assert not broken.passed and broken.empirical_lower_bound > 1.0, broken.render()


# =========================================================================== method tests

FAST = {"epochs": 3, "patience": None, "hidden": 8}


def _node(method: str = "test-neighbour-bit", seed: int = 0, **kw: Any) -> RunConfig:
    return RunConfig(dataset="csbm", method=method, model="mlp", epsilon=1.5, seed=seed,
                     params={**FAST, **kw})


def test_the_method_is_listed_for_both_tasks(registered: None) -> None:
    assert "test-neighbour-bit" in list_methods("node")
    assert "test-neighbour-bit" in list_methods("graph")
    assert "test-neighbour-bit-overspend" not in list_methods("graph")


def test_the_run_charges_exactly_its_budget_in_its_unit(registered: None) -> None:
    r = execute_run(_node())
    totals = r.privacy["totals"]
    assert totals["edge-LDP"]["epsilon"] == pytest.approx(1.5, abs=1e-12)
    assert totals["edge-LDP"]["delta"] == 0.0
    assert totals["feature-LDP"]["epsilon"] is None  # used as is, said so
    charged = [e for e in r.privacy["entries"] if e["kind"] != "nonprivate"]
    assert [e["name"] for e in charged] == ["has-a-neighbour bit"]
    assert 0 < r.info["reported_ones"] < 2000 and r.diagnostics["true_ones"] > 0
    assert "true_ones" not in r.info


def test_the_runner_refuses_an_overspending_method(registered: None) -> None:
    with pytest.raises(PrivacyError, match=r"more than its budget epsilon=1\.5"):
        execute_run(_node("test-neighbour-bit-overspend"))


def test_the_same_seed_gives_the_same_run(registered: None) -> None:
    a, b, c = execute_run(_node()), execute_run(_node()), execute_run(_node(seed=1))
    assert a.metrics == b.metrics and a.info["reported_ones"] == b.info["reported_ones"]
    assert c.info["reported_ones"] != a.info["reported_ones"]  # the noise follows the seed


def test_the_runner_checks_models_params_and_preprocessing(registered: None) -> None:
    validate_config(_node())
    with pytest.raises(ConfigError, match="trains mlp only"):
        validate_config(RunConfig(dataset="csbm", method="test-neighbour-bit", model="gcn",
                                  epsilon=1.0))
    with pytest.raises(ConfigError, match="has no parameter 'bit_sclae'"):
        validate_config(_node(bit_sclae=2.0))
    with pytest.raises(ConfigError, match="one-hot-degree"):
        validate_config(_node(features="one-hot-degree"))
    with pytest.raises(ConfigError, match="non_private_fraction"):
        validate_config(RunConfig(task="graph", dataset="mutag", method="test-neighbour-bit",
                                  model="gin", epsilon=1.0,
                                  params={"non_private_fraction": 0.1}))


@pytest.fixture(scope="module")
def mutag() -> str:
    from dpgl.datasets import load_dataset

    try:
        load_dataset("mutag")
    except DpglError as e:  # no offline copy (set DPGL_DATA_DIR)
        pytest.skip(f"mutag not available: {e}")
    return "mutag"


def test_the_graph_task_runs_the_held_randomizer(registered: None, mutag: str) -> None:
    cfg = RunConfig(task="graph", dataset=mutag, method="test-neighbour-bit", model="gin",
                    epsilon=2.0, seed=0,
                    params={"epochs": 1, "patience": None, "hidden": 8, "num_layers": 2})
    r = execute_run(cfg)
    assert 0.0 <= r.metrics["test_accuracy"] <= 1.0
    assert r.privacy["totals"]["edge-LDP"]["epsilon"] == pytest.approx(2.0, abs=1e-12)
    (entry,) = r.privacy["entries"]
    assert entry["name"] == "neighbour list bits"
    assert "in 188 of 188 disjoint groups" in entry["details"]  # one charge per graph
    assert r.info["mean_reported_pairs"] > r.info["mean_true_pairs"]  # RR adds pairs
