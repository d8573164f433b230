"""What the metrics service knows, read from the served cluster T alone (:class:`Store`, :class:`Feed`).

One consumer (assign only: no group, no commits) reads, from their beginning and then as they
grow, the topics on T that describe the replication into it:

* ``heartbeats`` (flows into T: MM2's and mirrorspark's alike) and the remote heartbeats topics
  (``A.heartbeats``: flows into the clusters upstream of T, for the replication graph);
* the progress channels ``mm2-task-progress.<source>.internal`` (task reports; the driver's flow,
  lag and group records: :mod:`mirrorspark.core.progress_records`);
* ``mm2-progress.<source>.internal`` (lifetime totals and published flow states),
  ``mm2-gaps.<source>.internal`` (gap events) and ``mm2-drills.<source>.internal`` (the drill history
  ``mirrorspark drill`` writes: :mod:`mirrorspark.core.drills`; the newest :data:`DRILLS_KEPT` per flow) and
  ``mm2-verify.<source>.internal`` (the verify history ``mirrorspark verify`` and ``run``'s sampling write:
  :mod:`mirrorspark.core.verify.history`; the newest :data:`VERIFY_KEPT` per flow);
* the window aggregates the Spark job writes (:mod:`mirrorspark.service.aggregates`).

New topics are found by listing T every :data:`REFRESH_TOPICS_S`. Flows that write no progress
channel (MM2's) get their topics and lag from :func:`~mirrorspark.client.status.flow_status`
every :data:`MM2_POLL_S`, when CONFIG names their source cluster.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from confluent_kafka import TopicPartition

from mirrorspark.client.context import ReplicationContext, cluster_policy
from mirrorspark.client.status import FlowStatus, flow_status
from mirrorspark.config.model import MirrorConfig
from mirrorspark.core.drills import DRILLS_PREFIX, DrillResult, decode_drill, decode_drill_key
from mirrorspark.core.gaps import GAPS_PREFIX, GapEvent, decode_ledger_record
from mirrorspark.core.lifetime_totals import FlowState, TopicTotals, decode_flow_state, decode_totals
from mirrorspark.core.progress_records import (
    FailoverEvent,
    FlowMetrics,
    FlowSchemas,
    GroupMetrics,
    GroupSync,
    PartitionReport,
    TopicLag,
    decode_failover_event,
    decode_flow_metrics,
    decode_flow_schemas,
    decode_group_metrics,
    decode_group_sync,
    decode_report,
    decode_topic_lag,
    record_kind,
)
from mirrorspark.core.verify.history import VERIFY_PREFIX, VerifyRun, decode_verify_key, decode_verify_run
from mirrorspark.errors import CorruptRecordError, MirrorsparkError
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.kafka.factory import create
from mirrorspark.mm2.internal_topics import TASK_PROGRESS_PREFIX, TOTALS_PREFIX
from mirrorspark.mm2.records import Heartbeat
from mirrorspark.service.aggregates import WINDOWS, Aggregate, AggregateKey, decode_aggregate, window

log = logging.getLogger(__name__)

REFRESH_TOPICS_S = 5.0
"""Seconds between two listings of the served cluster's topics (new progress channels, heartbeats topics)."""

MM2_POLL_S = 30.0
"""Seconds between two status reads of a flow that writes no progress channel (MM2's)."""

LISTING_TIMEOUT_S = 10.0
"""Most seconds a listing of the served cluster's topics waits (less if ``admin.timeout.ms`` is less): the
feed thread lists between two reads, and a listing that waited longer would stall the dashboard."""

PRUNE_S = 60.0
"""Seconds between two passes dropping aggregates older than their window's retention."""

OFFSET_BEGINNING = -2
"""librdkafka's logical offset "beginning"."""

DRILLS_KEPT = 1000
"""Most drills kept per flow (:attr:`FlowView.drills`): the oldest are dropped beyond it. The history topic
itself keeps every drill (compacted, one key per drill); a restarted service reads it again from its beginning."""

VERIFY_KEPT = 500
"""Most verify runs kept per flow (:attr:`FlowView.verifications`), the oldest dropped beyond it: fewer than drills,
as a run lists up to :data:`~mirrorspark.core.verify.history.FINDINGS_KEPT` findings per partition. The history
topic keeps every run (compacted, one key per run)."""


