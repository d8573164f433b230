"""How a copy task commits: at least once, or in transactions (KIP-618).

Both committers write offset syncs (MM2's rule), source offsets to ``mm2-offsets`` (Connect's layout)
and a progress report per partition that moved; :class:`AtLeastOnceCommitter` after the records were
acknowledged (a crash in between copies an interval again, never loses it),
:class:`TransactionalCommitter` with the source offsets inside the records' transaction. The records and
:class:`CommitWrites` are in :mod:`~mirrorspark.replication.task.commit_records`.

Invariants (the tests that guard them cite them)
------------------------------------------------
* **C1** No position is written without a valid grant (:meth:`Grants.may_commit`, checked before every
  commit): a commit waits up to :data:`GRANT_WAIT_S` for one and ends at once on ``abort`` or a closed
  grant link; without it nothing is written (exactly once: the transaction is aborted).
* **C2** A commit with nothing to write checks the grant all the same: an idle task whose grant lapsed
  ends ``orphaned`` instead of keeping its slot.
* **C3** At least once, a position never passes an unacknowledged record: it moves to just after the
  partition's acknowledged prefix (the consumer's position once every record read is acknowledged),
  never backwards; syncs, offsets and reports cover acknowledged records only, and a partition with
  records in flight stays for the next commit.
* **C4** Exactly once, a partition's records and its source offset (and a restarted partition's topic-id
  marker) commit in one transaction; offset syncs and reports are sent only after it committed and its
  delivery reports arrived.
* **C5** Exactly once, an aborted transaction rewinds the consumer to the committed positions and keeps
  nothing of it; a record that failed for another reason than the abort's purge fails the task.
* **C6** Exactly once, a transaction that read from a topic re-created since the task started is
  aborted, never committed (:class:`TopicIdCheck`; a final commit reads the ids again).
* **C7** Exactly once, after ``init_transactions`` (fencing every older producer of the id) a partition
  starts after the newest stored source offset the source can hold when that is past the driver's
  position; a partition the driver started over adopts nothing.
* **C8** The first commit announces every partition whose start is news to the driver (started over, or
  moved by C7): its source offset and a progress report, even with nothing copied.
* **C9** A commit write lost to a retriable failure is written again by the next commit (a report as it
  was, counted once by its ``(attempt, seq)``); lost at the final commit, it fails the task.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mirrorspark.core.progress_records import decode_report, encode_report, newest_segments
from mirrorspark.core.replica_rows import FetchSource
from mirrorspark.errors import ClusterError, DataPathError
from mirrorspark.kafka.delivery import Outgoing
from mirrorspark.kafka.protocols import ProducerLike, SourceConsumerLike, TransactionalProducerLike
from mirrorspark.mm2.connect_offsets import (
    OffsetHistory,
    default_partition,
    topic_id_marker_key,
    topic_id_marker_value,
)
from mirrorspark.mm2.offset_syncs import CopiedSegment, SyncState, flush_delayed, fold_acknowledged
from mirrorspark.replication.task.commit_records import (
    UNKNOWN_SOURCE,
    CommitWrites,
    offset_sync_records,
    partition_report,
    source_offset_record,
)
from mirrorspark.replication.task.failures import delivery_error, init_transactions_error, stall_error
from mirrorspark.replication.task.grant_client import Grants, GrantState
from mirrorspark.replication.task.partition import PartitionCopy, TaskPartitions
from mirrorspark.replication.task.spec import CopyTaskSpec, PartitionKey
from mirrorspark.replication.task.stored_offsets import adopted_starts
from mirrorspark.replication.task.topic_check import TopicIdCheck, TopicIdsReader

GRANT_WAIT_S = 10.0
"""Longest wait of a commit for the driver's grant (s); an ``abort`` or a closed grant link ends it at once (C1)."""

GRANT_POLL_S = 0.05
"""Seconds between two looks at the grants while a commit waits for a grant."""


