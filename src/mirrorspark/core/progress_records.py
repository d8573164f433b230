"""The progress channel: what a continuous copy task reports after each commit (no I/O).

A long-running copy task (:mod:`mirrorspark.replication.stream`) commits its own source
offsets every ``offset.flush.interval.ms``; right after each commit it writes one
:class:`PartitionReport` per partition that moved to the flow's progress channel, a topic on
the target named ``mm2-task-progress<isep><source><isep>internal``
(:func:`~mirrorspark.mm2.internal_topics.mirrorspark_topic` with
:data:`~mirrorspark.mm2.internal_topics.TASK_PROGRESS_PREFIX`). The driver reads it to follow
positions (``--until-caught-up``, ``status``, lag) and to feed the checkpoint emitter's
exact translation; the metrics service reads the same records, like SRM's raw-metrics topic.

The topic is compacted with a ``min.compaction.lag.ms`` of one hour: the last hour of reports
stays readable as a stream of samples, and the newest report of every partition is kept for
good, so the copied segments it carries — and with them exact offset translation — survive
restarts of the replicator.

Record layout (compact JSON, UTF-8), one record per partition and commit:

* key ``{"flow":"A->B","topic":"t1","partition":0}``
* value ``{"task":<task index>,"generation":<n>,"next_offset":<next upstream offset to copy>,
  "records":<n>,"value_bytes":<n>,"key_bytes":<n>,"latency_ms_sum":<n>,"latency_ms_max":<n>,
  "latency_samples":<n>,"segments":[[upstream_start,downstream_start,count],...],"at":<epoch ms>}``

``records``, the byte counts and the latency figures are those of the commit interval (deltas);
``segments`` are the partition's most recent copied runs (:data:`SEGMENTS_KEPT` at most,
oldest first), the whole window each time, so the newest record alone restores them.

**Version 2** (:data:`FORMAT_VERSION`) is additive: a version-1 reader ignores what it does not
know, and a version-2 reader reads version-1 records (``"v"`` absent = 1) with the new figures
empty.

* Partition reports gain ``"v":2``, ``"latency_ms_min"``, ``"latency_hist"`` (the interval's latency
  samples counted per bucket of :data:`~mirrorspark.mm2.metrics.LATENCY_BUCKETS_MS`) and the record
  age at poll (MM2's ``record-age-ms``): ``"age_ms_sum"``, ``"age_ms_min"``, ``"age_ms_max"``,
  ``"age_samples"``; and (additive, absent = -1) ``"fetched_from"`` and ``"leader"``: the source broker the
  task's consumer fetched the partition from and its leader, by librdkafka's statistics (KIP-392 follower
  fetching); and (additive, absent = 0) ``"dropped"``: records of the interval a transform dropped.
* The driver writes three more kinds of records, told apart by ``"kind"`` in the key (a key
  without ``"kind"`` is a partition report; readers skip kinds they do not know):

  - ``{"kind":"flow","flow":F}`` -> ``{"v":1,"at":ms,"state":"running"|"standby"|"failed"|"stopped",
    "engine":"continuous"|"batch","tasks":n,"task_restarts":n,"generation":n,"error":text|null,
    "interval_ms":n}`` (:class:`FlowMetrics`);
  - ``{"kind":"lag","flow":F,"topic":t}`` -> ``{"v":1,"at":ms,"remote_topic":rt,"partitions":[{"p":n,
    "position":n,"end":n,"lag":n,"lag_ms":n|null,"records":n,"value_bytes":n}]}`` (:class:`TopicLag`):
    per partition the committed position, the source end offset, lag in records and in ms
    (:class:`~mirrorspark.mm2.metrics.LagClock`), and the records and value bytes copied since the
    driver started (MM2's ``record-count``/``byte-count``);
  - ``{"kind":"group","flow":F,"group":g}`` -> ``{"v":1,"at":ms,"latency_ms":n|null,"partitions":[{"topic":t,
    "remote_topic":rt,"p":n,"upstream":n,"checkpoint_upstream":n|null,"checkpoint_downstream":n|null,
    "lag":n|null,"rereads":n|null}]}`` (:class:`GroupMetrics`): the checkpoint cycle's latency (MM2's
    ``checkpoint-latency-ms``), and per partition the group's committed offset on the source, its newest
    checkpoint, the records committed since (checkpoint lag) and the records a failover to that
    checkpoint would read again.

* The driver's failover watch (``mirrorspark.failover.policy``, :mod:`mirrorspark.core.failover_policy`)
  writes a fourth kind, only when something happens; compaction keeps the newest per flow, so it reads
  as the flow's failover state:

  - ``{"kind":"failover","flow":F}`` -> ``{"v":1,"at":ms,"event":"failover"|"recovered","policy":p,
    "dry_run":bool,"since":ms,"reason":text,"events":n,"groups":[{"group":g,"outcome":o,"offsets":n,
    "detail":text|null}]}`` (:class:`FailoverEvent`): ``since`` is when the source started to count as
    failed, ``events`` the failover events the driver recorded for the flow since it started, and per
    listed group what was done: ``moved`` (its checkpoints committed on T), ``would-move`` (dry run),
    ``refused`` (active members on T), ``manual`` (policy ``manual``: only recorded) or ``failed``.
    A ``recovered`` record has no groups (failback stays the operator's decision).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from mirrorspark.errors import CorruptRecordError
from mirrorspark.mm2.offset_syncs import CopiedSegment

SEGMENTS_KEPT: Final = 64
"""Most copied segments one report carries per partition (the newest ones)."""

FORMAT_VERSION: Final = 2
"""Version of the records this module writes (``"v"``; absent = 1)."""


@dataclass(frozen=True, slots=True)
class PartitionReport:
    """One partition's progress after one commit of a copy task.

    Attributes
    ----------
    flow:
        ``"S->T"``.
    topic, partition:
        The source partition.
    task, generation:
        The reporting task's index and the driver's generation of the flow's tasks.
    next_offset:
        The committed position: next upstream offset to copy.
    records, value_bytes, key_bytes:
        Copied and acknowledged since the task's previous report (records; bytes).
    latency_ms_sum, latency_ms_max, latency_samples:
        Replication latency samples of that interval (ms; count).
    segments:
        The partition's newest copied runs, oldest first.
    at:
        When the report was written (epoch ms).
    latency_ms_min:
        Smallest latency sample of the interval (ms); ``None`` without samples or in a version-1 record.
    latency_hist:
        The interval's latency samples per bucket of :data:`~mirrorspark.mm2.metrics.LATENCY_BUCKETS_MS`
        (empty in a version-1 record).
    age_ms_sum, age_ms_min, age_ms_max, age_samples:
        Record age at poll (``now - record timestamp``, ms) of the interval's sampled records (MM2's
        ``record-age-ms``); ``age_ms_min`` is ``None`` without samples.
    fetched_from, leader:
        The source broker the task's consumer fetched the partition from and the partition's leader, by
        librdkafka's statistics (KIP-392 follower fetching: ``fetched_from != leader`` when a follower in
        the consumer's ``client.rack`` serves it); ``-1`` when unknown (no statistics yet, the batch
        engine, or a record written before these fields existed).
    dropped:
        Records of the interval a transform dropped (``transforms``): read, never copied, their offsets
        before ``next_offset`` (0 in a record written before this field existed).
    """

    flow: str
    topic: str
    partition: int
    task: int
    generation: int
    next_offset: int
    records: int
    value_bytes: int
    key_bytes: int
    latency_ms_sum: int
    latency_ms_max: int
    latency_samples: int
    segments: tuple[CopiedSegment, ...]
    at: int
    latency_ms_min: int | None = None
    latency_hist: tuple[int, ...] = ()
    age_ms_sum: int = 0
    age_ms_min: int | None = None
    age_ms_max: int = 0
    age_samples: int = 0
    fetched_from: int = -1
    leader: int = -1
    dropped: int = 0


def report_key(flow: str, topic: str, partition: int) -> bytes:
    """Encode the key of a partition's reports, ``{"flow":..,"topic":..,"partition":..}``."""
    return json.dumps({"flow": flow, "topic": topic, "partition": partition}, separators=(",", ":")).encode()


