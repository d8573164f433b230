"""The API's documents computed from the :class:`~mirrorspark.service.feed.Store` (no I/O).

Headline figures come from the newest closed window of :data:`DEFAULT_WINDOW` (one slide older
when the Spark job has not written that one yet), merged over partitions and topics with
:func:`~mirrorspark.service.aggregates.merge`; lag comes from the driver's newest listing (or,
for MM2's flows, from the committed offsets read by :func:`~mirrorspark.client.status.flow_status`).
"""

from __future__ import annotations

from collections.abc import Iterable

from mirrorspark.client.status import SchemaStatus
from mirrorspark.config.model import MirrorConfig
from mirrorspark.core.drills import DrillResult
from mirrorspark.core.verify.history import VerifyRun
from mirrorspark.core.verify.report import FINDING_KINDS, PartitionReport
from mirrorspark.service.aggregates import (
    AGGREGATES,
    SERIES,
    SERIES_BY_NAME,
    WINDOW_NAMES,
    Aggregate,
    Summary,
    figure,
    merge_all,
    window,
)
from mirrorspark.service.feed import FlowView, Store
from mirrorspark.service.schemas import (
    Cluster,
    Drill,
    DrillGroup,
    DrillPartition,
    DrillPolicy,
    DrillRecoveryPoint,
    Failover,
    FailoverGroup,
    Figures,
    Gap,
    Group,
    GroupOffsetSync,
    GroupPartition,
    MetricCatalog,
    MetricInfo,
    PartitionRow,
    Point,
    Replication,
    SchemaReplication,
    Series,
    Topic,
    Verification,
    VerificationFinding,
    VerificationKinds,
    VerificationPartition,
    VerificationWindow,
)

DEFAULT_WINDOW = "1m"
"""The window of headline figures (MM2's own windows are 2 x 30 s)."""

STALE_INTERVALS = 3
"""A driver ``flow`` record older than this many of its intervals (plus 10 s) no longer tells the state."""


class Index:
    """One scan of the store's aggregates of a flow and window kind, by (metric, start)."""

    def __init__(self, store: Store, flow: str, window_name: str) -> None:
        self.window = window(window_name)
        self.by: dict[tuple[str, int], list[Aggregate]] = {}
        with store.lock:
            for k, a in store.aggregates.items():
                if k.flow == flow and k.window == window_name:
                    self.by.setdefault((k.metric, k.start), []).append(a)
        starts = {s for (_, s) in self.by}
        now = store.clock_ms()
        latest = self.window.latest_closed(now)
        self.start = (
            latest if latest in starts or latest - self.window.slide_ms not in starts else latest - self.window.slide_ms
        )
        self.now = now

    def summary(
        self, metric: str, *, topic: str | None = None, partition: int | None = None, group: str | None = None
    ) -> Summary | None:
        """Return the merged summary of the headline window (``None`` when nothing was aggregated)."""
        items = [
            a.summary
            for a in self.by.get((metric, self.start), [])
            if (topic is None or a.key.topic == topic)
            and (partition is None or a.key.partition == partition)
            and (group is None or a.key.group == group)
        ]
        if not items:
            return None
        return merge_all(items, total=SERIES_BY_NAME[metric].total if metric in SERIES_BY_NAME else "newest")

    def figure(self, s: Summary | None, aggregate: str) -> float | None:
        """Return a derived figure of the headline window."""
        if s is None:
            return None
        return figure(s, aggregate, w=self.window, start_ms=self.start, now_ms=self.now)


def _int(x: float | None) -> int | None:
    return None if x is None else int(x)


