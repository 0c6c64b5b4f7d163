"""Users in fixed blocks (issue #15): the unit of work of a sharded simulation.

Users ``0 .. n - 1`` are cut into blocks of ``block_size`` consecutive ids; a block is the
unit that draws (from its own counter-based stream, :mod:`dpgl.distributed.streams`) and
writes its output. Partitions of the engine's dataset are runs of whole blocks, so changing
the number of partitions or workers regroups blocks but never changes what a block computes:
the output is identical for any partitioning.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from dpgl.errors import ConfigError
from dpgl.mechanisms.neighbor_list import check_population

__all__ = ["DEFAULT_BLOCK_SIZE", "UserBlocks"]

#: Users per block: 65,536 (a few MB of work per block at typical degrees).
DEFAULT_BLOCK_SIZE = 1 << 16


@dataclass(frozen=True)
class UserBlocks:
    """``num_users`` users in blocks of ``block_size`` consecutive ids (the last may be
    shorter)."""

    num_users: int
    block_size: int = DEFAULT_BLOCK_SIZE

    def __post_init__(self) -> None:
        check_population(self.num_users)
        b = self.block_size
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise ConfigError(f"block_size must be an integer >= 1, got {b!r}")

    @property
    def num_blocks(self) -> int:
        return -(-self.num_users // self.block_size)

    def __len__(self) -> int:
        return self.num_blocks

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.num_blocks))

    def bounds(self, block: int) -> tuple[int, int]:
        """Users ``[lo, hi)`` of block ``block``."""
        if isinstance(block, bool) or not isinstance(block, int) \
                or not 0 <= block < self.num_blocks:
            raise ConfigError(f"block must be an integer in [0, {self.num_blocks - 1}], "
                              f"got {block!r}")
        lo = block * self.block_size
        return lo, min(lo + self.block_size, self.num_users)

    def partition(self, parts: int) -> list[list[int]]:
        """``parts`` runs of consecutive blocks, as even as possible (fewer when there are
        fewer blocks than ``parts``)."""
        if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
            raise ConfigError(f"the number of partitions must be an integer >= 1, got {parts!r}")
        k = min(parts, self.num_blocks)
        base, extra = divmod(self.num_blocks, k)
        out, start = [], 0
        for i in range(k):
            size = base + (i < extra)
            out.append(list(range(start, start + size)))
            start += size
        return out