def encode_report(r: PartitionReport) -> tuple[bytes, bytes]:
    """Encode a report as ``(key, value)`` in the layout of the module docstring."""
    value = {
        "task": r.task,
        "generation": r.generation,
        "next_offset": r.next_offset,
        "records": r.records,
        "value_bytes": r.value_bytes,
        "key_bytes": r.key_bytes,
        "latency_ms_sum": r.latency_ms_sum,
        "latency_ms_max": r.latency_ms_max,
        "latency_samples": r.latency_samples,
        "segments": [[s.upstream_start, s.downstream_start, s.count] for s in r.segments[-SEGMENTS_KEPT:]],
        "at": r.at,
        "v": FORMAT_VERSION,
        "latency_ms_min": r.latency_ms_min,
        "latency_hist": list(r.latency_hist),
        "age_ms_sum": r.age_ms_sum,
        "age_ms_min": r.age_ms_min,
        "age_ms_max": r.age_ms_max,
        "age_samples": r.age_samples,
        "fetched_from": r.fetched_from,
        "leader": r.leader,
        "dropped": r.dropped,
    }
    return report_key(r.flow, r.topic, r.partition), json.dumps(value, separators=(",", ":")).encode()


_INT_FIELDS: Final = (
    "task",
    "generation",
    "next_offset",
    "records",
    "value_bytes",
    "key_bytes",
    "latency_ms_sum",
    "latency_ms_max",
    "latency_samples",
    "at",
)