@dataclass
class FlowView:
    """Everything the service knows of one flow ``source->target`` (target = the served cluster).

    ``heartbeat_ms`` in epoch ms (``None`` if none); ``metrics``, ``lags``, ``groups``, ``group_sync``, ``failover``
    and ``schemas`` are the driver's newest records (mirrorspark flows only); ``status`` is the last :func:`flow_status`
    read of a flow without a progress channel; ``drills`` is oldest first, at most :data:`DRILLS_KEPT`, and
    ``verifications`` (its verify runs) oldest first, at most :data:`VERIFY_KEPT`.
    """

    source: str
    target: str
    heartbeat_ms: int | None = None
    metrics: FlowMetrics | None = None
    state: FlowState | None = None
    totals: dict[str, TopicTotals] = field(default_factory=dict)
    lags: dict[str, TopicLag] = field(default_factory=dict)
    reports: dict[tuple[str, int], PartitionReport] = field(default_factory=dict)
    groups: dict[str, GroupMetrics] = field(default_factory=dict)
    group_sync: dict[str, GroupSync] = field(default_factory=dict)
    gaps: list[GapEvent] = field(default_factory=list)
    status: FlowStatus | None = None
    failover: FailoverEvent | None = None
    schemas: FlowSchemas | None = None
    drills: list[DrillResult] = field(default_factory=list)
    verifications: list[VerifyRun] = field(default_factory=list)

    @property
    def name(self) -> str:
        """``"source->target"``."""
        return f"{self.source}->{self.target}"

    @property
    def current_lags(self) -> dict[str, TopicLag]:
        """The newest ``lag`` record of each topic the flow still replicates, as a new dict.

        A topic whose newest ``lag`` record is more than two rounds (``2 x mirrorspark.metrics.interval.ms``)
        older than the newest ``flow`` record is no longer replicated (the driver writes both in the same
        round), so it is left out; all lags count while no ``flow`` record is known.
        """
        m = self.metrics
        if m is None:
            return dict(self.lags)
        oldest = m.at - 2 * max(m.interval_ms, 1)
        return {t: lag for t, lag in self.lags.items() if lag.at >= oldest}

    @property
    def engine(self) -> str:
        """``"mirrorspark"`` when the flow writes raw metrics, else ``"mm2"`` (heartbeats only)."""
        return "mirrorspark" if (self.metrics is not None or self.reports or self.lags) else "mm2"


def split_flow(flow: str) -> tuple[str, str] | None:
    """``("S", "T")`` of ``"S->T"``, or ``None``."""
    source, sep, target = flow.partition("->")
    return (source, target) if sep and source and target else None


