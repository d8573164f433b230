"""The state of every replication flow, read from the clusters alone (``mirrorspark status``).

Like SRM's and MM2's tooling it reads what replication leaves in Kafka (committed source offsets,
remote topics, heartbeats), so it reports MM2's flows as well:

* **state**: ``failed`` when the running mirrorspark gave up on the flow (its published state);
  ``caught up`` or ``stopped`` when a run ended cleanly and published so after its last heartbeat; else
  ``running`` when the newest heartbeat on the target is younger than
  ``max(10 s, 5 x emit.heartbeats.interval.seconds)``, ``stopped`` when older, ``never started``
  without committed offsets.
* **lag**: per topic, source end offsets minus committed positions; a flow's lag leaves out its
  heartbeats topics (written to until a run ends).
* **records copied**: records in the remote topic (end - start offsets).
* **upstream clusters / replication hops**: MirrorClient's view of a cluster's heartbeat topics.
* **gaps**: source records lost before they were copied (:mod:`mirrorspark.core.gaps`).
* **failover**: the newest event of the driver's failover policy.
* **group offset sync**: per target group, what the driver's group offset sync did since it started (synced,
  skipped: active, skipped: unknown), from its newest ``group-sync`` records.
* **schemas** (a flow that replicates schemas): the driver's newest schema sync figures and the copy
  tasks' lifetime schema-id counts (translated from the id cache or after asking the registries, unknown).
* **throttle** (a flow with ``replication.throttled.rate`` or a ``control throttle`` in effect, or once held
  back): the limit in effect (the flow's control topic over its config), and from the driver's newest
  ``flow`` record the record bytes per second copied under it and the seconds its tasks were held back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from mirrorspark.client.context import FlowContext, ReplicationContext
from mirrorspark.client.gap_reader import read_gap_ledger
from mirrorspark.client.mirror_client import MirrorClient
from mirrorspark.client.source_offset_reader import read_flow_source_offsets
from mirrorspark.client.totals_reader import read_totals
from mirrorspark.config.model import FlowConfig, MirrorConfig
from mirrorspark.core.control_state import ControlChange, ControlState, ThrottleChange, decode_control, fold
from mirrorspark.core.gaps import GapEvent
from mirrorspark.core.group_sync_counts import GroupSyncCounts
from mirrorspark.core.lifetime_totals import FlowState, TopicTotals
from mirrorspark.core.progress_records import (
    FailoverEvent,
    FlowMetrics,
    FlowSchemas,
    GroupSync,
    decode_failover_event,
    decode_flow_metrics,
    decode_flow_schemas,
    decode_group_sync,
    record_kind,
)
from mirrorspark.errors import CorruptRecordError
from mirrorspark.kafka.reader import read_topic
from mirrorspark.mm2.records import Heartbeat

ENDED_STATES = ("caught up", "stopped")
"""Published flow states of a run that ended cleanly; ``status`` says them until a newer heartbeat comes."""


@dataclass(frozen=True)
class TopicStatus:
    """One replicated topic of a flow; counts in records, ``copied_bytes`` in bytes (keys + values).

    ``copied_*`` and ``dropped_records`` (by transforms: read, committed, never copied) are lifetime totals
    published by running mirrorspark flows, ``None`` if none were; a ``heartbeats`` topic's lag is left out
    of the flow's.
    """

    topic: str
    remote_topic: str
    partitions: int
    records: int
    lag: int
    copied_records: int | None = None
    copied_bytes: int | None = None
    dropped_records: int | None = None
    heartbeats: bool = False


def hit_ratio(hits: int, misses: int) -> float | None:
    """Return the schema id cache's hit ratio ``hits / (hits + misses)`` in [0, 1], ``None`` before any lookup."""
    return hits / (hits + misses) if hits + misses else None