def _nonneg_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def decode_report(key: bytes | None, value: bytes | None) -> PartitionReport:
    """Decode one progress-channel record.

    Raises
    ------
    CorruptRecordError
        The record is not a report of this layout (not JSON, a field missing, negative or
        not an integer, a segment that is not three integers with a count >= 1): the reader
        skips it with a WARNING, never acts on it.
    """
    try:
        k = json.loads(key or b"")
        v = json.loads(value or b"")
    except (ValueError, UnicodeDecodeError, RecursionError) as e:  # RecursionError: absurdly deep nesting
        raise CorruptRecordError(f"task progress record is not JSON: {type(e).__name__}") from e
    if not isinstance(k, dict) or not isinstance(v, dict):
        raise CorruptRecordError("task progress record: key and value must be JSON objects")
    flow, topic, partition = k.get("flow"), k.get("topic"), k.get("partition")
    if not isinstance(flow, str) or not isinstance(topic, str) or not isinstance(partition, int) or partition < 0:
        raise CorruptRecordError("task progress record: the key needs flow, topic (strings) and partition (>= 0)")
    bad = [f for f in _INT_FIELDS if not _nonneg_int(v.get(f))]
    if bad:
        raise CorruptRecordError(f"task progress record: {', '.join(bad)} must be integers >= 0")
    raw = v.get("segments")
    if not isinstance(raw, list):
        raise CorruptRecordError("task progress record: segments must be a list")
    segments = []
    for s in raw:
        if not (isinstance(s, list) and len(s) == 3 and all(_nonneg_int(x) for x in s) and s[2] >= 1):
            raise CorruptRecordError(f"task progress record: bad segment {s!r}")
        segments.append(CopiedSegment(s[0], s[1], s[2]))
    hist = v.get("latency_hist") or []
    if not isinstance(hist, list) or not all(_nonneg_int(x) for x in hist):
        raise CorruptRecordError("task progress record: latency_hist must be a list of integers >= 0")
    optional: dict[str, Any] = {f: v.get(f) for f in ("latency_ms_min", "age_ms_min")}
    counts: dict[str, Any] = {f: v.get(f, 0) for f in ("age_ms_sum", "age_ms_max", "age_samples", "dropped")}
    if not all(x is None or _nonneg_int(x) for x in optional.values()) or not all(
        _nonneg_int(x) for x in counts.values()
    ):
        raise CorruptRecordError("task progress record: latency and age figures must be integers >= 0")
    brokers: dict[str, Any] = {f: v.get(f, -1) for f in ("fetched_from", "leader")}
    if not all(isinstance(x, int) and not isinstance(x, bool) and x >= -1 for x in brokers.values()):
        raise CorruptRecordError("task progress record: fetched_from and leader must be broker ids or -1")
    ints: dict[str, Any] = {f: v[f] for f in _INT_FIELDS}
    return PartitionReport(
        flow=flow,
        topic=topic,
        partition=partition,
        segments=tuple(segments),
        latency_hist=tuple(hist),
        **ints,
        **optional,
        **counts,
        **brokers,
    )


