"""DP-SGD with per-sample gradients from ``torch.func`` (Abadi et al. 2016; DPAR Alg. 2).

Every step draws a *Poisson* sample of the examples (each independently with rate
q = batch_size / N, the sampling model of dp-accounting's ``PoissonSampledDpEvent`` and of
:meth:`dpgl.privacy.Accountant.spend_gaussian` with ``sampling="poisson"``), computes one
gradient per example with ``vmap(grad(loss))`` over ``functional_call``, clips each to l2 norm
``clip`` (all parameters together), sums them, adds N(0, (noise_multiplier * clip)^2) to every
coordinate and divides by the *expected* batch size q N (a public constant, so the division is
post-processing). The noisy mean gradient drives Adam (post-processing). The number of steps
is ``epochs * ceil(N / batch_size)``.

The sampling rate and the number of steps come from a *public* dataset size
(``DPSGDConfig.public_size``; under node-level DP the number of present nodes is private).
The trainer is the object that draws the noise, so it charges the active accountant when it
has run (:class:`DPSGDAccounting`): a dp-accounting Poisson-subsampled Gaussian event over the
steps actually taken when one protected unit changes one example, or the multi-term RDP
curve (:mod:`dpgl.privacy.multiterm`) when it can change ``1 + max_other`` examples.

With ``noise_multiplier=None`` the same model is trained without privacy: shuffled batches,
mean loss, no clipping or noise (the non-private counterparts of the DP methods); nothing is
charged (the method declares the data as used as is).

The example loss is ``example_loss(model_fn, *example) -> scalar`` where ``model_fn(*inputs)``
runs the model functionally with the current parameters; ``example`` holds one example's
tensors (no batch dimension) sliced from ``data``. A loss may carry a batched form (its
``batched`` attribute: per-example losses of a whole batch in one ordinary forward pass);
then, for a model whose parameters all sit in linear layers, the clipped sum is computed
exactly without per-example gradients (:func:`linear_clipped_sum`: Gram matrices of each
layer's inputs and output gradients give the per-example norms). Same sum up to float
rounding; ~10x less CPU for DPAR's MLP on 6,805 features.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from dpgl import progress
from dpgl.device import module_device, seeded, target_device
from dpgl.errors import ConfigError
from dpgl.privacy import Accountant, Unit, current_accountant
from dpgl.privacy.multiterm import multiterm_rdp

__all__ = [
    "DPSGDAccounting",
    "DPSGDConfig",
    "DPSGDResult",
    "DPSGDStep",
    "clip_and_sum",
    "clipped_gradient_sum",
    "linear_clipped_sum",
    "observe_dpsgd",
    "per_sample_gradients",
    "train_dpsgd",
]

ExampleLoss = Callable[..., torch.Tensor]


@dataclass(frozen=True)
class DPSGDStep:
    """What one private step releases, for white-box privacy audits (:func:`observe_dpsgd`):
    the step index, the accounting label of the run (e.g. "encoder DP-SGD"), the parameters
    *before* the step (detached copies), the noisy gradient sum and the trainer's settings."""

    t: int
    label: str
    params: dict[str, torch.Tensor]
    noisy_sum: dict[str, torch.Tensor]
    model: nn.Module
    example_loss: ExampleLoss
    clip: float
    sigma: float


_OBSERVERS: contextvars.ContextVar[tuple[Callable[[DPSGDStep], None], ...]] = \
    contextvars.ContextVar("dpgl_dpsgd_observers", default=())


@contextlib.contextmanager
def observe_dpsgd(callback: Callable[[DPSGDStep], None]) -> Iterator[None]:
    """Call ``callback(step)`` for every private step of every :func:`train_dpsgd` run inside
    the block (the methods' own code path; used by :mod:`dpgl.audit.central`). Observing
    changes nothing the trainer draws or computes."""
    token = _OBSERVERS.set((*_OBSERVERS.get(), callback))
    try:
        yield
    finally:
        _OBSERVERS.reset(token)


