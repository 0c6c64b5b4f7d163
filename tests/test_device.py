"""``--device auto|cpu|cuda`` (issue #13, item 8) without a GPU: the device names, what
``auto`` picks, the one-line errors, that the device is no part of a run's key, that a run
records it, and that the trainers put their tensors on the chosen device and give the model
back where it was. The CUDA runs themselves are in tests/test_gpu.py (marked ``gpu``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
import torch

from _cli import run_cli
from dpgl.device import (
    DEFAULT_DEVICE,
    check_device,
    current_device,
    module_device,
    resolve_device,
    seeded,
    to_device,
    use_device,
)
from dpgl.errors import ConfigError
from dpgl.experiments.config import RunConfig
from dpgl.experiments.execute import execute_run
from dpgl.graph.propagation import SparseOperator, gcn_normalized_scipy
from dpgl.methods.base import Method, MethodOutput, RunContext
from dpgl.methods.params import NodeParams, Params
from dpgl.nn import PreparedGraph, build_node_model
from dpgl.nn.decoupled import DecoupledMLP, mlp_example_loss
from dpgl.nn.kprop import KPropGNN, LabelPropagationHead
from dpgl.privacy import Accountant
from dpgl.rng import make_rng
from dpgl.train import DPSGDConfig, TrainConfig, train_dpsgd, train_node_classifier


@pytest.fixture()
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch "sees" one CUDA GPU (nothing is run on it). CUBLAS_WORKSPACE_CONFIG, which
    resolving a CUDA device sets, is restored afterwards."""
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)


@pytest.fixture()
def no_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


# ------------------------------------------------------------------ names and resolution


@pytest.mark.parametrize("spec,expected", [("cpu", "cpu"), (" CPU ", "cpu"), ("auto", "auto"),
                                           ("cuda", "cuda"), ("cuda:1", "cuda:1"),
                                           (torch.device("cpu"), "cpu")])
def test_check_device_accepts_the_documented_names(spec: object, expected: str) -> None:
    assert check_device(spec) == expected


@pytest.mark.parametrize("spec", ["tpu", "gpu", "cuda:", "cuda:x", "cuda:-1", "", "mps", None])
def test_check_device_refuses_anything_else_in_one_line(spec: object) -> None:
    with pytest.raises(ConfigError, match="choose one of: auto, cpu, cuda, cuda:N") as e:
        check_device(spec)
    assert "\n" not in str(e.value)


def test_cpu_is_the_default_and_resolves_without_cuda(no_cuda: None) -> None:
    assert DEFAULT_DEVICE == "cpu"
    assert resolve_device() == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")


def test_auto_is_the_cpu_without_cuda(no_cuda: None) -> None:
    assert resolve_device("auto") == torch.device("cpu")


def test_auto_picks_cuda_when_available(fake_cuda: None) -> None:
    assert resolve_device("auto") == torch.device("cuda", 0)
    assert resolve_device("cuda") == torch.device("cuda", 0)  # always with its index
    assert resolve_device("cuda:0") == torch.device("cuda", 0)
    assert resolve_device("cpu") == torch.device("cpu")


def test_cuda_without_cuda_is_a_one_line_error(no_cuda: None) -> None:
    for spec in ("cuda", "cuda:0", "cuda:1"):
        with pytest.raises(ConfigError, match="no CUDA GPU") as e:
            resolve_device(spec)
        assert "\n" not in str(e.value) and "--device cpu" in str(e.value)


def test_a_gpu_index_that_is_not_there_is_an_error(fake_cuda: None) -> None:
    with pytest.raises(ConfigError, match=r"sees 1 CUDA GPU\(s\) \(cuda:0 to cuda:0\)"):
        resolve_device("cuda:1")


def test_use_device_sets_the_current_device_for_the_block(fake_cuda: None) -> None:
    assert current_device() == torch.device("cpu")
    with use_device("cuda") as dev:
        assert dev == current_device() == torch.device("cuda", 0)
        with use_device("cpu"):
            assert current_device() == torch.device("cpu")
        assert current_device() == torch.device("cuda", 0)
    assert current_device() == torch.device("cpu")


class _Probe(Method):
    """Not registered: records the device its fit runs under."""

    name = "probe"
    private = False
    params_for_task: ClassVar[dict[str, type[Params]]] = {"node": NodeParams}
    seen: ClassVar[list[torch.device]] = []

    def fit_node(self, ctx: RunContext) -> MethodOutput:
        self.seen.append(current_device())
        return MethodOutput({})