@dataclass(frozen=True)
class SchemaStatus:
    """A flow's schema replication: the driver's newest sync figures and the copy tasks' id counts.

    ``subjects``/``versions``: source subjects (and their versions) the target holds under the policy's names;
    ``registered``: versions the driver registered since it started; ``synced_at_ms``: when the last sync pass
    ended (epoch ms); ``error``: that pass's error; all ``None`` when no figures were published. Id counts are
    records over the flow's lifetime (keys and values): ``ids_translated`` = ``id_cache_hits`` (from a task's
    id cache) + ``id_cache_misses`` (after asking the registries); ``unknown_ids``: ids the source registry
    does not know, copied unchanged; ``id_cache_hit_ratio`` in [0, 1], ``None`` before any translation.
    """

    subjects: int | None = None
    versions: int | None = None
    registered: int | None = None
    synced_at_ms: int | None = None
    error: str | None = None
    ids_translated: int = 0
    id_cache_hits: int = 0
    id_cache_misses: int = 0
    id_cache_hit_ratio: float | None = None
    unknown_ids: int = 0

    @classmethod
    def of(cls, published: FlowSchemas | None, totals: list[TopicTotals]) -> SchemaStatus:
        """Combine the driver's newest ``schemas`` record (``None``: none) with the topics' lifetime totals."""
        hits = sum(t.schema_hits for t in totals)
        misses = sum(t.schema_misses for t in totals)
        f = published.figures if published is not None else None
        return cls(
            subjects=f.subjects if f else None,
            versions=f.versions if f else None,
            registered=f.registered if f else None,
            synced_at_ms=f.synced_at_ms if f else None,
            error=f.error if f else None,
            ids_translated=hits + misses,
            id_cache_hits=hits,
            id_cache_misses=misses,
            id_cache_hit_ratio=hit_ratio(hits, misses),
            unknown_ids=sum(t.schema_unknown for t in totals),
        )

    def summary(self, flow: str) -> str:
        """One line for ``status``: subjects, versions synced, ids translated, hit ratio, misses, unknown ids, error."""
        synced = (
            f"{self.subjects} subjects, {self.versions} versions synced"
            if self.subjects is not None
            else "no sync figures published yet"
        )
        ratio = f"{self.id_cache_hit_ratio:.1%}" if self.id_cache_hit_ratio is not None else "-"
        return (
            f"flow {flow}: schemas: {synced}; {self.ids_translated} ids translated "
            f"(cache hit ratio {ratio}, {self.id_cache_misses} misses), {self.unknown_ids} unknown ids"
            + (f"; last sync failed: {self.error}" if self.error else "")
        )


@dataclass(frozen=True)
class ThrottleStatus:
    """A flow's throttle: the limit in effect (bytes/s, 0: none) and where it is set, its rate and time held back.

    ``rate_bytes_per_s``: record bytes per second copied under the limit over the driver's last metrics interval;
    ``throttled_s``: seconds its tasks were held back since the driver started (``None``: no driver figures).
    """

    limit_bytes_per_s: int
    origin: str
    rate_bytes_per_s: int | None = None
    throttled_s: float | None = None

    def summary(self, flow: str) -> str:
        """Return the status line: ``flow A->B: throttle 1000000 bytes/s (control), copying 990000 bytes/s, …``."""
        limit = f"{self.limit_bytes_per_s} bytes/s" if self.limit_bytes_per_s else "none"
        rate = f", copying {self.rate_bytes_per_s} bytes/s" if self.rate_bytes_per_s is not None else ""
        held = f", held back {self.throttled_s:.1f} s in all" if self.throttled_s else ""
        return f"flow {flow}: throttle {limit} (from {self.origin}){rate}{held}"


