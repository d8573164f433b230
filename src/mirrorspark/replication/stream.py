"""The executor side of the continuous engine: one long-running copy task (MM2 ``MirrorSourceTask``).

A :class:`StreamTask` runs inside one Spark task until the driver tells it to stop. It
polls its source partitions, produces every record to the same partition of the remote
topic, and **commits its own progress** every ``offset.flush.interval.ms``, in this order:

1. offset syncs of the acknowledged records (MM2's rule, :mod:`mirrorspark.mm2.offset_syncs`)
   to the offset-syncs topic;
2. source offsets of the acknowledged records to ``mm2-offsets.<source>.internal`` on the
   target, in Kafka Connect's layout (byte-compatible with MM2);
3. one progress report per partition that moved to the flow's progress channel
   (:mod:`mirrorspark.mm2.task_progress`).

Only acknowledged records are committed: delivery reports of one partition arrive in
production order (idempotent producer), so the acknowledged records are a prefix of those
produced. Commit records are sent without stalling the copy loop and every acknowledgement is
checked (:class:`AsyncWrites`); a failed commit write fails the task, which restarts from the
last acknowledged commit. The final commit (stop) waits for all of them.

The task talks to the driver over a small TCP channel (:class:`ChannelClient`). The driver
renews a short lease on it (``lease <seconds>``) while it holds the flow's
:class:`~mirrorspark.replication.lease.FlowLease`, and sends ``stop`` (commit and end) or
``abort`` (end without committing). A task commits only while the last grant is valid; a closed
channel, an ``abort`` or an expired grant ends it **without** committing again, so a task that
outlived its driver or its driver's lease (a zombie) never writes a position.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from mirrorspark.config.keys import masked
from mirrorspark.errors import ClusterError, ConfigError, DataPathError, MirrorsparkError
from mirrorspark.kafka.delivery import Outgoing
from mirrorspark.mm2.connect_offsets import default_partition, source_offset_key, source_offset_value
from mirrorspark.mm2.offset_syncs import CopiedSegment, SyncState, flush_delayed, fold_acknowledged
from mirrorspark.mm2.records import OffsetSync
from mirrorspark.mm2.replicas import FetchSource, fetch_sources
from mirrorspark.mm2.task_progress import PartitionReport, encode_report, newest_segments
from mirrorspark.replication.copy import PartitionCopy, consumer_error, delivery_error, forward, producer
from mirrorspark.replication.tasks import ERROR_MARK, PartitionRange

PartitionKey = tuple[str, int]

FULL_SCAN_EVERY = 30
"""Every this many commits a task checks all its partitions' positions, not only those that read records."""

COMMIT_TIMEOUT_MS = 5000
"""``message.timeout.ms`` of the commit producers: a commit record lands within this, or fails the task."""

POLL_TIMEOUT_S = 0.25
"""Longest wait for the first record of a poll (s): also how often the task checks its channel."""


