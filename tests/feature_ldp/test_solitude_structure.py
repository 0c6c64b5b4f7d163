"""Solitude structure learning (Eq. 14): the GNN loss reaches A^c, sparsity is kept."""

import pytest
import torch
import torch.nn.functional as F

from dpgl.errors import ConfigError
from dpgl.estimators.solitude import StructureLearner
from dpgl.nn.weighted_gnn import WeightedGNN
from dpgl.train.solitude import SolitudeConfig, train_solitude


def _graph(n: int = 60, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Two communities with features correlated to the label, plus one-directional noise."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 2
    x = F.one_hot(y, 2).float() + 0.8 * torch.randn(n, 2, generator=g)
    src, dst = [], []
    for i in range(n):
        for j in range(i + 1, n):
            if y[i] == y[j] and torch.rand(1, generator=g).item() < 0.15:
                src += [i, j]
                dst += [j, i]
    for _ in range(80):  # fake edges reported by one endpoint only
        i, j = torch.randint(0, n, (2,), generator=g).tolist()
        if i != j:
            src.append(i)
            dst.append(j)
    ei = torch.unique(torch.tensor([src, dst]), dim=1)
    return x, y, ei


@pytest.mark.parametrize("kind", ["gcn", "sage"])
@pytest.mark.parametrize("symmetric", [True, False])
def test_gnn_loss_gradient_reaches_a_c(kind: str, symmetric: bool) -> None:
    x, y, ei = _graph()
    learner = StructureLearner(ei, x.size(0), symmetric=symmetric)
    torch.manual_seed(0)
    model = WeightedGNN(kind, 2, 2, hidden=8, dropout=0.0)
    loss = F.cross_entropy(model(x, learner.edge_index, learner.edge_weight()), y)
    loss.backward()
    grad = learner.weight.grad
    assert grad is not None
    assert grad.abs().sum().item() > 0
    assert (grad != 0).float().mean().item() > 0.5  # most candidate weights receive gradient


def test_symmetric_candidates_start_at_mean_of_the_two_reports() -> None:
    ei = torch.tensor([[0, 1, 2, 3], [1, 0, 3, 4]])  # {0,1} both ways; 2->3 and 3->4 one way
    learner = StructureLearner(ei, 5)
    assert learner.num_candidates == 3
    assert sorted(learner.weight.tolist()) == [0.5, 0.5, 1.0]
    assert learner.edge_index.size(1) == 6  # both directions of each pair
    # ||A~ - A^c||_F^2 at the initialisation: each one-way pair contributes 2 * 0.25
    assert learner.frobenius().item() == pytest.approx(1.0)
    # prox without gradient converges to max(t - lambda2 / (2 lambda1), 0)
    for _ in range(2000):
        learner.proximal_step(0.05, 1.0, 1.2)
    w = dict(zip(map(tuple, learner.edge_index.t().tolist()),
                 learner.edge_weight(detach=True).tolist(), strict=True))
    assert w[(0, 1)] == pytest.approx(0.4, abs=1e-4)
    assert w[(2, 3)] == 0.0 and w[(3, 4)] == 0.0
    kept, _ = learner.edges()
    assert kept.size(1) == 2
    with pytest.raises(ConfigError):
        StructureLearner(torch.zeros(3, 2, dtype=torch.long), 5)


def test_training_keeps_sparsity_and_moves_the_weights() -> None:
    x, y, ei = _graph()
    n = x.size(0)
    learner = StructureLearner(ei, n)
    candidates = learner.num_candidates
    before = learner.weight.detach().clone()
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(1))
    split = (perm[:30], perm[30:45], perm[45:])
    model = WeightedGNN("gcn", 2, 2, hidden=8, dropout=0.0)
    res = train_solitude(model, learner, x, y, y, split,
                         SolitudeConfig(epochs=40, patience=None, lambda1=1.0, lambda2=1.0,
                                        adj_lr=0.05), seed=0)
    # A^c stays a vector over the candidate set (memory O(|E~|)), inside [0, 1]
    assert learner.weight.numel() == candidates <= ei.size(1)
    w = learner.weight.detach()
    assert torch.all((w >= 0) & (w <= 1))
    assert not torch.allclose(w, before)
    # one-way (mostly fake) pairs are pruned harder than pairs both endpoints reported
    one_way = learner.target == 0.5
    assert w[one_way].mean() < w[~one_way].mean()
    assert res.kept_edges < ei.size(1)
    assert 0.0 <= res.metrics["test_accuracy"] <= 1.0


def test_structure_learning_off_leaves_a_c_untouched() -> None:
    x, y, ei = _graph()
    learner = StructureLearner(ei, x.size(0), symmetric=False)
    split = (torch.arange(0, 30), torch.arange(30, 45), torch.arange(45, 60))
    model = WeightedGNN("sage", 2, 2, hidden=8)
    train_solitude(model, learner, x, y, y, split,
                   SolitudeConfig(epochs=5, patience=None, structure_learning=False), seed=0)
    assert torch.all(learner.weight == 1.0)
    with pytest.raises(Exception, match="backbone"):
        WeightedGNN("gat", 2, 2)


