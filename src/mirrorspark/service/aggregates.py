"""The metrics service's windows, mergeable summaries and aggregate records (pure: no Kafka, no Spark).

The Spark job (:mod:`mirrorspark.service.aggregation`) turns every raw measurement of the progress
channels (:mod:`mirrorspark.core.progress_records`) into **samples** of one series metric
(:data:`SERIES`) per flow, topic, partition and group, and folds them over sliding windows
(:data:`WINDOWS`: 1 min, 5 min and 1 h) into a :class:`Summary` per window: count, sum, min, max,
the last value and a latency histogram. Summaries add up (:func:`merge`), so a topic's figures
are its partitions' summaries merged, and percentiles come from the summed histogram
(:func:`~mirrorspark.mm2.metrics.quantile`). The derived figures (:data:`AGGREGATES`) are
computed the same way here and in the Spark job.

Aggregate records (the compacted topic ``mirrorspark.service.metrics.topic`` on the served
cluster, compact JSON, version 1):

* key ``{"w":"1m","start":<epoch ms>,"flow":"A->B","metric":<series>,"topic":<source topic>|null,
  "partition":<n>|null,"group":<id>|null}``
* value ``{"v":1,"w":..,"start":..,"end":..,"flow":..,"metric":..,"topic":..,"remote_topic":..,
  "partition":..,"group":..,"count":n,"sum":n,"min":n|null,"max":n|null,"last":x|null,"last_at":ms,
  "avg":x|null,"rate":x|null,"p50":x|null,"p99":x|null,"hist":[n,...]|null,"updated":ms}``

A window's record is rewritten while the window is open (Spark's update mode) and kept by
compaction once it closed; records older than the window's retention (:attr:`Window.keep_ms`)
are dropped by the topic's ``retention.ms`` and by readers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from mirrorspark.errors import CorruptRecordError
from mirrorspark.mm2.metrics import add_histograms, quantile

AGGREGATE_FORMAT_VERSION: Final = 1
"""Version of the aggregate records (``"v"``)."""


@dataclass(frozen=True, slots=True)
class Window:
    """One sliding window size of the aggregation (``"1m"``, ``"5m"`` or ``"1h"``).

    ``size_ms``, ``slide_ms`` and ``keep_ms`` (how long closed windows are kept) in ms.
    """

    name: str
    size_ms: int
    slide_ms: int
    keep_ms: int

    def starts(self, at_ms: int) -> list[int]:
        """Return the starts (epoch ms) of the windows holding a sample taken at ``at_ms``, oldest first."""
        last = at_ms - at_ms % self.slide_ms
        first = last - self.size_ms + self.slide_ms
        return list(range(first, last + 1, self.slide_ms))

    def latest_closed(self, now_ms: int) -> int:
        """Start of the newest window that ended at or before ``now_ms``."""
        return now_ms - now_ms % self.slide_ms - self.size_ms


WINDOWS: Final[tuple[Window, ...]] = (
    Window("1m", 60_000, 15_000, 3_600_000),
    Window("5m", 300_000, 60_000, 6 * 3_600_000),
    Window("1h", 3_600_000, 600_000, 48 * 3_600_000),
)
"""The windows: 1 min sliding every 15 s (kept 1 h), 5 min every 1 min (6 h), 1 h every 10 min (48 h)."""

WINDOW_NAMES: Final = tuple(w.name for w in WINDOWS)

WATERMARK_MS: Final = 60_000
"""How late a sample may arrive and still count (ms): the Spark job's watermark delay."""

RETENTION_MS: Final = max(w.keep_ms for w in WINDOWS) + 3_600_000
"""``retention.ms`` of the aggregates topic: the longest kept window plus an hour."""


def window(name: str) -> Window:
    """Return the window called ``name``; KeyError if not one of :data:`WINDOW_NAMES`."""
    for w in WINDOWS:
        if w.name == name:
            return w
    raise KeyError(name)


@dataclass(frozen=True, slots=True)
class SeriesDef:
    """One series metric the Spark job aggregates (``name``: MM2's attribute stem where MM2 has one).

    ``scope``: ``"partition"``, ``"group"`` or ``"group-partition"``; ``total``: how a topic's ``last``
    adds up from its partitions', ``"sum"`` (lag in records), ``"max"`` (lag in time) or ``"newest"``.
    """

    name: str
    unit: str
    doc: str
    scope: Literal["partition", "group", "group-partition"] = "partition"
    total: Literal["sum", "max", "newest"] = "newest"