class Committer(Protocol):
    """How a :class:`~mirrorspark.replication.task.runner.CopyTaskRunner` commits what its target acknowledged."""

    def begin(self) -> None:
        """Prepare before the first record is produced (exactly-once: initialise the transactional producer)."""
        ...

    def commit(self, *, final: bool) -> bool:
        """Commit; ``False`` when the driver's grant is gone (nothing was written). ``final``: the task's last."""
        ...

    def end(self, *, clean: bool) -> None:
        """Release what the committer holds; ``clean``: the last commit succeeded."""
        ...


StoredOffsetsReader = Callable[[Sequence[PartitionKey]], Mapping[PartitionKey, OffsetHistory]]
"""Reads the stored source offsets of the given partitions from ``mm2-offsets`` (exactly once, after
``init_transactions``)."""

SOURCE_END_TIMEOUT_S = 30.0
"""Seconds a copy task waits for a source partition's end offset when it checks a stored offset (s)."""


class _Committer:
    """What both committers share: the task, its partitions, its clients and where they write.

    ``stored_offsets`` and ``topic_ids`` are exactly-once readers (``None``: the driver's positions, no
    topic-id check).
    """

    def __init__(
        self,
        spec: CopyTaskSpec,
        partitions: TaskPartitions,
        *,
        consumer: SourceConsumerLike,
        data: TransactionalProducerLike,
        writes: CommitWrites,
        syncs: CommitWrites | None,
        grants: Grants,
        sources: Mapping[PartitionKey, FetchSource],
        clock: Callable[[], float] = time.monotonic,
        stored_offsets: StoredOffsetsReader | None = None,
        topic_ids: TopicIdsReader | None = None,
    ) -> None:
        self.spec = spec
        self.stored_offsets = stored_offsets
        started = {pc.assignment.source_topic: pc.assignment.topic_id for pc in partitions.by_key.values()}
        self.topic_check = (
            TopicIdCheck(
                topic_ids,
                {t: tid for t, tid in started.items() if tid is not None},
                clock,
                f"flow {spec.flow}: task {spec.task_index}",
            )
            if topic_ids is not None
            else None
        )
        self.parts = partitions
        self.consumer = consumer
        self.data = data
        self.writes = writes
        self.syncs = syncs
        self.grants = grants
        self.sources = sources
        self.clock = clock
        self.announce: set[PartitionKey] = {k for k, pc in partitions.by_key.items() if pc.assignment.restarted}
        """Partitions the next commit writes even if they did not move (their start is news to the driver)."""
        self.attempt = uuid.uuid4().hex[:12]
        """This task attempt's id in its progress reports (with their ``seq``: a report is counted once)."""
        self.resend: list[Outgoing] = []
        """Progress reports whose write timed out (at least once), written again by the next commit."""

    def begin(self) -> None:
        """Nothing to prepare."""

    def end(self, *, clean: bool) -> None:
        """Nothing to release."""

    def _granted(self) -> bool:
        """Wait up to :data:`GRANT_WAIT_S` for a valid grant of the driver; ``False`` if none comes (C1).

        A first commit before the driver answered the hello, or a renewal late on a loaded driver, waits
        rather than ending the task and having its copy made again.
        """
        deadline = self.clock() + GRANT_WAIT_S
        while not self.grants.may_commit():
            if self.grants.check() in (GrantState.CLOSED, GrantState.ABORT) or self.clock() >= deadline:
                return False
            self.data.poll(GRANT_POLL_S)  # serves delivery reports while it waits
        return True

    def _positions(self, keys: Sequence[PartitionKey]) -> dict[PartitionKey, int]:
        """Return the consumer's positions (next offset to read; past transaction markers and compacted gaps)."""
        keys = [k for k in keys if k not in self.parts.out_of_range]  # paused where they were found out of range
        tps = self.consumer.position([TopicPartition(t, p) for (t, p) in keys]) if keys else []
        return {(tp.topic, tp.partition): tp.offset for tp in tps}

    def _check_delivery(self, pc: PartitionCopy) -> None:
        if pc.error is not None:
            err, upstream = pc.error
            a = pc.assignment
            raise delivery_error(err, a.source_topic, a.partition, a.target_topic, upstream)

    def _send(self, syncs: list[Outgoing], commits: list[Outgoing], *, final: bool) -> None:
        if syncs and self.syncs is not None:
            self.syncs.send(syncs)
        self.writes.send(commits)
        if final:
            if self.syncs is not None:
                self.syncs.wait(self.spec.stall_timeout_s)
            self.writes.wait(self.spec.stall_timeout_s)


