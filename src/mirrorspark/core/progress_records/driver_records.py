"""The driver's records on the progress channel (the key's kind).

``flow``, ``lag``, ``group``, ``group-sync``, ``failover`` and ``schemas``.

The layout is in :mod:`mirrorspark.core.progress_records`; the copy tasks' reports are in
:mod:`~mirrorspark.core.progress_records.partition_reports`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mirrorspark.core.group_sync_counts import GroupSyncCounts
from mirrorspark.core.progress_records.channel_json import dumps, int_field, load, objects, str_field
from mirrorspark.core.schemas.figures import SchemaSyncFigures
from mirrorspark.errors import CorruptRecordError


@dataclass(frozen=True, slots=True)
class FlowMetrics:
    """The driver's view of one flow: state, tasks and their restarts (kind ``flow``).

    A reader treats a record older than a few ``interval_ms`` as stale. The throttle
    (``replication.throttled.rate``): ``throttle_limit`` in effect (bytes/s, 0: none), ``throttle_rate``
    the record bytes per second its throttled tasks let through over the last interval (``None``: no
    limit, or no figure yet), ``throttled_ms`` the time its tasks were held back since the driver started
    (summed over tasks). Records without them (older drivers) read as 0, ``None``, 0.
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
    throttle_limit: int = 0
    throttle_rate: int | None = None
    throttled_ms: int = 0


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """One source partition in a :class:`TopicLag` record; ``lag_ms`` is ``None`` before the first listing."""

    partition: int
    position: int
    end: int
    lag: int
    lag_ms: int | None
    records: int
    value_bytes: int


@dataclass(frozen=True, slots=True)
class TopicLag:
    """Lag and counts of one topic's partitions, from the driver (kind ``lag``)."""

    flow: str
    topic: str
    remote_topic: str
    at: int
    partitions: tuple[PartitionLag, ...]


@dataclass(frozen=True, slots=True)
class GroupPartition:
    """One partition of a group in a :class:`GroupMetrics` record; checkpoint fields are ``None`` before the first."""

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
    """A consumer group's checkpoints, from the driver's checkpoint cycle (kind ``group``)."""

    flow: str
    group: str
    at: int
    latency_ms: int | None
    partitions: tuple[GroupPartition, ...]


def encode_flow_metrics(m: FlowMetrics) -> tuple[bytes, bytes]:
    """Key and value of a ``flow`` record (layout in :mod:`mirrorspark.core.progress_records`)."""
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
        "throttle_limit": m.throttle_limit,
        "throttle_rate": m.throttle_rate,
        "throttled_ms": m.throttled_ms,
    }
    return dumps({"kind": "flow", "flow": m.flow}), dumps(value)


def encode_topic_lag(m: TopicLag) -> tuple[bytes, bytes]:
    """Key and value of a ``lag`` record (layout in :mod:`mirrorspark.core.progress_records`)."""
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
    return dumps({"kind": "lag", "flow": m.flow, "topic": m.topic}), dumps(value)


def encode_group_metrics(m: GroupMetrics) -> tuple[bytes, bytes]:
    """Key and value of a ``group`` record (layout in :mod:`mirrorspark.core.progress_records`)."""
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
    return dumps({"kind": "group", "flow": m.flow, "group": m.group}), dumps(value)


def decode_flow_metrics(key: bytes | None, value: bytes | None) -> FlowMetrics:
    """Decode a ``flow`` record."""
    k, v = load(key, value)
    return FlowMetrics(
        flow=str_field(k.get("flow"), "flow"),
        at=int_field(v.get("at"), "at"),
        state=str_field(v.get("state"), "state"),
        engine=str_field(v.get("engine"), "engine"),
        tasks=int_field(v.get("tasks"), "tasks"),
        task_restarts=int_field(v.get("task_restarts"), "task_restarts"),
        generation=int_field(v.get("generation"), "generation"),
        error=str_field(v.get("error"), "error", optional=True),
        interval_ms=int_field(v.get("interval_ms"), "interval_ms"),
        throttle_limit=int_field(v.get("throttle_limit", 0), "throttle_limit"),
        throttle_rate=int_field(v.get("throttle_rate"), "throttle_rate", optional=True),
        throttled_ms=int_field(v.get("throttled_ms", 0), "throttled_ms"),
    )


def decode_topic_lag(key: bytes | None, value: bytes | None) -> TopicLag:
    """Decode a ``lag`` record."""
    k, v = load(key, value)
    raw = objects(v, "partitions")
    parts = tuple(
        PartitionLag(
            partition=int_field(x.get("p"), "p"),
            position=int_field(x.get("position"), "position"),
            end=int_field(x.get("end"), "end"),
            lag=int_field(x.get("lag"), "lag"),
            lag_ms=int_field(x.get("lag_ms"), "lag_ms", optional=True),
            records=int_field(x.get("records"), "records"),
            value_bytes=int_field(x.get("value_bytes"), "value_bytes"),
        )
        for x in raw
    )
    return TopicLag(
        flow=str_field(k.get("flow"), "flow"),
        topic=str_field(k.get("topic"), "topic"),
        remote_topic=str_field(v.get("remote_topic"), "remote_topic"),
        at=int_field(v.get("at"), "at"),
        partitions=parts,
    )


