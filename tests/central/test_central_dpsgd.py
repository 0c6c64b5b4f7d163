"""DP-SGD with torch.func per-sample gradients (dpgl.train.dpsgd), the charge the trainer makes
for the noise it drew, and node-level accounting (dpgl.privacy.multiterm / amplification)."""

import math

import dp_accounting
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dpgl.central.accounting import kairouz_total_epsilon
from dpgl.errors import ConfigError
from dpgl.nn.decoupled import (
    SAGE1,
    DecoupledMLP,
    dpar_example_loss,
    mlp_example_loss,
    sage_example_loss,
)
from dpgl.privacy import (
    Accountant,
    Unit,
    amplify_by_subsampling,
    gaussian_epsilon,
    subsampled_inner_target,
)
from dpgl.privacy.multiterm import calibrate_multiterm, multiterm_epsilon
from dpgl.train.dpsgd import (
    DPSGDAccounting,
    DPSGDConfig,
    clip_and_sum,
    per_sample_gradients,
    train_dpsgd,
)


def _loop_grads(model, loss_of_example, n):
    out = []
    for i in range(n):
        model.zero_grad()
        loss_of_example(i).backward()
        out.append({k: p.grad.clone() for k, p in model.named_parameters()})
    return out


def test_per_sample_gradients_match_a_loop_dpar_model():
    torch.manual_seed(0)
    m = DecoupledMLP(12, 4, hidden=8)
    feats, w, y = torch.randn(6, 3, 12), torch.rand(6, 3), torch.randint(0, 4, (6,))
    g = per_sample_gradients(m, dpar_example_loss, (feats, w, y))

    def one(i):
        logits = (w[i][:, None] * m(feats[i])).sum(0)
        return F.cross_entropy(logits[None], y[i][None])

    for i, ref in enumerate(_loop_grads(m, one, 6)):
        for k in ref:
            assert torch.allclose(g[k][i], ref[k], atol=1e-6)


def test_per_sample_gradients_match_a_loop_sage_model():
    torch.manual_seed(1)
    m = SAGE1(5, 3, hidden=4, max_degree=2)
    x, nb = torch.randn(4, 5), torch.randn(4, 2, 5)
    mask, y = torch.tensor([[1.0, 0], [1, 1], [0, 0], [1, 1]]), torch.tensor([0, 1, 2, 1])
    g = per_sample_gradients(m, sage_example_loss, (x, nb, mask, y))

    def one(i):
        return F.cross_entropy(m(x[i:i + 1], nb[i:i + 1], mask[i:i + 1]), y[i:i + 1])

    for i, ref in enumerate(_loop_grads(m, one, 4)):
        for k in ref:
            assert torch.allclose(g[k][i], ref[k], atol=1e-6)


def test_clipping_bounds_each_example_contribution():
    torch.manual_seed(0)
    m = DecoupledMLP(10, 3, hidden=8)
    x, y = 50 * torch.randn(20, 10), torch.randint(0, 3, (20,))
    g = per_sample_gradients(m, mlp_example_loss, (x, y))
    clip = 0.5
    total, norms = clip_and_sum(g, clip)
    assert norms.max() > clip                     # clipping is active
    # removing one example changes the sum by at most clip
    for i in range(20):
        keep = torch.arange(20) != i
        rest, _ = clip_and_sum({k: v[keep] for k, v in g.items()}, clip)
        diff = torch.sqrt(sum(((total[k] - rest[k]) ** 2).sum() for k in total))
        assert diff <= clip + 1e-5
    # an example with a small gradient is not rescaled
    small, _ = clip_and_sum({k: v[:1] for k, v in g.items()}, 1e9)
    assert all(torch.allclose(small[k], g[k][0]) for k in small)


def _zero_loss(model_fn, xi, yi):
    return ((model_fn(xi[None]) - yi[None]) ** 2).sum()


def _spy_grads(monkeypatch):
    """Every parameter's gradient at every optimizer step."""
    captured: list[dict[str, torch.Tensor]] = []
    orig = torch.optim.Adam.step

    def spy(self, *a, **k):
        captured.append([p.grad.detach().clone() for p in self.param_groups[0]["params"]])
        return orig(self, *a, **k)

    monkeypatch.setattr(torch.optim.Adam, "step", spy)
    return captured