def newest_segments(kept: Sequence[CopiedSegment], new: Sequence[CopiedSegment]) -> tuple[CopiedSegment, ...]:
    """Append ``new`` runs to ``kept`` (merging a run that continues the last); keep the newest :data:`SEGMENTS_KEPT`.

    Parameters
    ----------
    kept, new:
        Copied runs, oldest first.

    Returns
    -------
    tuple[CopiedSegment, ...]
        At most :data:`SEGMENTS_KEPT` runs, oldest first.
    """
    out = list(kept)
    for s in new:
        if out:
            last = out[-1]
            if s.upstream_start == last.upstream_end and s.downstream_start == last.downstream_start + last.count:
                out[-1] = CopiedSegment(last.upstream_start, last.downstream_start, last.count + s.count)
                continue
        out.append(s)
    return tuple(out[-SEGMENTS_KEPT:])


# ---------------------------------------------------------------------------------------------- driver records


def record_kind(key: bytes | None) -> str:
    """Tell a progress-channel record's kind from its key: ``"report"``, ``"flow"``, ``"lag"``, ``"group"``, other.

    The driver's kinds are ``"flow"``, ``"lag"``, ``"group"`` and ``"failover"``.

    A key without ``"kind"`` (every version-1 record) is a partition report; a key that is not a
    JSON object is ``"unknown"``. Readers skip kinds they do not know.
    """
    try:
        k = json.loads(key or b"")
    except (ValueError, UnicodeDecodeError, RecursionError):
        return "unknown"
    if not isinstance(k, dict):
        return "unknown"
    kind = k.get("kind", "report")
    return kind if isinstance(kind, str) else "unknown"


@dataclass(frozen=True, slots=True)
class FlowMetrics:
    """The driver's view of one flow: state, tasks and their restarts (kind ``flow``).

    Attributes
    ----------
    flow:
        ``"S->T"``.
    at:
        When it was written (epoch ms).
    state:
        ``"running"``, ``"standby"`` (another instance holds the flow's lease), ``"failed"`` or ``"stopped"``.
    engine:
        ``"continuous"`` or ``"batch"``.
    tasks, task_restarts, generation:
        Copy tasks running, restarts since the driver started, the tasks' generation.
    error:
        Why the flow failed, else ``None``.
    interval_ms:
        How often the driver writes these records (ms): a reader treats one older than a few
        intervals as stale.
    """

    flow: str
    at: int
    state: str
    engine: str
    tasks: int
    task_restarts: int
    generation: int
    error: str | None
    interval_ms: int


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """One source partition in a :class:`TopicLag` record.

    Attributes
    ----------
    partition:
        The partition.
    position, end:
        Committed position (next offset to copy) and the source end offset last listed.
    lag:
        ``max(0, end - position)`` (records).
    lag_ms:
        Age of the oldest record not copied (ms; 0 when caught up), ``None`` before the first listing.
    records, value_bytes:
        Copied since the driver started (MM2's ``record-count``/``byte-count``).
    """

    partition: int
    position: int
    end: int
    lag: int
    lag_ms: int | None
    records: int
    value_bytes: int