@dataclass(frozen=True, slots=True, repr=False)
class StreamTask:
    """What one long-running copy task needs: its partitions, clients and where to commit.

    Attributes
    ----------
    flow, source, target:
        ``"S->T"`` and the two aliases.
    task_index, generation:
        The task's index (MM2's task assignment) and the driver's generation of the flow's
        tasks (grows at every restart of the flow's tasks).
    consumer_conf, producer_conf:
        librdkafka configurations of the source consumer and the target data producer.
    commit_conf:
        librdkafka configuration of the target producer of source offsets and progress reports.
    syncs_conf:
        librdkafka configuration of the offset-syncs producer, ``None`` when
        ``emit.offset-syncs.enabled=false``.
    offsets_topic, offsets_partitions:
        ``offset.storage.topic`` on the target and its partition count.
    syncs_topic, progress_topic:
        The offset-syncs topic and the flow's progress channel.
    partitions:
        The task's partitions; ``start`` is the committed position (``end`` is unused).
    offset_lag_max:
        ``offset.lag.max`` (records).
    flush_interval_s:
        ``offset.flush.interval.ms`` in seconds.
    channel:
        ``(host, port, token)`` of the driver's task channel.
    stall_timeout_s:
        Seconds a commit waits for the target to acknowledge what was produced.
    transactional_id:
        Exactly-once mode (``<target>.exactly.once.source.support=enabled``, KIP-618): the data
        producer's ``transactional.id``; records and source offsets go in one transaction.
        ``None``: at least once.
    boundary:
        Exactly-once mode: ``"poll"`` (a transaction per batch read, up to 10,000 records) or
        ``"interval"`` (one per ``flush_interval_s``, then ``transaction.boundary.interval.ms``).
    init_timeout_s:
        Exactly-once mode: seconds ``init_transactions`` may take (fencing an older producer with
        the same id waits for its open transaction to be aborted); the target producer's
        ``max.block.ms``, see :func:`init_transactions_timeout_s`.
    """

    flow: str
    source: str
    target: str
    task_index: int
    generation: int
    consumer_conf: Mapping[str, Any]
    producer_conf: Mapping[str, Any]
    commit_conf: Mapping[str, Any]
    syncs_conf: Mapping[str, Any] | None
    offsets_topic: str
    offsets_partitions: int
    syncs_topic: str
    progress_topic: str
    partitions: tuple[PartitionRange, ...]
    offset_lag_max: int
    flush_interval_s: float
    channel: tuple[str, int, str]
    stall_timeout_s: float = 120.0
    transactional_id: str | None = None
    boundary: str = "poll"
    init_timeout_s: float = 60.0

    def __repr__(self) -> str:
        """Show the task without any client secret (configurations masked, the channel token hidden)."""
        return (
            f"StreamTask(flow={self.flow!r}, task_index={self.task_index}, generation={self.generation}, "
            f"partitions={[(r.source_topic, r.partition, r.start) for r in self.partitions]!r}, "
            f"consumer_conf={masked(self.consumer_conf)!r}, producer_conf={masked(self.producer_conf)!r})"
        )


@dataclass(frozen=True, slots=True)
class StreamResult:
    """How a long-running copy task ended.

    Attributes
    ----------
    flow, task_index, generation:
        The task.
    reason:
        ``"stopped"`` (the driver asked; everything acknowledged was committed),
        ``"out_of_range"`` (positions out of range: committed, then ended so the driver can
        record the gap), ``"orphaned"`` (the channel closed: nothing more committed), and from
        :func:`run_stream_job` ``"failed"`` (the task raised: :attr:`error`) or ``"lost"`` (Spark
        ran the task again after an earlier attempt was lost with its executor or Python worker:
        it ended at once, copying nothing).
    out_of_range:
        Partitions whose position was out of range.
    records:
        Records this run of the task copied and committed.
    error:
        With ``"failed"``: the error's text, marked with
        :data:`~mirrorspark.replication.tasks.ERROR_MARK` when it is a mirrorspark error.
    """

    flow: str
    task_index: int
    generation: int
    reason: str
    out_of_range: tuple[PartitionKey, ...] = ()
    records: int = 0
    error: str = ""


class ChannelClient:
    """The task's end of the driver's task channel: one TCP connection, commands as text lines.

    Parameters
    ----------
    address:
        ``(host, port, token)`` from :attr:`StreamTask.channel`.
    hello:
        Sent first with the token (``flow``, ``task``, ``generation``), so the driver knows
        which task this is.

    Raises
    ------
    OSError
        The driver cannot be reached.
    """

    def __init__(self, address: tuple[str, int, str], hello: Mapping[str, Any]) -> None:
        host, port, token = address
        self._sock = socket.create_connection((host, port), timeout=30)
        self._sock.sendall(json.dumps({"token": token, **hello}).encode() + b"\n")
        self._sock.setblocking(False)
        self._buf = b""
        self.state = "open"
        self.lease_until = 0.0  # monotonic deadline of the driver's last lease grant

    def check(self) -> str:
        """Read what the driver sent; never blocks.

        Returns
        -------
        str
            ``"open"``, ``"stop"`` (commit and end), ``"abort"`` (end without committing: the
            driver lost the flow's lease) or ``"closed"`` (the driver is gone).
        """
        if self.state not in ("open", "stop"):
            return self.state
        while True:
            try:
                data = self._sock.recv(4096)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self.state = "closed"
                return self.state
            if not data:
                self.state = "closed"
                return self.state
            self._buf += data
        *lines, self._buf = self._buf.split(b"\n")
        for line in lines:
            cmd, _, arg = line.decode("ascii", "replace").partition(" ")
            if cmd == "lease":
                self.lease_until = time.monotonic() + float(arg)
            elif cmd == "abort":
                self.state = "abort"
            elif cmd == "stop" and self.state == "open":
                self.state = "stop"
        return self.state

    def may_commit(self) -> bool:
        """Whether the driver's lease grant is still valid: a task commits only under a live lease."""
        return self.check() in ("open", "stop") and time.monotonic() < self.lease_until

    def close(self) -> None:
        """Close the connection."""
        self._sock.close()


