"""DP-SGD's exact clipping without per-example gradients (dpgl.train.dpsgd.linear_clipped_sum,
issue #13 item 7) against the per-example reference (vmap gradients + clip_and_sum), DPAR's
training examples without a universe-sized feature matrix, and DPAR's runs: the same results
and the same privacy report for the same seed with either path."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch import nn

import dpgl.train.dpsgd as dpsgd
from _speed_reference import reference_dpar_examples
from dpgl.experiments.config import RunConfig
from dpgl.experiments.execute import execute_run
from dpgl.methods.dpar import _examples
from dpgl.nn.decoupled import DecoupledMLP, dpar_batch_losses, dpar_example_loss
from dpgl.train.dpsgd import clip_and_sum, linear_clipped_sum, per_sample_gradients


def _dpar_batch(b: int, s: int, d: int, classes: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    feats = (torch.rand(b, s, d, generator=g) < 0.2).float() * 3.0
    w = torch.rand(b, s, generator=g)
    if s > 1:
        w[:, -1] = 0.0  # padding slots
    w[0] = 0.0      # an example without any selected node
    y = torch.randint(0, classes, (b,), generator=g)
    return feats, w, y


@pytest.mark.parametrize(("num_layers", "s", "clip"), [(1, 1, 0.5), (2, 3, 1.0), (3, 4, 0.05),
                                                       (2, 2, 1e6)])
def test_linear_clipped_sum_equals_per_example_clipping(num_layers: int, s: int,
                                                        clip: float) -> None:
    torch.manual_seed(num_layers)
    model = DecoupledMLP(40, 5, hidden=16, num_layers=num_layers)
    batch = _dpar_batch(25, s, 40, 5, seed=s)
    ref, ref_norms = clip_and_sum(per_sample_gradients(model, dpar_example_loss, batch), clip)
    got = linear_clipped_sum(model, dpar_batch_losses, batch, clip)
    assert got is not None
    summed, norms = got
    assert list(summed) == [k for k, _ in model.named_parameters()]
    assert torch.allclose(norms, ref_norms, rtol=1e-5, atol=1e-7)
    for k in ref:
        assert summed[k].shape == ref[k].shape
        assert torch.allclose(summed[k], ref[k], rtol=1e-5, atol=1e-6), k
    if clip < 1:
        assert norms.max() > clip  # clipping was active


def test_linear_clipped_sum_bounds_each_example_contribution() -> None:
    torch.manual_seed(0)
    model = DecoupledMLP(12, 3, hidden=8)
    feats, w, y = _dpar_batch(15, 3, 12, 3, seed=1)
    feats = feats * 20
    clip = 0.3
    total, norms = linear_clipped_sum(model, dpar_batch_losses, (feats, w, y), clip)
    assert norms.max() > clip
    for i in range(15):
        keep = torch.arange(15) != i
        rest, _ = linear_clipped_sum(model, dpar_batch_losses, (feats[keep], w[keep], y[keep]),
                                     clip)
        diff = torch.sqrt(sum(((total[k] - rest[k]) ** 2).sum() for k in total))
        assert diff <= clip * (1 + 1e-5)


def test_linear_clipped_sum_declines_models_it_cannot_do_exactly() -> None:
    batch = _dpar_batch(4, 2, 6, 3, seed=0)
    dropout = DecoupledMLP(6, 3, hidden=4, dropout=0.5)
    assert linear_clipped_sum(dropout, dpar_batch_losses, batch, 1.0) is None
    dropout.eval()
    assert linear_clipped_sum(dropout, dpar_batch_losses, batch, 1.0) is not None
    frozen = DecoupledMLP(6, 3, hidden=4)
    frozen.net[0].requires_grad_(False)  # no gradient reaches the first layer's output
    assert linear_clipped_sum(frozen, dpar_batch_losses, batch, 1.0) is None
    for extra in (nn.LayerNorm(4), nn.BatchNorm1d(2)):  # non-linear parameters / buffers
        model = nn.Sequential(nn.Linear(6, 4), extra, nn.Linear(4, 3))
        assert linear_clipped_sum(model, dpar_batch_losses, batch, 1.0) is None

    class Flat(nn.Module):  # merges examples and positions: not batch-first
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(6, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.lin(x.reshape(-1, 6)).reshape(*x.shape[:-1], 3)

    assert linear_clipped_sum(Flat(), dpar_batch_losses, batch, 1.0) is None


def test_trainer_uses_the_fast_path_for_dpar_and_the_reference_otherwise(monkeypatch) -> None:
    calls = {"fast": 0, "ref": 0}
    fast, ref = dpsgd.linear_clipped_sum, dpsgd.per_sample_gradients

    def count_fast(*a, **k):
        calls["fast"] += 1
        return fast(*a, **k)

    def count_ref(*a, **k):
        calls["ref"] += 1
        return ref(*a, **k)

    monkeypatch.setattr(dpsgd, "linear_clipped_sum", count_fast)
    monkeypatch.setattr(dpsgd, "per_sample_gradients", count_ref)
    model = DecoupledMLP(6, 3, hidden=4)
    batch = _dpar_batch(5, 2, 6, 3, seed=2)
    dpsgd.clipped_gradient_sum(model, dpar_example_loss, batch, 1.0)
    assert calls == {"fast": 1, "ref": 0}
    dpsgd.clipped_gradient_sum(DecoupledMLP(6, 3, hidden=4, dropout=0.5), dpar_example_loss,
                               batch, 1.0)
    assert calls == {"fast": 2, "ref": 1}  # declined, fell back


def test_dpar_examples_equal_the_universe_matrix_construction() -> None:
    rng = np.random.default_rng(0)
    for t in range(100):
        universe = int(rng.integers(1, 40))
        ids = np.sort(rng.choice(universe, size=int(rng.integers(1, universe + 1)),
                                 replace=False))
        pi = sp.random(universe, universe, density=float(rng.random()) * 0.3, random_state=t,
                       format="csr")
        x, y = torch.randn(ids.size, 5), torch.arange(ids.size)
        got = _examples(pi, ids, x, y, universe)
        ref = reference_dpar_examples(pi, ids, x, y, universe)
        assert all(torch.equal(a, b) for a, b in zip(got, ref, strict=True))


@pytest.mark.parametrize("method", ["dpar-em0", "dpar-gm"])
def test_dpar_same_seed_same_results_with_either_clipping_path(monkeypatch, method) -> None:
    def run():
        return execute_run(RunConfig(dataset="csbm", method=method, model="mlp", epsilon=2.0,
                                     seed=3, params={"epochs": 3, "batch_size": 60,
                                                     "subsample": 0.5, "num_sources": 20}))

    fast = run()
    monkeypatch.setattr(dpsgd, "linear_clipped_sum", lambda *a, **k: None)
    ref = run()
    assert fast.privacy == ref.privacy
    assert fast.metrics == ref.metrics
    for k in ("noise_multiplier", "sigma_gm", "appr_vector_epsilon", "max_other_occurrences",
              "sgd_steps"):
        assert fast.info.get(k) == ref.info.get(k)


def _reference(model: nn.Module, batch: tuple[torch.Tensor, ...], clip: float):
    return clip_and_sum(per_sample_gradients(model, dpar_example_loss, batch), clip)


def _assert_same(model: nn.Module, batch: tuple[torch.Tensor, ...], clip: float) -> None:
    ref, ref_norms = _reference(model, batch, clip)
    got = linear_clipped_sum(model, dpar_batch_losses, batch, clip)
    assert got is not None, "the fast path declined a model it can do exactly"
    summed, norms = got
    assert torch.allclose(norms, ref_norms, rtol=1e-5, atol=1e-7)
    assert set(summed) == set(ref)
    for k in ref:
        assert torch.allclose(summed[k], ref[k], rtol=1e-5, atol=1e-6), k
    assert norms.max() > clip  # clipping was active for some example


@pytest.mark.parametrize("num_layers", [2, 3])
def test_every_layer_counts_in_the_norm_with_one_position(num_layers: int) -> None:
    """One selected node per example (P = 1 at every layer): the joint norm adds every
    layer's part (a norm from the last layer alone would under-clip)."""
    torch.manual_seed(7)
    model = DecoupledMLP(20, 4, hidden=8, num_layers=num_layers)
    _assert_same(model, _dpar_batch(12, 1, 20, 4, seed=3), clip=0.05)


