"""The REST API's documents (pydantic models: the OpenAPI schemas a dashboard or client is built on).

Units are in every field name (``_ms``, ``_s``, ``_per_s``, ``records``, ``bytes``); times are
epoch milliseconds; a figure that is undefined (no sample in the window, nothing measured yet)
is ``null``. Nothing here ever holds a client setting or a secret.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from mirrorspark.core.verify.history import FINDINGS_KEPT

FlowStateName = Literal["running", "standby", "failed", "stopped", "never started", "unknown"]


class Problem(BaseModel):
    """An error, as RFC 9457 problem details (``application/problem+json``)."""

    type: str = Field(default="about:blank", description="A URI naming the problem type.")
    title: str = Field(description="Short summary of the problem type.")
    status: int = Field(description="The HTTP status code.")
    detail: str | None = Field(default=None, description="What went wrong this time.")
    instance: str | None = Field(default=None, description="The request path.")


class Figures(BaseModel):
    """Headline figures of a flow, topic or partition over the newest closed window (``window``)."""

    window: str = Field(description="The window the rates and latency figures come from (1m, 5m or 1h).")
    records_copied: int | None = Field(
        default=None,
        description="Records copied over the flow's lifetime (mirrorspark's published totals; null for MM2).",
    )
    records_dropped: int | None = Field(
        default=None,
        description="Records a transform (transforms) dropped over the flow's lifetime: read, never copied "
        "(mirrorspark's published totals; null for MM2).",
    )
    record_rate_per_s: float | None = Field(default=None, description="Records copied per second in the window.")
    drop_rate_per_s: float | None = Field(
        default=None, description="Records a transform dropped per second in the window (null: none dropped)."
    )
    byte_rate_per_s: float | None = Field(default=None, description="Value bytes copied per second in the window.")
    lag_records: int | None = Field(default=None, description="Source records not copied yet (newest listing).")
    lag_ms: int | None = Field(default=None, description="Age of the oldest source record not copied yet (ms).")
    latency_avg_ms: float | None = Field(default=None, description="Average replication latency in the window (ms).")
    latency_p50_ms: float | None = Field(default=None, description="Median replication latency in the window (ms).")
    latency_p99_ms: float | None = Field(
        default=None, description="99th percentile replication latency in the window (ms)."
    )
    latency_max_ms: float | None = Field(default=None, description="Largest replication latency in the window (ms).")
    record_age_avg_ms: float | None = Field(default=None, description="Average record age at poll in the window (ms).")


class SchemaReplication(BaseModel):
    """A flow's schema replication (Schema Registry): its driver's newest sync figures and its id translation."""

    subjects_synced: int | None = Field(
        default=None,
        description="Source subjects the target registry holds under the replication policy's names (null: no "
        "sync figures published yet).",
    )
    versions_synced: int | None = Field(default=None, description="Their versions the target registry holds.")
    versions_registered: int | None = Field(
        default=None, description="Schema versions the driver registered on the target since it started."
    )
    last_sync_ms: int | None = Field(
        default=None, description="When the last sync pass ended (epoch ms; null before the first)."
    )
    sync_error: str | None = Field(default=None, description="The last sync pass's error (null: it succeeded).")
    ids_translated: int = Field(
        default=0,
        description="Schema ids of records (keys and values) translated to the target's ids over the flow's "
        "lifetime: id cache hits + misses.",
    )
    id_cache_hits: int = Field(default=0, description="Ids translated from a copy task's id cache.")
    id_cache_misses: int = Field(default=0, description="Ids translated after asking the registries.")
    id_cache_hit_ratio: float | None = Field(
        default=None, description="id_cache_hits / ids_translated, in [0, 1] (null before any translation)."
    )
    unknown_ids: int = Field(
        default=0, description="Records whose schema id the source registry does not know, copied unchanged."
    )


class Replication(BaseModel):
    """One replication flow ``source->target`` into the served cluster (or seen upstream of it)."""

    name: str = Field(description='"source->target".')
    source: str
    target: str
    local: bool = Field(description="Whether the flow targets the served cluster (its metrics are served here).")
    engine: Literal["mirrorspark", "mm2", "unknown"] = Field(
        description="mirrorspark when the flow writes raw metrics, mm2 when only its heartbeats are seen on the "
        "served cluster, unknown for flows into other clusters (seen through their replicated heartbeats)."
    )
    state: FlowStateName = Field(description="running, standby, failed, stopped, never started or unknown.")
    error: str | None = Field(default=None, description="Why the flow failed.")
    last_heartbeat_ms: int | None = Field(default=None, description="Newest heartbeat of the flow (epoch ms).")
    heartbeat_age_s: float | None = Field(default=None, description="Age of that heartbeat (s).")
    tasks: int | None = Field(default=None, description="Copy tasks running.")
    task_restarts: int | None = Field(default=None, description="Copy task restarts since the driver started.")
    topics: int = Field(default=0, description="Replicated topics.")
    partitions: int = Field(default=0, description="Replicated partitions.")
    gaps: int = Field(default=0, description="Gap events (source records lost before they were copied).")
    schemas: SchemaReplication | None = Field(
        default=None, description="Schema replication (null: the flow replicates no schemas, or MM2's)."
    )
    figures: Figures


class ThrottleChange(BaseModel):
    """A new throttle for a flow (``PUT …/throttle``), written to its control topic as ``control throttle`` does."""

    model_config = {"extra": "forbid"}

    rate: int | None = Field(
        ge=0,
        le=2**63 - 1,
        description="Bytes of record data (keys, values, headers) per second over the flow's copy tasks; 0: no "
        "limit; null: the config file's replication.throttled.rate again.",
    )


class Throttle(BaseModel):
    """A flow's throttle: the limit in effect (read from its control topic) and, while limited, its rate."""

    name: str = Field(description='"source->target".')
    limit_bytes_per_s: int = Field(description="The limit in effect (bytes/s); 0: no limit.")
    origin: Literal["config", "control"] = Field(
        description="config: the config file's replication.throttled.rate; control: set while running (mirrorspark "
        "control throttle or this API)."
    )
    config_bytes_per_s: int = Field(description="The config file's replication.throttled.rate (bytes/s; 0: none).")
    rate_bytes_per_s: int | None = Field(
        default=None,
        description="Record bytes per second the flow's tasks copied under the limit over the driver's last metrics "
        "interval (null: no limit, or no figure published yet).",
    )
    throttled_s: float | None = Field(
        default=None,
        description="Seconds the flow's tasks were held back since its driver started, summed over tasks (null: "
        "no driver figures yet).",
    )