@dataclass(frozen=True, slots=True)
class TopicLag:
    """Lag and counts of one topic's partitions, from the driver (kind ``lag``).

    Attributes
    ----------
    flow, topic, remote_topic:
        ``"S->T"``, the source topic and its remote topic on T.
    at:
        When it was written (epoch ms).
    partitions:
        One per replicated partition.
    """

    flow: str
    topic: str
    remote_topic: str
    at: int
    partitions: tuple[PartitionLag, ...]


@dataclass(frozen=True, slots=True)
class GroupPartition:
    """One partition of a group in a :class:`GroupMetrics` record.

    Attributes
    ----------
    topic, remote_topic, partition:
        The topic as the group commits it on S, its name in the checkpoints (renamed for T), the partition.
    upstream:
        The group's committed offset on S.
    checkpoint_upstream, checkpoint_downstream:
        The newest checkpoint written (``None`` before the first).
    lag:
        ``upstream - checkpoint_upstream`` (records committed since the checkpoint), ``None`` without one.
    rereads:
        Records a consumer failing over now (from that checkpoint) reads again: the checkpoint lag plus
        the checkpoint's own translation re-reads; ``None`` when unknown.
    """

    topic: str
    remote_topic: str
    partition: int
    upstream: int
    checkpoint_upstream: int | None
    checkpoint_downstream: int | None
    lag: int | None
    rereads: int | None


@dataclass(frozen=True, slots=True)
class GroupMetrics:
    """A consumer group's checkpoints, from the driver's checkpoint cycle (kind ``group``).

    Attributes
    ----------
    flow, group:
        ``"S->T"`` and the group id.
    at:
        When it was written (epoch ms).
    latency_ms:
        The last cycle's checkpoint latency (ms): its checkpoints acknowledged - the group's offsets listed.
    partitions:
        The group's committed partitions of replicated topics.
    """

    flow: str
    group: str
    at: int
    latency_ms: int | None
    partitions: tuple[GroupPartition, ...]


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def encode_flow_metrics(m: FlowMetrics) -> tuple[bytes, bytes]:
    """Key and value of a ``flow`` record (layout in the module docstring)."""
    value = {
        "v": 1,
        "at": m.at,
        "state": m.state,
        "engine": m.engine,
        "tasks": m.tasks,
        "task_restarts": m.task_restarts,
        "generation": m.generation,
        "error": m.error,
        "interval_ms": m.interval_ms,
    }
    return _dumps({"kind": "flow", "flow": m.flow}), _dumps(value)


def encode_topic_lag(m: TopicLag) -> tuple[bytes, bytes]:
    """Key and value of a ``lag`` record (layout in the module docstring)."""
    parts = [
        {
            "p": x.partition,
            "position": x.position,
            "end": x.end,
            "lag": x.lag,
            "lag_ms": x.lag_ms,
            "records": x.records,
            "value_bytes": x.value_bytes,
        }
        for x in m.partitions
    ]
    value = {"v": 1, "at": m.at, "remote_topic": m.remote_topic, "partitions": parts}
    return _dumps({"kind": "lag", "flow": m.flow, "topic": m.topic}), _dumps(value)


def encode_group_metrics(m: GroupMetrics) -> tuple[bytes, bytes]:
    """Key and value of a ``group`` record (layout in the module docstring)."""
    parts = [
        {
            "topic": x.topic,
            "remote_topic": x.remote_topic,
            "p": x.partition,
            "upstream": x.upstream,
            "checkpoint_upstream": x.checkpoint_upstream,
            "checkpoint_downstream": x.checkpoint_downstream,
            "lag": x.lag,
            "rereads": x.rereads,
        }
        for x in m.partitions
    ]
    value = {"v": 1, "at": m.at, "latency_ms": m.latency_ms, "partitions": parts}
    return _dumps({"kind": "group", "flow": m.flow, "group": m.group}), _dumps(value)


def _int(v: Any, what: str, *, optional: bool = False) -> Any:
    if v is None and optional:
        return None
    if not _nonneg_int(v):
        raise CorruptRecordError(f"progress channel record: {what} must be an integer >= 0")
    return v


def _str(v: Any, what: str, *, optional: bool = False) -> Any:
    if v is None and optional:
        return None
    if not isinstance(v, str):
        raise CorruptRecordError(f"progress channel record: {what} must be a string")
    return v