class _Shared(nn.Module):
    """A linear layer applied twice per example (two records to concatenate), a layer
    without bias, and a layer that is never used (no records)."""

    def __init__(self) -> None:
        super().__init__()
        self.unused = nn.Linear(9, 9)
        self.lin = nn.Linear(9, 6, bias=False)
        self.out = nn.Linear(6, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.lin(x)) + torch.tanh(self.lin(0.5 * x))
        return self.out(h)


@pytest.mark.parametrize("s", [1, 3])
def test_shared_biasless_and_unused_layers(s: int) -> None:
    torch.manual_seed(s)
    model = _Shared()
    _assert_same(model, _dpar_batch(10, s, 9, 3, seed=s), clip=0.1)


def test_inactive_dropout_keeps_the_fast_path() -> None:
    """Dropout with p = 0 (or in eval mode) changes nothing: the fast path stays exact."""
    torch.manual_seed(0)
    model = DecoupledMLP(10, 3, hidden=6, dropout=0.0)
    _assert_same(model, _dpar_batch(8, 2, 10, 3, seed=2), clip=0.05)
    with_dropout = nn.Sequential(nn.Linear(10, 6), nn.Dropout(0.5), nn.ReLU(), nn.Linear(6, 3))
    with_dropout.eval()
    _assert_same(with_dropout, _dpar_batch(8, 2, 10, 3, seed=2), clip=0.05)


def test_a_parameter_outside_linear_layers_is_declined() -> None:
    class Scaled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(6, 3)
            self.scale = nn.Parameter(torch.ones(()))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.scale * self.lin(x)

    assert linear_clipped_sum(Scaled(), dpar_batch_losses, _dpar_batch(4, 2, 6, 3, seed=0),
                              1.0) is None