SERIES: Final[tuple[SeriesDef, ...]] = (
    SeriesDef("record-count", "records", "Records copied in one commit interval of a copy task."),
    SeriesDef("byte-count", "bytes", "Value bytes copied in one commit interval of a copy task."),
    SeriesDef(
        "dropped-record-count",
        "records",
        "Records a transform (transforms) dropped in one commit interval of a copy task: read, never copied.",
    ),
    SeriesDef(
        "schema-id-cache-hit-count",
        "records",
        "Records whose schema id a copy task translated from its id cache, in one commit interval (schema "
        "replication).",
    ),
    SeriesDef(
        "schema-id-cache-miss-count",
        "records",
        "Records whose schema id a copy task translated after asking the registries, in one commit interval.",
    ),
    SeriesDef(
        "schema-id-unknown-count",
        "records",
        "Records whose schema id the source registry does not know (copied unchanged), in one commit interval.",
    ),
    SeriesDef(
        "replication-latency-ms",
        "ms",
        "Sampled replication latency (ack time - record timestamp), every 16th record.",
    ),
    SeriesDef("record-age-ms", "ms", "Sampled record age at poll (now - record timestamp), every 16th record."),
    SeriesDef(
        "replication-lag-records", "records", "Source end offset - committed position, per listing.", total="sum"
    ),
    SeriesDef("replication-lag-ms", "ms", "Age of the oldest record not copied, per listing.", total="max"),
    SeriesDef("checkpoint-latency-ms", "ms", "Checkpoint cycle: acknowledged - group offsets listed.", scope="group"),
    SeriesDef(
        "checkpoint-lag-records",
        "records",
        "Records a group committed since its newest checkpoint, per cycle.",
        scope="group-partition",
        total="sum",
    ),
)
"""Every series the Spark job aggregates."""

SERIES_BY_NAME: Final[Mapping[str, SeriesDef]] = {s.name: s for s in SERIES}

AGGREGATES: Final = ("count", "sum", "min", "max", "avg", "rate", "p50", "p99", "last")
"""What the API's ``aggregate`` parameter takes: ``rate`` = sum per second of the window's elapsed part."""


@dataclass(frozen=True, slots=True)
class Summary:
    """What one window holds of one series (mergeable); values in the series' unit, ``last_at`` in epoch ms.

    ``min``/``max``/``last`` are ``None`` without samples; ``hist`` counts samples per
    :data:`~mirrorspark.mm2.metrics.LATENCY_BUCKETS_MS` bucket (latency and age series), else empty.
    """

    count: int = 0
    sum: float = 0.0
    min: float | None = None
    max: float | None = None
    last: float | None = None
    last_at: int = 0
    hist: tuple[int, ...] = ()


