"""Randomness. Library code never seeds global state: every random step takes an explicit
``numpy.random.Generator`` (and, for torch, a ``torch.Generator``).

Experiments pass an integer seed, so the same seed gives the same numbers. Deployment uses
*secure mode* (``seed=None`` and ``secure=True``): the generator is seeded from the operating
system's entropy pool (``secrets``/``os.urandom``) at creation, so no seed is stored or
reproducible. NumPy's PCG64 is not a cryptographic generator; secure mode removes the
predictable seed, which is the practical attack surface of a DP deployment. For mechanisms
where floating-point sampling leaks (Mironov 2012), use the exact integer samplers in
``dpgl.privacy`` (discrete Laplace), which only consume random integers/bits.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, TypeAlias

from dpgl.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np
    import torch

SeedLike: TypeAlias = "int | np.random.Generator | None"


def make_rng(seed: SeedLike = None, *, secure: bool = False) -> np.random.Generator:
    """Return a NumPy generator.

    ``seed`` may be an int (reproducible experiments), an existing generator (returned as is),
    or ``None`` together with ``secure=True`` (OS entropy, for deployment). ``None`` without
    ``secure=True`` is refused, so that an experiment never silently becomes irreproducible.
    """
    import numpy as np
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        if not secure:
            raise ConfigError(
                "a seed is required for reproducible runs; pass seed=<int>, or secure=True "
                "to draw from OS entropy (deployment)"
            )
        return np.random.default_rng(secrets.randbits(128))
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.default_rng(int(seed))


def torch_generator(rng: np.random.Generator) -> torch.Generator:
    """A ``torch.Generator`` seeded from ``rng`` (deterministic given ``rng``'s state)."""
    import torch
    g = torch.Generator()
    g.manual_seed(int(rng.integers(0, 2**63 - 1)))
    return g


def spawn(rng: np.random.Generator, n: int) -> list[np.random.Generator]:
    """``n`` independent child generators (NumPy's SeedSequence spawning)."""
    return list(rng.spawn(n))
