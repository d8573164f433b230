"""Parallel catch-up of source partitions (#43): a pool of readers fetches disjoint offset ranges, handed out in order.

:class:`CatchUpConsumer` wraps a copy task's source consumer (the *main* consumer) and is what the
:class:`~mirrorspark.replication.task.runner.CopyTaskRunner` and its committer see: one consumer that hands
out each partition's records in source order. When a partition's backlog (its cached high watermark minus the
next offset the task will receive) is at least ``backlog_records``, a **round** starts for it: the main consumer
pauses the partition and the range from the task's position to the high watermark is cut into **chunks** (offset
ranges). The task's largest such backlogs have a round each, at most ``readers //`` :data:`READERS_PER_ROUND`
at once (looked at every :data:`EVALUATE_S`); ``readers`` threads, each with a consumer and a connection of its
own (assign-only, never committing), are one pool serving all rounds: a reader done with a chunk reads on into
its round's next chunk when that starts where its own ended, else cuts the next of the round holding fewest
chunks (the oldest first), and fetches it. :meth:`CatchUpConsumer.consume` hands out each round's head
chunk's records as they arrive, chunk after chunk, the rounds in turn, between the main consumer's records of
the other partitions. While the remaining backlog of a round stays at least ``backlog_records`` it reaches
further (up to the newest high watermark a reader saw); then its last chunks drain and the main consumer
resumes the partition where the round ended. On a window-limited link one connection is the bottleneck of a
hot partition, and the main consumer's one connection is that of all its partitions together.

Readers run as threads of the task's own Python worker: librdkafka fetches outside the GIL, and a connection of
its own per reader is what multiplies a window-limited link. Readers on other executors were chosen against:
their records would need a transport of their own into the one task that produces them in order, and an
executor's slots are the flows' tasks.

Invariants (the tests in ``tests/unit/test_catch_up_consumer.py`` that guard them name them), per partition
-----------------------------------------------------------------------------------------------------------
* **U1 order**: per partition, records are handed out in offset order, each once, as by one consumer: a round's
  chunks are contiguous, disjoint offset ranges cut in order, handed out head first; the main consumer's records
  of a partition are handed out only at or past the next offset the task will receive, and never during a round.
* **U2 completeness across holes**: a reader's chunk is done when its position (or a record's offset) reaches the
  chunk's end, never by counting offsets: transaction markers, aborted records (``read_committed``) and compacted
  offsets leave holes that lose nothing and stall nothing. A reader reading on into the next chunk without a new
  ``assign`` starts it with the records it consumed past its last chunk's end.
* **U3 errors are never silent**: a reader's error event (out of range, log truncation, anything but a
  partition's end) is handed out in its place in the order, and the round ends there: the main consumer resumes
  at the offset after the last record handed out, so the runner handles the error as the main consumer's (an
  out-of-range partition is paused and its gap recorded by the driver). A failing reader thread ends every round
  the same way and turns catch-up off for the task.
* **U4 memory bound**: at most :data:`CHUNKS_PER_READER` ``x readers`` chunks are cut and not yet handed out
  (fetching, fetched or being handed out), all rounds together, each about :data:`CHUNK_BYTES` of record data (at
  most :data:`CHUNK_RECORDS_MAX` records; :data:`FIRST_CHUNK_RECORDS` until the record size is known); each
  reader's librdkafka queue comes on top.
* **U5 seek and pause**: :meth:`~CatchUpConsumer.seek` of a partition in a round ends the round and reads on
  from the sought offset (a new round may start there); :meth:`~CatchUpConsumer.pause` ends it and nothing more
  of the partition is handed out until :meth:`~CatchUpConsumer.resume` (from the next offset the runner
  receives, as ``idle.py`` wakes an idle partition); :meth:`~CatchUpConsumer.position` answers the next offset
  the runner will receive for a partition in a round or paused in one. Neither touches another partition's round.
* **U6 switch-off**: a round ends once the backlog past it is below ``backlog_records``; a partition keeping up
  stays with the main consumer. With ``readers`` 1 the task has no wrapper at all (``job.run_copy_task``).
* **U7 release**: :meth:`~CatchUpConsumer.close` stops the readers, joins their threads, closes their consumers
  and the main consumer.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol, cast

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mirrorspark.kafka.protocols import MessageLike, SourceConsumerLike
from mirrorspark.replication.task.spec import PartitionKey

log = logging.getLogger(__name__)

CHUNK_BYTES: Final = 16 * 1024 * 1024
"""Record data (keys and values) a chunk aims at, once the partitions' bytes per offset are known (U4).