class PartitionRow(BaseModel):
    """One source partition of a replicated topic."""

    partition: int
    position: int | None = Field(default=None, description="Committed position: the next source offset to copy.")
    end_offset: int | None = Field(default=None, description="Source end offset (newest listing).")
    lag_records: int | None = None
    lag_ms: int | None = None
    records_since_start: int | None = Field(default=None, description="Records copied since the driver started.")
    last_report_ms: int | None = Field(default=None, description="When its copy task last reported (epoch ms).")
    figures: Figures


class Topic(BaseModel):
    """One replicated topic of a flow."""

    topic: str = Field(description="The source topic.")
    remote_topic: str | None = Field(default=None, description="Its remote topic on the target.")
    partitions: int
    figures: Figures
    partition_rows: list[PartitionRow] | None = Field(default=None, description="Per partition (topic detail only).")


class GroupPartition(BaseModel):
    """A consumer group's partition: its committed offset on the source and its newest checkpoint."""

    topic: str = Field(description="The topic as the group commits it on the source.")
    remote_topic: str = Field(description="The topic named in the checkpoint (on the target).")
    partition: int
    upstream_offset: int = Field(description="The group's committed offset on the source.")
    checkpoint_upstream_offset: int | None = None
    checkpoint_downstream_offset: int | None = Field(default=None, description="Where a failed-over consumer starts.")
    checkpoint_lag_records: int | None = Field(default=None, description="Records committed since that checkpoint.")
    failover_rereads: int | None = Field(default=None, description="Records a failover now would read again.")


