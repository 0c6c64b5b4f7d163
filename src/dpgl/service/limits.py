"""Per-token rate limits of the collection server: one token bucket per key (issue #14).

Each key (a hash of the bearer token, so an unauthenticated flood costs no database work)
holds ``burst`` requests and refills at ``rate`` per second; a request finding the bucket
empty is answered 429 with the seconds until the next token. In memory, per server process;
the table is pruned when it grows past ``max_keys``, dropping the keys that are full again
(they carry no state worth keeping).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from dpgl.errors import ConfigError

__all__ = ["RateLimiter"]


class RateLimiter:
    """Token buckets: ``burst`` requests at once, ``rate`` per second sustained, per key."""

    def __init__(self, rate: float = 5.0, burst: int = 10, *, max_keys: int = 1_000_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not (rate > 0 and burst >= 1):
            raise ConfigError(f"rate limit needs rate > 0 and burst >= 1, got {rate}, {burst}")
        self.rate, self.burst, self.max_keys = float(rate), int(burst), int(max_keys)
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}   # key -> (tokens, last time)
        self._lock = threading.Lock()

    def acquire(self, key: str) -> float:
        """Take one token for ``key``: 0.0 when allowed, else the seconds to wait."""
        now = self._clock()
        with self._lock:
            tokens, last = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                if len(self._buckets) > self.max_keys:
                    self._prune(now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate

    def _prune(self, now: float) -> None:
        full = [k for k, (t, last) in self._buckets.items()
                if t + (now - last) * self.rate >= self.burst]
        for k in full:
            del self._buckets[k]
