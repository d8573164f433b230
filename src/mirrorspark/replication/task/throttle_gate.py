"""A copy task's share of its flow's ``replication.throttled.rate``: records held until their bytes may go.

The driver sends each task its share over the grant link (``rate <bytes/s>``,
:class:`~mirrorspark.replication.task.grant_client.GrantClient`); :class:`ThrottleGate` holds a poll's
records and hands the runner one run of at most a bucket's burst of bytes at a time, after waiting for
them (:class:`~mirrorspark.core.throttle.TokenBucket`).

1. Without a share the gate is not in the way: the runner polls as before, no record is measured.
2. A wait is made of steps of at most :data:`WAIT_STEP_S`, each serving the producer's delivery reports
   and the grant link (``serve``); a grant state other than ``open`` ends it, the records still held.
3. The bytes of a record are its key, value, header names and header values.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from mirrorspark.core.throttle import TokenBucket
from mirrorspark.kafka.protocols import MessageLike

WAIT_STEP_S = 0.05
"""Longest step of a throttled wait (s): how often the task serves acknowledgements and its grant link meanwhile."""


MIN_WAIT_S = 1e-6
"""A wait shorter than this (s) is none: a debt paid up to rounding."""


def record_bytes(m: MessageLike) -> int:
    """Bytes of record data of one record: key, value, header names and header values (invariant 3)."""
    key, value = m.key(), m.value()
    n = (len(key) if key else 0) + (len(value) if value else 0)
    headers = m.headers()
    if headers:
        for name, v in headers.items() if isinstance(headers, dict) else headers:
            n += len(name) + (len(v) if v else 0)
    return n


class ThrottleGate:
    """Holds a poll's records and releases them a burst at a time at the task's share; owned by the task's thread.

    ``rate`` returns the share in bytes/s (0: no limit); ``serve`` waits up to the seconds given for
    acknowledgements and returns whether the task may go on (its grant state is ``open``). ``clock``
    is monotonic seconds. :attr:`throttled_s` and :attr:`sent_bytes` are running totals.
    """

    def __init__(
        self,
        rate: Callable[[], float],
        serve: Callable[[float], bool],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rate = rate
        self._serve = serve
        self._clock = clock
        self.bucket = TokenBucket(None, clock=clock)
        self.held: deque[tuple[MessageLike, int]] = deque()
        self.throttled_s = 0.0
        self.sent_bytes = 0

    @property
    def limited(self) -> bool:
        """Whether the task has a share now (reads the grant link's last word)."""
        rate = self._rate() or None
        if rate != self.bucket.rate:
            self.bucket.set_rate(rate)
        return rate is not None

    def pass_through(self) -> bool:
        """Whether the runner polls and copies as if there were no gate: no share and nothing held (invariant 1)."""
        return not self.held and not self.limited

    def hold(self, msgs: list[MessageLike]) -> None:
        """Hold a poll's records (measured) until :meth:`release` lets them through."""
        self.held.extend((m, record_bytes(m)) for m in msgs)

    def release(self) -> list[MessageLike]:
        """Return the next run of held records (at most a burst, at least one), after waiting for its bytes.

        Without a share, everything held. ``[]`` when ``serve`` said stop (the records stay held).
        """
        if not self.held:
            return []
        if not self.limited:
            run = [m for m, _ in self.held]
            self.sent_bytes += sum(n for _, n in self.held)
            self.held.clear()
            return run
        burst = max(1.0, self.bucket.burst)
        taken, size = 0, 0
        for _, n in self.held:
            if taken and size + n > burst:
                break
            taken, size = taken + 1, size + n
        self.bucket.take(size)
        if not self._wait():
            self.bucket.take(-size)  # not sent: the bytes go back
            return []
        self.sent_bytes += size
        return [self.held.popleft()[0] for _ in range(taken)]

    def _wait(self) -> bool:
        """Wait until the bucket's debt is paid, in steps serving the task (invariant 2); whether to go on."""
        began = self._clock()
        try:
            while (left := self.bucket.wait_s()) > MIN_WAIT_S:
                if not self._serve(min(left, WAIT_STEP_S)):
                    return False
            return True
        finally:
            self.throttled_s += self._clock() - began


__all__ = ["MIN_WAIT_S", "WAIT_STEP_S", "ThrottleGate", "record_bytes"]