class GroupOffsetSync(BaseModel):
    """What group offset sync did to a target group since the flow's driver started (writes of the group)."""

    synced: int = Field(description="Offsets committed to the group on the target.")
    skipped_active: int = Field(description="Not written: the group had members (or the broker refused the write).")
    skipped_unknown: int = Field(description="Not written: the group's state or committed offsets could not be read.")
    updated_ms: int = Field(description="When the driver last reported these counts (epoch ms).")


class Group(BaseModel):
    """A consumer group checkpointed by a flow."""

    group: str
    updated_ms: int = Field(description="When the driver last reported the group (epoch ms).")
    checkpoint_latency_ms: int | None = Field(default=None, description="The last checkpoint cycle's latency (ms).")
    checkpoint_lag_records: int | None = Field(default=None, description="Summed over the group's partitions.")
    failover_rereads: int | None = Field(default=None, description="Summed over the group's partitions.")
    partitions: list[GroupPartition]
    offset_sync: GroupOffsetSync | None = Field(default=None, description="Null: the driver reported no counts.")


class Gap(BaseModel):
    """A gap event: source records a flow lost before it copied them."""

    flow: str
    topic: str
    partition: int
    reason: str = Field(description="deleted, truncated or recreated.")
    first_lost: int | None = None
    last_lost: int | None = None
    lost_records: int
    at_ms: int


class FailoverGroup(BaseModel):
    """What a failover event did with one consumer group."""

    group: str
    outcome: str = Field(
        description="moved (its newest checkpoints committed on the target), would-move (dry run), refused (active "
        "members on the target), manual (policy manual: nothing done) or failed."
    )
    offsets: int = Field(description="Partitions committed (or that would be).")
    detail: str | None = Field(default=None, description="Why it was refused or failed.")


class Failover(BaseModel):
    """The newest failover event of a flow's failover policy (``mirrorspark.failover.policy``)."""

    replication: str = Field(description="The flow, source->target.")
    event: str = Field(description="failover (the flow is failed over now) or recovered.")
    active: bool = Field(description="Whether the flow is failed over (event = failover).")
    policy: str = Field(description="manual, under-min-isr or offline.")
    dry_run: bool
    since_ms: int = Field(description="When the source started to count as failed.")
    at_ms: int = Field(description="When the event was recorded.")
    reason: str
    events: int = Field(description="Failover events the flow's driver recorded since it started.")
    groups: list[FailoverGroup]


class DrillPartition(BaseModel):
    """One source partition's recovery point in a drill: what a failover then would have lost."""

    topic: str = Field(description="The source topic.")
    partition: int
    end_offset: int = Field(description="Its end offset on the source.")
    position: int | None = Field(
        default=None, description="The flow's copied position (next source offset to copy); null: never copied."
    )
    records: int = Field(description="Records not yet on the target (end offset minus position).")
    seconds: float | None = Field(
        default=None, description="Age of the oldest of them (s); 0 when none waits, null when unknown."
    )


class DrillRecoveryPoint(BaseModel):
    """A flow's recovery point measured by a drill: what is on the source and not (yet) on the target."""

    records: int = Field(description="Records not yet on the target, over every partition.")
    max_records: int = Field(description="The largest partition's records not yet on the target.")
    seconds: float | None = Field(
        default=None,
        description="Age of the oldest record not yet on the target (s); 0 when none waits, null when a waiting "
        "partition's age is unknown.",
    )
    gap_events: int = Field(description="Gap events in the flow's gap ledger then.")
    gap_records: int = Field(description="Source records those gap events name (lost before they were copied).")
    partitions: list[DrillPartition] | None = Field(
        default=None, description="Per source partition, by topic and partition; null when not asked for."
    )