def figures(view: FlowView, idx: Index, *, topic: str | None = None, partition: int | None = None) -> Figures:
    """Headline figures of a flow, one of its topics, or one partition."""
    rec = idx.summary("record-count", topic=topic, partition=partition)
    byt = idx.summary("byte-count", topic=topic, partition=partition)
    lat = idx.summary("replication-latency-ms", topic=topic, partition=partition)
    age = idx.summary("record-age-ms", topic=topic, partition=partition)
    lag_records: int | None = None
    lag_ms: int | None = None
    lags = [lag for t, lag in view.current_lags.items() if topic is None or t == topic]
    parts = [p for lag in lags for p in lag.partitions if partition is None or p.partition == partition]
    if parts:
        lag_records = sum(p.lag for p in parts)
        known = [p.lag_ms for p in parts if p.lag_ms is not None]
        lag_ms = max(known) if known else None
    elif view.status is not None and partition is None:
        rows = [t for t in view.status.topics if topic is None or t.topic == topic]
        lag_records = sum(t.lag for t in rows) if rows else None
    copied: int | None = None
    dropped: int | None = None
    if partition is None and view.totals:
        mine = [tp for t, tp in view.totals.items() if topic is None or t == topic]
        copied = sum(tp.records for tp in mine)
        dropped = sum(tp.dropped for tp in mine)
    drops = idx.summary("dropped-record-count", topic=topic, partition=partition)
    return Figures(
        window=idx.window.name,
        records_copied=copied,
        records_dropped=dropped,
        drop_rate_per_s=idx.figure(drops, "rate") if drops is not None else None,
        record_rate_per_s=idx.figure(rec, "rate") if rec is not None else (0.0 if parts else None),
        byte_rate_per_s=idx.figure(byt, "rate") if byt is not None else (0.0 if parts else None),
        lag_records=lag_records,
        lag_ms=lag_ms,
        latency_avg_ms=idx.figure(lat, "avg"),
        latency_p50_ms=idx.figure(lat, "p50"),
        latency_p99_ms=idx.figure(lat, "p99"),
        latency_max_ms=idx.figure(lat, "max"),
        record_age_avg_ms=idx.figure(age, "avg"),
    )


def flow_state(view: FlowView, now_ms: int, config: MirrorConfig | None = None) -> tuple[str, str | None]:
    """``(state, error)`` of a flow: the driver's fresh report first, then what Kafka alone tells."""
    m = view.metrics
    if m is not None and now_ms - m.at <= STALE_INTERVALS * m.interval_ms + 10_000:
        return m.state, m.error
    if view.state is not None and view.state.state == "failed":
        return "failed", view.state.error
    interval_s = 1.0
    if config is not None and view.source in config.clusters and view.target in config.clusters:
        interval_s = config.flow(view.source, view.target).emit_heartbeats_interval_s
    fresh_ms = max(10_000, int(5 * interval_s * 1000))
    if view.heartbeat_ms is not None and now_ms - view.heartbeat_ms <= fresh_ms:
        return "running", None
    if view.status is not None and view.status.state in ("never started", "stopped", "failed", "running"):
        return view.status.state, view.status.error
    if m is not None or view.heartbeat_ms is not None:
        return "stopped", None
    return "unknown", None


def topic_names(view: FlowView) -> dict[str, tuple[str | None, int]]:
    """``{source topic: (remote topic, partitions)}`` of a flow, from whatever told them."""
    out: dict[str, tuple[str | None, int]] = {}
    for t, lag in view.lags.items():
        out[t] = (lag.remote_topic, len(lag.partitions))
    for t, _ in view.reports:
        if t not in out:
            out[t] = (None, 0)
    for t in view.totals:
        out.setdefault(t, (None, 0))
    counted: dict[str, set[int]] = {}
    for t, p in view.reports:
        counted.setdefault(t, set()).add(p)
    for t, (remote, n) in list(out.items()):
        out[t] = (remote, max(n, len(counted.get(t, ()))))
    if view.status is not None:
        for ts in view.status.topics:
            out.setdefault(ts.topic, (ts.remote_topic, ts.partitions))
    return dict(sorted(out.items()))


def schema_replication(view: FlowView, config: MirrorConfig | None = None) -> SchemaReplication | None:
    """Return a flow's schema replication: its driver's ``schemas`` record and its topics' lifetime id counts.

    ``None`` unless the flow replicates schemas: ``sync.schemas.enabled`` in ``config`` (when it names the flow),
    or a ``schemas`` record or schema-id counts published.
    """
    s = SchemaStatus.of(view.schemas, list(view.totals.values()))
    enabled = (
        config is not None
        and view.source in config.clusters
        and view.target in config.clusters
        and config.flow(view.source, view.target).sync_schemas_enabled
    )
    if not (enabled or view.schemas is not None or s.ids_translated or s.unknown_ids):
        return None
    return SchemaReplication(
        subjects_synced=s.subjects,
        versions_synced=s.versions,
        versions_registered=s.registered,
        last_sync_ms=s.synced_at_ms or None,
        sync_error=s.error,
        ids_translated=s.ids_translated,
        id_cache_hits=s.id_cache_hits,
        id_cache_misses=s.id_cache_misses,
        id_cache_hit_ratio=s.id_cache_hit_ratio,
        unknown_ids=s.unknown_ids,
    )


