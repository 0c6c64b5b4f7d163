"""Runs on a CUDA GPU (``--device cuda``; docs/gpu.md). Marked ``gpu`` and skipped when torch
sees no GPU, so the suite passes on the CPU-only machines it is normally run on; on a machine
with one they run with the rest (``pytest -m gpu`` runs only these).

What they check: the same seed gives the same numbers twice on CUDA (node training, DP-SGD,
LPGNN's propagation, Solitude, graph classification), the tensors are on the GPU while a
trainer runs and the model comes back on the CPU, and CUDA's accuracy is close to the CPU's
(the numbers differ: other random streams, other summation order)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from _cli import run_cli
from dpgl.device import module_device, resolve_device
from dpgl.errors import DatasetError
from dpgl.experiments.config import RunConfig
from dpgl.experiments.execute import execute_run
from dpgl.nn import PreparedGraph, build_node_model
from dpgl.nn.decoupled import DecoupledMLP, mlp_example_loss
from dpgl.privacy import Accountant
from dpgl.rng import make_rng
from dpgl.train import DPSGDConfig, TrainConfig, train_dpsgd, train_node_classifier

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    # torch's deterministic mode (switched on while a trainer runs on CUDA) warns about an
    # operation without a deterministic form; the equality checks below are the real test
    pytest.mark.filterwarnings("ignore:.*deterministic.*:UserWarning"),
]

FAST = {"epochs": 30, "patience": 30}

RUNS = [
    ("none", "gcn", None, {}),
    ("none", "sage", None, {}),
    ("none", "gat", None, {}),
    ("rr", "gcn", 4.0, {}),
    ("lpgnn", "gcn", 2.0, {"label_epsilon": 2.0, "label_steps": 2}),
    ("lpgnn", "gcn", 2.0, {"propagation": "factorized"}),
    ("solitude", "gcn", 2.0, {"feature_epsilon": 2.0}),
    ("solitude", "sage", 2.0, {"feature_epsilon": 2.0}),
    ("features-dpsgd", "mlp", 4.0, {"epochs": 3}),
    ("gap-ndp", "mlp", 4.0, {"epochs": 3, "encoder_epochs": 2, "max_degree": 100}),
    ("sage-ndp", "mlp", 4.0, {"epochs": 2, "max_degree": 100}),
]


def _config(method: str, model: str, eps: float | None, extra: dict) -> RunConfig:
    return RunConfig(dataset="csbm", method=method, model=model, epsilon=eps, seed=3,
                     params={**FAST, **extra})


@pytest.mark.parametrize("method,model,eps,extra", RUNS)
def test_same_seed_same_numbers_on_cuda(method: str, model: str, eps: float | None,
                                        extra: dict) -> None:
    config = _config(method, model, eps, extra)
    one = execute_run(config, device="cuda")
    two = execute_run(config, device="cuda")
    assert one.info["device"].startswith("cuda")
    assert one.metrics == two.metrics
    assert one.privacy == two.privacy


def test_graph_classification_on_cuda_is_deterministic() -> None:
    config = RunConfig(task="graph", dataset="MUTAG", method="none", model="gin", seed=0,
                       params={"epochs": 5})
    try:
        one = execute_run(config, device="cuda")
    except DatasetError as e:  # the dataset files may be absent here
        pytest.skip(f"MUTAG not available: {e}")
    assert one.metrics == execute_run(config, device="cuda").metrics


@pytest.mark.parametrize("method,model,eps,tol", [("none", "gcn", None, 0.05),
                                                  ("none", "sage", None, 0.05),
                                                  ("features-dpsgd", "mlp", 8.0, 0.1)])
def test_cuda_accuracy_is_close_to_the_cpu(method: str, model: str, eps: float | None,
                                           tol: float) -> None:
    config = RunConfig(dataset="csbm", method=method, model=model, epsilon=eps, seed=0,
                       params={"epochs": 100, "patience": 100} if method == "none"
                       else {"epochs": 20})
    cpu = execute_run(config, device="cpu").metrics["test_accuracy"]
    cuda = execute_run(config, device="cuda").metrics["test_accuracy"]
    assert abs(cpu - cuda) <= tol, (cpu, cuda)


def test_trainers_put_the_tensors_on_the_gpu_and_give_the_model_back() -> None:
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.normal(size=(50, 4)).astype(np.float32))
    y = torch.from_numpy(np.repeat([0, 1], 25))
    ei = torch.tensor(np.stack(np.nonzero(np.triu(rng.random((50, 50)) < 0.1, 1))))
    cuda = resolve_device("cuda")
    g = PreparedGraph(ei, 50).to(cuda)
    xs = x.to(cuda)
    assert g.gcn_adj().device == cuda
    seen = set()

    def forward(m: torch.nn.Module) -> torch.Tensor:
        seen.add(module_device(m))
        return m(xs, g)

    model = build_node_model("gcn", 4, 2)
    idx = torch.arange(50)
    train_node_classifier(model, forward, y, idx[:25], idx[25:35], idx[35:],
                          TrainConfig(epochs=5, patience=None), seed=0, device="cuda")
    assert seen == {cuda} and module_device(model) == torch.device("cpu")

    params = []
    for _ in range(2):  # the same seed: the same noise on the GPU
        mlp = DecoupledMLP(4, 2, hidden=8, num_layers=2, dropout=0.0)
        train_dpsgd(mlp, mlp_example_loss, (x, y),
                    DPSGDConfig(epochs=2, batch_size=10, noise_multiplier=1.0),
                    rng=make_rng(1), accountant=Accountant(delta=1e-5), device="cuda")
        assert module_device(mlp) == torch.device("cpu")
        params.append([p.detach().clone() for p in mlp.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*params, strict=True))


def test_cli_train_on_cuda(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "train", "--dataset", "csbm", "--json", "-p", "epochs=5",
                             "--device", "cuda")
    assert code == 0, err
    assert json.loads(out)["info"]["device"].startswith("cuda")
    code, out, err = run_cli(capsys, "train", "--dataset", "csbm", "--json", "-p", "epochs=5",
                             "--device", "auto")
    assert code == 0 and json.loads(out)["info"]["device"].startswith("cuda")


def test_edge_operator_on_cuda_is_deterministic_and_close_to_the_cpu() -> None:
    """Solitude's propagation (dpgl.graph.edge_operator) under the trainers' mode: the product
    and both gradients twice bit for bit on CUDA, and within rounding of the CPU's."""
    from dpgl.device import seeded
    from dpgl.graph.edge_operator import EdgeOperator

    g = torch.Generator().manual_seed(0)
    n, e = 500, 20000
    ei = torch.randint(0, n, (2, e), generator=g)
    w0, x0 = torch.rand(e, generator=g), torch.randn(n, 8, generator=g)
    results = []
    for dev in ("cpu", "cuda", "cuda"):
        with seeded(0, dev):
            op = EdgeOperator(ei.to(dev), n)
            w, x = w0.to(dev).requires_grad_(), x0.to(dev).requires_grad_()
            out = op(w, x)
            (out * out).sum().backward()
            results.append([t.detach().cpu() for t in (out, w.grad, x.grad)])
    for a, b in zip(results[1], results[2], strict=True):
        assert torch.equal(a, b)
    for a, b in zip(results[0], results[1], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