@dataclass(frozen=True)
class DPSGDConfig:
    """DP-SGD hyper-parameters (DPAR Sec. 5: lr 0.005, batch 60, clip C = 1, 200 epochs)."""

    lr: float = 0.005
    epochs: int = 200
    batch_size: int = 60
    clip: float = 1.0
    noise_multiplier: float | None = None  # None: non-private training
    weight_decay: float = 0.0
    #: the public number of examples that sets the sampling rate B / N and the number of
    #: steps (None: the number of examples given, for non-private training and tests)
    public_size: int | None = None

    def __post_init__(self) -> None:
        if self.lr <= 0 or self.epochs < 1 or self.batch_size < 1 or self.clip <= 0:
            raise ConfigError("DP-SGD needs lr > 0, epochs >= 1, batch_size >= 1, clip > 0")
        if self.noise_multiplier is not None and self.noise_multiplier <= 0:
            raise ConfigError(f"noise_multiplier must be > 0, got {self.noise_multiplier}")
        if self.weight_decay < 0:
            raise ConfigError("weight_decay must be >= 0")
        if self.public_size is not None and int(self.public_size) < 1:
            raise ConfigError(f"public_size must be >= 1, got {self.public_size}")

    @classmethod
    def of(cls, params: Any, *, public_size: int, noise_multiplier: float | None = None,
           epochs: int | None = None) -> DPSGDConfig:
        """The configuration a method's parameters describe (``lr``, ``epochs``,
        ``batch_size``, ``clip``, ``weight_decay``), on ``public_size`` examples, with
        ``noise_multiplier`` (None: non-private) and ``epochs`` (default: the parameters')."""
        return cls(lr=params.lr, epochs=params.epochs if epochs is None else epochs,
                   batch_size=params.batch_size, clip=params.clip,
                   noise_multiplier=noise_multiplier, weight_decay=params.weight_decay,
                   public_size=public_size)

    @property
    def private(self) -> bool:
        return self.noise_multiplier is not None

    def _size(self, num_examples: int) -> int:
        return int(self.public_size) if self.public_size is not None \
            else max(int(num_examples), 1)

    def sampling_rate(self, num_examples: int) -> float:
        """q = B / N with N the public size (else ``num_examples``)."""
        return min(1.0, self.batch_size / self._size(num_examples))

    def steps(self, num_examples: int) -> int:
        """epochs * ceil(N / B) with N the public size (else ``num_examples``)."""
        return self.epochs * math.ceil(self._size(num_examples) / self.batch_size)


@dataclass(frozen=True)
class DPSGDAccounting:
    """What one protected unit can change in DP-SGD, and how the run is charged.

    ``max_other``: examples other than its own that one unit can change (0: one example per
    unit, a dp-accounting Poisson-subsampled Gaussian event; > 0: the multi-term RDP bound,
    own shift C, others 2 C, :func:`dpgl.privacy.multiterm.multiterm_rdp`).
    """

    unit: Unit = Unit.NODE_DP
    max_other: int = 0
    label: str = "DP-SGD"

    def __post_init__(self) -> None:
        if int(self.max_other) < 0:
            raise ConfigError(f"max_other must be >= 0, got {self.max_other}")

    def charge(self, accountant: Accountant | None, noise_multiplier: float,
               sampling_rate: float, steps: int) -> None:
        """Record ``steps`` noisy steps at this noise multiplier and Poisson rate."""
        if accountant is None or steps < 1:
            return
        if self.max_other == 0:
            accountant.spend_gaussian(self.label, noise_multiplier=noise_multiplier,
                                      steps=steps, sampling_rate=sampling_rate,
                                      sampling="poisson", unit=self.unit,
                                      sensitivity_note="one example per protected unit: "
                                                       "per-example clip C, Poisson sampling")
        else:
            curve = multiterm_rdp(noise_multiplier, sampling_rate, self.max_other) * steps
            accountant.spend_rdp(
                self.label, curve, unit=self.unit,
                mechanism=(f"multi-term DP-SGD, 1 + {self.max_other} examples per unit, "
                           f"noise multiplier {noise_multiplier:.4g}, Poisson rate "
                           f"{sampling_rate:.4g}, {steps} steps"),
                details="own example shift C, each other 2 C (docs/node-dp.md)")


def _ticking(on_step: Callable[[int, dict[str, torch.Tensor]], None] | None,
              bar: progress.Step) -> Callable[[int, dict[str, torch.Tensor]], None]:
    """``on_step`` (if any), then one step of progress."""
    def tick(t: int, noisy: dict[str, torch.Tensor]) -> None:
        if on_step is not None:
            on_step(t, noisy)
        bar.advance()

    return tick


