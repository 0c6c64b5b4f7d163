"""Counter-based random streams for blocks of users (issue #15).

A sharded simulation must give the same output whatever the number of partitions or
workers. Each block of users therefore draws from its own stream, fixed by the run's seed,
the stage's name and the block's index, never from a generator handed from block to block:
NumPy's Philox-4x64 counter-based generator (Salmon et al., "Parallel random numbers: as easy
as 1, 2, 3", SC 2011) with a 128-bit key derived from (seed, stage) and the block's index in
the counter's top word. Streams of different blocks are disjoint counter ranges of one key
(each block may draw 2^192 values before it could reach the next block's range), so they are
independent, and a block's stream costs nothing to create on any worker.
"""

from __future__ import annotations

import hashlib

import numpy as np

from dpgl.errors import ConfigError

__all__ = ["block_generator", "check_seed", "stream_key"]


def check_seed(seed: object) -> int:
    """A run's seed: a non-negative integer."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def stream_key(seed: int, stage: str) -> np.ndarray:
    """The 128-bit Philox key of stage ``stage`` of the run seeded ``seed``."""
    seed = check_seed(seed)
    if not isinstance(stage, str) or not stage:
        raise ConfigError(f"a stream needs a non-empty stage name, got {stage!r}")
    tag = int.from_bytes(hashlib.sha256(stage.encode()).digest()[:8], "little")
    return np.random.SeedSequence([seed, tag]).generate_state(2, np.uint64)


def block_generator(seed: int, stage: str, block: int) -> np.random.Generator:
    """The generator of block ``block`` (users ``block * block_size`` onwards) in ``stage``:
    Philox with counter (0, 0, 0, block). The same (seed, stage, block) always gives the same
    draws, on any worker."""
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 0:
        raise ConfigError(f"a block index must be a non-negative integer, got {block!r}")
    counter = np.array([0, 0, 0, int(block)], dtype=np.uint64)
    return np.random.Generator(np.random.Philox(key=stream_key(seed, stage), counter=counter))
