"""Where a run's tensors live: ``--device auto|cpu|cuda`` (issue #13, item 8).

A device is an *execution option*, not a hyper-parameter: it is not part of a run's
configuration or key (:meth:`dpgl.experiments.config.RunConfig.key`), and a run's result
records the device it used (``info["device"]``). ``cpu`` is the default everywhere (library
and command line), because it gives the same numbers with the same torch thread count on the
same CPU model (docs/gpu.md: rounding-sensitive runs can move with either); ``auto`` picks CUDA
when torch sees a GPU, ``cuda`` (or ``cuda:N``) asks for one and is an error without it.

What runs on the device: the trainers (:mod:`dpgl.train`: full-batch node classification,
mini-batch graph classification, DP-SGD with its clipping and noise, Solitude's alternating
optimisation) and the propagation they use (:class:`~dpgl.graph.propagation.SparseOperator`,
:class:`~dpgl.nn.prepared.PreparedGraph`, LPGNN's KProp). The users' randomizers, the
server-side estimators (Blink's posterior is NumPy/SciPy, O(n log n) without n x n memory),
dataset loading, splits and DP-SGD's Poisson sampling stay on the CPU: they are NumPy code
drawing from the run's NumPy generator, which is what keeps a run's releases identical
whichever device trains on them.

Randomness: torch generators are per device. The same seed gives the same numbers on one
device (on CUDA the trainers switch torch to its deterministic algorithms while they run), but
CPU and CUDA numbers differ: CUDA draws dropout masks and DP-SGD noise from its own generator
(Philox, not the CPU's Mersenne Twister) and sums in a different order. The privacy
accounting does not depend on the device: the noise scale, sampling rate and step count are
the same.

The trainers take ``device=None``, meaning :func:`current_device`: the device a run set with
:func:`use_device` (:meth:`dpgl.methods.base.Method.fit` does it for ``RunContext.device``),
else the CPU. A trainer initialises the model where it is (so the initial weights are the
same on every device), trains it on the device and returns it on the device it came with.

This module does not import torch at import time, so the command line checks ``--device``
(:func:`check_device`) before any heavy import.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import platform
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from dpgl.errors import ConfigError

if TYPE_CHECKING:
    import torch

__all__ = [
    "DEFAULT_DEVICE",
    "DEVICE_CHOICES",
    "check_device",
    "current_device",
    "execution_environment",
    "module_device",
    "resolve_device",
    "seeded",
    "target_device",
    "to_device",
    "use_device",
]

#: The values of ``--device`` (``cuda:N`` also accepted: the N-th GPU).
DEVICE_CHOICES = ("auto", "cpu", "cuda")
#: The default device: the CPU, for the same numbers wherever the thread count and CPU match.
DEFAULT_DEVICE = "cpu"

_CUDA_INDEX = re.compile(r"cuda:(\d+)")


def cpu_thread_defaults() -> None:
    """Defaults for torch's CPU threads, set before torch is imported (the CLI and the tests
    call this; a user's own OMP_* settings win). Measured on 2-core machines (README "Speed"):

    * threads wait passively between parallel regions: spin-waiting turned a 1 s Cora GCN
      training into 14 s of CPU when another process was running;
    * with at most two cores, one thread: a second one made every measured run slower (idle
      Cora GCN training 0.25 s on one thread, 0.74 s on two; DPAR on Coauthor CS 37 s vs
      177 s).
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if (os.cpu_count() or 1) <= 2:
        os.environ.setdefault("OMP_NUM_THREADS", "1")


def check_device(spec: Any) -> str:
    """``spec`` checked as text, without importing torch: ``auto``, ``cpu``, ``cuda`` or
    ``cuda:N`` (case and surrounding spaces ignored); returns it normalised. A
    ``torch.device`` is accepted as its name. :class:`ConfigError` otherwise."""
    text = str(spec).strip().lower() if spec is not None else ""
    if text in DEVICE_CHOICES or _CUDA_INDEX.fullmatch(text):
        return text
    raise ConfigError(f"unknown device {str(spec)!r}; choose one of: auto, cpu, cuda, cuda:N")