def replication(
    view: FlowView, store: Store, config: MirrorConfig | None, window_name: str = DEFAULT_WINDOW
) -> Replication:
    """Return the document of one local flow."""
    now = store.clock_ms()
    state, error = flow_state(view, now, config)
    topics = topic_names(view)
    gaps = list(view.gaps) or (list(view.status.gaps) if view.status is not None else [])
    m = view.metrics
    return Replication(
        name=view.name,
        source=view.source,
        target=view.target,
        local=True,
        engine="mirrorspark" if view.engine == "mirrorspark" else "mm2",
        state=state,  # type: ignore[arg-type]
        error=error,
        last_heartbeat_ms=view.heartbeat_ms,
        heartbeat_age_s=(now - view.heartbeat_ms) / 1000 if view.heartbeat_ms is not None else None,
        tasks=m.tasks if m is not None else None,
        task_restarts=m.task_restarts if m is not None else None,
        topics=len(topics),
        partitions=sum(n for _, n in topics.values()),
        gaps=len(gaps),
        schemas=schema_replication(view, config),
        figures=figures(view, Index(store, view.name, window_name)),
    )


def remote_replications(store: Store) -> list[Replication]:
    """Flows into other clusters, seen through their heartbeats replicated to the served cluster."""
    now = store.clock_ms()
    out = []
    with store.lock:
        pairs = sorted(store.remote_heartbeats.items())
    for (s, t), at in pairs:
        out.append(
            Replication(
                name=f"{s}->{t}",
                source=s,
                target=t,
                local=False,
                engine="unknown",
                state="running" if now - at <= 60_000 else "stopped",
                last_heartbeat_ms=at,
                heartbeat_age_s=(now - at) / 1000,
                figures=Figures(window=DEFAULT_WINDOW),
            )
        )
    return out


def topics(
    view: FlowView, store: Store, *, detail: str | None = None, window_name: str = DEFAULT_WINDOW
) -> list[Topic]:
    """Return the topics of a flow with their figures (and, for ``detail``, that topic alone with its partitions)."""
    idx = Index(store, view.name, window_name)
    out = []
    for t, (remote, n) in topic_names(view).items():
        if detail is not None and t != detail:
            continue
        rows = None
        if detail is not None:
            lag = view.current_lags.get(t)
            by_p = {p.partition: p for p in lag.partitions} if lag is not None else {}
            nums = sorted(set(by_p) | {p for (tt, p) in view.reports if tt == t} | set(range(n)))
            rows = []
            for p in nums:
                pl = by_p.get(p)
                rep = view.reports.get((t, p))
                rows.append(
                    PartitionRow(
                        partition=p,
                        position=pl.position if pl is not None else (rep.next_offset if rep is not None else None),
                        end_offset=pl.end if pl is not None else None,
                        lag_records=pl.lag if pl is not None else None,
                        lag_ms=pl.lag_ms if pl is not None else None,
                        records_since_start=pl.records if pl is not None else None,
                        last_report_ms=rep.at if rep is not None else None,
                        figures=figures(view, idx, topic=t, partition=p),
                    )
                )
        out.append(
            Topic(topic=t, remote_topic=remote, partitions=n, figures=figures(view, idx, topic=t), partition_rows=rows)
        )
    return out


def groups(view: FlowView) -> list[Group]:
    """Return the consumer groups a flow checkpoints or syncs: checkpoints, lag, re-reads, offset-sync counts."""
    out = []
    for name in sorted(set(view.groups) | set(view.group_sync)):
        g = view.groups.get(name)
        parts = [
            GroupPartition(
                topic=p.topic,
                remote_topic=p.remote_topic,
                partition=p.partition,
                upstream_offset=p.upstream,
                checkpoint_upstream_offset=p.checkpoint_upstream,
                checkpoint_downstream_offset=p.checkpoint_downstream,
                checkpoint_lag_records=p.lag,
                failover_rereads=p.rereads,
            )
            for p in (g.partitions if g is not None else ())
        ]
        lags = [p.checkpoint_lag_records for p in parts if p.checkpoint_lag_records is not None]
        rereads = [p.failover_rereads for p in parts if p.failover_rereads is not None]
        gs = view.group_sync.get(name)
        sync = None
        if gs is not None:
            c = gs.counts
            sync = GroupOffsetSync(
                synced=c.synced, skipped_active=c.skipped_active, skipped_unknown=c.skipped_unknown, updated_ms=gs.at
            )
        out.append(
            Group(
                group=name,
                updated_ms=g.at if g is not None else gs.at if gs is not None else 0,
                checkpoint_latency_ms=g.latency_ms if g is not None else None,
                checkpoint_lag_records=sum(lags) if lags else None,
                failover_rereads=sum(rereads) if rereads else None,
                partitions=parts,
                offset_sync=sync,
            )
        )
    return out


