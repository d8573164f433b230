"""Idle partitions of a copy task nearly free (#44): paused while nothing arrives, woken by one end-offset check.

:class:`IdleConsumer` wraps a copy task's source consumer (the outermost wrapper: the runner and its committer see
it). A partition that handed out no record for :data:`IDLE_AFTER_S` is paused in the consumer, so librdkafka no
longer fetches it (each fetch, every ``fetch.wait.max.ms`` while nothing arrives, carries every partition: work
for the task and the brokers in proportion to the partitions). While partitions are paused, ``ListOffsets``
requests ask their end offsets (``offsets_for_times`` at the latest offset, on a consumer of their own with the
task's settings, ``job.idle_checker``; :data:`CHECK_BATCH` partitions a call, one request per leader), first
:data:`WAKE_MIN_S` after a pause, then at an interval doubling up to :data:`WAKE_MAX_S` while none woke; a
partition whose end offset is not its next offset is resumed and reads on where it stopped.

The trade-off: the first record written to a partition after :data:`IDLE_AFTER_S` of silence waits for the next
check (at most :data:`WAKE_MAX_S`, plus a fetch); a partition with a record at least every :data:`IDLE_AFTER_S`
is never paused and copies as before, and so is every partition of a task with fewer than
:data:`PAUSE_MIN_PARTITIONS` (fetching a few hundred idle partitions costs too little to trade latency for).

Invariants (the tests in ``tests/unit/test_idle_partitions.py`` that guard them name them), per partition
---------------------------------------------------------------------------------------------------------
* **I1 nothing lost or reordered**: pausing discards nothing the task received: librdkafka drops what it
  prefetched past the application's position and fetches again from there on resume; records are handed out as
  the wrapped consumer hands them out.
* **I2 woken when it moves**: a paused partition whose end offset differs from its next offset (new records, a
  transaction marker, a truncated or re-created log) is resumed at the next check; the next offset is taken when
  it is paused (a paused partition's position does not move; a seek resumes it first): the consumer's position,
  else the last record handed out plus one, else the assigned offset.
* **I3 unknown never sleeps**: a partition whose next offset is not known yet (a logical start offset and no
  record and no position) is never paused; neither is one paused by the task itself, nor any of a task with
  fewer than :data:`PAUSE_MIN_PARTITIONS` partitions.
* **I4 the task's own pause wins**: a partition the task pauses (out of range) is never resumed here; a seek of
  an idle-paused partition resumes it first, so it reads from the sought offset (an aborted transaction's rewind).
* **I5 cost independent of idle partitions**: at most one pass over the task's active partitions every
  :data:`SCAN_S`, and per check ``ListOffsets`` of the paused ones, :data:`CHECK_BATCH` a request (nothing
  quadratic); a poll between them only notes the partitions of its records.
* **I6 failures wake**: a check that fails (timeout, broker unreachable) resumes every paused partition: the
  consumer's own fetch then sees what happens, as without pausing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Final, Protocol

from confluent_kafka import KafkaException, TopicPartition

from mirrorspark.kafka.protocols import MessageLike, SourceConsumerLike
from mirrorspark.replication.task.spec import PartitionKey

log = logging.getLogger(__name__)

PAUSE_MIN_PARTITIONS: Final = 500
"""A task with fewer partitions never pauses any: at 200 a task (100 topics) its idle CPU did not change, while the
first record after idleness took 2.5 s instead of 0.02 (#44)."""

IDLE_AFTER_S: Final = 10.0
"""Seconds without a record after which a partition is paused: one with a record at least this often never is."""

WAKE_MIN_S: Final = 1.0
"""Seconds from pausing partitions to the first end-offset check, and after a check that woke one."""

WAKE_MAX_S: Final = 2.0
"""Longest interval between two end-offset checks (the first record after idleness waits up to this)."""

SCAN_S: Final = 1.0
"""Seconds between two looks for partitions that went idle (I5)."""

CHECK_TIMEOUT_S: Final = 10.0
"""Longest wait for one end-offset check; past it every paused partition is resumed (I6)."""

CHECK_BATCH: Final = 250
"""Partitions per ``offsets_for_times`` call of a check: librdkafka matches its answers to the request's list one by
one (quadratic: 2,000 partitions in one call were 0.02 cores of a task checking every 2 s, #44); ``n / 250`` calls
are linear, each one round trip per leader."""

OFFSET_LATEST: Final = -1
"""``ListOffsets``'s timestamp meaning the end offset (the high watermark, or the last stable offset with
``read_committed``)."""


class EndsReader(Protocol):
    """What asks end offsets: the wrapped consumer, or a consumer of its own that is never assigned."""

    def offsets_for_times(self, partitions: list[TopicPartition], /, timeout: float = -1) -> list[TopicPartition]:
        """``ListOffsets`` of these partitions at each one's timestamp (:data:`OFFSET_LATEST`: its end offset)."""

    def close(self) -> None:
        """Release it."""


class PausingConsumer(SourceConsumerLike, Protocol):
    """The wrapped consumer: resumes partitions and lists their end offsets too."""

    def resume(self, partitions: list[TopicPartition], /) -> None:
        """Fetch these paused partitions again."""

    def offsets_for_times(self, partitions: list[TopicPartition], /, timeout: float = -1) -> list[TopicPartition]:
        """``ListOffsets`` of these partitions at each one's timestamp (:data:`OFFSET_LATEST`: its end offset)."""


class IdleConsumer:
    """A copy task's source consumer that pauses idle partitions and wakes them by end offsets (see the module)."""

    def __init__(
        self,
        inner: PausingConsumer,
        *,
        checker: Callable[[], EndsReader] | None = None,
        min_partitions: int = PAUSE_MIN_PARTITIONS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._inner = inner
        # built at the first check, a connection of its own: on the task's, a ListOffsets waits behind a
        # long-polling fetch of the partitions still active (up to fetch.wait.max.ms a call)
        self._build_checker = checker
        self._checker: EndsReader | None = None if checker is not None else inner
        self._min_partitions = min_partitions
        self._enabled = False  # the task has at least min_partitions (I3)
        self._clock = clock
        self._active: dict[PartitionKey, float] = {}  # not paused here: when it last handed out a record
        self._idle: dict[PartitionKey, int] = {}  # paused here (never the task's, I4): its next offset then (I2)
        self._held: set[PartitionKey] = set()  # paused by the task
        self._next: dict[PartitionKey, int] = {}  # next offset as far as known (assigned, or last record + 1)
        self._scan_at = 0.0
        self._check_at = 0.0
        self._interval = WAKE_MIN_S
        self.checks = 0
        """End-offset checks made (for tests and figures)."""

    @property
    def idle(self) -> frozenset[PartitionKey]:
        """The partitions paused here now."""
        return frozenset(self._idle.keys())

    def assign(self, partitions: list[TopicPartition], /) -> None:
        """Assign ``partitions`` (all active from now; nothing paused)."""
        now = self._clock()
        self._inner.assign(partitions)
        self._active = {(tp.topic, tp.partition): now for tp in partitions}
        self._next = {(tp.topic, tp.partition): tp.offset for tp in partitions}
        self._idle = {}
        self._held.clear()
        self._enabled = len(partitions) >= self._min_partitions
        self._scan_at = now + SCAN_S

    def poll(self, timeout: float = -1) -> MessageLike | None:
        """Return the wrapped consumer's next record or event (I1), idle partitions tended first."""
        self._tend()
        m = self._inner.poll(timeout)
        if m is not None:
            self._note((m,))
        return m

    def consume(self, num_messages: int = 1, timeout: float = -1) -> Sequence[MessageLike]:
        """Return the wrapped consumer's next records (I1), idle partitions tended first."""
        self._tend()
        msgs = self._inner.consume(num_messages=num_messages, timeout=timeout)
        if msgs:
            self._note(msgs)
        return msgs

    def position(self, partitions: list[TopicPartition], /) -> list[TopicPartition]:
        """Return the wrapped consumer's positions (a paused partition keeps its own)."""
        return self._inner.position(partitions)

    def pause(self, partitions: list[TopicPartition], /) -> None:
        """Pause these partitions for the task: never resumed here (I4)."""
        for tp in partitions:
            key = (tp.topic, tp.partition)
            self._held.add(key)
            self._idle.pop(key, None)
            self._active.pop(key, None)
        self._inner.pause(partitions)

    def seek(self, partition: TopicPartition, /) -> None:
        """Read the partition from its offset next; an idle-paused one is resumed first (I4)."""
        key = (partition.topic, partition.partition)
        if key in self._idle:
            del self._idle[key]
            self._inner.resume([TopicPartition(*key)])
            self._active[key] = self._clock()
        self._next[key] = partition.offset
        self._inner.seek(partition)

    def get_watermark_offsets(self, partition: TopicPartition, /, timeout: float = -1) -> tuple[int, int]:
        """Return the wrapped consumer's watermarks of the partition."""
        return self._inner.get_watermark_offsets(partition, timeout)

    def close(self) -> None:
        """Close the wrapped consumer (and the checker, when one of its own)."""
        try:
            self._inner.close()
        finally:
            if self._checker is not None and self._checker is not self._inner:
                self._checker.close()

    # ------------------------------------------------------------------ tending

    def _note(self, msgs: Sequence[MessageLike]) -> None:
        """Note the partitions of ``msgs`` active now, their next offsets past their records (I5: nothing else)."""
        now = self._clock()
        active, nxt = self._active, self._next
        for m in msgs:
            if m.error() is not None:
                continue
            key = (m.topic(), m.partition())
            if key in active:
                active[key] = now
                offset = m.offset()
                if offset is not None:
                    nxt[key] = offset + 1

    def _tend(self) -> None:
        if not self._enabled:
            return
        now = self._clock()
        if now >= self._scan_at:
            self._scan_at = now + SCAN_S
            self._pause_idle(now)
        if self._idle and now >= self._check_at:
            self._wake_moved()

    def _pause_idle(self, now: float) -> None:
        """Pause the partitions idle for :data:`IDLE_AFTER_S` whose next offset is known (I3)."""
        quiet = [k for k, at in self._active.items() if now - at >= IDLE_AFTER_S]
        if not quiet:
            return
        nexts = self._next_offsets(quiet)
        keys = [k for k in quiet if nexts.get(k, -1) >= 0]
        if not keys:
            return
        self._inner.pause([TopicPartition(*k) for k in keys])
        for k in keys:
            del self._active[k]
        if not self._idle:
            self._interval = WAKE_MIN_S
            self._check_at = now + WAKE_MIN_S
        self._idle.update((k, nexts[k]) for k in keys)  # a paused partition's position stays (a seek resumes it)

    def _next_offsets(self, keys: Sequence[PartitionKey]) -> dict[PartitionKey, int]:
        """Next offset of each partition: its position, else what this wrapper knows (I2); -1: unknown."""
        out = {k: self._next.get(k, -1) for k in keys}
        for tp in self._inner.position([TopicPartition(*k) for k in keys]):
            if tp.offset >= 0:
                key = (tp.topic, tp.partition)
                out[key] = max(out[key], tp.offset)
        return out

    def _wake_moved(self) -> None:
        """One end-offset check of every idle-paused partition; resume those that moved (I2), all on failure (I6)."""
        keys = list(self._idle)
        self.checks += 1
        moved_ends: dict[PartitionKey, int] = {}
        if self._checker is None and self._build_checker is not None:
            self._checker = self._build_checker()
        checker = self._checker or self._inner
        try:
            for i in range(0, len(keys), CHECK_BATCH):
                asked = [TopicPartition(t, p, OFFSET_LATEST) for t, p in keys[i : i + CHECK_BATCH]]
                for tp in checker.offsets_for_times(asked, timeout=CHECK_TIMEOUT_S):
                    if tp.error is None:
                        moved_ends[(tp.topic, tp.partition)] = tp.offset
        except KafkaException as e:
            log.debug("checking the end offsets of %d idle partitions failed: %s", len(keys), e)
            moved_ends = {}
        idle = self._idle
        woken = [k for k in keys if moved_ends.get(k, -1) < 0 or moved_ends[k] != idle[k]]
        now = self._clock()
        if woken:
            self._inner.resume([TopicPartition(*k) for k in woken])
            for k in woken:
                del idle[k]
                self._active[k] = now
        self._interval = WAKE_MIN_S if woken else min(self._interval * 2, WAKE_MAX_S)
        self._check_at = now + self._interval


__all__ = [
    "CHECK_BATCH",
    "CHECK_TIMEOUT_S",
    "IDLE_AFTER_S",
    "OFFSET_LATEST",
    "PAUSE_MIN_PARTITIONS",
    "SCAN_S",
    "WAKE_MAX_S",
    "WAKE_MIN_S",
    "EndsReader",
    "IdleConsumer",
    "PausingConsumer",
]