class AtLeastOnceCommitter(_Committer):
    """Commit the acknowledged prefix of each partition: offset syncs, then source offsets and reports (C3, C8)."""

    def begin(self) -> None:
        """Mark the partitions to announce for the first commit."""
        self.parts.dirty.update(self.announce)

    def _write_lost_again(self) -> None:
        """Have this commit write again what earlier commits lost to a retriable failure (C9).

        Every partition is announced, and a lost report is written again as it was without its segments
        (a timed-out write may have landed; the driver counts ``(attempt, seq)`` once). A lost offset
        sync is not written again, as when MM2's ``OffsetSyncWriter`` skips one.
        """
        if self.syncs is not None:
            self.syncs.take_lost()
        lost = self.writes.take_lost()
        if not lost:
            return
        for r in lost:
            if r.topic == self.spec.progress_topic:
                again = replace(decode_report(r.key, r.value), segments=())
                self.resend.append(Outgoing(r.topic, *encode_report(again), partition=r.partition))
        self.announce.update(self.parts.by_key)
        self.parts.dirty.update(self.parts.by_key)

    def commit(self, *, final: bool) -> bool:
        """Commit what the target acknowledged; ``False`` without a valid grant, also with nothing to commit (C1, C2).

        Raises RecordTooLargeError or DataPathError when a delivery failed, the final flush timed out,
        or a commit write failed (retriable ones only at the final commit).
        """
        if final:
            left = self.data.flush(self.spec.stall_timeout_s)
            if left:
                what = f"{left} records not acknowledged by the target within {self.spec.stall_timeout_s:.0f} s"
                raise stall_error(self.spec.flow, what)
        else:
            self.data.poll(0)
        self._write_lost_again()
        keys = self.parts.due(final=final)
        if not keys:
            return self._granted()  # an idle task ends when its grant lapses: a zombie keeps no slot
        positions = self._positions(keys)
        syncs: list[Outgoing] = []
        commits: list[Outgoing] = []
        updates: list[tuple[PartitionCopy, int, SyncState, tuple[CopiedSegment, ...], int]] = []
        now = int(time.time() * 1000)
        for key in keys:
            pc = self.parts.by_key[key]
            self._check_delivery(pc)
            n = len(pc.downstream)
            up, down = pc.upstream[:n], pc.downstream[:n]
            state, due, segments = fold_acknowledged(pc.state, up, down, self.spec.offset_lag_max)
            state, delayed = flush_delayed(state)
            if delayed is not None:
                due.append(delayed)
            next_offset = up[-1] + 1 if up else pc.committed
            if n == len(pc.upstream):  # every record read is acknowledged: the reader's position counts
                next_offset = max(next_offset, positions.get(key, -1))
            if next_offset <= pc.committed and not due and key not in self.announce:
                if len(pc.upstream) > n:
                    self.parts.dirty.add(key)  # acknowledgements still to come: look again next time
                continue
            syncs.extend(offset_sync_records(self.spec, key[0], key[1], due))
            if next_offset > pc.committed or key in self.announce:
                commits.append(source_offset_record(self.spec, key[0], key[1], max(next_offset, pc.committed)))
            window = newest_segments(pc.segments, segments)
            position = max(next_offset, pc.committed)
            report = partition_report(
                self.spec,
                pc,
                next_offset=position,
                records=n,
                segments=window,
                now_ms=now,
                source=self.sources.get(key, UNKNOWN_SOURCE),
                attempt=self.attempt,
            )
            commits.append(Outgoing(self.spec.progress_topic, *encode_report(report)))
            updates.append((pc, n, state, window, position))
        if not updates:
            return self._granted()  # nothing moved: still, a zombie ends
        if not self._granted():
            return False  # the driver is gone or lost the flow's lease: a zombie never writes a position
        self._send(syncs, [*self.resend, *commits], final=final)
        self.resend = []
        for pc, n, state, window, position in updates:
            del pc.upstream[:n]
            del pc.downstream[:n]
            if pc.upstream:  # produced, not yet acknowledged: commit it next time
                self.parts.dirty.add(pc.key)
            pc.reset_interval()
            pc.state = state
            pc.segments = window
            pc.committed = position
            pc.reports += 1
            self.parts.copied += n
            self.announce.discard(pc.key)
        return True


