"""MM2's replication metrics as pure definitions, and the measurement maths mirrorspark adds (no I/O).

:data:`MM2_METRICS` lists MM2's attributes (groups ``MirrorSourceConnector`` and ``MirrorCheckpointConnector``, JMX
domain ``kafka.connect.mirror``) with unit and meaning, named in Prometheus as Strimzi does
(:func:`prometheus_name`); :data:`MIRRORSPARK_METRICS` adds what MM2 lacks (lag, task state, heartbeat age,
checkpoint lag, re-reads, gaps, failovers, drills, verify runs) under ``mirrorspark_``. Latency and record age go
into a fixed histogram (:data:`LATENCY_BUCKETS_MS`) that adds up across partitions, tasks and time
(:func:`quantile`); lag in seconds is the age of the oldest record not copied (:class:`LagClock`).
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

JMX_DOMAIN: Final = "kafka.connect.mirror"
"""MM2's metrics context namespace (``MirrorConnectorConfig.metricsReporters``)."""

SOURCE_GROUP: Final = "MirrorSourceConnector"
"""Metric group (JMX ``type``) of the replication metrics."""

CHECKPOINT_GROUP: Final = "MirrorCheckpointConnector"
"""Metric group (JMX ``type``) of the checkpoint metrics."""

SOURCE_TAGS: Final = ("source", "target", "topic", "partition")
"""Tags of ``MirrorSourceConnector`` metrics, in MM2 4.0's order (``topic`` = remote topic)."""

CHECKPOINT_TAGS: Final = ("source", "target", "group", "topic", "partition")
"""Tags of ``MirrorCheckpointConnector`` metrics (``topic`` = the renamed, downstream topic)."""

Stat = Literal["cumulative", "rate", "value", "min", "max", "avg"]
"""How a metric is computed: Kafka's ``CumulativeSum``/``CumulativeCount``, ``Rate``, ``Value`` (last
sample), or windowed ``Min``/``Max``/``Avg`` (NaN without a sample in the window)."""


@dataclass(frozen=True, slots=True)
class MetricDef:
    """One metric: its MM2 (or mirrorspark) attribute name, group, stat, unit and meaning."""

    name: str
    group: str
    stat: Stat
    unit: str
    doc: str

    @property
    def tags(self) -> tuple[str, ...]:
        """The tags (Prometheus labels) of the metric's series."""
        return CHECKPOINT_TAGS if self.group == CHECKPOINT_GROUP else SOURCE_TAGS


def _source(name: str, stat: Stat, unit: str, doc: str) -> MetricDef:
    return MetricDef(name, SOURCE_GROUP, stat, unit, doc)


_AGE = "now - the record's timestamp when the task polled it"
_LAT = "now - the record's timestamp when the target acknowledged its copy"

MM2_METRICS: Final[tuple[MetricDef, ...]] = (
    _source("record-count", "cumulative", "records", "Records copied (acknowledged) since the task started."),
    _source("record-rate", "rate", "records/s", "Records copied per second."),
    _source("byte-count", "cumulative", "bytes", "Value bytes copied since the task started (keys not counted)."),
    _source("byte-rate", "rate", "bytes/s", "Value bytes copied per second."),
    _source("record-age-ms", "value", "ms", f"Last sampled record age: {_AGE}."),
    _source("record-age-ms-min", "min", "ms", f"Smallest record age in the window: {_AGE}."),
    _source("record-age-ms-max", "max", "ms", f"Largest record age in the window: {_AGE}."),
    _source("record-age-ms-avg", "avg", "ms", f"Average record age in the window: {_AGE}."),
    _source("replication-latency-ms", "value", "ms", f"Last sampled replication latency: {_LAT}."),
    _source("replication-latency-ms-min", "min", "ms", f"Smallest replication latency in the window: {_LAT}."),
    _source("replication-latency-ms-max", "max", "ms", f"Largest replication latency in the window: {_LAT}."),
    _source("replication-latency-ms-avg", "avg", "ms", f"Average replication latency in the window: {_LAT}."),
    MetricDef(
        "checkpoint-latency-ms",
        CHECKPOINT_GROUP,
        "value",
        "ms",
        "Last checkpoint latency: when the checkpoint was acknowledged - when the group's offsets were listed.",
    ),
    MetricDef("checkpoint-latency-ms-min", CHECKPOINT_GROUP, "min", "ms", "Smallest checkpoint latency in the window."),
    MetricDef("checkpoint-latency-ms-max", CHECKPOINT_GROUP, "max", "ms", "Largest checkpoint latency in the window."),
    MetricDef("checkpoint-latency-ms-avg", CHECKPOINT_GROUP, "avg", "ms", "Average checkpoint latency in the window."),
)
"""Every attribute MM2 4.0 registers per task partition (and per group partition for checkpoints)."""