class DrillGroup(BaseModel):
    """A consumer group's drilled failover: predicted from its checkpoints, measured with ``--execute``."""

    group: str
    partitions: int = Field(description="Downstream partitions with a checkpoint.")
    rereads: int | None = Field(
        default=None, description="Predicted records a failover would read again (null: unknown on a partition)."
    )
    skips: int | None = Field(
        default=None, description="Predicted records a failover would skip (must be 0; null: unknown)."
    )
    measured_rereads: int | None = Field(
        default=None, description="Records the drill's consumer read again on a shadow group (executed drills only)."
    )
    measured_skips: int | None = Field(
        default=None, description="Records the drill's consumer skipped (executed drills only; must be 0)."
    )
    source_lag: int | None = Field(default=None, description="The group's own lag on the source (records).")
    recovery_ms: int | None = Field(
        default=None,
        description="Measured: ms from the shadow group's commit to its consumer's first record (executed drills).",
    )
    records_read: int | None = Field(default=None, description="Records the drill's consumer read on the target.")
    target_members: int = Field(description="Active members on the target (a failover would be refused).")
    source_members: int | None = Field(default=None, description="Active members on the source (null: unreachable).")
    refused: str | None = Field(default=None, description="Why an executed drill left the group alone.")
    without_checkpoint: list[str] = Field(
        default_factory=list,
        description="topic-partition names the group committed on the source with no checkpoint on the target: a "
        "failover commits nothing there (a consumer starts by its auto.offset.reset).",
    )


class DrillPolicy(BaseModel):
    """What the flow's failover policy (``mirrorspark.failover.policy``) would have done at the drill."""

    policy: str = Field(description="manual, under-min-isr or offline; none when the flow has no policy.")
    breached: bool = Field(description="Whether the source counted as failed under the policy.")
    action: str = Field(description='"fail over", "record only" or "nothing".')
    reason: str
    groups: list[str] = Field(description="Groups with checkpoints the policy's groups setting selects.")
    grace_ms: int = Field(description="mirrorspark.failover.grace.ms.")


class Drill(BaseModel):
    """One disaster-recovery drill of a flow (``mirrorspark drill``), read from its history topic on the target."""

    flow: str = Field(description='"source->target".')
    source: str
    target: str
    at_ms: int = Field(description="When the drill started (epoch ms).")
    executed: bool = Field(
        description="Whether the groups' failovers were measured by real consumers on shadow groups (--execute)."
    )
    duration_ms: int = Field(description="How long the drill took (ms).")
    recovery_point: DrillRecoveryPoint
    rereads: int | None = Field(default=None, description="Predicted re-reads over every group (null: unknown).")
    skips: int | None = Field(default=None, description="Predicted skips over every group (null: unknown).")
    groups: list[DrillGroup]
    policy: DrillPolicy | None = Field(default=None, description="The failover policy's verdict; null without one.")


class VerificationFinding(BaseModel):
    """One divergent record a verify run found, with the Kafka offsets it concerns on both sides (null: none)."""

    kind: Literal["missing", "unexpected", "different", "duplicated", "out_of_order"] = Field(
        description="missing (a source record on neither the target nor in a gap), unexpected (a target record from "
        "no source record), different (its first differing field in field), duplicated (copied twice: "
        "related_offset is the first copy's target offset) or out_of_order (related_offset: the source offset of "
        "the record whose copy sits at target_offset)."
    )
    source_offset: int | None = Field(default=None, description="The source record's offset.")
    target_offset: int | None = Field(
        default=None, description="The target offset concerned (for missing: where the copy should be; null in a hole)."
    )
    field: str | None = Field(
        default=None,
        description="The first differing field (different only): key, value, headers, timestamp_type or timestamp.",
    )
    related_offset: int | None = Field(default=None, description="See kind (duplicated and out_of_order only).")


class VerificationKinds(BaseModel):
    """Findings per kind (records), the ones the history record does not list included."""

    missing: int
    unexpected: int
    different: int
    duplicated: int
    out_of_order: int


class VerificationPartition(BaseModel):
    """One source partition of a verify run: what was compared, and what diverged."""

    topic: str = Field(description="The source topic.")
    partition: int
    target_topic: str = Field(description="Its copy on the target.")
    verified: int = Field(description="Records verified equal on both sides.")
    skipped: int = Field(description="Records the flow drops on purpose (transforms, provenance): not compared.")
    gap_offsets: int = Field(description="Offsets in the flow's gap ledger (lost before copied): no divergence.")
    unverified_offsets: int = Field(
        description="Offsets translation cannot map yet (e.g. records still in flight): not compared."
    )
    digests: int = Field(description="Range digests compared (the run's cost).")
    divergent: int = Field(description="Findings, every kind.")
    findings_by_kind: VerificationKinds
    findings: list[VerificationFinding] = Field(
        description=f"The first findings, by source offset (at most {FINDINGS_KEPT} per partition in a history record)."
    )
    findings_omitted: int = Field(description="Findings not listed (counted in findings_by_kind).")


