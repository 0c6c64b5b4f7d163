"""The neighbour-sampling fanout (one entry per layer), checked without importing torch, so
that a bad configuration is refused before the heavy imports (the command line's promise)."""

from __future__ import annotations

from collections.abc import Sequence

from dpgl.errors import ConfigError

__all__ = ["ALL", "check_fanout"]

#: a fanout entry meaning "every in-neighbour"
ALL = -1


def check_fanout(fanout: Sequence[int], num_layers: int | None = None) -> tuple[int, ...]:
    """``fanout`` as a tuple of ints, each >= 1 or -1 (all neighbours), one per layer when
    ``num_layers`` is given; :class:`ConfigError` otherwise."""
    values = tuple(fanout)
    if not values or any(isinstance(k, bool) or not isinstance(k, int) or (k < 1 and k != ALL)
                         for k in values):
        raise ConfigError(f"fanout must list one int per layer, each >= 1 or -1 (all "
                          f"neighbours), got {list(values)}")
    if num_layers is not None and len(values) != num_layers:
        raise ConfigError(f"fanout lists {len(values)} hop(s) for a {num_layers}-layer model: "
                          "give one per layer")
    return values