def decode_group_metrics(key: bytes | None, value: bytes | None) -> GroupMetrics:
    """Decode a ``group`` record."""
    k, v = load(key, value)
    raw = objects(v, "partitions")
    parts = tuple(
        GroupPartition(
            topic=str_field(x.get("topic"), "topic"),
            remote_topic=str_field(x.get("remote_topic"), "remote_topic"),
            partition=int_field(x.get("p"), "p"),
            upstream=int_field(x.get("upstream"), "upstream"),
            checkpoint_upstream=int_field(x.get("checkpoint_upstream"), "checkpoint_upstream", optional=True),
            checkpoint_downstream=int_field(x.get("checkpoint_downstream"), "checkpoint_downstream", optional=True),
            lag=int_field(x.get("lag"), "lag", optional=True),
            rereads=int_field(x.get("rereads"), "rereads", optional=True),
        )
        for x in raw
    )
    return GroupMetrics(
        flow=str_field(k.get("flow"), "flow"),
        group=str_field(k.get("group"), "group"),
        at=int_field(v.get("at"), "at"),
        latency_ms=int_field(v.get("latency_ms"), "latency_ms", optional=True),
        partitions=parts,
    )


@dataclass(frozen=True, slots=True)
class GroupSync:
    """What group offset sync did to one target group since the flow's driver started (kind ``group-sync``)."""

    flow: str
    group: str
    at: int
    counts: GroupSyncCounts


def encode_group_sync(m: GroupSync) -> tuple[bytes, bytes]:
    """Key and value of a ``group-sync`` record (layout in :mod:`mirrorspark.core.progress_records`)."""
    c = m.counts
    value = {
        "v": 1,
        "at": m.at,
        "synced": c.synced,
        "skipped_active": c.skipped_active,
        "skipped_unknown": c.skipped_unknown,
    }
    return dumps({"kind": "group-sync", "flow": m.flow, "group": m.group}), dumps(value)


def decode_group_sync(key: bytes | None, value: bytes | None) -> GroupSync:
    """Decode a ``group-sync`` record."""
    k, v = load(key, value)
    counts = GroupSyncCounts(
        synced=int_field(v.get("synced"), "synced"),
        skipped_active=int_field(v.get("skipped_active"), "skipped_active"),
        skipped_unknown=int_field(v.get("skipped_unknown"), "skipped_unknown"),
    )
    return GroupSync(
        flow=str_field(k.get("flow"), "flow"),
        group=str_field(k.get("group"), "group"),
        at=int_field(v.get("at"), "at"),
        counts=counts,
    )


@dataclass(frozen=True, slots=True)
class GroupFailover:
    """What a failover did with one consumer group (in a :class:`FailoverEvent`)."""

    group: str
    outcome: str
    offsets: int
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class FailoverEvent:
    """A failover event of a flow's failover watch (kind ``failover``)."""

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
    """Key and value of a ``failover`` record (layout in :mod:`mirrorspark.core.progress_records`)."""
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
    return dumps({"kind": "failover", "flow": e.flow}), dumps(value)


def decode_failover_event(key: bytes | None, value: bytes | None) -> FailoverEvent:
    """Decode a ``failover`` record."""
    k, v = load(key, value)
    raw = objects(v, "groups")
    if not isinstance(v.get("dry_run"), bool):
        raise CorruptRecordError("progress channel record: dry_run must be a boolean")
    groups = tuple(
        GroupFailover(
            group=str_field(x.get("group"), "group"),
            outcome=str_field(x.get("outcome"), "outcome"),
            offsets=int_field(x.get("offsets"), "offsets"),
            detail=str_field(x.get("detail"), "detail", optional=True),
        )
        for x in raw
    )
    return FailoverEvent(
        flow=str_field(k.get("flow"), "flow"),
        at=int_field(v.get("at"), "at"),
        event=str_field(v.get("event"), "event"),
        policy=str_field(v.get("policy"), "policy"),
        dry_run=v["dry_run"],
        since=int_field(v.get("since"), "since"),
        reason=str_field(v.get("reason"), "reason"),
        events=int_field(v.get("events"), "events"),
        groups=groups,
    )


@dataclass(frozen=True, slots=True)
class FlowSchemas:
    """A flow's schema sync figures as the driver published them at ``at`` (epoch ms; kind ``schemas``)."""

    flow: str
    at: int
    figures: SchemaSyncFigures


def encode_flow_schemas(m: FlowSchemas) -> tuple[bytes, bytes]:
    """Key and value of a ``schemas`` record (layout in :mod:`mirrorspark.core.progress_records`)."""
    f = m.figures
    value = {
        "v": 1,
        "at": m.at,
        "subjects": f.subjects,
        "versions": f.versions,
        "registered": f.registered,
        "synced_at": f.synced_at_ms,
        "error": f.error,
    }
    return dumps({"kind": "schemas", "flow": m.flow}), dumps(value)


def decode_flow_schemas(key: bytes | None, value: bytes | None) -> FlowSchemas:
    """Decode a ``schemas`` record."""
    k, v = load(key, value)
    figures = SchemaSyncFigures(
        subjects=int_field(v.get("subjects"), "subjects"),
        versions=int_field(v.get("versions"), "versions"),
        registered=int_field(v.get("registered"), "registered"),
        synced_at_ms=int_field(v.get("synced_at"), "synced_at"),
        error=str_field(v.get("error"), "error", optional=True),
    )
    return FlowSchemas(flow=str_field(k.get("flow"), "flow"), at=int_field(v.get("at"), "at"), figures=figures)


__all__ = [
    "FailoverEvent",
    "FlowMetrics",
    "FlowSchemas",
    "GroupFailover",
    "GroupMetrics",
    "GroupPartition",
    "GroupSync",
    "PartitionLag",
    "TopicLag",
    "decode_failover_event",
    "decode_flow_metrics",
    "decode_flow_schemas",
    "decode_group_metrics",
    "decode_group_sync",
    "decode_topic_lag",
    "encode_failover_event",
    "encode_flow_metrics",
    "encode_flow_schemas",
    "encode_group_metrics",
    "encode_group_sync",
    "encode_topic_lag",
]
