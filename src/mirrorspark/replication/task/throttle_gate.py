"""A copy task's share of its flow's ``replication.throttled.rate``: each poll waits until its bytes may go.

The driver sends each task its share over the grant link (``rate <bytes/s>``,
:class:`~mirrorspark.replication.task.grant_client.GrantClient`). Before a poll the task waits for its
:class:`~mirrorspark.core.throttle.TokenBucket` to be out of debt and takes at most a burst's worth of
records (counted from the records seen so far); after the poll it takes their bytes from the bucket.

1. Without a share the gate is not in the way: the runner polls as before, no record is measured.
2. Nothing is held back once read: a record read is produced in the same turn, so the consumer's
   position stays what the committers trust (commit.py's C3, C5).
3. A wait is made of steps of at most :data:`WAIT_STEP_S`, each serving the producer's delivery reports
   and the grant link (``serve``); a grant state other than ``open`` ends it and the poll is skipped.
4. Over any window of ``w`` seconds at a share ``r`` a task sends at most ``r * w`` plus a burst plus
   its largest poll (itself about a burst): a 10 s average exceeds the share by about 2 % at most.
5. The bytes of a record are its key, value, header names and header values.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from mirrorspark.core.throttle import TokenBucket
from mirrorspark.kafka.protocols import MessageLike

WAIT_STEP_S = 0.05
"""Longest step of a throttled wait (s): how often the task serves acknowledgements and its grant link meanwhile."""

MIN_WAIT_S = 1e-6
"""A wait shorter than this (s) is none: a debt paid up to rounding."""


def record_bytes(m: MessageLike) -> int:
    """Bytes of record data of one record: key, value, header names and header values (invariant 5)."""
    key, value = m.key(), m.value()
    n = (len(key) if key else 0) + (len(value) if value else 0)
    headers = m.headers()
    if headers:
        for name, v in headers.items() if isinstance(headers, dict) else headers:
            n += len(name) + (len(v) if v else 0)
    return n


class ThrottleGate:
    """Paces a copy task's polls to its throttle share; owned by the task's thread.

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
        self.record_size: float | None = None  # bytes per record of the last poll (None: none measured yet)
        self.throttled_s = 0.0
        self.sent_bytes = 0

    def pass_through(self) -> bool:
        """Whether the task has no share now (reads the grant link's last word): the runner polls as before."""
        rate = self._rate() or None
        if rate != self.bucket.rate:
            self.bucket.set_rate(rate)
        return rate is None

    def admit(self) -> int:
        """Wait until the bucket is out of debt; return the most records the next poll may take (0: do not poll).

        About a burst of records at the last poll's record size; one while none was measured.
        """
        if not self._wait():
            return 0
        if self.record_size is None:
            return 1
        return max(1, int(self.bucket.burst // max(1.0, self.record_size)))

    def spend(self, msgs: Sequence[MessageLike]) -> None:
        """Take the bytes of a poll's records from the bucket (they are produced now)."""
        if not msgs:
            return
        n = sum(record_bytes(m) for m in msgs)
        self.record_size = n / len(msgs)
        self.sent_bytes += n
        self.bucket.take(n)

    def _wait(self) -> bool:
        """Wait until the bucket's debt is paid, in steps serving the task (invariant 3); whether to go on."""
        began = self._clock()
        try:
            while (left := self.bucket.wait_s()) > MIN_WAIT_S:
                if not self._serve(min(left, WAIT_STEP_S)):
                    return False
            return True
        finally:
            self.throttled_s += self._clock() - began


__all__ = ["MIN_WAIT_S", "WAIT_STEP_S", "ThrottleGate", "record_bytes"]