class AsyncWrites:
    """Commit records sent without waiting: the copy loop never stalls on a commit (latency).

    Each record's acknowledgement is checked on a later :meth:`check` (every loop turn) and
    awaited by :meth:`wait` (the final commit). A failed write fails the task: the supervisor
    restarts it from the last acknowledged commit (the idempotent producer already retried).
    The producer's ``message.timeout.ms`` (:data:`COMMIT_TIMEOUT_MS`) bounds how late a record
    can land, within the driver's lease grant.

    Parameters
    ----------
    producer:
        A confluent-kafka ``Producer``.
    what, alias:
        What is written and the cluster written to, for the error message.
    """

    def __init__(self, producer: Any, what: str, alias: str) -> None:
        self.producer = producer
        self.what = what
        self.alias = alias
        self.failure: tuple[str, str] | None = None

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None and self.failure is None:
            self.failure = (str(msg.topic()), err.str())

    def send(self, records: list[Outgoing]) -> None:
        """Queue the records (waiting only while the producer's queue is full)."""
        for r in records:
            while True:
                try:
                    self.producer.produce(r.topic, r.value, r.key, r.partition, self._delivered)
                    break
                except BufferError:
                    self.producer.poll(0.05)

    def check(self) -> None:
        """Serve acknowledgements; raise if a write failed.

        Raises
        ------
        DataPathError
            A commit record was not acknowledged (names the topic, the cluster and the reason).
        """
        self.producer.poll(0)
        if self.failure is not None:
            topic, reason = self.failure
            raise DataPathError(
                f"{ERROR_MARK}DATA_PATH_ERROR] {self.what}: writing to '{topic}' on cluster '{self.alias}' "
                f"failed: {reason}; the task is restarted from its last acknowledged commit"
            )

    def wait(self, timeout_s: float) -> None:
        """Wait until every queued record is acknowledged, then :meth:`check`.

        Raises
        ------
        DataPathError
            A write failed or was not acknowledged within ``timeout_s``.
        """
        left = self.producer.flush(timeout_s)
        self.check()
        if left:
            raise DataPathError(
                f"{ERROR_MARK}DATA_PATH_ERROR] {self.what}: {left} record(s) not acknowledged by cluster "
                f"'{self.alias}' within {timeout_s:.0f} s"
            )


class _Partition:
    """A partition's committed position, emission state and recent copied runs inside a task."""

    __slots__ = ("committed", "copy", "segments", "state")

    def __init__(self, r: PartitionRange) -> None:
        self.copy = PartitionCopy(r)
        self.committed = r.start
        self.state: SyncState = r.sync_state
        self.segments: tuple[CopiedSegment, ...] = ()


def _fail(e: MirrorsparkError) -> MirrorsparkError:
    """Mark an error so that the driver rebuilds it from the Spark job failure (:data:`ERROR_MARK`)."""
    text = str(e)
    if ERROR_MARK in text:
        return e
    return type(e)(f"{ERROR_MARK}{e.code}] {text}")


FETCH_STATS_INTERVAL_MS: Final = 5000
"""``statistics.interval.ms`` of a continuous task's source consumer unless the settings choose one: how often
librdkafka says which broker serves each partition (0 in the settings turns it off)."""


def with_fetch_stats(conf: dict[str, Any], sources: dict[PartitionKey, FetchSource]) -> dict[str, Any]:
    """Return ``conf`` with a ``stats_cb`` that keeps ``sources`` up to date (librdkafka statistics).

    Parameters
    ----------
    conf:
        A consumer's librdkafka configuration (changed in place and returned).
    sources:
        Filled with ``{(topic, partition): FetchSource}`` at every statistics callback (during polls).

    Returns
    -------
    dict[str, Any]
        ``conf`` with ``statistics.interval.ms`` (default :data:`FETCH_STATS_INTERVAL_MS` ms) and ``stats_cb``.
    """

    def on_stats(doc: str) -> None:
        try:
            sources.update(fetch_sources(json.loads(doc)))
        except ValueError:  # a truncated document: the next one comes within the interval
            return

    conf.setdefault("statistics.interval.ms", FETCH_STATS_INTERVAL_MS)
    conf["stats_cb"] = on_stats
    return conf