def gaps(views: Iterable[FlowView]) -> list[Gap]:
    """Return the gap events of flows, oldest first."""
    out = []
    for v in views:
        events = list(v.gaps) or (list(v.status.gaps) if v.status is not None else [])
        for g in events:
            out.append(
                Gap(
                    flow=g.flow,
                    topic=g.topic,
                    partition=g.partition,
                    reason=g.reason,
                    first_lost=g.first_lost,
                    last_lost=g.last_lost,
                    lost_records=g.lost,
                    at_ms=g.at,
                )
            )
    return sorted(out, key=lambda g: (g.at_ms, g.flow, g.topic, g.partition))


def failovers(views: Iterable[FlowView]) -> list[Failover]:
    """Return the newest failover event of every flow that recorded one, by flow."""
    out = []
    for v in sorted(views, key=lambda v: v.name):
        e = v.failover
        if e is None:
            continue
        out.append(
            Failover(
                replication=e.flow,
                event=e.event,
                active=e.active,
                policy=e.policy,
                dry_run=e.dry_run,
                since_ms=e.since,
                at_ms=e.at,
                reason=e.reason,
                events=e.events,
                groups=[
                    FailoverGroup(group=g.group, outcome=g.outcome, offsets=g.offsets, detail=g.detail)
                    for g in e.groups
                ],
            )
        )
    return out


def _known_s(seconds: float) -> float | None:
    return None if seconds < 0 else seconds


def drill(d: DrillResult, *, partitions: bool = True) -> Drill:
    """Return one drill's document (``-1`` sentinels become ``null``); per-partition points if ``partitions``."""
    rp = d.recovery_point
    return Drill(
        flow=d.flow,
        source=d.source,
        target=d.target,
        at_ms=d.at,
        executed=d.executed,
        duration_ms=d.duration_ms,
        recovery_point=DrillRecoveryPoint(
            records=rp.records,
            max_records=rp.max_records,
            seconds=_known_s(rp.seconds),
            gap_events=rp.gap_events,
            gap_records=rp.gap_records,
            partitions=None
            if not partitions
            else [
                DrillPartition(
                    topic=p.topic,
                    partition=p.partition,
                    end_offset=p.end_offset,
                    position=p.position if p.position >= 0 else None,
                    records=p.records,
                    seconds=_known_s(p.seconds),
                )
                for p in rp.partitions
            ],
        ),
        rereads=d.rereads,
        skips=d.skips,
        groups=[
            DrillGroup(
                group=g.group,
                partitions=len(g.partitions),
                rereads=g.rereads,
                skips=g.skips,
                measured_rereads=g.measured_rereads,
                measured_skips=g.measured_skips,
                source_lag=g.source_lag,
                recovery_ms=g.recovery_ms,
                records_read=g.records_read,
                target_members=g.target_members,
                source_members=g.source_members,
                refused=g.refused,
                without_checkpoint=list(g.without_checkpoint),
            )
            for g in d.groups
        ],
        policy=None
        if d.policy is None
        else DrillPolicy(
            policy=d.policy.policy,
            breached=d.policy.breached,
            action=d.policy.action,
            reason=d.policy.reason,
            groups=list(d.policy.groups),
            grace_ms=d.policy.grace_ms,
        ),
    )


def drills(views: Iterable[FlowView], limit: int, *, partitions: bool = True) -> list[Drill]:
    """Return the drills of flows (hold the store's lock), newest first (ties by flow), at most ``limit`` (>= 1)."""
    newest = sorted((d for v in views for d in v.drills), key=lambda d: (-d.at, d.flow))
    return [drill(d, partitions=partitions) for d in newest[:limit]]


def findings_by_kind(parts: Iterable[PartitionReport]) -> dict[str, int]:
    """Return the findings of verify report partitions per kind, every kind present (0 for none)."""
    totals: dict[str, int] = dict.fromkeys(FINDING_KINDS, 0)
    for p in parts:
        for kind, n in p.by_kind().items():
            totals[kind] += n
    return totals