def resolve_device(spec: Any = DEFAULT_DEVICE) -> torch.device:
    """The ``torch.device`` of ``spec`` (see :func:`check_device`): ``auto`` is the current
    CUDA device when torch sees one, else the CPU. ``cuda``/``cuda:N`` without that GPU is a
    one-line :class:`ConfigError`. A CUDA device always carries its index (``cuda:0``)."""
    text = check_device(spec)
    import torch

    if text == "cpu":
        return torch.device("cpu")
    available = torch.cuda.is_available()
    if text == "auto" and not available:
        return torch.device("cpu")
    if not available:
        raise ConfigError(f"device {text!r}: torch sees no CUDA GPU (torch "
                          f"{torch.__version__}); use --device cpu or --device auto")
    match = _CUDA_INDEX.fullmatch(text)
    count = torch.cuda.device_count()
    index = int(match.group(1)) if match else torch.cuda.current_device()
    if index >= count:
        raise ConfigError(f"device {text!r}: torch sees {count} CUDA GPU(s) "
                          f"(cuda:0 to cuda:{count - 1})")
    # cuBLAS is deterministic with a fixed workspace only; it must be set before its first use
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    return torch.device("cuda", index)


def indexed(device: Any) -> torch.device:
    """``device`` as a ``torch.device`` whose CUDA form carries its index (``cuda`` is the
    current one), so that it compares equal to a tensor's ``.device``."""
    import torch

    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return device


_CURRENT: contextvars.ContextVar[Any] = contextvars.ContextVar("dpgl_device", default=None)


@contextlib.contextmanager
def use_device(spec: Any) -> Iterator[torch.device]:
    """Within the block, :func:`current_device` is ``spec`` (resolved): the device the
    trainers use when they are given none."""
    device = resolve_device(spec)
    token = _CURRENT.set(device)
    try:
        yield device
    finally:
        _CURRENT.reset(token)


def current_device() -> torch.device:
    """The device set by the innermost :func:`use_device` block, else the CPU."""
    device = _CURRENT.get()
    if device is None:
        import torch

        return torch.device("cpu")
    return device


def target_device(device: Any = None) -> torch.device:
    """``device`` resolved, or :func:`current_device` when it is None (the trainers'
    ``device=`` argument)."""
    return current_device() if device is None else resolve_device(device)


def module_device(module: Any) -> torch.device:
    """The device of a module's first parameter or buffer (the CPU when it has none)."""
    import torch

    for t in (*module.parameters(), *module.buffers()):
        return t.device
    return torch.device("cpu")


def to_device(obj: Any, device: Any) -> Any:
    """``obj`` on ``device``: tensors, :class:`~dpgl.graph.propagation.SparseOperator`,
    :class:`~dpgl.nn.prepared.PreparedGraph`, PyG ``Data`` and modules (anything with a
    ``.to``), tuples and lists of them; None stays None. On the device it is on already,
    a tensor is returned as is (no copy)."""
    if obj is None:
        return None
    if isinstance(obj, (tuple, list)):
        return type(obj)(to_device(o, device) for o in obj)
    return obj.to(device)


@contextlib.contextmanager
def seeded(seed: int, device: Any) -> Iterator[None]:
    """The trainers' random state: the torch RNG of the CPU (and of ``device`` when it is a
    GPU) is forked and seeded with ``seed``, so the caller's torch state is left untouched
    and the same seed gives the same numbers on one device. On CUDA torch's deterministic
    algorithms are switched on for the block (scatter/index-add sums in a fixed order;
    ``warn_only``: an operation without a deterministic form warns instead of failing) and
    the previous setting is restored afterwards. On the CPU this is exactly
    ``fork_rng(devices=[])`` + ``torch.manual_seed(seed)``."""
    import torch

    device = torch.device(device)
    cuda = device.type == "cuda"
    devices = [device.index if device.index is not None else torch.cuda.current_device()] \
        if cuda else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        if not cuda:
            yield
            return
        mode = torch.are_deterministic_algorithms_enabled()
        warn = torch.is_deterministic_algorithms_warn_only_enabled()
        torch.use_deterministic_algorithms(True, warn_only=True)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(mode, warn_only=warn)


@functools.lru_cache(maxsize=1)
def execution_environment() -> dict[str, str]:
    """What a run's numbers depend on beyond its configuration, the device and the thread
    count: the versions of torch, PyG and NumPy and the CPU model (a float sum's rounding
    follows the kernels each picks; docs/gpu.md). Recorded in every result's ``info``."""
    import numpy
    import torch
    import torch_geometric

    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {"torch": torch.__version__, "torch_geometric": torch_geometric.__version__,
            "numpy": numpy.__version__, "cpu": cpu}
