"""Mutation closers (docs/mutation.md): DP-SGD draws N(0, (z C)^2) per coordinate, clips every
example to C, samples each example with rate q = B / N (public N) for epochs * ceil(N / B)
steps, and charges exactly that (steps taken, q, z) to the active accountant."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from dpgl.privacy import Accountant, Unit, gaussian_epsilon
from dpgl.privacy.multiterm import multiterm_epsilon
from dpgl.train.dpsgd import DPSGDAccounting, DPSGDConfig, clip_and_sum, train_dpsgd


def _zero_loss(model_fn, x):
    """A loss whose gradient is 0: the released sum is the noise alone."""
    return 0.0 * model_fn(x[None]).sum()


def _big_loss(model_fn, x):
    """Gradient 1000 x (norm >> C): every example is clipped to norm C."""
    return 1000.0 * model_fn(x[None]).sum()


def _model(d: int = 50) -> nn.Module:
    return nn.Linear(d, 1, bias=False)


def test_noise_std_is_noise_multiplier_times_clip_and_every_step_is_charged() -> None:
    z, clip, n, public, batch, epochs = 1.7, 0.6, 30, 200, 20, 2
    cfg = DPSGDConfig(lr=0.01, epochs=epochs, batch_size=batch, clip=clip,
                      noise_multiplier=z, public_size=public)
    released: list[torch.Tensor] = []
    acc = Accountant(delta=1e-5)
    with acc.active():
        res = train_dpsgd(_model(400), _zero_loss, (torch.randn(n, 400),), cfg,
                          rng=np.random.default_rng(0),
                          on_step=lambda t, noisy: released.append(noisy["weight"].clone()))
    steps = epochs * math.ceil(public / batch)
    assert res.steps == steps == len(released)
    assert res.sampling_rate == pytest.approx(batch / public)
    noise = torch.cat([r.flatten() for r in released])
    assert float(noise.std()) == pytest.approx(z * clip, rel=0.03)
    assert abs(float(noise.mean())) < 0.05 * z * clip
    report = acc.report()
    total = report.total(Unit.NODE_DP)
    assert total is not None
    want = gaussian_epsilon(z, 1e-5, steps=steps, sampling_rate=batch / public)
    assert total.epsilon == pytest.approx(want, rel=1e-6)
    (entry,) = report.entries
    assert entry.count == steps


def test_poisson_batches_have_the_public_rate() -> None:
    cfg = DPSGDConfig(lr=0.01, epochs=30, batch_size=12, clip=1.0, noise_multiplier=1.0,
                      public_size=40)
    res = train_dpsgd(_model(3), _zero_loss, (torch.randn(40, 3),), cfg,
                      rng=np.random.default_rng(1))
    assert res.steps == 30 * math.ceil(40 / 12)
    assert res.mean_batch_size == pytest.approx(12.0, rel=0.08)


def test_each_example_is_clipped_to_c_before_summing() -> None:
    clip, n = 0.5, 8
    cfg = DPSGDConfig(lr=0.01, epochs=1, batch_size=n, clip=clip, noise_multiplier=1e-6)
    x = torch.ones(n, 4)
    sums: list[torch.Tensor] = []
    train_dpsgd(_model(4), _big_loss, (x,), cfg, rng=np.random.default_rng(2),
                on_step=lambda t, noisy: sums.append(noisy["weight"].clone()))
    (s,) = sums
    # q = 1: every example is in the step; each contributes exactly norm C, all aligned
    assert float(s.norm()) == pytest.approx(n * clip, rel=1e-4)
    grads = {"w": torch.tensor([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])}
    summed, norms = clip_and_sum(grads, 1.0)
    assert torch.allclose(norms, torch.tensor([5.0, 0.5, 0.0]))
    assert torch.allclose(summed["w"], torch.tensor([0.6 + 0.3, 0.8 + 0.4]), atol=1e-6)


def test_interrupted_training_charges_the_steps_it_released() -> None:
    cfg = DPSGDConfig(lr=0.01, epochs=5, batch_size=5, clip=1.0, noise_multiplier=2.0,
                      public_size=10)

    def stop(t: int, noisy: dict[str, torch.Tensor]) -> None:
        if t == 3:
            raise KeyboardInterrupt

    acc = Accountant(delta=1e-5)
    with acc.active(), pytest.raises(KeyboardInterrupt):
        train_dpsgd(_model(3), _zero_loss, (torch.randn(10, 3),), cfg,
                    rng=np.random.default_rng(3), on_step=stop)
    total = acc.report().total(Unit.NODE_DP)
    assert total is not None
    assert total.epsilon == pytest.approx(gaussian_epsilon(2.0, 1e-5, steps=4,
                                                           sampling_rate=0.5), rel=1e-6)


@pytest.mark.parametrize("max_other", [0, 3])
def test_accounting_charges_the_curve_of_its_examples_per_unit(max_other: int) -> None:
    acc = Accountant(delta=1e-5)
    DPSGDAccounting(Unit.EDGE_DP, max_other, label="x").charge(acc, 1.3, 0.05, 40)
    DPSGDAccounting(Unit.EDGE_DP, max_other, label="none").charge(acc, 1.3, 0.05, 0)
    DPSGDAccounting(Unit.EDGE_DP, max_other, label="none").charge(None, 1.3, 0.05, 40)
    report = acc.report()
    assert [e.name for e in report.entries] == ["x"]
    total = report.total(Unit.EDGE_DP)
    assert total is not None
    want = (gaussian_epsilon(1.3, 1e-5, steps=40, sampling_rate=0.05) if max_other == 0
            else multiterm_epsilon(1.3, 0.05, 40, max_other, 1e-5))
    assert total.epsilon == pytest.approx(want, rel=1e-6)


def test_config_steps_rate_and_privacy_flag() -> None:
    cfg = DPSGDConfig(epochs=3, batch_size=7, noise_multiplier=1.0, public_size=50)
    assert cfg.private
    assert cfg.sampling_rate(10) == pytest.approx(7 / 50)
    assert cfg.steps(10) == 3 * math.ceil(50 / 7)
    own = DPSGDConfig(epochs=2, batch_size=7)
    assert not own.private
    assert own.sampling_rate(21) == pytest.approx(1 / 3)
    assert own.steps(21) == 2 * 3
    assert DPSGDConfig(batch_size=100).sampling_rate(10) == 1.0


def test_multiterm_epsilon_uses_the_shifts_it_is_given() -> None:
    from dpgl.privacy.multiterm import multiterm_rdp, rdp_to_epsilon

    for own, other in ((0.5, 2.0), (1.0, 3.0)):
        curve = multiterm_rdp(1.1, 0.05, 2, own_shift=own, other_shift=other) * 30
        got = multiterm_epsilon(1.1, 0.05, 30, 2, 1e-5, own_shift=own, other_shift=other)
        assert got == pytest.approx(rdp_to_epsilon(curve, 1e-5))
    base = multiterm_epsilon(1.1, 0.05, 30, 2, 1e-5)
    assert multiterm_epsilon(1.1, 0.05, 30, 2, 1e-5, other_shift=3.0) > base
    assert multiterm_epsilon(1.1, 0.05, 30, 2, 1e-5, own_shift=2.0) > base