def _verification_partition(p: PartitionReport) -> VerificationPartition:
    c = p.counts
    return VerificationPartition(
        topic=p.topic,
        partition=p.partition,
        target_topic=p.target_topic,
        verified=c.verified,
        skipped=c.skipped,
        gap_offsets=c.gap_offsets,
        unverified_offsets=c.unverified_offsets,
        digests=c.digests,
        divergent=p.divergent,
        findings_by_kind=VerificationKinds(**p.by_kind()),
        findings=[
            VerificationFinding(
                kind=f.kind,
                source_offset=f.source_offset,
                target_offset=f.target_offset,
                field=f.field,
                related_offset=f.related_offset,
            )
            for f in p.findings
        ],
        findings_omitted=sum(n for _, n in p.omitted),
    )


def verification(run: VerifyRun, *, partitions: bool = True) -> Verification:
    """Return one verify run's document: totals and per-kind findings; per-partition rows if ``partitions``."""
    parts = run.report.partitions
    return Verification(
        flow=run.flow,
        source=run.source,
        target=run.target,
        trigger=run.trigger,
        at_ms=run.at,
        duration_ms=run.duration_ms,
        window=VerificationWindow(since_ms=run.since_ms, last=run.last, topics=run.topics),
        clean=run.report.clean,
        verified=run.verified,
        divergent=run.divergent,
        skipped=sum(p.counts.skipped for p in parts),
        gap_offsets=sum(p.counts.gap_offsets for p in parts),
        unverified_offsets=sum(p.counts.unverified_offsets for p in parts),
        findings_by_kind=VerificationKinds(**findings_by_kind(parts)),
        partitions=[_verification_partition(p) for p in parts] if partitions else None,
    )


def verifications(views: Iterable[FlowView], limit: int, *, partitions: bool = True) -> list[Verification]:
    """Return the verify runs of flows (hold the store's lock), newest first (ties by flow), at most ``limit``."""
    newest = sorted((r for v in views for r in v.verifications), key=lambda r: (-r.at, r.flow))
    return [verification(r, partitions=partitions) for r in newest[:limit]]


def series(
    store: Store,
    flow: str,
    metric: str,
    *,
    window_name: str,
    aggregate: str,
    topic: str | None = None,
    partition: int | None = None,
    group: str | None = None,
    since_ms: int | None = None,
) -> Series:
    """One series' time series: a point per window, merged over what the filters leave; KeyError for an unknown name."""
    sdef = SERIES_BY_NAME[metric]
    w = window(window_name)
    if aggregate not in AGGREGATES:
        raise KeyError(aggregate)
    by_start = store.series(flow, metric, window_name, topic=topic, partition=partition, group=group)
    now = store.clock_ms()
    points = []
    for start in sorted(by_start):
        if since_ms is not None and start + w.size_ms <= since_ms:
            continue
        s = merge_all((a.summary for a in by_start[start]), total=sdef.total)
        points.append(
            Point(start_ms=start, end_ms=start + w.size_ms, value=figure(s, aggregate, w=w, start_ms=start, now_ms=now))
        )
    return Series(
        replication=flow,
        metric=metric,
        unit=sdef.unit,
        window=window_name,
        aggregate=aggregate,
        topic=topic,
        partition=partition,
        group=group,
        points=points,
    )


def catalog() -> MetricCatalog:
    """Return the series, windows and aggregates the time-series endpoint takes."""
    return MetricCatalog(
        metrics=[MetricInfo(name=s.name, unit=s.unit, description=s.doc, scope=s.scope) for s in SERIES],
        windows=list(WINDOW_NAMES),
        aggregates=list(AGGREGATES),
    )


def clusters(store: Store, config: MirrorConfig) -> list[Cluster]:
    """Every cluster of the replication graph known here: the configuration's and those seen in heartbeats."""
    with store.lock:
        local = {v.source for v in store.flows.values() if v.heartbeat_ms is not None or v.engine == "mirrorspark"}
        remote = dict(store.remote_heartbeats)
    upstream: dict[str, set[str]] = {store.cluster: set(local)}
    for s, t in remote:
        upstream.setdefault(t, set()).add(s)
    names = set(config.clusters) | set(upstream) | local | {s for s, _ in remote}
    order = [a for a in config.clusters] + sorted(names - set(config.clusters))
    return [
        Cluster(
            alias=a,
            served=a == store.cluster,
            in_config=a in config.clusters,
            upstream_clusters=sorted(upstream.get(a, ())),
        )
        for a in order
    ]


__all__ = [
    "DEFAULT_WINDOW",
    "Index",
    "catalog",
    "clusters",
    "drill",
    "drills",
    "failovers",
    "figures",
    "findings_by_kind",
    "flow_state",
    "gaps",
    "groups",
    "remote_replications",
    "replication",
    "schema_replication",
    "series",
    "topic_names",
    "topics",
    "verification",
    "verifications",
]