class Store:
    """The service's in-memory view, written by :class:`Feed`, read by the API and ``/metrics`` (thread-safe)."""

    def __init__(self, cluster: str, clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.cluster = cluster
        self.clock_ms = clock_ms
        self.lock = threading.RLock()
        self.flows: dict[str, FlowView] = {}
        self.remote_heartbeats: dict[tuple[str, str], int] = {}  # flows into other clusters, seen through T
        self.aggregates: dict[AggregateKey, Aggregate] = {}
        self.started_ms = clock_ms()
        self.records_read = 0
        self.records_skipped = 0
        self.last_record_ms: int | None = None
        self.last_aggregate_ms: int | None = None
        self.topics_read: set[str] = set()
        self.error: str | None = None

    def flow(self, source: str, target: str) -> FlowView:
        """Return the view of ``source->target``, created if new (hold :attr:`lock`)."""
        name = f"{source}->{target}"
        view = self.flows.get(name)
        if view is None:
            view = self.flows[name] = FlowView(source, target)
        return view

    def _local(self, flow: str) -> FlowView | None:
        pair = split_flow(flow)
        if pair is None or pair[1] != self.cluster:
            return None
        return self.flow(*pair)

    # ------------------------------------------------------------------ apply one record

    def apply(self, kind: str, key: bytes | None, value: bytes | None) -> bool:
        """Apply one record of a topic of kind ``kind``; return ``False`` for a record not understood and skipped.

        ``kind`` is ``"heartbeats"``, ``"remote-heartbeats"``, ``"channel"``, ``"progress"``, ``"gaps"``,
        ``"drills"``, ``"verifications"`` or ``"aggregates"``. A corrupt drill or verify record is logged as a
        WARNING (its result is lost from the history); other corrupt records at DEBUG.
        """
        try:
            with self.lock:
                return self._apply(kind, key, value)
        except CorruptRecordError as e:
            log.debug("skipped a %s record: %s", kind, e)
            return False

    def _apply(self, kind: str, key: bytes | None, value: bytes | None) -> bool:
        if kind in ("heartbeats", "remote-heartbeats"):
            hb = Heartbeat.decode(key, value)
            if hb.target_cluster_alias == self.cluster:
                view = self.flow(hb.source_cluster_alias, hb.target_cluster_alias)
                view.heartbeat_ms = max(view.heartbeat_ms or 0, hb.timestamp_ms)
            else:
                pair = (hb.source_cluster_alias, hb.target_cluster_alias)
                self.remote_heartbeats[pair] = max(self.remote_heartbeats.get(pair, 0), hb.timestamp_ms)
            return True
        if kind == "channel":
            return self._apply_channel(key, value)
        if kind == "progress":
            totals = decode_totals(key, value)
            if totals is not None:
                tv = self._local(totals[0])
                if tv is not None:
                    tv.totals[totals[1]] = totals[2]
                return tv is not None
            state = decode_flow_state(key, value)
            if state is not None:
                sv = self._local(state[0])
                if sv is not None:
                    sv.state = state[1]
                return sv is not None
            return False
        if kind == "gaps":
            rec = decode_ledger_record(key, value)
            if isinstance(rec, GapEvent):
                gv = self._local(rec.flow)
                if gv is not None and rec not in gv.gaps:
                    gv.gaps.append(rec)
                    gv.gaps.sort(key=lambda g: g.at)
                return gv is not None
            return rec is not None
        if kind == "drills":
            return self._apply_drill(key, value)
        if kind == "verifications":
            return self._apply_verify_run(key, value)
        if kind == "aggregates":
            agg = decode_aggregate(key, value)
            if agg is None:
                return False
            old = self.aggregates.get(agg.key)
            if old is None or agg.updated >= old.updated:
                self.aggregates[agg.key] = agg
            self.last_aggregate_ms = max(self.last_aggregate_ms or 0, agg.updated)
            return True
        return False

    def _apply_channel(self, key: bytes | None, value: bytes | None) -> bool:
        kind = record_kind(key)
        if kind == "report":
            r = decode_report(key, value)
            view = self._local(r.flow)
            if view is None:
                return False
            k = (r.topic, r.partition)
            old = view.reports.get(k)
            if old is None or r.at >= old.at:
                view.reports[k] = r
            return True
        if kind == "flow":
            m = decode_flow_metrics(key, value)
            view = self._local(m.flow)
            if view is not None and (view.metrics is None or m.at >= view.metrics.at):
                view.metrics = m
            return view is not None
        if kind == "lag":
            lag = decode_topic_lag(key, value)
            view = self._local(lag.flow)
            if view is not None and (lag.topic not in view.lags or lag.at >= view.lags[lag.topic].at):
                view.lags[lag.topic] = lag
            return view is not None
        if kind == "group":
            g = decode_group_metrics(key, value)
            view = self._local(g.flow)
            if view is not None and (g.group not in view.groups or g.at >= view.groups[g.group].at):
                view.groups[g.group] = g
            return view is not None
        if kind == "group-sync":
            gs = decode_group_sync(key, value)
            view = self._local(gs.flow)
            if view is not None and (gs.group not in view.group_sync or gs.at >= view.group_sync[gs.group].at):
                view.group_sync[gs.group] = gs
            return view is not None
        if kind == "failover":
            e = decode_failover_event(key, value)
            view = self._local(e.flow)
            if view is not None and (view.failover is None or e.at >= view.failover.at):
                view.failover = e
            return view is not None
        if kind == "schemas":
            sc = decode_flow_schemas(key, value)
            view = self._local(sc.flow)
            if view is not None and (view.schemas is None or sc.at >= view.schemas.at):
                view.schemas = sc
            return view is not None
        return False  # a kind of a newer format version: skipped

    def _apply_drill(self, key: bytes | None, value: bytes | None) -> bool:
        if value is None:  # a tombstone: that drill was deleted from the history
            try:
                flow, at = decode_drill_key(key)
            except CorruptRecordError:
                return False
            view = self.flows.get(flow)
            if view is None:
                return False
            view.drills = [d for d in view.drills if d.at != at]
            return True
        try:
            drill = decode_drill(key, value)
        except CorruptRecordError as e:
            log.warning("skipped a corrupt drill record (key %r): %s", (key or b"")[:200], e)
            return False
        view = self._local(drill.flow)
        if view is None:
            return False
        add_drill(view.drills, drill)
        return True

    def _apply_verify_run(self, key: bytes | None, value: bytes | None) -> bool:
        if value is None:  # a tombstone: that run was deleted from the history
            try:
                flow, at = decode_verify_key(key)
            except CorruptRecordError:
                return False
            view = self.flows.get(flow)
            if view is None:
                return False
            view.verifications = [r for r in view.verifications if r.at != at]
            return True
        try:
            run = decode_verify_run(key, value)
        except CorruptRecordError as e:
            log.warning("skipped a corrupt verify history record (key %r): %s", (key or b"")[:200], e)
            return False
        view = self._local(run.flow)
        if view is None:
            return False
        add_by_time(view.verifications, run, VERIFY_KEPT)
        return True

    def prune(self, now_ms: int | None = None) -> int:
        """Drop aggregates older than their window's retention; return how many."""
        now = now_ms if now_ms is not None else self.clock_ms()
        keep = {w.name: w.keep_ms + w.size_ms for w in WINDOWS}
        with self.lock:
            old = [k for k in self.aggregates if k.start < now - keep[k.window]]
            for k in old:
                del self.aggregates[k]
        return len(old)

    def series(
        self,
        flow: str,
        metric: str,
        window_name: str,
        *,
        topic: str | None = None,
        partition: int | None = None,
        group: str | None = None,
    ) -> dict[int, list[Aggregate]]:
        """Return the aggregates of one series' window kind, by window start, filtered (``None`` = any)."""
        out: dict[int, list[Aggregate]] = {}
        window(window_name)
        with self.lock:
            for k, a in self.aggregates.items():
                if k.flow != flow or k.metric != metric or k.window != window_name:
                    continue
                if topic is not None and k.topic != topic:
                    continue
                if partition is not None and k.partition != partition:
                    continue
                if group is not None and k.group != group:
                    continue
                out.setdefault(k.start, []).append(a)
        return out


class _Timed(Protocol):
    @property
    def at(self) -> int: ...


_T = TypeVar("_T", bound=_Timed)


def add_by_time(items: list[_T], item: _T, keep: int) -> None:
    """Insert ``item`` into a flow's history (oldest first, by ``at`` epoch ms), in place, keeping at most ``keep``.

    One of the same ``at`` is replaced (a history topic's key is flow and time, the newer record wins).
    """
    i = bisect.bisect_left(items, item.at, key=lambda d: d.at)
    if i < len(items) and items[i].at == item.at:
        items[i] = item
    else:
        items.insert(i, item)
    if len(items) > keep:
        del items[: len(items) - keep]


def add_drill(drills: list[DrillResult], drill: DrillResult, keep: int = DRILLS_KEPT) -> None:
    """Insert ``drill`` into a flow's drills (:func:`add_by_time`)."""
    add_by_time(drills, drill, keep)


def classify(topic: str, *, heartbeats: Callable[[str], bool], local_heartbeats: str, metrics_topic: str) -> str | None:
    """Tell what a topic of the served cluster holds for the service (``None``: nothing)."""
    if topic == metrics_topic:
        return "aggregates"
    if topic == local_heartbeats:
        return "heartbeats"
    if heartbeats(topic):
        return "remote-heartbeats"
    if topic.startswith(TASK_PROGRESS_PREFIX):
        return "channel"
    if topic.startswith(TOTALS_PREFIX):
        return "progress"
    if topic.startswith(GAPS_PREFIX):
        return "gaps"
    if topic.startswith(DRILLS_PREFIX):
        return "drills"
    if topic.startswith(VERIFY_PREFIX):
        return "verifications"
    return None


class Feed:
    """Reads the served cluster into a :class:`Store` from a background thread."""

    def __init__(self, config: MirrorConfig, cluster: str, store: Store, *, metrics_topic: str) -> None:
        self.config = config
        self.cluster = cluster
        self.store = store
        self.metrics_topic = metrics_topic
        c = config.cluster(cluster)
        self._settings = c.consumer
        self.policy = cluster_policy(config, cluster)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._assigned: dict[str, str] = {}
        self.ready = threading.Event()

    def start(self) -> None:
        """Start reading (returns at once; :attr:`ready` is set once the first listing was assigned)."""
        t = threading.Thread(target=self._run, name=f"mirrorspark-service-feed-{self.cluster}", daemon=True)
        p = threading.Thread(target=self._poll_mm2, name=f"mirrorspark-service-mm2-{self.cluster}", daemon=True)
        self._threads = [t, p]
        for th in self._threads:
            th.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the threads (bounded)."""
        self._stop.set()
        for th in self._threads:
            th.join(timeout_s)

    def _client_id(self, purpose: str) -> str:
        return f"mirrorspark-service|{self.cluster}|{purpose}"

    def _run(self) -> None:
        cons: Any = None
        try:
            admin = ReplicationContext(self.config).cluster_admin(
                self.cluster, "feed-admin", client_id=self._client_id("feed-admin")
            )
            admin = admin.with_timeout(min(admin.timeout_s, LISTING_TIMEOUT_S))
            cons = create("consumer", self._settings, client_id=self._client_id("feed-consumer"))
            next_listing = 0.0
            next_prune = time.monotonic() + PRUNE_S
            while not self._stop.is_set():
                now = time.monotonic()
                if now >= next_listing:
                    self._assign_new(admin, cons)
                    next_listing = now + REFRESH_TOPICS_S
                    self.ready.set()
                if now >= next_prune:
                    self.store.prune()
                    next_prune = now + PRUNE_S
                msgs = cons.consume(num_messages=2000, timeout=0.25) if self._assigned else []
                if not self._assigned:
                    self._stop.wait(0.25)
                for m in msgs:
                    if m.error() is not None:
                        continue
                    kind = self._assigned.get(m.topic())
                    if kind is None:
                        continue
                    ok = self.store.apply(kind, m.key(), m.value())
                    with self.store.lock:
                        self.store.records_read += 1
                        self.store.records_skipped += 0 if ok else 1
                        self.store.last_record_ms = self.store.clock_ms()
                if self.store.error is not None:
                    with self.store.lock:
                        self.store.error = None
        except MirrorsparkError as e:
            log.error("the service's feed stopped: %s", e)
            with self.store.lock:
                self.store.error = str(e)
        except Exception as e:  # a thread's end must be seen: the health endpoint reports it
            log.exception("the service's feed stopped")
            with self.store.lock:
                self.store.error = f"{type(e).__name__}: {e}"
        finally:
            if cons is not None:
                cons.close()

    def _assign_new(self, admin: ClusterAdmin, cons: Any) -> None:
        try:
            topics = admin.list_topics()
        except MirrorsparkError as e:
            log.warning("listing the topics of cluster '%s' failed: %s", self.cluster, e)
            with self.store.lock:
                self.store.error = str(e)
            return
        local_hb = self.policy.heartbeats_topic()
        new: list[TopicPartition] = []
        for name, n in sorted(topics.items()):
            if name in self._assigned:
                continue
            kind = classify(
                name,
                heartbeats=self.policy.is_heartbeats_topic,
                local_heartbeats=local_hb,
                metrics_topic=self.metrics_topic,
            )
            if kind is None:
                continue
            self._assigned[name] = kind
            new += [TopicPartition(name, p, OFFSET_BEGINNING) for p in range(n)]
        if new:
            cons.incremental_assign(new)
            with self.store.lock:
                self.store.topics_read = set(self._assigned)

    def _poll_mm2(self) -> None:
        context: ReplicationContext | None = None
        while not self._stop.wait(5.0 if context is None else MM2_POLL_S):
            with self.store.lock:
                pending = [
                    (v.source, v.target)
                    for v in self.store.flows.values()
                    if v.engine == "mm2" and v.source in self.config.clusters
                ]
            if not pending:
                continue
            if context is None:
                context = ReplicationContext(self.config)
            for source, target in pending:
                try:
                    st = flow_status(self.config, self.config.flow(source, target), context=context)
                except MirrorsparkError as e:
                    log.warning("reading the status of flow %s->%s failed: %s", source, target, e)
                    continue
                with self.store.lock:
                    self.store.flow(source, target).status = st


__all__ = [
    "DRILLS_KEPT",
    "MM2_POLL_S",
    "REFRESH_TOPICS_S",
    "VERIFY_KEPT",
    "Feed",
    "FlowView",
    "Store",
    "add_by_time",
    "add_drill",
    "classify",
    "split_flow",
]