def _opt(f: Any, a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return float(f(a, b))


def merge(a: Summary, b: Summary, *, total: str = "newest") -> Summary:
    """Merge two summaries of one window (sums added, min of mins, max of maxes; ``total``: :attr:`SeriesDef.total`)."""
    if total == "sum":
        last = _opt(lambda x, y: x + y, a.last, b.last)
    elif total == "max":
        last = _opt(max, a.last, b.last)
    else:
        last = a.last if a.last_at >= b.last_at and a.last is not None else (b.last if b.last is not None else a.last)
    hist: tuple[int, ...] = tuple(add_histograms(a.hist, b.hist)) if (a.hist or b.hist) else ()
    return Summary(
        count=a.count + b.count,
        sum=a.sum + b.sum,
        min=_opt(min, a.min, b.min),
        max=_opt(max, a.max, b.max),
        last=last,
        last_at=max(a.last_at, b.last_at),
        hist=hist,
    )


def merge_all(items: Iterable[Summary], *, total: str = "newest") -> Summary:
    """Merge any number of summaries (an empty one for none)."""
    out = Summary()
    for s in items:
        out = merge(out, s, total=total)
    return out


def elapsed_ms(w: Window, start_ms: int, now_ms: int) -> int:
    """Return the part of window ``[start, start + size)`` already past at ``now_ms`` (ms, at least 1 s)."""
    return max(1000, min(start_ms + w.size_ms, now_ms) - start_ms)


def figure(s: Summary, aggregate: str, *, w: Window, start_ms: int, now_ms: int) -> float | None:
    """One derived figure (one of :data:`AGGREGATES`) of a window's summary; ``now_ms`` in epoch ms.

    ``None`` when undefined (no samples: MM2's windowed stats are NaN then); ``rate`` divides by the
    window's elapsed part. Raises KeyError for an unknown aggregate.
    """
    if aggregate == "count":
        return float(s.count)
    if aggregate == "sum":
        return float(s.sum)
    if aggregate == "min":
        return s.min
    if aggregate == "max":
        return s.max
    if aggregate == "avg":
        return s.sum / s.count if s.count else None
    if aggregate == "rate":
        return s.sum * 1000.0 / elapsed_ms(w, start_ms, now_ms)
    if aggregate == "p50":
        return quantile(s.hist, 0.5, s.min, s.max) if s.hist else None
    if aggregate == "p99":
        return quantile(s.hist, 0.99, s.min, s.max) if s.hist else None
    if aggregate == "last":
        return s.last
    raise KeyError(aggregate)


# ---------------------------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class AggregateKey:
    """Which window of which series an aggregate record holds."""

    window: str
    start: int
    flow: str
    metric: str
    topic: str | None
    partition: int | None
    group: str | None


@dataclass(frozen=True, slots=True)
class Aggregate:
    """One aggregate record: a window's :class:`Summary` of one series; ``updated`` in epoch ms."""

    key: AggregateKey
    remote_topic: str | None
    summary: Summary
    updated: int


def _num(v: Any, what: str, *, optional: bool = True) -> float | None:
    if v is None and optional:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise CorruptRecordError(f"aggregate record: {what} must be a number")
    return float(v)


def decode_aggregate(key: bytes | None, value: bytes | None) -> Aggregate | None:
    """Decode one aggregate record, ``None`` for a tombstone; CorruptRecordError (skipped by the reader) otherwise."""
    if value is None:
        return None
    try:
        v = json.loads(value)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise CorruptRecordError(f"aggregate record is not JSON: {type(e).__name__}") from e
    if not isinstance(v, dict):
        raise CorruptRecordError("aggregate record: the value must be a JSON object")
    w, flow, metric = v.get("w"), v.get("flow"), v.get("metric")
    if w not in WINDOW_NAMES or not isinstance(flow, str) or not isinstance(metric, str):
        raise CorruptRecordError("aggregate record: w, flow and metric are required")
    topic, group, partition, remote = v.get("topic"), v.get("group"), v.get("partition"), v.get("remote_topic")
    if not (topic is None or isinstance(topic, str)) or not (group is None or isinstance(group, str)):
        raise CorruptRecordError("aggregate record: topic and group must be strings")
    if not (remote is None or isinstance(remote, str)):
        raise CorruptRecordError("aggregate record: remote_topic must be a string")
    if not (partition is None or (isinstance(partition, int) and not isinstance(partition, bool))):
        raise CorruptRecordError("aggregate record: partition must be an integer")
    start, updated, last_at = v.get("start"), v.get("updated", 0), v.get("last_at") or 0
    if not isinstance(start, int) or not all(
        isinstance(x, int) and not isinstance(x, bool) for x in (start, updated, last_at)
    ):
        raise CorruptRecordError("aggregate record: start, updated and last_at must be integers")
    hist = v.get("hist") or []
    if not isinstance(hist, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in hist):
        raise CorruptRecordError("aggregate record: hist must be a list of integers")
    count = v.get("count") or 0
    if not isinstance(count, int) or isinstance(count, bool):
        raise CorruptRecordError("aggregate record: count must be an integer")
    summary = Summary(
        count=count,
        sum=_num(v.get("sum") or 0, "sum", optional=False) or 0.0,
        min=_num(v.get("min"), "min"),
        max=_num(v.get("max"), "max"),
        last=_num(v.get("last"), "last"),
        last_at=last_at,
        hist=tuple(hist) if any(hist) else (),
    )
    return Aggregate(AggregateKey(w, start, flow, metric, topic, partition, group), remote, summary, updated)


def encode_aggregate(a: Aggregate, *, now_ms: int | None = None) -> tuple[bytes, bytes]:
    """Encode an aggregate record (the layout of the module docstring; the Spark job writes the same)."""
    k = a.key
    w = window(k.window)
    now = now_ms if now_ms is not None else a.updated
    key = {
        "w": k.window,
        "start": k.start,
        "flow": k.flow,
        "metric": k.metric,
        "topic": k.topic,
        "partition": k.partition,
        "group": k.group,
    }
    s = a.summary
    value = {
        "v": AGGREGATE_FORMAT_VERSION,
        **key,
        "end": k.start + w.size_ms,
        "remote_topic": a.remote_topic,
        "count": s.count,
        "sum": s.sum,
        "min": s.min,
        "max": s.max,
        "last": s.last,
        "last_at": s.last_at,
        **{f: figure(s, f, w=w, start_ms=k.start, now_ms=now) for f in ("avg", "rate", "p50", "p99")},
        "hist": list(s.hist) or None,
        "updated": a.updated,
    }
    return json.dumps(key, separators=(",", ":")).encode(), json.dumps(value, separators=(",", ":")).encode()


def with_summary(a: Aggregate, s: Summary) -> Aggregate:
    """Return the same aggregate with another summary."""
    return replace(a, summary=s)


__all__ = [
    "AGGREGATES",
    "AGGREGATE_FORMAT_VERSION",
    "RETENTION_MS",
    "SERIES",
    "SERIES_BY_NAME",
    "WATERMARK_MS",
    "WINDOWS",
    "WINDOW_NAMES",
    "Aggregate",
    "AggregateKey",
    "SeriesDef",
    "Summary",
    "Window",
    "decode_aggregate",
    "elapsed_ms",
    "encode_aggregate",
    "figure",
    "merge",
    "merge_all",
    "window",
    "with_summary",
]