MIRRORSPARK_METRICS: Final[tuple[MetricDef, ...]] = (
    MetricDef(
        "replication-lag-records",
        "mirrorspark",
        "value",
        "records",
        "Source records not copied yet: the source end offset - the committed position.",
    ),
    MetricDef(
        "replication-lag-seconds",
        "mirrorspark",
        "value",
        "s",
        "Age of the oldest source record not copied yet (0 when caught up), to within the end-offset listing interval.",
    ),
    MetricDef("replication-latency-ms-p50", "mirrorspark", "value", "ms", "Median replication latency in the window."),
    MetricDef(
        "replication-latency-ms-p99", "mirrorspark", "value", "ms", "99th percentile replication latency in the window."
    ),
    MetricDef("tasks", "mirrorspark", "value", "count", "Copy tasks the flow runs."),
    MetricDef("task-restarts", "mirrorspark", "cumulative", "count", "Copy task restarts since the driver started."),
    MetricDef(
        "heartbeat-age-seconds", "mirrorspark", "value", "s", "Age of the flow's newest heartbeat on the target."
    ),
    MetricDef(
        "checkpoint-lag-records",
        "mirrorspark",
        "value",
        "records",
        "Records a group committed on the source since its newest checkpoint.",
    ),
    MetricDef(
        "checkpoint-failover-rereads",
        "mirrorspark",
        "value",
        "records",
        "Records a consumer failing over now (starting at the newest checkpoint) would read again.",
    ),
    MetricDef(
        "group-offset-sync",
        "mirrorspark",
        "cumulative",
        "count",
        "Offset-sync writes of a target group since the flow's driver started, by outcome: synced, skipped_active "
        "(the group had members), skipped_unknown (its state or offsets could not be read). A counter (_total).",
    ),
    MetricDef(
        "throttle-limit-bytes-per-second",
        "mirrorspark",
        "value",
        "bytes/s",
        "The flow's throttle in effect (replication.throttled.rate or mirrorspark control throttle); 0: no limit.",
    ),
    MetricDef(
        "throttle-rate-bytes-per-second",
        "mirrorspark",
        "value",
        "bytes/s",
        "Record bytes (keys, values, headers) the flow's throttled tasks copied per second over the driver's last "
        "metrics interval; absent without a throttle.",
    ),
    MetricDef(
        "throttle-seconds",
        "mirrorspark",
        "cumulative",
        "s",
        "Seconds the flow's copy tasks were held back by its throttle since its driver started, summed over its "
        "tasks. A counter (_total).",
    ),
    MetricDef("gaps", "mirrorspark", "cumulative", "count", "Gap events: source records lost before they were copied."),
    MetricDef("gap-lost-records", "mirrorspark", "cumulative", "records", "Source records lost in gap events."),
    MetricDef(
        "dropped-record-count",
        "mirrorspark",
        "cumulative",
        "records",
        "Records a transform (transforms) dropped over the flow's lifetime, per topic: read, never copied.",
    ),
    MetricDef(
        "dropped-record-rate",
        "mirrorspark",
        "rate",
        "records/s",
        "Records a transform (transforms) dropped per second in the window, per partition.",
    ),
    MetricDef(
        "failover-active",
        "mirrorspark",
        "value",
        "count",
        "1 while the flow's failover policy has failed the flow over (its newest failover event), 0 once the "
        "source recovered; absent before the first event.",
    ),
    MetricDef(
        "failover-events",
        "mirrorspark",
        "cumulative",
        "count",
        "Failover events the flow's failover policy recorded since its driver started.",
    ),
    MetricDef(
        "recovery-point-records",
        "mirrorspark",
        "value",
        "records",
        "Source records not yet on the target at the flow's newest drill (records; mirrorspark drill): what a "
        "failover then would have lost.",
    ),
    MetricDef(
        "recovery-point-seconds",
        "mirrorspark",
        "value",
        "s",
        "Age of the oldest source record not yet on the target at the flow's newest drill (seconds; 0 when none "
        "waited, absent when unknown).",
    ),
    MetricDef(
        "drill-rereads",
        "mirrorspark",
        "value",
        "records",
        "Records a failover would read again, per consumer group, predicted by the flow's newest drill (records; "
        "absent when unknown).",
    ),
    MetricDef(
        "drill-measured-rereads",
        "mirrorspark",
        "value",
        "records",
        "Records the newest executed drill's consumer read again on a shadow group, per consumer group (records; "
        "absent unless measured).",
    ),
    MetricDef(
        "drill-skips",
        "mirrorspark",
        "value",
        "records",
        "Records a failover would skip, per consumer group, predicted by the flow's newest drill (records; must "
        "be 0, absent when unknown).",
    ),
    MetricDef(
        "drill-timestamp-seconds",
        "mirrorspark",
        "value",
        "s",
        "When the flow's newest drill started (Unix epoch seconds).",
    ),
    MetricDef(
        "verify-verified-records",
        "mirrorspark",
        "value",
        "records",
        "Records the flow's newest verify run found equal on source and target (records; mirrorspark verify or "
        "run's sampling, over the range that run covered).",
    ),
    MetricDef(
        "verify-divergent-records",
        "mirrorspark",
        "value",
        "records",
        "Records the flow's newest verify run found divergent: missing, unexpected, different, duplicated or out of "
        "order (records; 0 when clean).",
    ),
    MetricDef(
        "verify-finding-records",
        "mirrorspark",
        "value",
        "records",
        "The flow's newest verify run's divergent records per kind (label kind: missing, unexpected, different, "
        "duplicated, out_of_order; records).",
    ),
    MetricDef(
        "verify-unverified-offsets",
        "mirrorspark",
        "value",
        "offsets",
        "Offsets the flow's newest verify run could not map to the target yet (e.g. records still in flight): not "
        "compared, never divergent (offsets).",
    ),
    MetricDef(
        "verify-gap-offsets",
        "mirrorspark",
        "value",
        "offsets",
        "Offsets of the flow's gap ledger in the range its newest verify run covered: lost before they were copied, "
        "never divergent (offsets).",
    ),
    MetricDef(
        "verify-timestamp-seconds",
        "mirrorspark",
        "value",
        "s",
        "When the flow's newest verify run started (Unix epoch seconds).",
    ),
    MetricDef(
        "schema-id-translated-count",
        "mirrorspark",
        "cumulative",
        "records",
        "Schema ids of records (keys and values, Confluent wire format) translated to the target registry's ids "
        "over the flow's lifetime: cache hits + misses.",
    ),
    MetricDef(
        "schema-id-cache-hit-count",
        "mirrorspark",
        "cumulative",
        "records",
        "Schema ids translated from a copy task's id cache over the flow's lifetime.",
    ),
    MetricDef(
        "schema-id-cache-miss-count",
        "mirrorspark",
        "cumulative",
        "records",
        "Schema ids translated after asking the registries (not in a copy task's id cache) over the flow's lifetime.",
    ),
    MetricDef(
        "schema-id-unknown-count",
        "mirrorspark",
        "cumulative",
        "records",
        "Records whose schema id the source registry does not know, copied unchanged, over the flow's lifetime.",
    ),
    MetricDef(
        "schema-subjects-synced",
        "mirrorspark",
        "value",
        "count",
        "Source subjects the target registry holds under the replication policy's names (the last sync pass).",
    ),
    MetricDef(
        "schema-versions-synced",
        "mirrorspark",
        "value",
        "count",
        "Versions of those subjects the target registry holds (the last sync pass).",
    ),
    MetricDef(
        "schema-versions-registered-count",
        "mirrorspark",
        "cumulative",
        "count",
        "Schema versions the flow's driver registered on the target registry since it started.",
    ),
    MetricDef(
        "schema-sync-timestamp-seconds",
        "mirrorspark",
        "value",
        "s",
        "When the flow's last schema sync pass ended (Unix epoch seconds).",
    ),
    MetricDef(
        "schema-sync-failed",
        "mirrorspark",
        "value",
        "count",
        "1 when the flow's last schema sync pass failed, else 0.",
    ),
)
"""What MM2 does not measure and mirrorspark does."""


