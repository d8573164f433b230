"""The copy loop of one long-running copy task, with its Kafka clients and grants injected (MM2 ``MirrorSourceTask``).

:class:`CopyTaskRunner` polls the task's partitions, produces every record to the same partition of its
remote topic and commits through its :class:`~mirrorspark.replication.task.commit.Committer` until the
driver says ``stop`` (``stopped``), a bounded copy reaches its ends (``caught_up``), a position is out
of range (``out_of_range``), or the driver is gone, aborts or stops granting (``orphaned``, nothing more
committed; an idle task too, commit.py's C2).

**The commit rule**: commit as soon as the first records are acknowledged, then, at least once, at
whichever comes first of ``flush_interval_s`` (Connect's ``offset.flush.interval.ms``) and ``flush_records``
acknowledged records. A kill -9 thus re-copies about ``flush_records`` plus :data:`IN_FLIGHT_RECORDS`
per task, not a backlog's second or a full producer queue. Exactly once, a kill aborts the open
transaction (nothing of it is seen, nothing copied twice), so transactions are sized by time and bytes,
not records (R1).

Invariants (the tests that guard them cite them)
------------------------------------------------
* **R1** Exactly once, a transaction commits at whichever comes first of ``flush_interval_s`` after the
  last commit and :data:`TRANSACTION_BYTES` of keys and values produced in it (what it holds stays
  bounded); ``flush_records`` does not bound it. With ``transaction.boundary=poll`` it also commits after
  every batch read that is not a backlog's (fewer than :data:`BACKLOG_RECORDS` records): a task keeping up
  with its source commits each batch at once; through a backlog, consecutive full batches make one
  transaction.

**The throttle** (``replication.throttled.rate``): under a share from the driver, each poll first waits in
the task's :class:`~mirrorspark.replication.task.throttle_gate.ThrottleGate` and takes about a burst.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import cast

from confluent_kafka import KafkaError, TopicPartition

from mirrorspark.core.replica_rows import FetchSource
from mirrorspark.kafka.protocols import MessageLike, ProducerLike, SourceConsumerLike, TransactionalProducerLike
from mirrorspark.replication.task.commit import (
    GRANT_POLL_S,
    GRANT_WAIT_S,
    AtLeastOnceCommitter,
    Committer,
    CommitWrites,
    StoredOffsetsReader,
    TopicIdsReader,
    TransactionalCommitter,
)
from mirrorspark.replication.task.failures import consumer_error
from mirrorspark.replication.task.grant_client import Grants, GrantState
from mirrorspark.replication.task.partition import TaskPartitions
from mirrorspark.replication.task.produce import forward_run
from mirrorspark.replication.task.schema_ids import SchemaIdTranslator
from mirrorspark.replication.task.spec import CopyTaskSpec, PartitionKey, TaskOutcome, TaskResult
from mirrorspark.replication.task.throttle_gate import ThrottleGate

POLL_TIMEOUT_S = 0.25
"""Longest wait for the first record of a poll (s): also how often the task checks its grants."""

PRE_GRANT_RECORDS = 500
"""At least once: records a task copies after a lease take-over before the new holder's first grant, at
most (see ``_before_first_grant``)."""

IN_FLIGHT_RECORDS = 10000
"""Records a task may have produced and not seen acknowledged before it reads more: bounds what a
restart re-copies, and the pipeline at one partition (issue #26: 10,000 gave 232,000 records/s of 100
B)."""

BATCH_RECORDS = 10000
"""Most records one poll hands the loop (MM2's ``max.poll.records`` is 500; librdkafka batches cheaply);
at least once, :data:`IN_FLIGHT_RECORDS` bounds it first."""

BACKLOG_RECORDS = 1000
"""A poll of at least this many records means a backlog: the next poll waits up to :data:`FILL_WAIT_S` to fill."""

HOLD_S = 60.0
"""At least once: seconds a commit without a grant keeps waiting for one, copying nothing, before the
task ends ``orphaned`` (the driver may take the lease back, ``supervisor.RECLAIM_S``)."""

TRANSACTION_BYTES = 32 * 1024 * 1024
"""Exactly once: bytes of keys and values produced in a transaction that make its commit due (R1): at 1
KiB a task's copy of about a quarter of a second (``offset.flush.interval.ms``), so the interval usually
ends it first; each commit waits for its records' acknowledgements and the coordinator, so fewer,
larger transactions copy faster."""

FILL_WAIT_S = 0.05
"""Longest wait of a poll for more records while the task works through a backlog (s): fewer, fuller
turns of the loop copy small records faster; a task keeping up with its source never waits."""


_OUT_OF_RANGE = frozenset({KafkaError._AUTO_OFFSET_RESET, KafkaError._LOG_TRUNCATION})  # noqa: SLF001 (librdkafka)
"""Consumer errors that mean a position the source partition no longer holds (the driver checks it for a gap)."""


class CopyTaskRunner:
    """Runs one copy task until it ends: poll, produce, commit.

    ``data`` is the idempotent (exactly once: transactional, not yet initialised) target producer;
    ``syncs_producer`` is ``None`` when the flow emits no offset syncs; ``sources`` is kept current by
    the consumer's statistics; ``stored_offsets`` and ``topic_ids`` are exactly-once readers (``None``:
    the driver's positions, no topic-id check); ``schema_ids`` translates the schema ids of every
    partition's records but heartbeats' (``None``: bytes as they are). The runner closes the consumer and
    the grants when :meth:`run` returns; the producers are the caller's.
    """

    def __init__(
        self,
        spec: CopyTaskSpec,
        *,
        consumer: SourceConsumerLike,
        data: TransactionalProducerLike,
        commit_producer: ProducerLike,
        syncs_producer: ProducerLike | None,
        grants: Grants,
        sources: Mapping[PartitionKey, FetchSource] | None = None,
        clock: Callable[[], float] = time.monotonic,
        stored_offsets: StoredOffsetsReader | None = None,
        topic_ids: TopicIdsReader | None = None,
        schema_ids: SchemaIdTranslator | None = None,
    ) -> None:
        self.spec = spec
        self.consumer = consumer
        self.data = data
        self.grants = grants
        self.clock = clock
        self.parts = TaskPartitions(spec.partitions)
        if schema_ids is not None and spec.schemas is not None:
            heartbeats = spec.schemas.naming.policy.is_heartbeats_topic
            for pc in self.parts.by_key.values():
                pc.schema_ids = None if heartbeats(pc.assignment.source_topic) else schema_ids
        if spec.provenance is not None:
            hop = spec.provenance.hop
            for pc in self.parts.by_key.values():
                pc.stamp_provenance(spec.source, hop)
        self._backlog = False  # the last poll was a full one: the next may wait to fill
        self._produced = 0  # records produced since the last commit (in flight ones included)
        self._committed_once = False  # the first commit (as soon as records are acknowledged) was made
        self._began = 0.0  # when the loop began (clock s)
        self._grant_check_at = 0.0  # at least once: when to look at the grant again (clock s; see _grant_lapsed)
        self.gate = ThrottleGate(lambda: grants.rate, self._serve, clock=clock)  # replication.throttled.rate
        resend = not spec.exactly_once  # at least once, a timed-out commit write is written again
        self.writes = CommitWrites(commit_producer, f"flow {spec.flow}: source offsets", spec.target, resend=resend)
        self.sync_writes = (
            CommitWrites(syncs_producer, f"flow {spec.flow}: offset syncs", spec.source, resend=resend)
            if syncs_producer is not None
            else None
        )
        kind = TransactionalCommitter if spec.exactly_once else AtLeastOnceCommitter
        self.committer: Committer = kind(
            spec,
            self.parts,
            consumer=consumer,
            data=data,
            writes=self.writes,
            syncs=self.sync_writes,
            grants=grants,
            sources=sources if sources is not None else {},
            clock=clock,
            stored_offsets=stored_offsets,
            topic_ids=topic_ids,
        )

    def run(self) -> TaskResult:
        """Copy until the task ends (see the module notes); return how it ended.

        Raises RecordTooLargeError, ClusterError (exactly once: the transactional id could not be
        initialised) or DataPathError (a produce, delivery, read or commit failure: what was not
        committed is copied again, never lost).
        """
        clean = False
        try:
            if (self.spec.exactly_once or self.spec.after_other_holder) and not self._admitted():
                # refused: it must not fence the current task; or no grant: it must not copy alongside
                # the previous holder's last records (engine-audit-2 N5)
                return self._result(TaskOutcome.ORPHANED)
            self.committer.begin()
            self.consumer.assign([TopicPartition(t, p, pc.committed) for (t, p), pc in self.parts.by_key.items()])
            self._began = self.clock()
            next_commit = self._began + self.spec.flush_interval_s
            while True:
                msgs = self._next()
                self._produced += self._copy(msgs)
                self._check_writes()
                state = self.grants.check()
                if state in (GrantState.CLOSED, GrantState.ABORT):
                    return self._result(TaskOutcome.ORPHANED)
                outcome = self._ending(state, idle=not msgs)
                if outcome is not None:
                    if not self.committer.commit(final=True):
                        return self._result(TaskOutcome.ORPHANED)
                    clean = True
                    return self._result(outcome)
                due = self._batch_due(msgs) or self.clock() >= next_commit or self._volume_due()
                due = due or self._grant_lapsed()
                if due and not self._before_first_grant():
                    if not self.committer.commit(final=False) and not self._hold():
                        return self._result(TaskOutcome.ORPHANED)
                    next_commit = self.clock() + self.spec.flush_interval_s
                    self._committed()
        finally:
            self.committer.end(clean=clean)
            self.consumer.close()
            self.grants.close()

    def _admitted(self) -> bool:
        """Wait for the driver's first grant: before ``init_transactions``, or before reading (``after_other_holder``).

        A refused late task ends here, before its transactional id fences the current task
        (``engine-audit.md`` F8).
        """
        deadline = self.clock() + GRANT_WAIT_S
        while not self.grants.may_commit():
            if self.grants.check() in (GrantState.CLOSED, GrantState.ABORT) or self.clock() >= deadline:
                return False
            time.sleep(GRANT_POLL_S)
        return True

    def _grant_lapsed(self) -> bool:
        """At least once, after the first commit: whether the driver's grant lapsed (looked at every ``GRANT_POLL_S``).

        Copying then stops at once, not at the next commit (``engine-audit-2.md`` N5).
        """
        if self.spec.exactly_once or not self._committed_once or self.clock() < self._grant_check_at:
            return False
        self._grant_check_at = self.clock() + GRANT_POLL_S
        return not self.grants.may_commit()

    def _next(self) -> list[MessageLike]:
        """Poll the next records to copy; under a throttle share, once the gate lets a burst of them go."""
        if self.gate.pass_through():
            return self._poll()
        most = self.gate.admit()  # waits, serving acknowledgements and grants
        msgs = self._poll(most) if most else []
        self.gate.spend(msgs)
        self.grants.throttled(self.gate.sent_bytes, self.gate.throttled_s)
        return msgs

    def _serve(self, wait_s: float) -> bool:
        """Serve acknowledgements for up to ``wait_s`` in a throttled wait; whether the grant state is still open."""
        self.data.poll(wait_s)
        return self.grants.check() == GrantState.OPEN

    def _poll(self, most: int = BATCH_RECORDS) -> list[MessageLike]:
        """Wait up to :data:`POLL_TIMEOUT_S` for a record, then take what else is there, ``most`` at most.

        After a backlog-sized poll the next waits up to :data:`FILL_WAIT_S` to fill; with
        :data:`IN_FLIGHT_RECORDS` unacknowledged it reads nothing and serves acknowledgements instead.
        """
        in_flight = self._in_flight()
        if in_flight >= IN_FLIGHT_RECORDS:
            self.data.poll(POLL_TIMEOUT_S)
            return []
        first = self.consumer.poll(POLL_TIMEOUT_S)
        if first is None:
            self._backlog = False
            return []
        wait = FILL_WAIT_S if self._backlog else 0
        more = min(self._batch_limit(in_flight), most) - 1
        msgs = [first, *self.consumer.consume(num_messages=more, timeout=wait)] if more > 0 else [first]
        self._backlog = len(msgs) >= BACKLOG_RECORDS
        return msgs

    def _hold(self) -> bool:
        """At least once, after a commit found no grant: wait up to :data:`HOLD_S` for one; whether it committed."""
        if self.spec.exactly_once:
            return False
        deadline = self.clock() + HOLD_S
        while self.clock() < deadline:
            if self.grants.check() in (GrantState.CLOSED, GrantState.ABORT):
                return False
            self.parts.dirty.update(self.parts.by_key)  # the commit without a grant emptied the dirty set
            if self.committer.commit(final=False):  # waits for a grant (commit.GRANT_WAIT_S)
                return True
        return False

    def _batch_limit(self, in_flight: int) -> int:
        """Return how many records the next poll may take: at least once, cut to the in-flight and pre-grant limits."""
        if self.spec.exactly_once:
            return BATCH_RECORDS  # a kill -9 aborts the open transaction: nothing of it is seen twice
        limit = min(BATCH_RECORDS, IN_FLIGHT_RECORDS - in_flight)
        if not (self._committed_once or self.grants.may_commit()):
            limit = min(limit, self._pre_grant_records() - self._produced)
        return max(1, limit)

    def _pre_grant_records(self) -> int:
        return min(self.spec.flush_records or PRE_GRANT_RECORDS, PRE_GRANT_RECORDS)

    def _before_first_grant(self) -> bool:
        """At least once: whether the first commit is put off, copying on, until the driver's first grant.

        A holder after its own holding starts its tasks at once and grants from ``safe_at``: the task
        copies meanwhile, up to :data:`PRE_GRANT_RECORDS` (or ``flush_records``) records or
        :data:`~mirrorspark.replication.task.commit.GRANT_WAIT_S`, then waits as any commit.
        """
        return (
            not self.spec.exactly_once
            and not self._committed_once
            and self._produced < self._pre_grant_records()
            and self.clock() < self._began + GRANT_WAIT_S
            and not self.grants.may_commit()
        )

    def _batch_due(self, msgs: list[MessageLike]) -> bool:
        """Exactly once with ``transaction.boundary=poll``: whether the batch just read ends the transaction (R1)."""
        return self.spec.exactly_once and self.spec.boundary == "poll" and bool(msgs) and not self._backlog

    def _volume_due(self) -> bool:
        """Tell whether the commit rule's volume part says commit now (see the module notes; R1)."""
        if not self._committed_once:
            return self._produced > 0 and self._acknowledged() > 0
        if self.spec.exactly_once:
            return self._transaction_bytes() >= TRANSACTION_BYTES
        limit = self.spec.flush_records
        return 0 < limit <= self._produced and self._acknowledged() >= limit

    def _transaction_bytes(self) -> int:
        """Count the bytes of keys and values produced since the last commit (all in partitions of the dirty set)."""
        by_key = self.parts.by_key
        return sum(by_key[k].value_bytes + by_key[k].key_bytes for k in self.parts.dirty if k in by_key)

    def _in_flight(self) -> int:
        """Count the records produced and not yet acknowledged (all in partitions of the dirty set)."""
        by_key = self.parts.by_key
        return sum(len(by_key[k].upstream) - len(by_key[k].downstream) for k in self.parts.dirty if k in by_key)

    def _acknowledged(self) -> int:
        """Count the records acknowledged and not yet committed (all in partitions of the dirty set)."""
        by_key = self.parts.by_key
        return sum(len(by_key[k].downstream) for k in self.parts.dirty if k in by_key)

    def _committed(self) -> None:
        """Note a commit: what is still in flight counts toward the next one's volume."""
        self._committed_once = True
        by_key = self.parts.by_key
        self._produced = sum(len(by_key[k].upstream) for k in self.parts.dirty if k in by_key)

    def _copy(self, msgs: list[MessageLike]) -> int:
        """Produce every record read, a partition's run at a time; note out-of-range and dirty ones; count them."""
        parts = self.parts
        data, stall_s = self.data, self.spec.stall_timeout_s
        produced = 0
        i, end = 0, len(msgs)
        while i < end:
            m = msgs[i]
            err = m.error()
            if err is not None:
                self._read_error(m, err)
                i += 1
                continue
            k = cast(PartitionKey, (m.topic(), m.partition()))  # a record (no error) has both
            parts.dirty.add(k)
            pc = None if k in parts.out_of_range else parts.by_key.get(k)
            if pc is None:
                i += 1
                continue
            j = forward_run(data, pc, msgs, i, stall_s)
            produced += j - i
            i = j
        return produced

    def _read_error(self, m: MessageLike, err: KafkaError) -> None:
        """Handle an error record: a partition's end (ignored), a position out of range (paused), else a failure.

        KIP-320's ``_LOG_TRUNCATION`` (an unclean election cut the source log) counts as out of range,
        so the driver records the gap instead of the task failing over and over.
        """
        if err.code() == KafkaError._PARTITION_EOF:
            return
        if err.code() in _OUT_OF_RANGE and m.topic() is not None:
            # auto.offset.reset=error: records deleted, log truncated, topic re-created: the driver records the gap
            k = (m.topic(), m.partition())
            if k in self.parts.by_key and k not in self.parts.out_of_range:
                self.parts.out_of_range.append(k)
                self.consumer.pause([TopicPartition(k[0], k[1])])
            return
        raise consumer_error(self.spec.flow, self.spec.consumer_conf, m, err)

    def _check_writes(self) -> None:
        self.data.poll(0)
        self.writes.check()
        if self.sync_writes is not None:
            self.sync_writes.check()

    def _ending(self, state: GrantState, *, idle: bool) -> TaskOutcome | None:
        """Whether the task ends after a last commit now, and how."""
        if state == GrantState.STOP:
            return TaskOutcome.STOPPED
        if self.parts.out_of_range:
            return TaskOutcome.OUT_OF_RANGE
        if self.spec.stop_at is not None and self._caught_up(idle=idle):
            return TaskOutcome.CAUGHT_UP
        return None

    def _caught_up(self, *, idle: bool) -> bool:
        """Tell whether a bounded copy read every partition to its end offset (a partition left out: at once)."""
        stop_at = self.spec.stop_at or {}
        by_key = self.parts.by_key
        left = [k for k, pc in by_key.items() if max(pc.read_to, pc.committed) < stop_at.get(k, 0)]
        if not left or not idle:
            return not left
        for tp in self.consumer.position([TopicPartition(t, p) for (t, p) in left]):
            pc = by_key[(tp.topic, tp.partition)]
            pc.read_to = max(pc.read_to, tp.offset)
        return all(max(by_key[k].read_to, by_key[k].committed) >= stop_at.get(k, 0) for k in left)

    def _result(self, outcome: TaskOutcome) -> TaskResult:
        s = self.spec
        return TaskResult(
            s.flow, s.task_index, s.generation, outcome, tuple(self.parts.out_of_range), self.parts.copied
        )


__all__ = [
    "BACKLOG_RECORDS",
    "BATCH_RECORDS",
    "FILL_WAIT_S",
    "HOLD_S",
    "IN_FLIGHT_RECORDS",
    "POLL_TIMEOUT_S",
    "PRE_GRANT_RECORDS",
    "TRANSACTION_BYTES",
    "CopyTaskRunner",
]