@dataclass(frozen=True)
class FlowStatus:
    """One flow's state (``running``, ``failed``, ``caught up``, ``stopped`` or ``never started``).

    ``last_heartbeat_ms`` in epoch ms, ``None`` if none; ``error`` only for ``failed``; ``failover`` is the
    newest failover-policy event, ``None`` if never recorded; ``schemas`` only for a flow that replicates schemas
    (``sync.schemas.enabled``, or one whose driver published schema figures or counts); ``group_offset_sync``:
    per target group its offset-sync counts (empty when its driver published none); ``throttle`` only for a flow
    with a limit in effect or whose tasks were held back.
    """

    flow: str
    state: str
    last_heartbeat_ms: int | None
    topics: tuple[TopicStatus, ...] = field(default_factory=tuple)
    gaps: tuple[GapEvent, ...] = field(default_factory=tuple)
    error: str | None = None
    failover: FailoverEvent | None = None
    schemas: SchemaStatus | None = None
    group_offset_sync: dict[str, GroupSyncCounts] = field(default_factory=dict)
    throttle: ThrottleStatus | None = None

    @property
    def partitions(self) -> int:
        """Replicated partitions."""
        return sum(t.partitions for t in self.topics)

    @property
    def records(self) -> int:
        """Records in the remote topics."""
        return sum(t.records for t in self.topics)

    @property
    def lag(self) -> int:
        """Source records not yet copied, heartbeats topics left out (:attr:`TopicStatus.heartbeats`)."""
        return sum(t.lag for t in self.topics if not t.heartbeats)

    @property
    def dropped_records(self) -> int | None:
        """Records dropped by transforms over the flow's lifetime (``None`` if never published)."""
        known = [t.dropped_records for t in self.topics if t.dropped_records is not None]
        return sum(known) if known else None

    @property
    def copied_bytes(self) -> int | None:
        """Bytes copied over the flow's lifetime (``None`` if never published)."""
        known = [t.copied_bytes for t in self.topics if t.copied_bytes is not None]
        return sum(known) if known else None


@dataclass(frozen=True)
class ClusterStatus:
    """MirrorClient's view of one cluster: which clusters replicate into it, and how many hops away."""

    cluster: str
    upstream_clusters: tuple[str, ...]
    replication_hops: dict[str, int]


def _heartbeats(ctx: FlowContext) -> int | None:
    """Epoch ms of the newest ``Heartbeat(source, target)`` in the target's heartbeats topic."""
    flow = ctx.flow_config
    target = ctx.cluster("target")
    newest: list[int] = []

    def on_record(key: bytes | None, value: bytes | None) -> None:
        try:
            hb = Heartbeat.decode(key, value)
        except CorruptRecordError:
            return
        if hb.source_cluster_alias == flow.source and hb.target_cluster_alias == flow.target:
            newest.append(hb.timestamp_ms)

    read_topic(
        target.consumer,
        target.admin,
        flow.target,
        ctx.internal_topics.heartbeats,
        on_record,
        client_id=ctx.client_id("status-heartbeats-consumer"),
        clients=ctx.clients,
    )
    return max(newest) if newest else None


def read_driver_records(
    ctx: FlowContext, *, client_id: str
) -> tuple[FailoverEvent | None, FlowSchemas | None, dict[str, GroupSyncCounts], FlowMetrics | None]:
    """Read the newest ``failover``, ``schemas``, per group ``group-sync`` and ``flow`` records of a flow (or ``None``).

    From its progress channel on the target; undecodable records are skipped; raises ClusterError if the target
    cannot be read.
    """
    flow = ctx.flow_config
    target = ctx.cluster("target")
    failover: list[FailoverEvent] = []
    schemas: list[FlowSchemas] = []
    sync: dict[str, GroupSync] = {}
    metrics: list[FlowMetrics] = []

    def on_record(key: bytes | None, value: bytes | None) -> None:
        kind = record_kind(key)
        try:
            if kind == "flow":
                fm = decode_flow_metrics(key, value)
                if fm.flow == flow.name and (not metrics or fm.at >= metrics[0].at):
                    metrics[:] = [fm]
            elif kind == "failover":
                e = decode_failover_event(key, value)
                if e.flow == flow.name and (not failover or e.at >= failover[0].at):
                    failover[:] = [e]
            elif kind == "schemas":
                m = decode_flow_schemas(key, value)
                if m.flow == flow.name and (not schemas or m.at >= schemas[0].at):
                    schemas[:] = [m]
            elif kind == "group-sync":
                g = decode_group_sync(key, value)
                if g.flow == flow.name and (g.group not in sync or g.at >= sync[g.group].at):
                    sync[g.group] = g
        except CorruptRecordError:
            return

    read_topic(
        target.consumer,
        target.admin,
        flow.target,
        ctx.internal_topics.progress_channel,
        on_record,
        client_id=client_id,
        clients=ctx.clients,
    )
    counts = {group: g.counts for group, g in sorted(sync.items())}
    newest = metrics[0] if metrics else None
    return (failover[0] if failover else None), (schemas[0] if schemas else None), counts, newest