def _private_steps(model: nn.Module, example_loss: ExampleLoss, data: tuple[torch.Tensor, ...],
                   config: DPSGDConfig, opt: torch.optim.Optimizer, rng: np.random.Generator,
                   noise_gen: torch.Generator, q: float, steps: int, sigma: float,
                   expected: float, sizes: list[int],
                   on_step: Callable[[int, dict[str, torch.Tensor]], None] | None,
                   taken: list[int]) -> None:
    """The DP-SGD loop (Abadi et al. 2016, Alg. 1 with Poisson sampling); counts the noisy
    steps released in ``taken[0]``."""
    n = int(data[0].size(0))
    device = data[0].device
    for t in range(steps):
        idx = torch.from_numpy(np.flatnonzero(rng.random(n) < q)).to(device)
        sizes.append(int(idx.numel()))
        if idx.numel():
            summed = clipped_gradient_sum(model, example_loss, tuple(x[idx] for x in data),
                                          config.clip)
        else:
            summed = {k: torch.zeros_like(p) for k, p in model.named_parameters()}
        # the noise: N(0, sigma^2) per coordinate from the generator of the parameters' device
        noisy = {name: summed[name] + sigma * torch.randn(p.shape, generator=noise_gen,
                                                          device=p.device)
                 for name, p in model.named_parameters()}
        taken[0] += 1
        if on_step is not None:
            on_step(t, noisy)
        opt.zero_grad()
        for name, p in model.named_parameters():
            p.grad = noisy[name] / expected
        opt.step()


@dataclass
class DPSGDResult:
    steps: int
    sampling_rate: float
    noise_multiplier: float | None
    seconds: float
    mean_batch_size: float
    losses: list[float] = field(default_factory=list)


def _functional(model: nn.Module) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    return params, buffers


def per_sample_gradients(model: nn.Module, example_loss: ExampleLoss,
                         batch: tuple[torch.Tensor, ...], *,
                         randomness: str = "different") -> dict[str, torch.Tensor]:
    """One gradient per example: ``{name: tensor of shape [B, *param.shape]}`` computed with
    ``vmap(grad(loss))`` over ``functional_call`` (no per-example Python loop)."""
    params, buffers = _functional(model)

    def loss(p: dict[str, torch.Tensor], *example: torch.Tensor) -> torch.Tensor:
        def model_fn(*inputs: Any) -> Any:
            return functional_call(model, (p, buffers), inputs)
        return example_loss(model_fn, *example)

    in_dims = (None, *([0] * len(batch)))
    return vmap(grad(loss), in_dims=in_dims, randomness=randomness)(params, *batch)


def clip_and_sum(grads: dict[str, torch.Tensor], clip: float) -> tuple[dict[str, torch.Tensor],
                                                                      torch.Tensor]:
    """Clip every per-sample gradient (all parameters jointly) to l2 norm ``clip`` and sum over
    the batch. Returns (summed clipped gradients, per-sample norms before clipping)."""
    values = list(grads.values())
    if not values or values[0].size(0) == 0:
        return ({k: g.new_zeros(g.shape[1:]) for k, g in grads.items()},
                values[0].new_zeros(0) if values else torch.zeros(0))
    sq = sum(g.reshape(g.size(0), -1).pow(2).sum(dim=1) for g in values)
    norms = torch.as_tensor(sq).sqrt()
    factor = (clip / (norms + 1e-12)).clamp(max=1.0)
    summed = {k: torch.tensordot(factor, g, dims=1) for k, g in grads.items()}
    return summed, norms


def clipped_gradient_sum(model: nn.Module, example_loss: ExampleLoss,
                         batch: tuple[torch.Tensor, ...], clip: float
                         ) -> dict[str, torch.Tensor]:
    """The sum over the batch of every example's gradient clipped to l2 norm ``clip`` (all
    parameters jointly): :func:`linear_clipped_sum` when ``example_loss`` has a batched form
    (its ``batched`` attribute) and the model qualifies, else :func:`per_sample_gradients` +
    :func:`clip_and_sum`. Both compute the same sum (up to float rounding)."""
    batched = getattr(example_loss, "batched", None)
    if batched is not None:
        fast = linear_clipped_sum(model, batched, batch, clip)
        if fast is not None:
            return fast[0]
    grads = per_sample_gradients(model, example_loss, batch)
    summed, _ = clip_and_sum(grads, clip)
    return summed


def _linear_layers(model: nn.Module) -> list[tuple[str, nn.Linear]] | None:
    """The model's ``nn.Linear`` layers (with their names) if they hold every parameter, the
    model has no buffers and no dropout is active; else None."""
    layers = [(name, m) for name, m in model.named_modules() if isinstance(m, nn.Linear)]
    owned = {id(p) for _, m in layers for p in m.parameters(recurse=False)}
    if not layers or any(id(p) not in owned for p in model.parameters()):
        return None
    if any(True for _ in model.buffers()):
        return None
    if any(isinstance(m, nn.modules.dropout._DropoutNd) and m.training and m.p > 0
           for m in model.modules()):
        return None
    return layers


