"""A flow's bandwidth limit as pure data: a token bucket on an injected clock, and each task's share.

``replication.throttled.rate`` (bytes/s of record data: keys, values, header names and values) is
a flow's limit; the driver gives each of the flow's running copy tasks an equal share
(:func:`task_share`) and each task holds its records back in a :class:`TokenBucket`.

Invariants of :class:`TokenBucket` (a caller that, one run at a time, waits :meth:`~TokenBucket.wait_s`,
sends, then takes what it sent):

1. The level is at most :attr:`~TokenBucket.burst` bytes (``BURST_S`` of the rate); a run may take it
   below zero (a debt, paid by waiting at the rate in effect, so a lowered rate slows a debt at once).
2. Over any window of ``w`` seconds at a constant rate ``r`` the bytes sent are at most
   ``r * w + burst + the largest run``: with runs of about a burst, a 10 s average exceeds the limit by
   ``2 * BURST_S / 10`` at most (2 %).
3. A rate of ``None`` or ``0`` is no limit: :meth:`~TokenBucket.take` returns ``0.0`` and keeps no
   account; a bucket limited again starts full.
"""

from __future__ import annotations

from collections.abc import Callable

BURST_S = 0.1
"""Seconds of the rate a bucket holds at most: the burst that a 10 s average may exceed the limit by (1 %)."""


class TokenBucket:
    """Bytes per second let through, with a burst of :data:`BURST_S` of the rate; not thread-safe.

    ``rate``: bytes/s (``None`` or ``0``: no limit); ``clock``: monotonic seconds.
    """

    def __init__(self, rate: float | None, *, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.rate: float | None = None
        self.level = 0.0
        self._at = clock()
        self.set_rate(rate)

    @property
    def burst(self) -> float:
        """Most bytes the bucket holds (0 without a limit)."""
        return self.rate * BURST_S if self.rate else 0.0

    def set_rate(self, rate: float | None) -> None:
        """Change the rate (bytes/s; ``None`` or ``0``: no limit) from now on; a debt is paid at the new rate."""
        self._refill()
        new = float(rate) if rate else None
        if new is not None and self.rate is None:
            self.level = new * BURST_S  # limited again: starts full (invariant 3)
        self.rate = new
        if new is not None:
            self.level = min(self.level, self.burst)

    def _refill(self) -> None:
        now = self._clock()
        if self.rate is not None:
            self.level = min(self.burst, self.level + (now - self._at) * self.rate)
        self._at = now

    def take(self, n: int) -> float:
        """Take ``n`` bytes; return the seconds to wait before they may be sent (``0.0``: at once)."""
        if self.rate is None:
            return 0.0
        self._refill()
        self.level -= n
        return self.wait_s()

    def wait_s(self) -> float:
        """Seconds until the debt of the bytes taken is paid at the rate now (``0.0``: none)."""
        if self.rate is None:
            return 0.0
        self._refill()
        return max(0.0, -self.level / self.rate)


def task_share(limit: int, tasks: int) -> int:
    """Return one task's share of a flow's ``limit`` (bytes/s) over ``tasks`` running tasks: equal shares.

    ``0`` (no limit) stays ``0``; a share is at least 1 byte/s. Equal shares leave an idle task's share
    unused: a flow whose data sits on fewer partitions than tasks copies below its limit.
    """
    if limit <= 0:
        return 0
    return max(1, limit // max(1, tasks))


__all__ = ["BURST_S", "TokenBucket", "task_share"]