UNKNOWN_SOURCE: Final = FetchSource(-1, -1)
"""Where a partition is fetched from before librdkafka's first statistics say it."""


def run_stream_task(task: StreamTask) -> StreamResult:
    """Copy the task's partitions until the driver stops it; commit every ``flush_interval_s``.

    Parameters
    ----------
    task:
        The task.

    Returns
    -------
    StreamResult
        How it ended.

    Raises
    ------
    RecordTooLargeError
        A record exceeds what the producer or the remote topic accepts (nothing after it
        is committed).
    DataPathError
        Any other produce, delivery or read failure, or a commit that could not be written
        (what was not committed is copied again by the restarted task: duplicates, never a
        loss).
    """
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    from mirrorspark.kafka.factory import with_logger

    parts: dict[PartitionKey, _Partition] = {(r.source_topic, r.partition): _Partition(r) for r in task.partitions}
    eos = task.transactional_id is not None
    data = transactional_producer(task) if eos else producer(task.producer_conf)
    commit_writes = AsyncWrites(producer(task.commit_conf), f"flow {task.flow}: source offsets", task.target)
    sync_writes = (
        AsyncWrites(producer(task.syncs_conf), f"flow {task.flow}: offset syncs", task.source)
        if task.syncs_conf is not None
        else None
    )
    channel = ChannelClient(task.channel, {"flow": task.flow, "task": task.task_index, "generation": task.generation})
    sources: dict[PartitionKey, FetchSource] = {}  # where librdkafka fetches each partition from (KIP-392)
    consumer: Any = Consumer(
        with_fetch_stats(
            with_logger(dict(task.consumer_conf), str(task.consumer_conf.get("client.id", "replication-consumer"))),
            sources,
        )
    )
    consumer.assign([TopicPartition(t, p, part.committed) for (t, p), part in parts.items()])
    out_of_range: list[PartitionKey] = []
    copied = 0
    commits_done = 0
    dirty: set[PartitionKey] = set()

    def commit(final: bool) -> bool:
        """Commit what the target acknowledged; ``False`` when the channel closed (nothing written)."""
        nonlocal copied
        if final:
            left = data.flush(task.stall_timeout_s)
            if left:
                what = f"{left} records not acknowledged by the target within {task.stall_timeout_s:.0f} s"
                raise _fail_data(task, what)
        else:
            data.poll(0)
        nonlocal commits_done
        commits_done += 1
        # Partitions that read records since the last commit, or still wait for acknowledgements; every
        # FULL_SCAN_EVERY commits (and the last) all of them, for positions moved by transaction markers
        # or compaction alone. An idle task with thousands of partitions then costs next to nothing.
        full = final or commits_done % FULL_SCAN_EVERY == 0
        keys = list(parts) if full else [k for k in dirty if k in parts]
        dirty.clear()
        if not keys:
            return True
        positions = {
            (tp.topic, tp.partition): tp.offset for tp in consumer.position([TopicPartition(t, p) for (t, p) in keys])
        }
        syncs: list[Outgoing] = []
        offsets: list[Outgoing] = []
        reports: list[PartitionReport] = []
        updates: list[tuple[_Partition, int, SyncState, tuple[CopiedSegment, ...], int]] = []
        now = int(time.time() * 1000)
        for topic, partition in keys:
            part = parts[(topic, partition)]
            pc = part.copy
            if pc.error is not None:
                err, upstream = pc.error
                raise delivery_error(err, pc.range, upstream)
            n = len(pc.downstream)
            up, down = pc.upstream[:n], pc.downstream[:n]
            state, due, segments = fold_acknowledged(part.state, up, down, task.offset_lag_max)
            state, delayed = flush_delayed(state)
            if delayed is not None:
                due.append(delayed)
            next_offset = up[-1] + 1 if up else part.committed
            if n == len(pc.upstream):  # every record read is acknowledged: the reader's position counts
                pos = positions.get((topic, partition), -1)  # past transaction markers and compacted gaps
                if pos > next_offset:
                    next_offset = pos
            if next_offset <= part.committed and not due:
                continue
            for u, d in due:
                sync = OffsetSync(topic, partition, u, d)
                syncs.append(Outgoing(task.syncs_topic, sync.key(), sync.value(), partition=0))
            if next_offset > part.committed:
                key = source_offset_key(task.source, topic, partition)
                offsets.append(
                    Outgoing(
                        task.offsets_topic,
                        key,
                        source_offset_value(next_offset - 1),
                        partition=default_partition(key, task.offsets_partitions),
                    )
                )
            window = newest_segments(part.segments, segments)
            reports.append(
                PartitionReport(
                    flow=task.flow,
                    topic=topic,
                    partition=partition,
                    task=task.task_index,
                    generation=task.generation,
                    next_offset=max(next_offset, part.committed),
                    records=n,
                    value_bytes=pc.value_bytes,
                    key_bytes=pc.key_bytes,
                    latency_ms_sum=pc.lat_sum,
                    latency_ms_max=pc.lat_max,
                    latency_samples=pc.lat_n,
                    segments=window,
                    at=now,
                    **pc.interval_metrics(),
                    fetched_from=sources.get((topic, partition), UNKNOWN_SOURCE).broker,
                    leader=sources.get((topic, partition), UNKNOWN_SOURCE).leader,
                    dropped=pc.dropped,
                )
            )
            updates.append((part, n, state, window, max(next_offset, part.committed)))
        if not updates:
            return True
        if not channel.may_commit():
            return False  # the driver is gone or lost the flow's lease: a zombie never writes a position
        if syncs and sync_writes is not None:
            sync_writes.send(syncs)
        commit_writes.send(offsets + [Outgoing(task.progress_topic, *encode_report(r)) for r in reports])
        if final:
            if sync_writes is not None:
                sync_writes.wait(task.stall_timeout_s)
            commit_writes.wait(task.stall_timeout_s)
        for part, n, state, window, committed in updates:
            pc = part.copy
            del pc.upstream[:n]
            del pc.downstream[:n]
            if pc.upstream:  # produced, not yet acknowledged: commit it next time
                dirty.add((pc.range.source_topic, pc.range.partition))
            pc.reset_interval()
            part.state = state
            part.segments = window
            part.committed = committed
            copied += n
        return True

    def commit_eos(final: bool) -> bool:
        """Exactly-once: records and source offsets in one transaction; offset syncs and reports after it."""
        nonlocal copied, commits_done
        commits_done += 1
        full = final or commits_done % FULL_SCAN_EVERY == 0
        keys = list(parts) if full else [k for k in dirty if k in parts]
        dirty.clear()
        if not keys:
            return True
        if not channel.may_commit():
            abort_quietly(data)  # a zombie's records stay invisible to read_committed consumers
            return False
        positions = {
            (tp.topic, tp.partition): tp.offset for tp in consumer.position([TopicPartition(t, p) for (t, p) in keys])
        }
        offsets: list[Outgoing] = []
        moves: list[tuple[PartitionKey, int]] = []
        for topic, partition in keys:
            part = parts[(topic, partition)]
            pc = part.copy
            if pc.error is not None:
                err, upstream = pc.error
                raise delivery_error(err, pc.range, upstream)
            next_offset = pc.upstream[-1] + 1 if pc.upstream else part.committed
            pos = positions.get((topic, partition), -1)  # every record read was produced: markers, compaction
            next_offset = max(next_offset, pos)
            if next_offset > part.committed:
                key = source_offset_key(task.source, topic, partition)
                offsets.append(
                    Outgoing(
                        task.offsets_topic,
                        key,
                        source_offset_value(next_offset - 1),
                        partition=default_partition(key, task.offsets_partitions),
                    )
                )
                moves.append(((topic, partition), next_offset))
        if not moves:
            return True
        for o in offsets:  # the same producer, the same transaction: Connect's layout, unchanged
            while True:
                try:
                    data.produce(o.topic, o.value, o.key, o.partition)
                    break
                except BufferError:
                    data.poll(0.05)
        if not commit_transaction(data, task):
            rewind()
            return True
        # Committed: every record is acknowledged; collect their downstream offsets (delivery reports).
        deadline = time.monotonic() + task.stall_timeout_s
        while any(len(p.copy.downstream) < len(p.copy.upstream) for p in parts.values()):
            if time.monotonic() > deadline:
                raise _fail_data(task, "delivery reports of a committed transaction did not arrive")
            data.poll(0.05)
        syncs: list[Outgoing] = []
        reports: list[Outgoing] = []
        now = int(time.time() * 1000)
        for (topic, partition), next_offset in moves:
            part = parts[(topic, partition)]
            pc = part.copy
            n = len(pc.upstream)
            state, due, segments = fold_acknowledged(part.state, pc.upstream, pc.downstream, task.offset_lag_max)
            state, delayed = flush_delayed(state)
            if delayed is not None:
                due.append(delayed)
            for u, d in due:
                sync = OffsetSync(topic, partition, u, d)
                syncs.append(Outgoing(task.syncs_topic, sync.key(), sync.value(), partition=0))
            window = newest_segments(part.segments, segments)
            report = PartitionReport(
                flow=task.flow,
                topic=topic,
                partition=partition,
                task=task.task_index,
                generation=task.generation,
                next_offset=next_offset,
                records=n,
                value_bytes=pc.value_bytes,
                key_bytes=pc.key_bytes,
                latency_ms_sum=pc.lat_sum,
                latency_ms_max=pc.lat_max,
                latency_samples=pc.lat_n,
                segments=window,
                at=now,
                **pc.interval_metrics(),
                fetched_from=sources.get((topic, partition), UNKNOWN_SOURCE).broker,
                leader=sources.get((topic, partition), UNKNOWN_SOURCE).leader,
                dropped=pc.dropped,
            )
            reports.append(Outgoing(task.progress_topic, *encode_report(report)))
            pc.upstream.clear()
            pc.downstream.clear()
            pc.reset_interval()
            part.state = state
            part.segments = window
            part.committed = next_offset
            copied += n
        if syncs and sync_writes is not None:  # MM2: offset syncs only after the records' transaction committed
            sync_writes.send(syncs)
        commit_writes.send(reports)
        if final:
            if sync_writes is not None:
                sync_writes.wait(task.stall_timeout_s)
            commit_writes.wait(task.stall_timeout_s)
        else:
            data.begin_transaction()
        return True

    def rewind() -> None:
        """After an aborted transaction: back to the committed positions, nothing of it kept."""
        data.poll(0)  # the purged records' delivery reports
        for (topic, partition), part in parts.items():
            pc = part.copy
            pc.upstream.clear()
            pc.downstream.clear()
            pc.error = None
            pc.reset_interval()
            if (topic, partition) not in out_of_range:
                consumer.seek(TopicPartition(topic, partition, part.committed))
        data.begin_transaction()

    if eos:
        commit = commit_eos  # the exactly-once variant replaces the at-least-once commit

    committed_cleanly = False
    try:
        next_commit = time.monotonic() + task.flush_interval_s
        while True:
            first = consumer.poll(POLL_TIMEOUT_S)
            msgs = [first, *consumer.consume(num_messages=10000, timeout=0)] if first is not None else []
            cur: tuple[str, int] | None = None
            part: _Partition | None = None
            for m in msgs:
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        continue
                    if err.code() == KafkaError._AUTO_OFFSET_RESET and m.topic() is not None:  # noqa: SLF001 (librdkafka code)
                        k = (m.topic(), m.partition())
                        if k in parts and k not in out_of_range:
                            out_of_range.append(k)
                            consumer.pause([TopicPartition(k[0], k[1])])
                        cur = None
                        continue
                    raise consumer_error(task.flow, task.consumer_conf, m, err)
                k = (m.topic(), m.partition())
                if k != cur:
                    cur = k
                    part = parts.get(k)
                    dirty.add(k)
                if part is None or k in out_of_range:
                    continue
                forward(data, part.copy, m, m.offset(), task.stall_timeout_s)
            data.poll(0)
            commit_writes.check()
            if sync_writes is not None:
                sync_writes.check()
            state = channel.check()
            if state in ("closed", "abort"):
                return StreamResult(task.flow, task.task_index, task.generation, "orphaned", records=copied)
            if state == "stop" or out_of_range:
                if not commit(final=True):
                    return StreamResult(task.flow, task.task_index, task.generation, "orphaned", records=copied)
                committed_cleanly = True
                reason = "stopped" if state == "stop" else "out_of_range"
                return StreamResult(task.flow, task.task_index, task.generation, reason, tuple(out_of_range), copied)
            per_poll = eos and task.boundary == "poll" and bool(msgs)
            if per_poll or time.monotonic() >= next_commit:
                if not commit(final=False):
                    return StreamResult(task.flow, task.task_index, task.generation, "orphaned", records=copied)
                next_commit = time.monotonic() + task.flush_interval_s
    finally:
        if eos and not committed_cleanly:
            abort_quietly(data)
        consumer.close()
        channel.close()