def _objects(v: dict[str, Any], field: str) -> list[dict[str, Any]]:
    """``v[field]`` as a list of JSON objects; :class:`CorruptRecordError` if it is anything else."""
    raw = v.get(field)
    if not isinstance(raw, list) or not all(isinstance(x, dict) for x in raw):
        raise CorruptRecordError(f"progress channel record: {field} must be a list of objects")
    return raw


def _load(key: bytes | None, value: bytes | None) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        k = json.loads(key or b"")
        v = json.loads(value or b"")
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise CorruptRecordError(f"progress channel record is not JSON: {type(e).__name__}") from e
    if not isinstance(k, dict) or not isinstance(v, dict):
        raise CorruptRecordError("progress channel record: key and value must be JSON objects")
    return k, v


def decode_flow_metrics(key: bytes | None, value: bytes | None) -> FlowMetrics:
    """Decode a ``flow`` record.

    Raises
    ------
    CorruptRecordError
        Not a ``flow`` record of this layout.
    """
    k, v = _load(key, value)
    return FlowMetrics(
        flow=_str(k.get("flow"), "flow"),
        at=_int(v.get("at"), "at"),
        state=_str(v.get("state"), "state"),
        engine=_str(v.get("engine"), "engine"),
        tasks=_int(v.get("tasks"), "tasks"),
        task_restarts=_int(v.get("task_restarts"), "task_restarts"),
        generation=_int(v.get("generation"), "generation"),
        error=_str(v.get("error"), "error", optional=True),
        interval_ms=_int(v.get("interval_ms"), "interval_ms"),
    )


def decode_topic_lag(key: bytes | None, value: bytes | None) -> TopicLag:
    """Decode a ``lag`` record.

    Raises
    ------
    CorruptRecordError
        Not a ``lag`` record of this layout.
    """
    k, v = _load(key, value)
    raw = _objects(v, "partitions")
    parts = tuple(
        PartitionLag(
            partition=_int(x.get("p"), "p"),
            position=_int(x.get("position"), "position"),
            end=_int(x.get("end"), "end"),
            lag=_int(x.get("lag"), "lag"),
            lag_ms=_int(x.get("lag_ms"), "lag_ms", optional=True),
            records=_int(x.get("records"), "records"),
            value_bytes=_int(x.get("value_bytes"), "value_bytes"),
        )
        for x in raw
    )
    return TopicLag(
        flow=_str(k.get("flow"), "flow"),
        topic=_str(k.get("topic"), "topic"),
        remote_topic=_str(v.get("remote_topic"), "remote_topic"),
        at=_int(v.get("at"), "at"),
        partitions=parts,
    )


def decode_group_metrics(key: bytes | None, value: bytes | None) -> GroupMetrics:
    """Decode a ``group`` record.

    Raises
    ------
    CorruptRecordError
        Not a ``group`` record of this layout.
    """
    k, v = _load(key, value)
    raw = _objects(v, "partitions")
    parts = tuple(
        GroupPartition(
            topic=_str(x.get("topic"), "topic"),
            remote_topic=_str(x.get("remote_topic"), "remote_topic"),
            partition=_int(x.get("p"), "p"),
            upstream=_int(x.get("upstream"), "upstream"),
            checkpoint_upstream=_int(x.get("checkpoint_upstream"), "checkpoint_upstream", optional=True),
            checkpoint_downstream=_int(x.get("checkpoint_downstream"), "checkpoint_downstream", optional=True),
            lag=_int(x.get("lag"), "lag", optional=True),
            rereads=_int(x.get("rereads"), "rereads", optional=True),
        )
        for x in raw
    )
    return GroupMetrics(
        flow=_str(k.get("flow"), "flow"),
        group=_str(k.get("group"), "group"),
        at=_int(v.get("at"), "at"),
        latency_ms=_int(v.get("latency_ms"), "latency_ms", optional=True),
        partitions=parts,
    )