def test_method_fit_runs_under_the_contexts_device(fake_cuda: None) -> None:
    ctx = RunContext("node", None, "gcn", NodeParams(), None, 0, make_rng(0), Accountant(),
                     device="cuda")
    _Probe.seen.clear()
    _Probe().fit(ctx)
    _Probe().fit(RunContext("node", None, "gcn", NodeParams(), None, 0, make_rng(0),
                            Accountant()))  # the default: the CPU
    assert _Probe.seen == [torch.device("cuda", 0), torch.device("cpu")]
    assert current_device() == torch.device("cpu")


def test_seeded_on_the_cpu_is_fork_and_seed() -> None:
    before = torch.random.get_rng_state()
    with seeded(5, "cpu"):
        a = torch.rand(3)
    assert torch.equal(before, torch.random.get_rng_state())
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(5)
        b = torch.rand(3)
    assert torch.equal(a, b)


# ------------------------------------------------------------------ moving things


def _graph() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    rng = np.random.default_rng(0)
    n = 60
    y = np.repeat([0, 1], n // 2)
    a = np.triu(rng.random((n, n)) < np.where(y[:, None] == y[None, :], 0.2, 0.02), 1)
    a = a | a.T
    x = (rng.normal(size=(n, 6)) + 0.5 * y[:, None]).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y), torch.tensor(np.stack(np.nonzero(a)))


def test_to_device_on_the_same_device_copies_nothing() -> None:
    x, _, ei = _graph()
    g = PreparedGraph(ei, x.size(0))
    op = g.gcn_adj()
    assert g.to("cpu") is g and op.to("cpu") is op and g.device == op.device == torch.device("cpu")
    moved = to_device((x, g, None, [op]), torch.device("cpu"))
    assert moved[0] is x and moved[1] is g and moved[2] is None and moved[3][0] is op


def test_modules_move_their_propagation_matrices() -> None:
    """KProp's model and the label head hold a sparse matrix outside their parameters and
    buffers: ``.to(...)``/``.double()`` (nn.Module's ``_apply``) must move it too."""
    x, _, ei = _graph()
    n = x.size(0)
    op = SparseOperator(gcn_normalized_scipy(ei, n))
    net = KPropGNN(6, 2, propagate=(op, 2))
    head = LabelPropagationHead(net, op.matrix, 1)
    head.double()
    assert net.lin1.weight.dtype == torch.float64
    assert net.propagate is not None and net.propagate[0].matrix.dtype == torch.float64
    assert net.propagate[0].transpose.dtype == torch.float64 and net.propagate[1] == 2
    assert isinstance(head.adj, torch.Tensor) and head.adj.dtype == torch.float64
    head.float()
    assert net.propagate[0].matrix.dtype == torch.float32


def test_node_trainer_runs_on_the_chosen_device_and_gives_the_model_back() -> None:
    x, y, ei = _graph()
    g = PreparedGraph(ei, x.size(0))
    seen: list[tuple[str, str, str]] = []

    def forward(m: torch.nn.Module) -> torch.Tensor:
        seen.append((module_device(m).type, x.device.type, g.device.type))
        return m(x, g)

    def run(**kw: object) -> dict[str, float]:
        model = build_node_model("gcn", 6, 2)
        idx = torch.arange(60)
        out = train_node_classifier(model, forward, y, idx[:30], idx[30:45], idx[45:],
                                    TrainConfig(epochs=10, patience=None), seed=1, **kw)
        assert module_device(model) == torch.device("cpu")
        return out.metrics

    default = run()
    assert run(device="cpu") == default
    with use_device("cpu"):
        assert run() == default
    assert {s for s in seen} == {("cpu", "cpu", "cpu")}


def test_dpsgd_on_the_cpu_device_is_the_default() -> None:
    x, y, _ = _graph()

    def run(**kw: object) -> list[torch.Tensor]:
        model = DecoupledMLP(6, 2, hidden=8, num_layers=2, dropout=0.5)
        cfg = DPSGDConfig(epochs=2, batch_size=10, clip=1.0, noise_multiplier=1.0)
        acc = Accountant(delta=1e-5)
        train_dpsgd(model, mlp_example_loss, (x, y), cfg, rng=make_rng(3), accountant=acc,
                    **kw)
        assert module_device(model) == torch.device("cpu")
        return [p.detach().clone() for p in model.parameters()]

    default = run()
    for other in (run(device="cpu"), run()):
        assert all(torch.equal(a, b) for a, b in zip(default, other, strict=True))


# ------------------------------------------------------------------ runs and the CLI