A chunk a reader does not read on into costs it one fetch restart (about one round trip) and what it fetched past
its last chunk's end (its fetch in flight and its queue, :data:`READER_FETCH_BYTES` each at most); 16 MiB keeps
that near a fifth of a chunk at a 4 MiB window, and :data:`CHUNKS_PER_READER` ``x readers`` bound a task's memory."""

READERS_PER_ROUND: Final = 2
"""A task runs at most ``readers // 2`` rounds at once (at least one), on its largest backlogs: its main consumer
carries the other partitions over a connection of its own (a probe of 12 hot partitions on 2 tasks at 100 ms:
63 MB/s so, 41 MB/s with a round for every partition, whose smaller chunks and busier readers cost more)."""

CHUNKS_PER_READER: Final = 2
"""Chunks cut and not yet handed out per reader, all rounds together (U4): a reader done with its chunk takes the
next while the head chunk of its round still fills (``readers + 1`` left readers idle a third of the time)."""

READER_FETCH_BYTES: Final = 4 * 1024 * 1024
"""A reader's ``max.partition.fetch.bytes`` and local queue (``queued.max.messages.kbytes``), whatever the task's.

librdkafka prefetches up to ``queued.min.messages`` (100,000) records past a reader's position: a reader with the
task's settings fetched up to 100 MB for an 8 MiB chunk, most of it thrown away at the chunk's end. One 4 MiB
fetch per round trip is a TCP window's worth on a long link (40 MB/s per reader at 100 ms)."""

FIRST_CHUNK_RECORDS: Final = 4096
"""Records per chunk until a finished chunk told the partition's bytes per offset (4 MiB of 1 KiB records)."""

CHUNK_RECORDS_MIN: Final = 1000
CHUNK_RECORDS_MAX: Final = 100_000
"""Bounds of a chunk's offsets; within them a chunk is also at most the round's uncut backlog over its share of the
readers, so every reader has work and the round's tail is cut finer."""

EVALUATE_S: Final = 0.5
"""Seconds between two looks at the backlogs of the partitions not in a round (cached high watermarks: no request)."""

UNKNOWN_S: Final = 0.05
"""Seconds until the next look while a partition's high watermark is not known yet (no fetch response so far)."""

READ_RECORDS: Final = 2000
READ_TIMEOUT_S: Final = 0.1
"""A reader's ``consume``: most records, longest wait (s); also how soon it notices a cancelled round."""

WAIT_SLICE_S: Final = 0.01
"""While a round runs, the longest the runner waits for a reader's records before the main consumer is asked (s)."""

JOIN_S: Final = 10.0
"""Seconds :meth:`CatchUpConsumer.close` waits for each reader thread."""

_PARTITION_EOF = KafkaError._PARTITION_EOF


class MainConsumerLike(SourceConsumerLike, Protocol):
    """The wrapped consumer (confluent-kafka ``Consumer``): resumed after a round, asked its cached watermarks."""

    def resume(self, partitions: list[TopicPartition], /) -> None:
        """Fetch these paused partitions again."""

    def get_watermark_offsets(
        self, partition: TopicPartition, /, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]:
        """Return ``(low, high)``; ``cached``: as the last fetch response said (-1001: not known yet), no request."""

    def offsets_for_times(self, partitions: list[TopicPartition], /, timeout: float = -1) -> list[TopicPartition]:
        """``ListOffsets`` of these partitions at each one's timestamp (-1: its end offset)."""


class ReaderConsumerLike(Protocol):
    """A reader's own consumer (confluent-kafka ``Consumer``): assign-only, never committing."""

    def assign(self, partitions: list[TopicPartition], /) -> None:
        """Read these partitions from their offsets."""

    def consume(self, num_messages: int = 1, timeout: float = -1) -> Sequence[MessageLike]:
        """Return up to ``num_messages`` records and error events, waiting up to ``timeout`` s."""

    def position(self, partitions: list[TopicPartition], /) -> list[TopicPartition]:
        """Return the next offset to read of each partition."""

    def get_watermark_offsets(
        self, partition: TopicPartition, /, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]:
        """Return ``(low, high)`` (``cached``: no request)."""

    def close(self) -> None:
        """Release the consumer."""