@dataclass(frozen=True, slots=True)
class GroupFailover:
    """What a failover did with one consumer group (in a :class:`FailoverEvent`).

    Attributes
    ----------
    group:
        The group id.
    outcome:
        ``"moved"`` (its newest checkpoints committed on T, as ``mirrorspark failover`` does),
        ``"would-move"`` (dry run), ``"refused"`` (active members on T), ``"manual"`` (policy
        ``manual``: nothing done) or ``"failed"``.
    offsets:
        Partitions committed (or that would be).
    detail:
        Why it was refused or failed, else ``None``.
    """

    group: str
    outcome: str
    offsets: int
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class FailoverEvent:
    """A failover event of a flow's failover watch (kind ``failover``).

    Attributes
    ----------
    flow:
        ``"S->T"``.
    at:
        When it was recorded (epoch ms).
    event:
        ``"failover"`` or ``"recovered"``.
    policy:
        The flow's ``mirrorspark.failover.policy``.
    dry_run:
        ``mirrorspark.failover.dry.run``: nothing was committed.
    since:
        When the source started to count as failed (epoch ms).
    reason:
        Why (:func:`~mirrorspark.core.failover_policy.breach_reason`).
    events:
        Failover events the driver recorded for the flow since it started.
    groups:
        Per listed group, what was done (empty for ``recovered``).
    """

    flow: str
    at: int
    event: str
    policy: str
    dry_run: bool
    since: int
    reason: str
    events: int
    groups: tuple[GroupFailover, ...] = ()

    @property
    def active(self) -> bool:
        """Whether the flow is failed over (the newest event is a ``failover``)."""
        return self.event == "failover"


def encode_failover_event(e: FailoverEvent) -> tuple[bytes, bytes]:
    """Key and value of a ``failover`` record (layout in the module docstring)."""
    value = {
        "v": 1,
        "at": e.at,
        "event": e.event,
        "policy": e.policy,
        "dry_run": e.dry_run,
        "since": e.since,
        "reason": e.reason,
        "events": e.events,
        "groups": [
            {"group": g.group, "outcome": g.outcome, "offsets": g.offsets, "detail": g.detail} for g in e.groups
        ],
    }
    return _dumps({"kind": "failover", "flow": e.flow}), _dumps(value)


def decode_failover_event(key: bytes | None, value: bytes | None) -> FailoverEvent:
    """Decode a ``failover`` record.

    Raises
    ------
    CorruptRecordError
        Not a ``failover`` record of this layout.
    """
    k, v = _load(key, value)
    raw = _objects(v, "groups")
    if not isinstance(v.get("dry_run"), bool):
        raise CorruptRecordError("progress channel record: dry_run must be a boolean")
    groups = tuple(
        GroupFailover(
            group=_str(x.get("group"), "group"),
            outcome=_str(x.get("outcome"), "outcome"),
            offsets=_int(x.get("offsets"), "offsets"),
            detail=_str(x.get("detail"), "detail", optional=True),
        )
        for x in raw
    )
    return FailoverEvent(
        flow=_str(k.get("flow"), "flow"),
        at=_int(v.get("at"), "at"),
        event=_str(v.get("event"), "event"),
        policy=_str(v.get("policy"), "policy"),
        dry_run=v["dry_run"],
        since=_int(v.get("since"), "since"),
        reason=_str(v.get("reason"), "reason"),
        events=_int(v.get("events"), "events"),
        groups=groups,
    )


__all__ = [
    "FORMAT_VERSION",
    "SEGMENTS_KEPT",
    "FailoverEvent",
    "FlowMetrics",
    "GroupFailover",
    "GroupMetrics",
    "GroupPartition",
    "PartitionLag",
    "PartitionReport",
    "TopicLag",
    "decode_failover_event",
    "decode_flow_metrics",
    "decode_group_metrics",
    "decode_report",
    "decode_topic_lag",
    "encode_failover_event",
    "encode_flow_metrics",
    "encode_group_metrics",
    "encode_report",
    "encode_topic_lag",
    "newest_segments",
    "record_kind",
    "report_key",
]