def prometheus_name(group: str, attribute: str) -> str:
    """Return the Prometheus name Strimzi gives an MM2 attribute (JMX exporter rules and Metrics Reporter alike)."""
    attr = attribute.replace("-", "_").replace(".", "_").lower()
    if group == "mirrorspark":
        return f"mirrorspark_{attr}"
    return f"{JMX_DOMAIN.replace('.', '_')}_{group.lower()}_{attr}"


# ---------------------------------------------------------------------------------------------- histograms

LATENCY_BUCKETS_MS: Final[tuple[int, ...]] = (
    1,
    2,
    5,
    10,
    20,
    50,
    100,
    200,
    500,
    1_000,
    2_000,
    5_000,
    10_000,
    30_000,
    60_000,
    300_000,
    1_800_000,
    3_600_000,
)
"""Upper bounds (ms, inclusive) of the latency and record-age histogram; one more bucket holds the rest."""

HISTOGRAM_SIZE: Final = len(LATENCY_BUCKETS_MS) + 1
"""Buckets of a histogram: one per bound and the overflow bucket."""


def bucket_of(ms: int) -> int:
    """Index of the histogram bucket of a sample (ms): the first bound >= it; the overflow bucket past the last."""
    return bisect.bisect_left(LATENCY_BUCKETS_MS, ms)