class TransactionalCommitter(_Committer):
    """Exactly-once (KIP-618): records and source offsets in one transaction; offset syncs and reports after it (C4-C8).

    A retriable commit error is retried, an abortable one aborts and rewinds (:meth:`rewind`), anything
    else (fenced, fatal) fails the task.
    """

    def begin(self) -> None:
        """Initialise the transactional id, take the task's start from its stored offsets (C7), open a transaction.

        Raises ClusterError when the principal may not use the id (grant ``WRITE`` on the
        ``TransactionalId`` prefix ``<source>-mm2-``), the init fails or the stored offsets cannot be
        read or checked, and TransactionCoordinatorError when the coordinator does not answer within
        ``init_timeout_s``.
        """
        spec = self.spec
        try:
            self.data.init_transactions(spec.init_timeout_s)
        except KafkaException as e:
            raise init_transactions_error(
                spec.flow, spec.source, spec.target, str(spec.transactional_id), spec.init_timeout_s, e
            ) from e
        try:
            self._adopt_stored_offsets()
        except KafkaException as e:
            raise ClusterError(
                f"flow {spec.flow}: task {spec.task_index} could not check its stored source offsets against the "
                f"source partitions' end offsets on cluster '{spec.source}': {e.args[0]}"
            ) from e
        self.data.begin_transaction()

    def _adopt_stored_offsets(self) -> None:
        """Start partitions after their newest stored source offset where past the driver's position (C7)."""
        if self.stored_offsets is None:
            return
        keys = [k for k, pc in self.parts.by_key.items() if not pc.assignment.restarted]
        stored = self.stored_offsets(keys) if keys else {}
        starts = {k: self.parts.by_key[k].committed for k in stored}
        ahead = [k for k, h in stored.items() if h.offsets and h.offsets[-1] + 1 > starts[k]]
        ends = {}
        for t, p in ahead:
            _, high = self.consumer.get_watermark_offsets(TopicPartition(t, p), timeout=SOURCE_END_TIMEOUT_S)
            ends[(t, p)] = high
        for k, start in adopted_starts(starts, stored, ends).items():
            self.parts.by_key[k].committed = start
            self.announce.add(k)
        self.parts.dirty.update(self.announce)

    def end(self, *, clean: bool) -> None:
        """Abort the open transaction unless the last commit was clean (best effort: a fenced producer is left)."""
        if not clean:
            with contextlib.suppress(Exception):  # the next init_transactions aborts it anyway
                self.data.abort_transaction(5.0)

    def commit(self, *, final: bool) -> bool:
        """Commit the open transaction with the source offsets of what it holds; then syncs and reports (C4).

        ``False`` without a valid grant (the transaction aborted; C1, C2); ``True`` otherwise, also
        after an abortable error rewound the task. Raises RecordTooLargeError or DataPathError when a
        delivery failed, the producer was fenced or broke, delivery reports did not arrive within
        ``stall_timeout_s``, or a sync or report write failed.
        """
        keys = self.parts.due(final=final)
        if not self._granted():  # also with nothing to commit: an idle task ends when its grant lapses
            self.end(clean=False)
            return False
        if not keys:
            return True
        moves = self._moves(keys)
        if not moves:
            return True
        if self._recreated_under_the_task(keys, final=final):
            return True
        for key, next_offset in moves:  # the same producer, the same transaction: Connect's layout, unchanged
            o = source_offset_record(self.spec, key[0], key[1], next_offset)
            _produce(self.data, o)
            marker = self._new_start_marker(key)
            if marker is not None:
                _produce(self.data, marker)
        if not commit_transaction(self.data, self.spec):
            self.rewind()
            return True
        self._await_deliveries()
        syncs, reports = self._settle(moves)
        self._send(syncs, reports, final=final)
        if not final:
            self.data.begin_transaction()
        return True

    def _new_start_marker(self, key: PartitionKey) -> Outgoing | None:
        """Return the topic-id marker of a partition the driver started over, for its first commit's transaction.

        Committed with the offset, it says whose offsets they are if a kill comes before the progress
        report (faults-random seed 4).
        """
        pc = self.parts.by_key[key]
        tid = pc.assignment.topic_id
        if not (pc.assignment.restarted and key in self.announce and tid):
            return None
        marker = topic_id_marker_key(self.spec.source, key[0], key[1])
        return Outgoing(
            self.spec.offsets_topic,
            marker,
            topic_id_marker_value(tid),
            partition=default_partition(marker, self.spec.offsets_partitions),
        )

    def _moves(self, keys: Sequence[PartitionKey]) -> list[tuple[PartitionKey, int]]:
        """Return the partitions whose position moves in this transaction, with their new position."""
        positions = self._positions(keys)
        moves = []
        for key in keys:
            pc = self.parts.by_key[key]
            self._check_delivery(pc)
            next_offset = pc.upstream[-1] + 1 if pc.upstream else pc.committed
            next_offset = max(next_offset, positions.get(key, -1))  # every record read was produced
            if next_offset > pc.committed or key in self.announce:
                moves.append((key, max(next_offset, pc.committed)))
        return moves

    def _recreated_under_the_task(self, keys: Sequence[PartitionKey], *, final: bool) -> bool:
        """Abort the transaction if a topic it copied from was deleted and re-created since the task started (C6).

        The topic's partitions are paused and reported out of range, so the driver records the gap and
        starts the next generation.
        """
        if self.topic_check is None:
            return False
        copied = sorted({k[0] for k in keys if self.parts.by_key[k].upstream})
        gone = self.topic_check.recreated(copied, final=final or bool(self.parts.out_of_range))
        if not gone:
            return False
        with contextlib.suppress(Exception):  # fenced or broken: nothing of it is committed either way
            self.data.abort_transaction(self.spec.stall_timeout_s)
        for t, p in (k for k in self.parts.by_key if k[0] in gone):
            if (t, p) not in self.parts.out_of_range:
                self.parts.out_of_range.append((t, p))
                self.consumer.pause([TopicPartition(t, p)])
        self.rewind()
        return True

    def _await_deliveries(self) -> None:
        """Collect the committed records' downstream offsets (delivery reports): every record is acknowledged.

        ``commit_transaction`` flushes, and librdkafka's flush serves the delivery reports (callback mode),
        so this normally finds them all at once (0.1-0.3 ms a commit, issue #44); it stays as C4's check.
        """
        deadline = time.monotonic() + self.spec.stall_timeout_s
        while any(len(pc.downstream) < len(pc.upstream) for pc in self.parts.by_key.values()):
            if time.monotonic() > deadline:
                raise stall_error(self.spec.flow, "delivery reports of a committed transaction did not arrive")
            self.data.poll(0.05)

    def _settle(self, moves: Sequence[tuple[PartitionKey, int]]) -> tuple[list[Outgoing], list[Outgoing]]:
        """Fold the committed records into syncs, segments and reports; advance the committed positions."""
        syncs: list[Outgoing] = []
        reports: list[Outgoing] = []
        now = int(time.time() * 1000)
        for key, next_offset in moves:
            pc = self.parts.by_key[key]
            n = len(pc.upstream)
            state, due, segments = fold_acknowledged(pc.state, pc.upstream, pc.downstream, self.spec.offset_lag_max)
            state, delayed = flush_delayed(state)
            if delayed is not None:
                due.append(delayed)
            syncs.extend(offset_sync_records(self.spec, key[0], key[1], due))
            window = newest_segments(pc.segments, segments)
            report = partition_report(
                self.spec,
                pc,
                next_offset=next_offset,
                records=n,
                segments=window,
                now_ms=now,
                source=self.sources.get(key, UNKNOWN_SOURCE),
                attempt=self.attempt,
            )
            pc.reports += 1
            reports.append(Outgoing(self.spec.progress_topic, *encode_report(report)))
            pc.upstream.clear()
            pc.downstream.clear()
            pc.reset_interval()
            pc.state = state
            pc.segments = window
            pc.committed = next_offset
            self.parts.copied += n
            self.announce.discard(key)
        return syncs, reports

    def rewind(self) -> None:
        """After an aborted transaction: back to the committed positions, nothing of it kept; a new transaction (C5).

        The abort's purged deliveries (``_PURGE_QUEUE``, ``_PURGE_INFLIGHT``) are forgotten; a record
        that failed otherwise raises RecordTooLargeError or DataPathError naming it (``engine-audit.md``
        F8).
        """
        self.data.poll(0)  # the purged records' delivery reports
        for pc in self.parts.by_key.values():
            if pc.error is not None and not _purged(pc.error[0]):
                self._check_delivery(pc)
        for key, pc in self.parts.by_key.items():
            pc.forget_unacknowledged()
            if key not in self.parts.out_of_range:
                self.consumer.seek(TopicPartition(key[0], key[1], pc.committed))
        self.parts.dirty.update(self.announce)  # still to announce: the aborted transaction held it
        self.data.begin_transaction()