def init_transactions_timeout_s(producer_properties: Mapping[str, str]) -> float:
    """Seconds a copy task's ``init_transactions`` may take: the target producer's ``max.block.ms``.

    Java's ``KafkaProducer.initTransactions`` (what MM2's exactly-once source tasks call through
    Kafka Connect) blocks at most ``max.block.ms``; librdkafka has no such key, so mirrorspark
    reads the Java one from the flow's target producer settings (``<target>.producer.max.block.ms``,
    ``<source>-><target>.producer.override.max.block.ms``, ...).

    Parameters
    ----------
    producer_properties:
        The flow's target producer settings as Java client properties.

    Returns
    -------
    float
        ``max.block.ms`` / 1000 (s); 60.0, Java's default, when unset.

    Raises
    ------
    ConfigError
        If ``max.block.ms`` is not a whole number of ms > 0.
    """
    raw = producer_properties.get("max.block.ms")
    if raw is None or str(raw).strip() == "":
        return 60.0
    try:
        ms = int(str(raw).strip())
    except ValueError:
        ms = 0
    if ms <= 0:
        raise ConfigError(
            f"max.block.ms of the target producer is {raw!r}: set it to a whole number of milliseconds > 0 "
            "(it bounds init_transactions in exactly-once mode; Java's default is 60000)"
        )
    return ms / 1000.0