class VerificationWindow(BaseModel):
    """What a verify run covered: both bounds null = everything the flow's copied segments know."""

    since_ms: int | None = Field(default=None, description="Records written since (epoch ms; --since).")
    last: int | None = Field(default=None, description="The newest records per partition (--last).")
    topics: str | None = Field(default=None, description="The --topics regular expression (null: every topic).")


class Verification(BaseModel):
    """One verify run of a flow (``mirrorspark verify`` or ``run``'s sampling), read from its history topic."""

    flow: str = Field(description='"source->target".')
    source: str
    target: str
    trigger: Literal["command", "sampling"] = Field(
        description="command (mirrorspark verify) or sampling (run's continuous sampling of recently copied ranges)."
    )
    at_ms: int = Field(description="When the run started (epoch ms).")
    duration_ms: int = Field(description="How long it took (ms).")
    window: VerificationWindow
    clean: bool = Field(description="No finding in any partition (mirrorspark verify's exit status 0).")
    verified: int = Field(description="Records verified equal, every partition.")
    divergent: int = Field(description="Findings, every partition and kind.")
    skipped: int = Field(description="Records not compared as the flow drops them on purpose, every partition.")
    gap_offsets: int = Field(description="Offsets in gaps (lost before copied), every partition.")
    unverified_offsets: int = Field(description="Offsets translation cannot map yet, every partition.")
    findings_by_kind: VerificationKinds
    partitions: list[VerificationPartition] | None = Field(
        default=None, description="Per source partition, by topic and partition; null when not asked for."
    )


class Point(BaseModel):
    """One window of a time series."""

    start_ms: int
    end_ms: int
    value: float | None


class Series(BaseModel):
    """One metric's time series over a window kind, merged over what the filters leave."""

    replication: str
    metric: str
    unit: str
    window: str
    aggregate: str
    topic: str | None = None
    partition: int | None = None
    group: str | None = None
    points: list[Point]


class MetricInfo(BaseModel):
    """A series the API serves (``/metrics/{metric}``)."""

    name: str
    unit: str
    description: str
    scope: str = Field(description="partition, group or group-partition: which filters apply.")


class MetricCatalog(BaseModel):
    """What the time-series endpoint accepts."""

    metrics: list[MetricInfo]
    windows: list[str]
    aggregates: list[str]


class Cluster(BaseModel):
    """A cluster of the replication graph."""

    alias: str
    served: bool = Field(description="Whether this service instance serves it (flows into it are reported).")
    in_config: bool = Field(description="Whether the service's configuration names it.")
    upstream_clusters: list[str] = Field(description="Clusters seen replicating into it (heartbeats).")


class Health(BaseModel):
    """Whether the service is up, and how fresh its inputs are."""

    status: Literal["ok", "degraded"]
    cluster: str
    aggregation: str = Field(description="The Spark job's state: active, stopped or failed.")
    aggregation_error: str | None = None
    last_batch_ms: int | None = Field(default=None, description="When the Spark job last finished a micro-batch.")
    last_aggregate_ms: int | None = Field(default=None, description="Newest aggregate read back (epoch ms).")
    feed_error: str | None = None
    records_read: int
    topics_read: int
    uptime_s: float
    token_required: bool = Field(
        default=False, description="Whether the API needs a bearer token (mirrorspark.service.auth.token is set)."
    )


__all__ = [
    "Cluster",
    "Drill",
    "DrillGroup",
    "DrillPartition",
    "DrillPolicy",
    "DrillRecoveryPoint",
    "Failover",
    "FailoverGroup",
    "Figures",
    "Gap",
    "Group",
    "GroupOffsetSync",
    "GroupPartition",
    "Health",
    "MetricCatalog",
    "MetricInfo",
    "PartitionRow",
    "Point",
    "Problem",
    "Replication",
    "SchemaReplication",
    "Series",
    "Throttle",
    "ThrottleChange",
    "Topic",
    "Verification",
    "VerificationFinding",
    "VerificationKinds",
    "VerificationPartition",
    "VerificationWindow",
]