@pytest.mark.parametrize("symmetric", [True, False])
def test_candidates_are_sorted_by_target_keeping_the_given_order(symmetric: bool) -> None:
    """The candidate edges come sorted by target (the GNN's CSR order), stably; RR's reports
    (sorted by target, then source) stay as they are with ``symmetric=False``."""
    g = torch.Generator().manual_seed(3)
    ei = torch.randint(0, 12, (2, 60), generator=g)
    ei = ei[:, ei[0] != ei[1]]
    learner = StructureLearner(ei, 12, symmetric=symmetric)
    dst = learner.edge_index[1]
    assert bool((dst[1:] >= dst[:-1]).all())
    # the same pairs with the same weights as before sorting
    pairs = {tuple(e) for e in learner.edge_index.t().tolist()}
    given = {tuple(e) for e in ei.t().tolist()}
    assert pairs == (given | {(b, a) for a, b in given} if symmetric else given)
    if not symmetric:
        order = torch.argsort(ei[1] * 12 + ei[0])
        rr_like = ei[:, order]
        assert torch.equal(StructureLearner(rr_like, 12, symmetric=False).edge_index, rr_like)


@pytest.mark.parametrize("symmetric", [True, False])
def test_int32_candidates_train_as_int64_would(symmetric: bool) -> None:
    """The candidate edges (and pairs) are stored as int32 and the constant A~ of directed
    reports as scalars (memory: docs/feature-ldp.md); training on them gives bit for bit
    what the same candidates in int64 give."""
    x, y, ei = _graph()
    n = x.size(0)
    split = (torch.arange(0, 30), torch.arange(30, 45), torch.arange(45, 60))
    runs = []
    for wide in (False, True):
        learner = StructureLearner(ei, n, symmetric=symmetric)
        assert learner.edge_index.dtype == torch.int32
        if symmetric:
            assert learner.edge_pair.dtype == torch.int32
        else:
            assert learner.target.dim() == learner.entries.dim() == 0
        if wide:
            learner.edge_index = learner.edge_index.long()
            if symmetric:
                learner.edge_pair = learner.edge_pair.long()
        model = WeightedGNN("gcn", 2, 2, hidden=8)
        res = train_solitude(model, learner, x, y, y, split,
                             SolitudeConfig(epochs=15, patience=None, adj_lr=0.05), seed=0)
        runs.append((res.metrics, learner.weight.detach().clone()))
    assert runs[0][0] == runs[1][0]
    assert torch.equal(runs[0][1], runs[1][1])


@pytest.mark.parametrize("symmetric", [False, True])
def test_the_proximal_step_in_blocks_gives_the_floats_of_one_pass(
        symmetric: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    import dpgl.estimators.solitude as structure
    _, _, ei = _graph()
    one, blocks = StructureLearner(ei, 60, symmetric=symmetric), StructureLearner(
        ei, 60, symmetric=symmetric)
    g = torch.Generator().manual_seed(2)
    start = torch.rand(one.num_candidates, generator=g) * 1.4 - 0.2  # some outside [0, 1]
    with torch.no_grad():
        one.weight.copy_(start)
        blocks.weight.copy_(start)
    one.proximal_step(0.05, 1.0, 1.2)
    monkeypatch.setattr(structure, "PROX_CHUNK", 7)
    blocks.proximal_step(0.05, 1.0, 1.2)
    assert torch.equal(one.weight, blocks.weight)
    # the closed form: a shifted soft-threshold, then [0, 1]
    e = one.entries
    den = 1 + 2 * 0.05 * 1.0 * e
    shifted = start + 2 * 0.05 * 1.0 * e * one.target
    ref = (torch.sign(shifted) * (shifted.abs() - 0.05 * 1.2 * e).clamp_min(0) / den)
    torch.testing.assert_close(one.weight.detach(), ref.clamp(0, 1))


def test_no_graph_outlives_its_backward_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass's products hold per-edge tensors (the weights they were bound to, the transposed
    matrix) until its graph goes; by the proximal step both passes' graphs are gone."""
    import weakref

    from dpgl.graph.edge_operator import EdgeOperator
    bound: list[weakref.ref] = []
    bind = EdgeOperator.bind
    monkeypatch.setattr(EdgeOperator, "bind",
                        lambda self, w: bound.append(weakref.ref(b := bind(self, w))) or b)
    x, y, ei = _graph()
    n = x.size(0)
    learner = StructureLearner(ei, n)
    checked = []
    prox = learner.proximal_step

    def proximal_step(*args: float) -> None:
        checked.append(sum(ref() is not None for ref in bound))
        prox(*args)

    monkeypatch.setattr(learner, "proximal_step", proximal_step)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(1))
    split = (perm[:30], perm[30:45], perm[45:])
    model = WeightedGNN("gcn", 2, 2, hidden=8)
    train_solitude(model, learner, x, y, y, split, SolitudeConfig(epochs=3, patience=None),
                   seed=0)
    assert checked == [0, 0, 0]
