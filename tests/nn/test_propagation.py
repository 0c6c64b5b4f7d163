import numpy as np
import pytest
import scipy.sparse as sp
import torch

from dpgl.errors import GraphError
from dpgl.graph import propagation
from dpgl.graph.propagation import (
    SparseOperator,
    gather_mm,
    gcn_normalized_scipy,
    mean_normalized_scipy,
    to_scipy,
    to_torch_csr,
)


def _random_graph(n: int = 12, p: float = 0.3, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    rng = np.random.default_rng(seed)
    a = np.triu(rng.random((n, n)) < p, 1)
    a = a | a.T
    src, dst = np.nonzero(a)
    w = rng.random(src.size).astype(np.float32) + 0.1
    return torch.tensor(np.stack([src, dst])), torch.from_numpy(w)


def _dense(edge_index: torch.Tensor, n: int, w: torch.Tensor | None) -> np.ndarray:
    a = np.zeros((n, n), dtype=np.float64)
    vals = np.ones(edge_index.size(1)) if w is None else w.numpy()
    for (s, d), v in zip(edge_index.t().tolist(), vals, strict=True):
        a[d, s] += v
    return a


@pytest.mark.parametrize("weighted", [False, True])
def test_gcn_normalized_matches_dense_formula(weighted: bool) -> None:
    ei, w = _random_graph()
    w = w if weighted else None
    a = _dense(ei, 12, w) + np.eye(12)
    d = a.sum(1)
    expected = a / np.sqrt(np.outer(d, d))
    got = gcn_normalized_scipy(ei, 12, w).toarray()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_mean_normalized_is_weighted_row_mean() -> None:
    ei, w = _random_graph(seed=3)
    a = _dense(ei, 12, w)
    deg = a.sum(1, keepdims=True)
    expected = np.divide(a, deg, out=np.zeros_like(a), where=deg > 0)
    got = mean_normalized_scipy(ei, 12, w).toarray()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_isolated_node_gets_only_self_loop() -> None:
    ei = torch.tensor([[0, 1], [1, 0]])
    m = gcn_normalized_scipy(ei, 3).toarray()
    assert m[2, 2] == pytest.approx(1.0)
    assert m[2, :2].sum() == 0
    assert mean_normalized_scipy(ei, 3).toarray()[2].sum() == 0


@pytest.mark.parametrize(
    "ei, msg",
    [
        (torch.tensor([[0, 5], [1, 0]]), "outside"),
        (torch.tensor([[0, -1], [1, 0]]), "outside"),
        (torch.tensor([0, 1, 2]), r"\[2, E\]"),
        (torch.tensor([[0.0, 1.0], [1.0, 0.0]]), "integer"),
    ],
)
def test_bad_edge_index_is_a_clear_error(ei: torch.Tensor, msg: str) -> None:
    with pytest.raises(GraphError, match=msg):
        gcn_normalized_scipy(ei, 3)


def test_weight_length_mismatch() -> None:
    with pytest.raises(GraphError, match="edge_weight"):
        gcn_normalized_scipy(torch.tensor([[0, 1], [1, 0]]), 2, torch.ones(3))


def _csr_and_dense(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    rng = np.random.default_rng(seed)
    dense = (rng.random((30, 25)) < 0.2) * rng.random((30, 25))
    dense[[0, 7, 29]] = 0.0  # empty rows, also the first and the last
    return to_torch_csr(sp.csr_matrix(dense.astype(np.float32))), torch.from_numpy(
        rng.standard_normal((25, 6)).astype(np.float32))


@pytest.mark.parametrize("chunk", [1, 6, 7, 50, 1 << 25])
def test_gather_mm_is_the_sparse_product_in_any_chunking(chunk: int) -> None:
    """docs/gpu.md: the GPU's deterministic product; every chunking gives the same floats
    (the entries are added in storage order), and they equal the CSR product's up to rounding."""
    a, x = _csr_and_dense()
    got = gather_mm(a, x, chunk=chunk)
    assert torch.equal(got, gather_mm(a, x))
    np.testing.assert_allclose(got.numpy(), torch.sparse.mm(a, x).numpy(), rtol=1e-6, atol=1e-6)
    assert torch.equal(got[[0, 7, 29]], torch.zeros(3, 6))


def test_the_cpu_keeps_the_sparse_product_under_deterministic_mode(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The gather path is for GPUs only: on the CPU the operator's product stays torch's CSR
    product bit for bit (so CPU numbers do not move), also under deterministic mode. (Whether
    the two paths' floats differ depends on the CPU's kernels, so the path taken is watched.)"""
    _, x = _csr_and_dense(seed=4)
    ei, w = _random_graph(n=25, seed=5)
    op = SparseOperator(to_scipy(ei, 25, w))
    calls: list[int] = []
    real = propagation.gather_mm
    monkeypatch.setattr(propagation, "gather_mm", lambda a, x: calls.append(1) or real(a, x))
    mode = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        assert torch.equal(op @ x, torch.sparse.mm(op.matrix, x))
    finally:
        torch.use_deterministic_algorithms(mode)
    assert calls == []
    assert propagation.uses_gather(x) is False


def test_the_operator_on_the_gather_path_has_the_same_values_and_gradients(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Forward and backward of ``SparseOperator @ x`` through :func:`gather_mm` (the GPU's
    path, forced here on the CPU) agree with the CSR product's."""
    ei, w = _random_graph(n=25, seed=6)
    op = SparseOperator(gcn_normalized_scipy(ei, 25, w))
    x0 = torch.randn(25, 4, generator=torch.Generator().manual_seed(0))
    outs, grads, calls = [], [], []
    real = propagation.gather_mm
    monkeypatch.setattr(propagation, "gather_mm", lambda a, x: calls.append(1) or real(a, x))
    for forced in (False, True):
        monkeypatch.setattr(propagation, "uses_gather", lambda x, f=forced: f)
        x = x0.clone().requires_grad_(True)
        y = op @ torch.tanh(op @ x)
        (y * torch.arange(4.0)).sum().backward()
        outs.append(y.detach())
        grads.append(x.grad)
    np.testing.assert_allclose(outs[0].numpy(), outs[1].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads[0].numpy(), grads[1].numpy(), rtol=1e-5, atol=1e-6)
    assert not torch.equal(grads[1], torch.zeros_like(grads[1]))
    assert len(calls) == 4  # forced: two products forward, two backward
