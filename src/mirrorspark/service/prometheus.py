"""``/metrics``: the service's figures under the Prometheus names MM2 users already scrape.

Strimzi's JMX-exporter rules and Metrics Reporter expose MM2's MBeans as gauges named
``kafka_connect_mirror_mirrorsourceconnector_<attribute>`` (labels ``source``, ``target``,
``topic`` = the **remote** topic, ``partition``) and
``kafka_connect_mirror_mirrorcheckpointconnector_<attribute>`` (labels ``source``, ``target``,
``group``, ``topic`` = the renamed downstream topic, ``partition``): :class:`ServiceCollector` writes
the same series (:func:`~mirrorspark.mm2.metrics.prometheus_name`), all gauges, so the Strimzi
MM2 dashboard's queries and alerts match them (its ``strimzi_io_*`` labels come from the
Kubernetes scrape config, not from the exporter: add them with ``relabel_configs`` when
scraping outside Kubernetes). MM2's semantics are kept:

* ``…_min``/``…_max``/``…_avg`` are over the newest closed 1-minute window (MM2: two 30 s samples)
  and NaN without a sample in it;
* ``record_age_ms`` and ``replication_latency_ms`` (MM2's ``Value``) are the newest measurement and
  keep it while idle (MM2 keeps the last sample; here: the newest task report's average, as tasks
  report per commit interval, not per record), 0 before any;
* ``record_count``/``byte_count`` count since the flow's driver started (MM2: since the task started);
  ``record_rate``/``byte_rate`` are per second over the window;
* ``checkpoint_latency_ms`` is per group (MM2 shares one sensor across a task's groups) and repeated
  on each of the group's partitions, as MM2's MBeans show it.

The throttle of each flow (``replication.throttled.rate``, from the driver's ``flow`` record):
``mirrorspark_throttle_limit_bytes_per_second`` (0: no limit), ``mirrorspark_throttle_rate_bytes_per_second``
(record bytes its throttled tasks copied per second over the driver's last metrics interval; absent without a
limit) and the counter ``mirrorspark_throttle_seconds_total`` (time its tasks were held back, summed over tasks).

``mirrorspark_group_offset_sync_total`` (labels ``source``, ``target``, ``group``, ``outcome`` = ``synced``,
``skipped_active`` or ``skipped_unknown``) is a counter: group offset sync's writes of each target group since the
flow's driver started (it restarts at 0 with the driver).

mirrorspark's own series use the ``mirrorspark_`` prefix (:data:`~mirrorspark.mm2.metrics.MIRRORSPARK_METRICS`).
The newest disaster-recovery drill of each flow (``mirrorspark drill``, :mod:`mirrorspark.core.drills`) gives
``mirrorspark_recovery_point_*`` and ``mirrorspark_drill_*`` (also in ``MIRRORSPARK_METRICS``); a value the
drill did not know (an unknown age, a group's unknown or unmeasured count) is left out, never exported as ``-1``.
The newest verify run of each flow (``mirrorspark verify`` or ``run``'s sampling,
:mod:`mirrorspark.core.verify.history`) gives ``mirrorspark_verify_*``: records verified and divergent, divergent
per ``kind``, offsets not verified and in gaps, and when it ran; nothing before a flow's first run.
A flow that replicates schemas gives ``mirrorspark_schema_*`` per flow: its records' schema ids translated (id
cache hits and misses) and unknown over its lifetime, and its driver's last schema sync (subjects and versions the
target holds, versions registered, when it ended, whether it failed).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mirrorspark.config.model import MirrorConfig
from mirrorspark.core.drills import DrillResult
from mirrorspark.core.progress_records import PartitionLag
from mirrorspark.core.verify.history import VerifyRun
from mirrorspark.mm2.metrics import CHECKPOINT_GROUP, MIRRORSPARK_METRICS, MM2_METRICS, SOURCE_GROUP, prometheus_name
from mirrorspark.service.feed import FlowView, Store
from mirrorspark.service.schemas import SchemaReplication
from mirrorspark.service.views import (
    DEFAULT_WINDOW,
    Index,
    findings_by_kind,
    flow_state,
    schema_replication,
    topic_names,
)

NAN = math.nan
_DOCS = {m.name: m.doc for m in (*MM2_METRICS, *MIRRORSPARK_METRICS)}
STATES = ("running", "standby", "failed", "stopped", "never started", "unknown")


def _n(x: float | None) -> float:
    return NAN if x is None else float(x)


class _Families:
    def __init__(self) -> None:
        self.families: dict[str, GaugeMetricFamily | CounterMetricFamily] = {}

    def add(
        self,
        group: str,
        attribute: str,
        labels: dict[str, str],
        value: float,
        doc: str | None = None,
        *,
        counter: bool = False,
    ) -> None:
        name = prometheus_name(group, attribute)
        fam = self.families.get(name)
        if fam is None:
            text = doc or _DOCS.get(attribute) or _DOCS.get(attribute.removesuffix("-min")) or attribute
            kind = CounterMetricFamily if counter else GaugeMetricFamily
            fam = self.families[name] = kind(name, text, labels=list(labels))
        fam.add_metric(list(labels.values()), value)


class ServiceCollector(Collector):
    """Builds every series from the :class:`~mirrorspark.service.feed.Store` at scrape time."""

    def __init__(self, store: Store, config: MirrorConfig | None = None) -> None:
        self.store = store
        self.config = config

    def collect(self) -> Iterator[Metric]:
        """Yield the families (MM2's names first, then ``mirrorspark_``)."""
        f = _Families()
        with self.store.lock:
            views = [v for v in self.store.flows.values() if v.target == self.store.cluster]
            for v in sorted(views, key=lambda v: v.name):
                self._flow(f, v)
        yield from f.families.values()

    def _flow(self, f: _Families, v: FlowView) -> None:
        now = self.store.clock_ms()
        base = {"source": v.source, "target": v.target}
        state, _ = flow_state(v, now, self.config)
        for s in STATES:
            f.add(
                "mirrorspark", "flow-state", {**base, "state": s}, 1.0 if s == state else 0.0, "1 for the flow's state."
            )
        if v.heartbeat_ms is not None:
            f.add("mirrorspark", "heartbeat-age-seconds", base, max(0.0, (now - v.heartbeat_ms) / 1000))
        if v.metrics is not None:
            m = v.metrics
            f.add("mirrorspark", "tasks", base, float(m.tasks))
            f.add("mirrorspark", "task-restarts", base, float(m.task_restarts))
            f.add("mirrorspark", "throttle-limit-bytes-per-second", base, float(m.throttle_limit))
            if m.throttle_rate is not None:
                f.add("mirrorspark", "throttle-rate-bytes-per-second", base, float(m.throttle_rate))
            f.add("mirrorspark", "throttle-seconds", base, m.throttled_ms / 1000, counter=True)
        if v.failover is not None:
            f.add("mirrorspark", "failover-active", base, 1.0 if v.failover.active else 0.0)
            f.add("mirrorspark", "failover-events", base, float(v.failover.events))
        gaps = list(v.gaps) or (list(v.status.gaps) if v.status is not None else [])
        f.add("mirrorspark", "gaps", base, float(len(gaps)))
        f.add("mirrorspark", "gap-lost-records", base, float(sum(g.lost for g in gaps)))
        if v.drills:
            _drill(f, base, v.drills[-1])
        if v.verifications:
            _verify_run(f, base, v.verifications[-1])
        schemas = schema_replication(v, self.config)
        if schemas is not None:
            _schemas(f, base, schemas)
        idx = Index(self.store, v.name, DEFAULT_WINDOW)
        current = v.current_lags
        for topic, (remote, n) in topic_names(v).items():
            lag = current.get(topic)
            remote_name = remote or (lag.remote_topic if lag is not None else topic)
            by_p = {p.partition: p for p in lag.partitions} if lag is not None else {}
            for p in sorted(set(range(n)) | set(by_p)):
                self._partition(f, v, idx, base, topic, remote_name, p, by_p.get(p))
            totals = v.totals.get(topic)
            if totals is not None:
                f.add(
                    "mirrorspark",
                    "dropped-record-count",
                    {**base, "topic": remote_name, "partition": ""},
                    float(totals.dropped),
                )
            if v.status is not None and lag is None:
                row = next((t for t in v.status.topics if t.topic == topic), None)
                if row is not None:
                    f.add(
                        "mirrorspark",
                        "replication-lag-records",
                        {**base, "topic": remote_name, "partition": ""},
                        row.lag,
                    )
        for group, g in sorted(v.groups.items()):
            lat = idx.summary("checkpoint-latency-ms", group=group)
            for gp in g.partitions:
                labels = {**base, "group": group, "topic": gp.remote_topic, "partition": str(gp.partition)}
                f.add(CHECKPOINT_GROUP, "checkpoint-latency-ms", labels, float(g.latency_ms or 0))
                f.add(CHECKPOINT_GROUP, "checkpoint-latency-ms-min", labels, _n(idx.figure(lat, "min")))
                f.add(CHECKPOINT_GROUP, "checkpoint-latency-ms-max", labels, _n(idx.figure(lat, "max")))
                f.add(CHECKPOINT_GROUP, "checkpoint-latency-ms-avg", labels, _n(idx.figure(lat, "avg")))
                if gp.lag is not None:
                    f.add("mirrorspark", "checkpoint-lag-records", labels, float(gp.lag))
                if gp.rereads is not None:
                    f.add("mirrorspark", "checkpoint-failover-rereads", labels, float(gp.rereads))
        _group_sync(f, base, v)

    def _partition(
        self,
        f: _Families,
        v: FlowView,
        idx: Index,
        base: dict[str, str],
        topic: str,
        remote: str,
        p: int,
        pl: PartitionLag | None,
    ) -> None:
        labels = {**base, "topic": remote, "partition": str(p)}
        rec = idx.summary("record-count", topic=topic, partition=p)
        byt = idx.summary("byte-count", topic=topic, partition=p)
        lat = idx.summary("replication-latency-ms", topic=topic, partition=p)
        age = idx.summary("record-age-ms", topic=topic, partition=p)
        rep = v.reports.get((topic, p))
        records = pl.records if pl is not None else 0
        value_bytes = pl.value_bytes if pl is not None else 0
        f.add(SOURCE_GROUP, "record-count", labels, float(records))
        f.add(SOURCE_GROUP, "record-rate", labels, idx.figure(rec, "rate") or 0.0)
        f.add(SOURCE_GROUP, "byte-count", labels, float(value_bytes))
        f.add(SOURCE_GROUP, "byte-rate", labels, idx.figure(byt, "rate") or 0.0)
        dropped = idx.summary("dropped-record-count", topic=topic, partition=p)
        f.add("mirrorspark", "dropped-record-rate", labels, idx.figure(dropped, "rate") or 0.0)
        last_age = rep.age_ms_sum / rep.age_samples if rep is not None and rep.age_samples else None
        last_lat = rep.latency_ms_sum / rep.latency_samples if rep is not None and rep.latency_samples else None
        f.add(SOURCE_GROUP, "record-age-ms", labels, float(last_age or 0))
        f.add(SOURCE_GROUP, "record-age-ms-min", labels, _n(idx.figure(age, "min")))
        f.add(SOURCE_GROUP, "record-age-ms-max", labels, _n(idx.figure(age, "max")))
        f.add(SOURCE_GROUP, "record-age-ms-avg", labels, _n(idx.figure(age, "avg")))
        f.add(SOURCE_GROUP, "replication-latency-ms", labels, float(last_lat or 0))
        f.add(SOURCE_GROUP, "replication-latency-ms-min", labels, _n(idx.figure(lat, "min")))
        f.add(SOURCE_GROUP, "replication-latency-ms-max", labels, _n(idx.figure(lat, "max")))
        f.add(SOURCE_GROUP, "replication-latency-ms-avg", labels, _n(idx.figure(lat, "avg")))
        f.add("mirrorspark", "replication-latency-ms-p50", labels, _n(idx.figure(lat, "p50")))
        f.add("mirrorspark", "replication-latency-ms-p99", labels, _n(idx.figure(lat, "p99")))
        if pl is not None:
            f.add("mirrorspark", "replication-lag-records", labels, float(pl.lag))
            if pl.lag_ms is not None:
                f.add("mirrorspark", "replication-lag-seconds", labels, pl.lag_ms / 1000)


def _group_sync(f: _Families, base: dict[str, str], v: FlowView) -> None:
    """Add ``mirrorspark_group_offset_sync_total`` per target group and outcome (groups with counts only)."""
    for group, gs in sorted(v.group_sync.items()):
        c = gs.counts
        outcomes = {"synced": c.synced, "skipped_active": c.skipped_active, "skipped_unknown": c.skipped_unknown}
        for outcome, n in outcomes.items():
            labels = {**base, "group": group, "outcome": outcome}
            f.add("mirrorspark", "group-offset-sync", labels, float(n), counter=True)


def _schemas(f: _Families, base: dict[str, str], s: SchemaReplication) -> None:
    """Add a flow's schema replication series (the sync's figures only once its driver published them)."""
    f.add("mirrorspark", "schema-id-translated-count", base, float(s.ids_translated))
    f.add("mirrorspark", "schema-id-cache-hit-count", base, float(s.id_cache_hits))
    f.add("mirrorspark", "schema-id-cache-miss-count", base, float(s.id_cache_misses))
    f.add("mirrorspark", "schema-id-unknown-count", base, float(s.unknown_ids))
    if s.subjects_synced is not None:
        f.add("mirrorspark", "schema-subjects-synced", base, float(s.subjects_synced))
        f.add("mirrorspark", "schema-versions-synced", base, float(s.versions_synced or 0))
        f.add("mirrorspark", "schema-versions-registered-count", base, float(s.versions_registered or 0))
        f.add("mirrorspark", "schema-sync-failed", base, 1.0 if s.sync_error is not None else 0.0)
    if s.last_sync_ms is not None:
        f.add("mirrorspark", "schema-sync-timestamp-seconds", base, s.last_sync_ms / 1000)


def _drill(f: _Families, base: dict[str, str], d: DrillResult) -> None:
    """Add the series of a flow's newest drill (values it did not know left out)."""

    def add(attribute: str, labels: dict[str, str], value: float) -> None:
        f.add("mirrorspark", attribute, labels, value, _DOCS[attribute])

    rp = d.recovery_point
    add("drill-timestamp-seconds", base, d.at / 1000)
    add("recovery-point-records", base, float(rp.records))
    if rp.seconds >= 0:
        add("recovery-point-seconds", base, rp.seconds)
    for g in d.groups:
        labels = {**base, "group": g.group}
        if g.rereads is not None:
            add("drill-rereads", labels, float(g.rereads))
        if g.skips is not None:
            add("drill-skips", labels, float(g.skips))
        if d.executed and g.measured_rereads is not None:
            add("drill-measured-rereads", labels, float(g.measured_rereads))


def _verify_run(f: _Families, base: dict[str, str], run: VerifyRun) -> None:
    """Add the series of a flow's newest verify run."""

    def add(attribute: str, labels: dict[str, str], value: float) -> None:
        f.add("mirrorspark", attribute, labels, value, _DOCS[attribute])

    parts = run.report.partitions
    add("verify-timestamp-seconds", base, run.at / 1000)
    add("verify-verified-records", base, float(run.verified))
    add("verify-divergent-records", base, float(run.divergent))
    for kind, n in findings_by_kind(parts).items():
        add("verify-finding-records", {**base, "kind": kind}, float(n))
    add("verify-unverified-offsets", base, float(sum(p.counts.unverified_offsets for p in parts)))
    add("verify-gap-offsets", base, float(sum(p.counts.gap_offsets for p in parts)))


__all__ = ["ServiceCollector"]