NO_TRANSACTION_COORDINATOR = "no transaction coordinator"
"""Opens the message of a copy task whose ``init_transactions`` timed out: the target's transaction
coordinator could not be found or did not load (:func:`transactional_producer`)."""


def transactional_producer(task: StreamTask) -> Any:
    """Create the task's transactional data producer, initialised (fencing older ones) and in a transaction.

    ``init_transactions`` bumps the epoch of ``task.transactional_id`` and aborts a transaction an
    older producer with that id left open (a killed run, a lost Spark attempt, another instance):
    from here on that producer can commit nothing (KIP-98 fencing; Connect's
    ``Worker.taskTransactionalId`` gives MM2's tasks the same ids).

    Raises
    ------
    ClusterError
        The principal may not use the id (``TRANSACTIONAL_ID_AUTHORIZATION_FAILED``, in the
        message: grant ``WRITE`` on the ``TransactionalId`` prefix ``<source>-mm2-``, which
        implies the ``DESCRIBE`` that FindCoordinator needs), or the target's transaction
        coordinator did not answer within ``task.init_timeout_s`` (:data:`NO_TRANSACTION_COORDINATOR`
        in the message: transactions unsupported or unavailable, e.g. ``__transaction_state``
        cannot be created with its ``transaction.state.log.replication.factor``).
    """
    from confluent_kafka import KafkaError, KafkaException, Producer

    from mirrorspark.kafka.factory import with_logger

    tid = str(task.transactional_id)
    conf = {**task.producer_conf, "transactional.id": tid}
    p = Producer(with_logger(conf, str(conf.get("client.id", "replication-producer"))))
    try:
        p.init_transactions(task.init_timeout_s)
        p.begin_transaction()
    except KafkaException as e:
        err = e.args[0]
        if err.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            what = (
                f"TRANSACTIONAL_ID_AUTHORIZATION_FAILED: the replication principal may not use transactional id "
                f"'{tid}' (the copy tasks' ids are {task.source}-mm2-MirrorSourceConnector-<task>): grant it WRITE "
                f"on TransactionalId '{task.source}-mm2-' (prefixed) on cluster '{task.target}' (README, ACLs; "
                f"{err.str()})"
            )
        elif err.code() in (KafkaError._TIMED_OUT, KafkaError._TRANSPORT):  # librdkafka's local codes
            what = (
                f"{NO_TRANSACTION_COORDINATOR}: cluster '{task.target}' did not initialise transactional id "
                f"'{tid}' within {task.init_timeout_s:.0f} s ({err.str()}): exactly-once needs a target whose "
                "brokers support transactions (transaction.state.log.replication.factor and "
                "transaction.state.log.min.isr no larger than its brokers); fix the cluster or set "
                f"{task.target}.exactly.once.source.support=disabled"
            )
        else:
            what = f"initialising transactional id '{tid}' on cluster '{task.target}' failed: {err.str()}"
        raise ClusterError(f"{ERROR_MARK}{ClusterError.code}] flow {task.flow}: {what}", kafka_code=err.name()) from e
    return p