def test_noise_has_the_calibrated_scale_on_every_parameter(monkeypatch):
    """Zero data gradient: every coordinate of every parameter (weight *and* bias) gets
    N(0, (z C)^2) / (q N). A layer with a bias, so noising only the first parameter fails."""
    torch.manual_seed(0)
    m = torch.nn.Linear(3, 2, bias=True)
    x, y = torch.randn(100, 3), torch.zeros(100, 2)
    captured = _spy_grads(monkeypatch)
    cfg = DPSGDConfig(lr=1e-9, epochs=30, batch_size=10, clip=2.0, noise_multiplier=3.0)

    def flat(model_fn, xi, yi):  # gradient zero for every parameter
        return (model_fn(xi[None]) * 0.0).sum()

    res = train_dpsgd(m, flat, (x, y), cfg, rng=np.random.default_rng(0))
    assert res.steps == 300 and res.sampling_rate == pytest.approx(0.1)
    assert len(captured) == 300
    for i in range(2):  # weight, bias
        values = torch.stack([c[i] for c in captured]).flatten().numpy()
        assert np.std(values) == pytest.approx(3.0 * 2.0 / 10, rel=0.1)
        assert abs(np.mean(values)) < 0.05
    assert 8 < res.mean_batch_size < 12


def test_training_is_deterministic():
    m = torch.nn.Linear(1, 1)
    x, y = torch.randn(50, 1), torch.randn(50, 1)
    cfg = DPSGDConfig(lr=1e-2, epochs=3, batch_size=10, clip=1.0, noise_multiplier=1.0)
    train_dpsgd(m, _zero_loss, (x, y), cfg, rng=np.random.default_rng(5))
    w1 = m.weight.detach().clone()
    train_dpsgd(m, _zero_loss, (x, y), cfg, rng=np.random.default_rng(5))
    assert torch.equal(w1, m.weight.detach())


def test_the_trainer_charges_the_steps_and_noise_it_used():
    m = torch.nn.Linear(2, 1)
    x, y = torch.randn(40, 2), torch.randn(40, 1)
    cfg = DPSGDConfig(lr=1e-2, epochs=4, batch_size=8, clip=1.0, noise_multiplier=1.7,
                      public_size=64)
    acc = Accountant(delta=1e-5)
    with acc.active():
        res = train_dpsgd(m, _zero_loss, (x, y), cfg, rng=np.random.default_rng(1))
    # q and the step count come from the public size, not the 40 examples
    assert res.sampling_rate == pytest.approx(8 / 64) and res.steps == 4 * 8
    expected = gaussian_epsilon(1.7, 1e-5, steps=32, sampling_rate=0.125)
    assert acc.report().total(Unit.NODE_DP).epsilon == pytest.approx(expected, rel=1e-9)
    # the multi-term charge for 1 + 3 examples per unit
    acc2 = Accountant(delta=1e-5)
    with acc2.active():
        train_dpsgd(m, _zero_loss, (x, y), cfg, rng=np.random.default_rng(1),
                    accounting=DPSGDAccounting(Unit.NODE_DP, 3, "multi"))
    assert acc2.report().total(Unit.NODE_DP).epsilon == pytest.approx(
        multiterm_epsilon(1.7, 0.125, 32, 3, 1e-5), rel=1e-9)
    # non-private training charges nothing
    acc3 = Accountant()
    with acc3.active():
        train_dpsgd(m, _zero_loss, (x, y), DPSGDConfig(epochs=1), rng=np.random.default_rng(1))
    assert acc3.report().empty


def test_an_interrupted_run_charges_the_steps_it_released():
    m = torch.nn.Linear(1, 1)
    x, y = torch.randn(30, 1), torch.randn(30, 1)
    cfg = DPSGDConfig(lr=1e-2, epochs=10, batch_size=10, clip=1.0, noise_multiplier=2.0)
    calls = []

    def stop(t, noisy):
        calls.append(t)
        if t == 4:
            raise RuntimeError("stop")

    acc = Accountant(delta=1e-5)
    with acc.active(), pytest.raises(RuntimeError):
        train_dpsgd(m, _zero_loss, (x, y), cfg, rng=np.random.default_rng(0), on_step=stop)
    entry = acc.report().entries[0]
    assert entry.count == 5 == len(calls)