def read_throttle(ctx: FlowContext, published: FlowMetrics | None, *, client_id: str) -> ThrottleStatus | None:
    """Read the flow's throttle in effect from its control topic (over the config's); ``None``: none, never held back.

    Undecodable control records are skipped; raises ClusterError if the target cannot be read.
    """
    flow = ctx.flow_config
    target = ctx.cluster("target")
    changes: list[ControlChange | ThrottleChange] = []

    def on_record(key: bytes | None, value: bytes | None) -> None:
        try:
            changes.append(decode_control(key, value))
        except CorruptRecordError:
            return

    read_topic(
        target.consumer,
        target.admin,
        flow.target,
        ctx.internal_topics.control,
        on_record,
        client_id=client_id,
        clients=ctx.clients,
    )
    state = fold(changes, ControlState(flow=flow.name))
    limit = state.throttle_limit(flow.throttled_rate)
    if not limit and (published is None or not published.throttled_ms):
        return None
    origin = "config" if state.throttle is None or state.throttle.rate is None else "control"
    return ThrottleStatus(
        limit,
        origin,
        published.throttle_rate if published is not None and limit else None,
        published.throttled_ms / 1000 if published is not None else None,
    )


def read_failover_event(ctx: FlowContext, *, client_id: str) -> FailoverEvent | None:
    """Read the newest ``failover`` record of a flow's progress channel on the target, ``None`` if none.

    Undecodable records are skipped; raises ClusterError if the target cannot be read.
    """
    return read_driver_records(ctx, client_id=client_id)[0]


def flow_state(
    published: FlowState | None, *, started: bool, last_heartbeat_ms: int | None, now_ms: int, fresh_ms: int
) -> str:
    """Tell a flow's state from what the clusters hold (the **state** rule of the module docstring).

    Times in epoch ms, ``fresh_ms`` in ms. A run's clean end (:data:`ENDED_STATES`) counts when at least as
    new as the newest heartbeat (a later run's or MM2's heartbeats say ``running`` again).
    """
    if published is not None and published.state == "failed":
        return "failed"
    if published is not None and published.state in ENDED_STATES and published.timestamp_ms >= (last_heartbeat_ms or 0):
        return published.state
    if not started:
        return "never started"
    if last_heartbeat_ms is not None and now_ms - last_heartbeat_ms <= fresh_ms:
        return "running"
    return "stopped"