def commit_transaction(data: Any, task: StreamTask) -> bool:
    """Commit the open transaction (retrying retriable errors); ``False`` when it was aborted instead.

    Raises
    ------
    DataPathError
        A fatal error: the producer was fenced (a newer run of this task, or another instance, took
        its transactional id) or is unusable; the supervisor restarts the task, whose
        ``init_transactions`` aborts whatever this one left.
    """
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + task.stall_timeout_s
    while True:
        try:
            data.commit_transaction(max(1.0, deadline - time.monotonic()))
            return True
        except KafkaException as e:
            err = e.args[0]
            if err.retriable() and time.monotonic() < deadline:
                continue
            if err.txn_requires_abort():
                data.abort_transaction(task.stall_timeout_s)
                return False
            hint = (
                ": another producer with this transactional id took over (a newer run of this task or "
                "another instance); this one stops without committing"
                if "FENCED" in err.name() or "EPOCH" in err.name()
                else ""
            )
            raise DataPathError(
                f"{ERROR_MARK}DATA_PATH_ERROR] flow {task.flow}: committing the transaction of task "
                f"{task.task_index} (transactional id '{task.transactional_id}') failed: {err.str()}{hint}"
            ) from e


def abort_quietly(data: Any) -> None:
    """Abort the open transaction if there is one; a fenced or broken producer is left as it is."""
    import contextlib

    with contextlib.suppress(Exception):  # best effort: the next init_transactions aborts it anyway
        data.abort_transaction(5.0)