FAST = {"epochs": 5, "patience": 5}


def test_a_run_records_its_device_which_is_not_part_of_its_key() -> None:
    config = RunConfig(dataset="csbm", method="none", model="gcn", seed=0, params=FAST)
    default = execute_run(config)
    on_cpu = execute_run(config, device="cpu")
    assert default.metrics == on_cpu.metrics
    assert default.info["device"] == on_cpu.info["device"] == "cpu"
    assert "device" not in config.canonical()
    with pytest.raises(ConfigError, match="unknown key 'device'"):
        RunConfig(dataset="csbm", device="cpu")  # an execution option, not a run field


def test_a_run_records_its_torch_thread_count() -> None:
    """CPU float sums are split by thread, so the thread count is part of what a stored
    number depends on: the run says which it ran with."""
    config = RunConfig(dataset="csbm", method="none", model="gcn", seed=0, params=FAST)
    before = torch.get_num_threads()
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            assert execute_run(config).info["torch_threads"] == n
    finally:
        torch.set_num_threads(before)


def test_a_run_records_its_library_versions_and_cpu() -> None:
    """The same configuration, device and thread count give the same numbers only with the
    same torch / PyG / NumPy kernels on the same CPU model: the run says which it had."""
    import numpy
    import torch_geometric

    config = RunConfig(dataset="csbm", method="none", model="gcn", seed=0, params=FAST)
    env = execute_run(config).info["environment"]
    assert env["torch"] == torch.__version__
    assert env["torch_geometric"] == torch_geometric.__version__
    assert env["numpy"] == numpy.__version__
    assert env["cpu"] and env["cpu"] != "unknown"


def test_execute_run_refuses_a_bad_device_before_any_work(no_cuda: None) -> None:
    config = RunConfig(dataset="no-such-dataset", method="none", seed=0)
    with pytest.raises(ConfigError, match="unknown device 'tpu'"):
        execute_run(config, device="tpu")
    with pytest.raises(ConfigError, match="no CUDA GPU"):
        execute_run(config, device="cuda")


def _one_line_error(code: int, err: str, needle: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], err


GRID = "name: g\ndatasets: [csbm]\nmethods: [none]\nseeds: 1\nparams: {epochs: 2}\n"


@pytest.mark.parametrize("device,needle", [("tpu", "unknown device 'tpu'"),
                                           ("cuda", "no CUDA GPU"),
                                           ("cuda:1", "no CUDA GPU")])
def test_cli_device_errors_are_one_line_with_exit_code_2(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, no_cuda: None, device: str,
        needle: str) -> None:
    code, _, err = run_cli(capsys, "train", "--dataset", "csbm", "--device", device)
    _one_line_error(code, err, needle)
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID)
    store = tmp_path / "store" / "runs.sqlite"
    code, _, err = run_cli(capsys, "run", str(grid), "--store", str(store), "--device", device)
    _one_line_error(code, err, needle)
    assert not store.parent.exists()  # refused before any output was created
    code, _, err = run_cli(capsys, "demo", "--output", str(tmp_path / "demo"), "--device",
                           device)
    _one_line_error(code, err, needle)
    assert not (tmp_path / "demo").exists()


def test_cli_train_device_cpu_equals_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("train", "--dataset", "csbm", "--seed", "2", "--json", "-p", "epochs=5")
    code, out, _ = run_cli(capsys, *args)
    code2, out2, _ = run_cli(capsys, *args, "--device", "cpu")
    code3, out3, _ = run_cli(capsys, *args, "--device", "auto")
    assert code == code2 == code3 == 0
    one, two = json.loads(out), json.loads(out2)
    assert one["metrics"] == two["metrics"] and one["config"] == two["config"]
    assert "device" not in one["config"]
    assert one["info"]["device"] == two["info"]["device"] == "cpu"
    if not torch.cuda.is_available():
        assert json.loads(out3)["metrics"] == one["metrics"]


def test_cli_run_with_a_device_reuses_the_stored_runs(capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path) -> None:
    """The device is no part of a run's key: the same grid on another device (here the CPU
    named explicitly) finds its runs finished."""
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID)
    store = tmp_path / "runs.sqlite"
    code, _, err = run_cli(capsys, "run", str(grid), "--store", str(store), "-q")
    assert code == 0 and "1 ran" in err
    code, _, err = run_cli(capsys, "run", str(grid), "--store", str(store), "-q",
                           "--device", "cpu")
    assert code == 0 and "1 already stored, 0 ran" in err