def _purged(err: object) -> bool:
    """Whether a delivery error only says the record was purged (an aborted transaction, a released producer)."""
    return isinstance(err, KafkaError) and err.code() in _PURGE_CODES


_PURGE_CODES = frozenset({KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT})  # noqa: SLF001 (librdkafka codes)


def _produce(producer: ProducerLike, o: Outgoing) -> None:
    while True:
        try:
            producer.produce(o.topic, o.value, o.key, o.partition)
            return
        except BufferError:
            producer.poll(0.05)


def commit_transaction(data: TransactionalProducerLike, spec: CopyTaskSpec) -> bool:
    """Commit the open transaction (retrying retriable errors); ``False`` when it was aborted instead.

    Raises DataPathError when the producer was fenced (a newer run of this task, or another instance,
    took its transactional id) or is unusable; the restarted task's ``init_transactions`` aborts what
    this one left.
    """
    deadline = time.monotonic() + spec.stall_timeout_s
    while True:
        try:
            data.commit_transaction(max(1.0, deadline - time.monotonic()))
            return True
        except KafkaException as e:
            err = e.args[0]
            if err.retriable() and time.monotonic() < deadline:
                continue
            if err.txn_requires_abort():
                data.abort_transaction(spec.stall_timeout_s)
                return False
            fenced = "FENCED" in err.name() or "EPOCH" in err.name()
            hint = (
                ": another producer with this transactional id took over (a newer run of this task or another "
                "instance); this one stops without committing"
                if fenced
                else ""
            )
            raise DataPathError(
                f"flow {spec.flow}: committing the transaction of task {spec.task_index} (transactional id "
                f"'{spec.transactional_id}') failed: {err.str()}{hint}",
                kafka_code=err.name(),
            ) from e


__all__ = [
    "GRANT_POLL_S",
    "GRANT_WAIT_S",
    "SOURCE_END_TIMEOUT_S",
    "UNKNOWN_SOURCE",
    "AtLeastOnceCommitter",
    "CommitWrites",
    "Committer",
    "StoredOffsetsReader",
    "TopicIdsReader",
    "TransactionalCommitter",
    "commit_transaction",
    "offset_sync_records",
    "partition_report",
    "source_offset_record",
]