def linear_clipped_sum(model: nn.Module, batch_loss: Callable[..., torch.Tensor],
                       batch: tuple[torch.Tensor, ...], clip: float
                       ) -> tuple[dict[str, torch.Tensor], torch.Tensor] | None:
    """Per-example clipping without per-example gradients, for models whose parameters all
    sit in ``nn.Linear`` layers (exact; the "ghost clipping" identity of Goodfellow 2015 and
    Li et al. 2022). Returns what ``clip_and_sum(per_sample_gradients(...), clip)`` returns,
    up to float rounding, or None if the model does not qualify (see :func:`_linear_layers`).

    ``batch_loss(model, *batch)`` must return the [B] vector of per-example losses with one
    ordinary forward pass, where example i's loss depends on example i's tensors only and
    every linear layer sees its input batch-first ([B, ..., in]). For a layer, let A_i [P, in]
    be example i's inputs at its P positions and G_i [P, out] the gradients of its loss with
    respect to the layer's outputs there (one backward pass of the summed loss gives all of
    them, since examples do not interact). Example i's weight gradient is G_i^T A_i, whose
    squared norm is sum_pq (A_i A_i^T)_pq (G_i G_i^T)_pq, and its bias gradient sum_p G_i[p];
    so the norms need only P x P Gram matrices (float64 here) and the clipped sum is one
    matrix product (c G)^T A over all positions, c the clip factors. Cost O(B P^2 (in + out)
    + B P in out) instead of materializing B gradients of size in x out.
    """
    layers = _linear_layers(model)
    if layers is None:
        return None
    b = int(batch[0].size(0))
    seen: dict[int, list[tuple[torch.Tensor, torch.Tensor]]] = {id(m): [] for _, m in layers}

    def record(mod: nn.Module, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
        seen[id(mod)].append((inputs[0], output))

    handles = [m.register_forward_hook(record) for _, m in layers]
    try:
        with torch.enable_grad():
            losses = batch_loss(model, *batch)
    finally:
        for h in handles:
            h.remove()
    records = [r for _, m in layers for r in seen[id(m)]]
    if tuple(losses.shape) != (b,) or any(x.dim() < 2 or x.size(0) != b or o.size(0) != b
                                          or not o.requires_grad for x, o in records):
        return None
    outs = [o for _, o in records]
    out_grads = torch.autograd.grad(losses.sum(), outs, allow_unused=True) if outs else ()
    grad_of = {id(o): g for o, g in zip(outs, out_grads, strict=True)}
    sq = torch.zeros(b, dtype=torch.float64, device=batch[0].device)
    per_layer: list[tuple[str, nn.Linear, torch.Tensor, torch.Tensor] | None] = []
    for name, m in layers:
        recs = seen[id(m)]
        if not recs:
            per_layer.append(None)
            continue
        a = torch.cat([x.detach().reshape(b, -1, m.in_features) for x, _ in recs], dim=1)
        g = torch.cat([(torch.zeros_like(o) if grad_of[id(o)] is None else grad_of[id(o)])
                       .reshape(b, -1, m.out_features) for _, o in recs], dim=1)
        a64, g64 = a.double(), g.double()
        if a.size(1) == 1:
            sq += a64.square().sum((1, 2)) * g64.square().sum((1, 2))
        else:
            sq += (torch.bmm(a64, a64.transpose(1, 2))
                   * torch.bmm(g64, g64.transpose(1, 2))).sum((1, 2))
        if m.bias is not None:
            sq += g64.sum(1).square().sum(1)
        per_layer.append((name, m, a, g))
    norms = sq.sqrt().to(torch.float32)
    factor = (clip / (norms + 1e-12)).clamp(max=1.0)
    summed: dict[str, torch.Tensor] = {}
    for (name, m), item in zip(layers, per_layer, strict=True):
        prefix = f"{name}." if name else ""
        if item is None:
            summed[prefix + "weight"] = torch.zeros_like(m.weight)
            if m.bias is not None:
                summed[prefix + "bias"] = torch.zeros_like(m.bias)
            continue
        _, _, a, g = item
        gc = (g * factor[:, None, None]).reshape(-1, m.out_features)
        summed[prefix + "weight"] = gc.T @ a.reshape(-1, m.in_features)
        if m.bias is not None:
            summed[prefix + "bias"] = gc.sum(0)
    names = [k for k, _ in model.named_parameters()]
    if sorted(names) != sorted(summed):
        return None
    return {k: summed[k] for k in names}, norms


def _reset(model: nn.Module) -> None:
    for module in model.modules():
        reset = getattr(module, "reset_parameters", None)
        if callable(reset):
            reset()


def train_dpsgd(model: nn.Module, example_loss: ExampleLoss, data: tuple[torch.Tensor, ...],
                config: DPSGDConfig, *, rng: np.random.Generator,
                reset: bool = True, accounting: DPSGDAccounting | None = None,
                accountant: Accountant | None = None,
                on_step: Callable[[int, dict[str, torch.Tensor]], None] | None = None,
                device: torch.device | str | None = None,
                ) -> DPSGDResult:
    """Train ``model`` in place on ``data`` (tensors whose first dimension indexes the
    examples) with DP-SGD (``config.noise_multiplier`` set) or plain mini-batch Adam.
    Deterministic given ``rng`` on one device: parameters are re-initialized from it
    (``reset``), the torch RNG is forked, Poisson masks come from ``rng`` and noise from a
    torch generator seeded from it. Private training charges ``accountant`` (default: the
    active one) with the steps it took, as ``accounting`` describes (default: one example per
    node). ``on_step(t, noisy_sum)`` sees every released noisy gradient sum (white-box
    audits).

    ``device`` (default :func:`dpgl.device.current_device`): the model is (re-)initialised
    where it is, trained there with ``data`` moved to it, and returned on the device it came
    with. The Poisson masks are drawn on the CPU from ``rng`` whatever the device; the noise
    is drawn on the device from a generator of that device seeded from ``rng`` (same seed,
    same noise on one device; CPU and CUDA streams differ). Noise scale, sampling rate and
    steps, hence the accounting, do not depend on the device."""
    accounting = accounting or DPSGDAccounting()
    acc = accountant if accountant is not None else current_accountant()
    n = int(data[0].size(0))
    if n == 0:
        raise ConfigError("DP-SGD needs at least one training example")
    if any(int(t.size(0)) != n for t in data):
        raise ConfigError("all example tensors must have the same first dimension")
    q = config.sampling_rate(n)
    steps = config.steps(n)
    dev = target_device(device)
    home = module_device(model)
    data = tuple(t.to(dev) for t in data)
    seed = int(rng.integers(0, 2**63 - 1))
    noise_gen = torch.Generator(device=dev)
    noise_gen.manual_seed(int(rng.integers(0, 2**63 - 1)))
    losses: list[float] = []
    sizes: list[int] = []
    start = time.perf_counter()
    with seeded(seed, dev):
        if reset:
            _reset(model)
        model.to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=config.lr,
                               weight_decay=config.weight_decay)
        model.train()
        if config.private:
            sigma = float(config.noise_multiplier) * config.clip  # type: ignore[arg-type]
            expected = q * config._size(n)  # public: q N = B
            taken = [0]  # noisy steps released so far (charged even if training stops)
            observers = _OBSERVERS.get()
            if observers:
                user_step = on_step

                def on_step(t: int, noisy: dict[str, torch.Tensor]) -> None:
                    if user_step is not None:
                        user_step(t, noisy)
                    snap = DPSGDStep(t, accounting.label,
                                     {k: v.detach().clone()
                                      for k, v in model.named_parameters()},
                                     noisy, model, example_loss, config.clip, sigma)
                    for cb in observers:
                        cb(snap)
            try:
                with progress.step(accounting.label, total=steps) as bar:
                    _private_steps(model, example_loss, data, config, opt, rng, noise_gen, q,
                                   steps, sigma, expected, sizes, _ticking(on_step, bar), taken)
            finally:
                accounting.charge(acc, float(config.noise_multiplier),  # type: ignore[arg-type]
                                  q, taken[0])
        else:
            per_epoch = math.ceil(n / config.batch_size)
            for _ in range(config.epochs):
                perm = torch.from_numpy(rng.permutation(n)).to(dev)
                for b in range(per_epoch):
                    idx = perm[b * config.batch_size:(b + 1) * config.batch_size]
                    sizes.append(int(idx.numel()))
                    params = dict(model.named_parameters())
                    buffers = dict(model.named_buffers())

                    def model_fn(*inputs: Any, _p: Any = params, _b: Any = buffers) -> Any:
                        return functional_call(model, (_p, _b), inputs)

                    batch = tuple(t[idx] for t in data)
                    per = vmap(lambda *ex: example_loss(model_fn, *ex),
                               randomness="different")(*batch)
                    loss = per.mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    losses.append(float(loss.detach()))
        model.eval()
    model.to(home)
    return DPSGDResult(steps=steps if config.private else config.epochs * math.ceil(
        n / config.batch_size), sampling_rate=q,
        noise_multiplier=config.noise_multiplier, seconds=time.perf_counter() - start,
        mean_batch_size=float(np.mean(sizes)) if sizes else 0.0, losses=losses)