def histogram(samples: Sequence[int]) -> list[int]:
    """Count samples (ms) per bucket of :data:`LATENCY_BUCKETS_MS`; a list of :data:`HISTOGRAM_SIZE` counts."""
    out = [0] * HISTOGRAM_SIZE
    for s in samples:
        out[bucket_of(s)] += 1
    return out


def add_histograms(a: Sequence[int], b: Sequence[int]) -> list[int]:
    """Sum two histograms bucket by bucket (a missing or empty one counts as zeros)."""
    n = max(len(a), len(b), HISTOGRAM_SIZE)
    return [(a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0) for i in range(n)]


def quantile(hist: Sequence[int], q: float, lo: float | None = None, hi: float | None = None) -> float | None:
    """Estimate the ``q`` quantile (in ``[0, 1]``) of the samples counted in ``hist``, in ms; ``None`` without samples.

    Linear within the rank's bucket, clamped to ``[lo, hi]`` when known; the service does the same in SQL.
    """
    total = sum(hist)
    if total <= 0:
        return None
    rank = q * total
    cum = 0.0
    value: float | None = None
    for i, c in enumerate(hist):
        if c <= 0:
            continue
        if cum + c >= rank:
            lower = float(LATENCY_BUCKETS_MS[i - 1]) if i > 0 else 0.0
            if i < len(LATENCY_BUCKETS_MS):
                upper = float(LATENCY_BUCKETS_MS[i])
            else:
                upper = float(hi) if hi is not None else lower
            value = lower + (upper - lower) * (rank - cum) / c
            break
        cum += c
    if value is None:  # rounding: the rank is past every count
        value = float(hi) if hi is not None else float(LATENCY_BUCKETS_MS[-1])
    if lo is not None:
        value = max(value, float(lo))
    if hi is not None:
        value = min(value, float(hi))
    return value


# ---------------------------------------------------------------------------------------------- lag in time


class LagClock:
    """Age of the oldest record a partition has not copied yet, from the end offsets seen over time.

    Counted from the first listing whose end offset passed the record: exact to within the listing interval.
    """

    def __init__(self, max_entries: int = 4096) -> None:
        self._seen: dict[tuple[str, int], deque[tuple[int, int]]] = {}
        self._max = max_entries

    def observe(self, key: tuple[str, int], end_offset: int, now_ms: int) -> None:
        """Record that ``key``'s source end offset was ``end_offset`` at ``now_ms`` (epoch ms)."""
        seen = self._seen.setdefault(key, deque(maxlen=self._max))
        if not seen or end_offset > seen[-1][1]:
            seen.append((now_ms, end_offset))
        elif end_offset < seen[-1][1]:  # truncated or re-created: start again
            seen.clear()
            seen.append((now_ms, end_offset))

    def lag_ms(self, key: tuple[str, int], position: int, now_ms: int) -> int | None:
        """Age (ms) of the oldest record of ``key`` not copied yet: 0 when caught up, ``None`` before any end offset."""
        seen = self._seen.get(key)
        if not seen:
            return None
        while len(seen) > 1 and seen[0][1] <= position:
            seen.popleft()  # copied: entries up to the position are no longer needed
        if position >= seen[-1][1]:
            return 0
        for at, end in seen:
            if end > position:
                return max(0, now_ms - at)
        return 0  # pragma: no cover - the loop always returns

    def forget(self, key: tuple[str, int]) -> None:
        """Drop a partition no longer replicated."""
        self._seen.pop(key, None)


__all__ = [
    "CHECKPOINT_GROUP",
    "CHECKPOINT_TAGS",
    "HISTOGRAM_SIZE",
    "JMX_DOMAIN",
    "LATENCY_BUCKETS_MS",
    "MIRRORSPARK_METRICS",
    "MM2_METRICS",
    "SOURCE_GROUP",
    "SOURCE_TAGS",
    "LagClock",
    "MetricDef",
    "Stat",
    "add_histograms",
    "bucket_of",
    "histogram",
    "prometheus_name",
    "quantile",
]