ReaderFactory = Callable[[int], ReaderConsumerLike]
"""Builds reader ``i``'s consumer (0-based), in the reader's own thread."""


@dataclass(eq=False)
class _Chunk:
    """An offset range ``[start, end)`` of a round's partition, filled by one reader, handed out from ``taken``."""

    start: int
    end: int
    records: list[MessageLike] = field(default_factory=list)
    taken: int = 0
    error: MessageLike | None = None
    done: bool = False
    bytes: int = 0


@dataclass(eq=False)
class _Round:
    """One partition's catch-up: ``[start, end)`` cut into chunks at ``cursor``, handed out up to ``next``."""

    key: PartitionKey
    cursor: int
    end: int
    next: int
    high: int
    chunks: deque[_Chunk] = field(default_factory=deque)
    cancelled: bool = False


class CatchUpConsumer:
    """A :class:`~mirrorspark.kafka.protocols.SourceConsumerLike` that catches up hot partitions in parallel.

    Parameters
    ----------
    main:
        The task's consumer; owned from now on (closed by :meth:`close`).
    readers:
        Builds reader ``i``'s consumer (its own ``client.id``, same settings otherwise, no commits).
    count:
        Number of readers (> 1): the task's pool, shared by its rounds.
    backlog_records:
        Backlog (records) from which a partition is caught up in parallel, and below which its round ends.
    chunk_records:
        Fixed chunk size (records) instead of sizing by :data:`CHUNK_BYTES` (tests).

    Thread-safety: the runner's thread calls the methods; the readers' threads share only the rounds, under a lock.
    """

    def __init__(
        self,
        main: MainConsumerLike,
        readers: ReaderFactory,
        *,
        count: int,
        backlog_records: int,
        chunk_records: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._main = main
        self._factory = readers
        self._count = count
        self._slots = CHUNKS_PER_READER * count
        self._most = max(1, count // READERS_PER_ROUND)
        self._threshold = max(1, backlog_records)
        self._fixed = chunk_records
        self._clock = clock
        self._cond = threading.Condition()
        self._rounds: dict[PartitionKey, _Round] = {}  # oldest first
        self._held = 0  # chunks cut and not yet handed out, all rounds (U4)
        self._filled = 0  # times a reader added to a chunk: the runner waits for a change
        self._turn = 0  # the round the next hand-out starts with
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._disabled = False  # a reader failed: no more rounds
        self._failed: BaseException | None = None
        self._next: dict[PartitionKey, int] = {}  # next offset the runner receives (assigned partitions)
        self._paused: set[PartitionKey] = set()
        self._stopped: dict[PartitionKey, int] = {}  # paused in a round: where it stopped (the main consumer is behind)
        self._evaluate_at = 0.0
        self._bytes = 0  # record bytes and offsets of finished chunks: the partitions' bytes per offset
        self._span = 0
        self.rounds = 0
        """Rounds started so far."""

    # -- the consumer's surface ------------------------------------------------------------------------------
    def assign(self, partitions: list[TopicPartition], /) -> None:
        """Read these partitions from their offsets (the rounds running are ended)."""
        for key in list(self._rounds):
            self._end_round(key, resume=False)
        self._next = {(tp.topic, tp.partition): tp.offset for tp in partitions}
        self._paused.clear()
        self._stopped.clear()
        self._main.assign(partitions)

    def poll(self, timeout: float = -1) -> MessageLike | None:
        """Return the next record or error event, waiting up to ``timeout`` s (``None``: none came)."""
        got = self.consume(1, timeout)
        return got[0] if got else None

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[MessageLike]:
        """Return up to ``num_messages`` records and error events of the rounds and the main consumer (U1, U3)."""
        deadline = None if timeout < 0 else self._clock() + timeout
        while True:
            self._tend()
            filled = self._filled
            out = self._from_main(max(1, num_messages // 2), 0.0)  # half for the other partitions first
            out += self._from_rounds(num_messages - len(out))
            if out and len(out) < num_messages:
                out += self._from_main(num_messages - len(out), 0.0)
            left = 1.0 if deadline is None else deadline - self._clock()
            if out or left <= 0:
                return out
            if not self._rounds:
                out = self._from_main(num_messages, left)
                if out:
                    return out
            else:
                with self._cond:  # woken by a reader's records, the main consumer looked at again soon
                    if self._filled == filled:
                        self._cond.wait(min(WAIT_SLICE_S, left))

    def position(self, partitions: list[TopicPartition], /) -> list[TopicPartition]:
        """Return the next offset the runner will receive of each partition (U5)."""
        known = {key: rnd.next for key, rnd in self._rounds.items()} | self._stopped
        asked = [tp for tp in partitions if (tp.topic, tp.partition) not in known]
        main = iter(self._main.position(asked) if asked else [])
        out = []
        for tp in partitions:
            offset = known.get((tp.topic, tp.partition))
            out.append(TopicPartition(tp.topic, tp.partition, offset) if offset is not None else next(main))
        return out

    def pause(self, partitions: list[TopicPartition], /) -> None:
        """Stop handing out these partitions; their rounds end (U5)."""
        keys = {(tp.topic, tp.partition) for tp in partitions}
        self._paused |= keys
        for key in keys & self._rounds.keys():
            self._end_round(key, resume=False)
            self._stopped[key] = self._next[key]
        self._main.pause(partitions)

    def resume(self, partitions: list[TopicPartition], /) -> None:
        """Hand out these paused partitions again, from the next offset the runner receives (U5)."""
        keys = [(tp.topic, tp.partition) for tp in partitions if (tp.topic, tp.partition) in self._paused]
        if not keys:
            return
        self._paused.difference_update(keys)
        self._main.resume([TopicPartition(*k) for k in keys])
        for key in keys:
            stopped = self._stopped.pop(key, None)
            if stopped is not None:  # paused in a round: the main consumer is behind where it stopped
                self._main.seek(TopicPartition(*key, stopped))

    def offsets_for_times(self, partitions: list[TopicPartition], /, timeout: float = -1) -> list[TopicPartition]:
        """``ListOffsets`` of these partitions (the main consumer's)."""
        return self._main.offsets_for_times(partitions, timeout)

    def seek(self, partition: TopicPartition, /) -> None:
        """Read the partition from its offset next; its round ends there (U5)."""
        key = (partition.topic, partition.partition)
        if key in self._rounds:
            self._end_round(key, resume=False)
            if key not in self._paused:
                self._main.resume([TopicPartition(*key)])
        self._next[key] = partition.offset
        self._stopped.pop(key, None)
        self._main.seek(partition)

    def get_watermark_offsets(self, partition: TopicPartition, /, timeout: float = -1) -> tuple[int, int]:
        """Return the partition's ``(low, high)`` watermarks, asking the leader (the main consumer's)."""
        return self._main.get_watermark_offsets(partition, timeout)

    def close(self) -> None:
        """Stop and join the readers (their consumers closed), then close the main consumer (U7)."""
        with self._cond:
            self._closed = True
            for rnd in self._rounds.values():
                rnd.cancelled = True
            self._cond.notify_all()
        for t in self._threads:
            t.join(JOIN_S)
            if t.is_alive():
                log.warning("catch-up reader %s did not stop within %.0f s", t.name, JOIN_S)
        self._main.close()

    # -- rounds, on the runner's thread ------------------------------------------------------------------------
    def _tend(self) -> None:
        """End the rounds after a reader failed; start rounds for the largest backlogs, up to the task's most (U6)."""
        if self._failed is not None and self._rounds:
            log.warning("catch-up turned off: a reader failed: %s", self._failed)
            for key in list(self._rounds):
                self._end_round(key, resume=True)
        if self._disabled or self._closed or self._clock() < self._evaluate_at:
            return
        unknown = False
        large: list[tuple[int, PartitionKey, int, int]] = []
        for key, start in self._next.items():
            if key in self._paused or key in self._rounds or start < 0:
                continue
            high = self._cached_high(key)
            unknown = unknown or high < 0
            if high - start >= self._threshold:
                large.append((high - start, key, start, high))
        large.sort(key=lambda c: c[0], reverse=True)
        started = large[: max(0, self._most - len(self._rounds))]
        for _, key, start, high in started:
            self._start_round(key, start, high)
        if started:
            self._start_readers()
        self._evaluate_at = self._clock() + (UNKNOWN_S if unknown and not started else EVALUATE_S)

    def _cached_high(self, key: PartitionKey) -> int:
        """Return the main consumer's high watermark of ``key`` from its last fetch (-1: not known)."""
        try:
            return self._main.get_watermark_offsets(TopicPartition(*key), 0, cached=True)[1]
        except KafkaException:  # librdkafka does not know the partition (yet)
            return -1

    def _start_round(self, key: PartitionKey, start: int, high: int) -> None:
        self._main.pause([TopicPartition(*key)])
        with self._cond:
            self._rounds[key] = _Round(key, cursor=start, end=high, next=start, high=high)
            self._cond.notify_all()
        self.rounds += 1
        log.info("catch-up of %s-%d: %d readers from offset %d (backlog %d)", *key, self._count, start, high - start)

    def _start_readers(self) -> None:
        """Start the reader threads once the first rounds are there (they cut from all of them in turn)."""
        if not self._threads:
            for i in range(self._count):
                t = threading.Thread(target=self._read, args=(i,), name=f"catch-up-{i}", daemon=True)
                self._threads.append(t)
                t.start()

    def _end_round(self, key: PartitionKey, *, resume: bool) -> None:
        """Cancel ``key``'s round (readers drop its chunks); ``resume``: the main consumer reads on from ``next``."""
        with self._cond:
            rnd = self._rounds.pop(key, None)
            if rnd is None:
                return
            rnd.cancelled = True
            self._held -= len(rnd.chunks)
            self._cond.notify_all()
        self._next[key] = rnd.next
        if resume and key not in self._paused:
            self._main.resume([TopicPartition(*key)])
            self._main.seek(TopicPartition(*key, rnd.next))
        self._evaluate_at = self._clock()  # look again at once (the new backlog decides)

    def _from_main(self, n: int, timeout: float) -> list[MessageLike]:
        """Take up to ``n`` of the main consumer's records: none of a round's partition, none before ``next`` (U1)."""
        if n <= 0:
            return []
        got = self._main.consume(n, timeout)
        rounds = self._rounds
        out = []
        nxt = self._next
        for m in got:
            if m.error() is not None:
                out.append(m)
                continue
            key = cast(PartitionKey, (m.topic(), m.partition()))  # a record has both
            offset = m.offset()
            if key in rounds or offset is None or key in self._paused or offset < nxt.get(key, -1):
                continue
            nxt[key] = offset + 1
            out.append(m)
        return out

    def _from_rounds(self, n: int) -> list[MessageLike]:
        """Take up to ``n`` records of the rounds' head chunks, each round in order, the rounds in turn (U1, U3)."""
        out: list[MessageLike] = []
        ended: list[PartitionKey] = []
        with self._cond:
            rounds = list(self._rounds.values())
            if not rounds or n <= 0:
                return out
            self._turn = (self._turn + 1) % len(rounds)
            for rnd in rounds[self._turn :] + rounds[: self._turn]:
                if len(out) >= n:
                    break
                if self._take(rnd, out, n):
                    ended.append(rnd.key)
        for key in ended:
            self._end_round(key, resume=True)
        return out

    def _take(self, rnd: _Round, out: list[MessageLike], n: int) -> bool:
        """Under the lock: move ``rnd``'s head records to ``out`` (``n`` at most); whether the round ends (U1, U3)."""
        while len(out) < n and rnd.chunks:
            head = rnd.chunks[0]
            got = head.records[head.taken : head.taken + n - len(out)]
            if got:
                head.taken += len(got)
                out += got
                rnd.next = cast(int, got[-1].offset()) + 1  # a record has its offset
            if head.taken < len(head.records) or not head.done:
                return False
            if head.error is not None:
                out.append(head.error)
                return True
            rnd.chunks.popleft()
            self._held -= 1
            rnd.next = max(rnd.next, head.end)
            self._cond.notify_all()  # a reader may cut the next chunk (U4)
        return not rnd.chunks and rnd.cursor >= rnd.end and not self._extends(rnd)

    # -- readers, on their own threads -------------------------------------------------------------------------
    def _extends(self, rnd: _Round) -> bool:
        """Under the lock: whether the round reaches further, the backlog past it being still large (U6)."""
        if rnd.high - rnd.cursor < self._threshold:
            return False
        rnd.end = rnd.high
        return True

    def _cut(self, after: tuple[PartitionKey, int] | None) -> tuple[_Round, _Chunk] | None:
        """Under the lock: cut the next chunk for a reader (``None``: none now; U4).

        ``after``: the partition and end of the reader's last chunk; when its round's next chunk starts there, the
        reader reads on (no restart, no data thrown away); else the round holding fewest chunks, oldest first.
        """
        if self._held >= self._slots:
            return None
        open_ = [r for r in self._rounds.values() if not r.cancelled and (r.cursor < r.end or self._extends(r))]
        rnd = next((r for r in open_ if after == (r.key, r.cursor)), None)
        rnd = rnd or min(open_, key=lambda r: len(r.chunks), default=None)
        if rnd is None:
            return None
        if self._fixed is not None:
            size = self._fixed
        else:
            by_bytes = FIRST_CHUNK_RECORDS if self._span == 0 else int(CHUNK_BYTES * self._span / max(1, self._bytes))
            share = (rnd.end - rnd.cursor) // max(1, self._count // len(self._rounds))  # every reader has work
            size = max(CHUNK_RECORDS_MIN, min(CHUNK_RECORDS_MAX, by_bytes, share))
        chunk = _Chunk(rnd.cursor, min(rnd.end, rnd.cursor + size))
        rnd.cursor = chunk.end
        rnd.chunks.append(chunk)
        self._held += 1
        return rnd, chunk

    def _read(self, index: int) -> None:
        """Reader ``index``'s thread: fetch chunks until closed; a failure ends the rounds and catch-up (U3, U7)."""
        consumer: ReaderConsumerLike | None = None
        after: tuple[PartitionKey, int] | None = None  # where the consumer stands, ``rest`` read past it
        rest: list[MessageLike] = []
        try:
            while True:
                with self._cond:
                    while not self._closed and (cut := self._cut(after)) is None:
                        self._cond.wait(1.0)
                    if self._closed or cut is None:
                        return
                rnd, chunk = cut
                if consumer is None:
                    consumer = self._factory(index)
                if after != (rnd.key, chunk.start):
                    consumer.assign([TopicPartition(*rnd.key, chunk.start)])
                    rest = []
                rest = self._fetch(consumer, rnd, chunk, rest)
                after = (rnd.key, chunk.end) if chunk.done and chunk.error is None else None
        except Exception as e:  # librdkafka, the factory: the rounds end where they were, nothing lost
            with self._cond:
                self._disabled = True
                self._failed = e
        finally:
            if consumer is not None:
                consumer.close()

    def _fetch(
        self, consumer: ReaderConsumerLike, rnd: _Round, chunk: _Chunk, rest: list[MessageLike]
    ) -> list[MessageLike]:
        """Fill ``chunk`` until the reader's position or a record reaches its end, or an error event (U2, U3).

        ``rest``: records the reader consumed past its last chunk's end (this chunk's first); returns this chunk's.
        """
        tp = TopicPartition(*rnd.key)
        while True:
            got, rest = rest or consumer.consume(READ_RECORDS, READ_TIMEOUT_S), []
            keep: list[MessageLike] = []
            error: MessageLike | None = None
            done = False
            for i, m in enumerate(got):
                err = m.error()
                if err is not None:
                    if err.code() == _PARTITION_EOF:
                        continue
                    error, done = m, True
                    break
                offset = m.offset()
                if offset is None or offset >= chunk.end:
                    done, rest = True, list(got[i:])
                    break
                if offset >= chunk.start:
                    keep.append(m)
            if not done:
                done = consumer.position([tp])[0].offset >= chunk.end
            high = consumer.get_watermark_offsets(tp, 0, cached=True)[1]
            size = sum(len(m.key() or b"") + len(m.value() or b"") for m in keep)
            with self._cond:
                if rnd.cancelled or self._closed:
                    return []
                chunk.records += keep
                chunk.bytes += size
                chunk.error = error
                rnd.high = max(rnd.high, high)
                if done:
                    chunk.done = True
                    self._bytes += chunk.bytes
                    self._span += chunk.end - chunk.start
                if keep or done:
                    self._filled += 1
                    self._cond.notify_all()
            if done:
                return rest


__all__ = [
    "CHUNKS_PER_READER",
    "CHUNK_BYTES",
    "CHUNK_RECORDS_MAX",
    "CHUNK_RECORDS_MIN",
    "EVALUATE_S",
    "FIRST_CHUNK_RECORDS",
    "READERS_PER_ROUND",
    "READER_FETCH_BYTES",
    "CatchUpConsumer",
    "MainConsumerLike",
    "ReaderConsumerLike",
    "ReaderFactory",
]