def run_stream_job(task: StreamTask) -> StreamResult:
    """Run :func:`run_stream_task` as the one Spark task of its job, with no retry by Spark.

    Spark re-runs a failed task (``spark.task.maxFailures``, 4 on a cluster) and always re-runs
    one lost with its executor, with the arguments of the first attempt: a copy task's positions
    of its generation's start, stale by everything the lost attempt committed since (a re-copy of
    all of it). So a later attempt (``TaskContext.attemptNumber() > 0``) ends at once as
    ``"lost"``, and the driver restarts the task from its committed offsets; and an error is
    returned as ``"failed"`` rather than raised, so that Spark never re-runs it and the driver
    sees the error itself (a record too large stays fatal).

    Parameters
    ----------
    task:
        The task.

    Returns
    -------
    StreamResult
        How it ended, errors included.
    """
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is not None and context.attemptNumber() > 0:
        return StreamResult(task.flow, task.task_index, task.generation, "lost")
    try:
        return run_stream_task(task)
    except MirrorsparkError as e:
        return StreamResult(task.flow, task.task_index, task.generation, "failed", error=str(_fail(e)))
    except Exception as e:  # what the driver would see as the job's failure
        text = str(e).splitlines()[0] if str(e) else type(e).__name__
        return StreamResult(task.flow, task.task_index, task.generation, "failed", error=text)


def _fail_data(task: StreamTask, what: str) -> MirrorsparkError:
    from mirrorspark.errors import DataPathError

    return DataPathError(f"{ERROR_MARK}DATA_PATH_ERROR] flow {task.flow}: {what}; check that the target cluster is up")


__all__ = [
    "NO_TRANSACTION_COORDINATOR",
    "ChannelClient",
    "StreamResult",
    "StreamTask",
    "abort_quietly",
    "commit_transaction",
    "init_transactions_timeout_s",
    "run_stream_job",
    "run_stream_task",
    "transactional_producer",
]