@pytest.mark.slow
def test_nonprivate_path_learns():
    torch.manual_seed(0)
    x = torch.randn(200, 5)
    y = (x[:, 0] > 0).long()
    m = DecoupledMLP(5, 2, hidden=8)
    train_dpsgd(m, mlp_example_loss, (x, y), DPSGDConfig(lr=0.05, epochs=5, batch_size=50),
                rng=np.random.default_rng(0))
    assert (m(x).argmax(1) == y).float().mean() > 0.9


def test_bad_config():
    x = torch.randn(20, 5)
    y = (x[:, 0] > 0).long()
    m = DecoupledMLP(5, 2, hidden=8)
    with pytest.raises(ConfigError):
        DPSGDConfig(lr=0)
    with pytest.raises(ConfigError):
        train_dpsgd(m, mlp_example_loss, (x[:0], y[:0]), DPSGDConfig(),
                    rng=np.random.default_rng(0))


# ------------------------------------------------------------------------- accounting


def test_multiterm_reduces_to_the_gaussian_without_sampling():
    for steps in (1, 10):
        assert multiterm_epsilon(1.3, 1.0, steps, 0, 1e-5) == pytest.approx(
            gaussian_epsilon(1.3, 1e-5, steps=steps), rel=1e-3)
    # m other rows with shift 2C each, q = 1: a Gaussian of sensitivity (1 + 2m) C
    assert multiterm_epsilon(5.0, 1.0, 3, 2, 1e-5) == pytest.approx(
        gaussian_epsilon(1.0, 1e-5, steps=3), rel=1e-3)


def test_multiterm_grows_with_terms_and_upper_bounds_the_sampled_gaussian():
    base = gaussian_epsilon(2.0, 1e-5, steps=200, sampling_rate=0.05)
    e0 = multiterm_epsilon(2.0, 0.05, 200, 0, 1e-5)
    e2 = multiterm_epsilon(2.0, 0.05, 200, 2, 1e-5)
    assert base <= e0 < e2


def test_calibrate_multiterm_meets_target():
    z = calibrate_multiterm(2.0, 1e-5, 0.05, 300, 3)
    assert multiterm_epsilon(z, 0.05, 300, 3, 1e-5) <= 2.0
    assert multiterm_epsilon(z * 0.99, 0.05, 300, 3, 1e-5) > 2.0


def test_amplification_and_its_inverse():
    eps, delta = amplify_by_subsampling(3.0, 1e-3, 0.09)
    assert eps == pytest.approx(math.log(1 + 0.09 * (math.e ** 3 - 1)))
    assert delta == pytest.approx(9e-5)
    inner = subsampled_inner_target(eps, delta, 0.09)
    assert inner[0] == pytest.approx(3.0) and inner[1] == pytest.approx(1e-3)
    big, _ = amplify_by_subsampling(1000.0, 0.0, 0.09)
    assert big == pytest.approx(1000 + math.log(0.09))


def test_kairouz_formula_inverts():
    x = kairouz_total_epsilon(0.2, 70, 1e-3)
    assert x / (2 * math.sqrt(70 * math.log(math.e + x / 1e-3))) == pytest.approx(0.2)


def test_features_dpsgd_report_matches_dp_accounting(tmp_path):
    from dpgl.experiments.config import RunConfig
    from dpgl.experiments.execute import execute_run

    r = execute_run(RunConfig(dataset="csbm", method="features-dpsgd", model="mlp",
                              epsilon=2.0, seed=0,
                              params={"epochs": 1, "batch_size": 400, "delta": 1e-4}))
    info = r.info
    acc = dp_accounting.rdp.RdpAccountant()
    acc.compose(dp_accounting.PoissonSampledDpEvent(
        info["sgd_sampling_rate"], dp_accounting.GaussianDpEvent(info["noise_multiplier"])),
        info["sgd_steps"])
    expected = acc.get_epsilon(1e-4)
    total = r.privacy["totals"]["node-DP"]["epsilon"]
    assert total == pytest.approx(expected, rel=1e-9)
    assert total <= 2.0 + 1e-9