def flow_status(
    config: MirrorConfig,
    flow: FlowConfig,
    *,
    now_ms: int | None = None,
    context: ReplicationContext | None = None,
) -> FlowStatus:
    """Compute one flow's status from its source and target clusters; raises ClusterUnreachableError if one is down."""
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    ctx = (context if context is not None else ReplicationContext(config)).of(flow)
    policy = ctx.policy
    cid = "status"
    src_admin = ctx.cluster_admin("source", f"{cid}-source-admin")
    tgt_admin = ctx.cluster_admin("target", f"{cid}-target-admin")
    source_topics = src_admin.list_topics()
    target_topics = tgt_admin.list_topics()
    stored = read_flow_source_offsets(ctx, f"{cid}-offsets-consumer")
    wanted = {t: n for t, n in sorted(source_topics.items()) if n > 0 and ctx.replicates_topic(t)}
    keys = [(t, p) for t, n in wanted.items() for p in range(n)]
    ends = src_admin.end_offsets(keys)
    starts = src_admin.start_offsets(keys)
    remote_keys = [
        (policy.format_remote_topic(flow.source, t), p)
        for t, p in keys
        if policy.format_remote_topic(flow.source, t) in target_topics
    ]
    r_ends = tgt_admin.end_offsets(remote_keys)
    r_starts = tgt_admin.start_offsets(remote_keys)
    states: dict[str, FlowState] = {}
    copied = read_totals(ctx, client_id=ctx.client_id(f"{cid}-progress-consumer"), states=states)
    topics = []
    for t, n in wanted.items():
        remote = policy.format_remote_topic(flow.source, t)
        lag = 0
        records = 0
        for p in range(n):
            position = stored[(t, p)] + 1 if (t, p) in stored else starts.get((t, p), 0)
            lag += max(0, ends.get((t, p), 0) - position)
            records += max(0, r_ends.get((remote, p), 0) - r_starts.get((remote, p), 0))
        cp = copied.get(t)
        topics.append(
            TopicStatus(
                t,
                remote,
                n,
                records,
                lag,
                cp.records if cp else None,
                cp.value_bytes + cp.key_bytes if cp else None,
                cp.dropped if cp else None,
                policy.is_heartbeats_topic(t),
            )
        )
    gaps = read_gap_ledger(ctx, client_id=ctx.client_id(f"{cid}-gaps-consumer")).gaps
    last = _heartbeats(ctx)
    fresh_ms = max(10_000, int(5 * flow.emit_heartbeats_interval_s * 1000))
    published = states.get(flow.name)
    state = flow_state(published, started=bool(stored), last_heartbeat_ms=last, now_ms=now_ms, fresh_ms=fresh_ms)
    error = published.error if state == "failed" and published is not None else None
    failover, published_schemas, group_sync, flow_metrics = read_driver_records(
        ctx, client_id=ctx.client_id(f"{cid}-failover-consumer")
    )
    throttle = read_throttle(ctx, flow_metrics, client_id=ctx.client_id(f"{cid}-control-consumer"))
    counts = SchemaStatus.of(published_schemas, list(copied.values()))
    replicates = (
        flow.sync_schemas_enabled or published_schemas is not None or counts.ids_translated + counts.unknown_ids > 0
    )
    schemas = counts if replicates else None
    return FlowStatus(
        flow.name, state, last, tuple(topics), tuple(gaps), error, failover, schemas, group_sync, throttle
    )


def cluster_status(config: MirrorConfig, cluster: str, *, context: ReplicationContext | None = None) -> ClusterStatus:
    """MirrorClient's view of a cluster: upstream clusters and replication hops to every other alias."""
    with MirrorClient(config, cluster, context=context) as mc:
        upstream = tuple(sorted(mc.upstream_clusters()))
        hops = {alias: mc.replication_hops(alias) for alias in config.clusters if alias != cluster}
    return ClusterStatus(cluster, upstream, hops)


def status(config: MirrorConfig) -> tuple[list[FlowStatus], list[ClusterStatus]]:
    """Status of every enabled flow and every cluster of a configuration."""
    context = ReplicationContext(config)
    flows = [flow_status(config, f, context=context) for f in config.enabled_flows()]
    clusters = [cluster_status(config, alias, context=context) for alias in config.clusters]
    return flows, clusters


__all__ = [
    "ENDED_STATES",
    "ClusterStatus",
    "FlowStatus",
    "SchemaStatus",
    "ThrottleStatus",
    "TopicStatus",
    "cluster_status",
    "flow_state",
    "flow_status",
    "hit_ratio",
    "read_driver_records",
    "read_failover_event",
    "read_throttle",
    "status",
]
