"""The copy tasks' records on the progress channel: one :class:`PartitionReport` per partition and commit.

The layout is in :mod:`mirrorspark.core.progress_records`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from mirrorspark.core.progress_records.channel_json import nonneg_int
from mirrorspark.errors import CorruptRecordError
from mirrorspark.mm2.offset_syncs import CopiedSegment

SEGMENTS_KEPT: Final = 64
"""Most copied segments one report carries per partition (the newest ones)."""

FORMAT_VERSION: Final = 2
"""Version of the records this module writes (``"v"``; absent = 1)."""


@dataclass(frozen=True, slots=True)
class PartitionReport:
    """One partition's progress after one commit of a copy task (latencies and ages in ms, ``at`` in epoch ms).

    Fields added after version 1 read as "unknown" in older records: ``None`` (``latency_ms_min``, ``topic_id``,
    ``run``, ``attempt``), -1 (``fetched_from``, ``leader``) or 0 (``dropped``, ``epoch``, ``seq``, ``schema_hits``,
    ``schema_misses``, ``schema_unknown``). The ``schema_*`` counts are the interval's records whose key or value
    schema id was translated from the task's id cache (hits), translated after asking the registries (misses), or
    unknown to the source registry and copied unchanged (unknown). ``epoch`` is the lease epoch the task started
    under (superseded epochs never cut newer copied segments, ``engine-audit.md`` F5); a driver acts only on its own
    ``run``'s reports (``engine-audit-2.md`` N6); a reader counts an ``(attempt, seq)`` once
    (:class:`ReportSequences`).
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
    topic_id: str | None = None
    epoch: int = 0
    run: str | None = None
    attempt: str | None = None
    seq: int = 0
    schema_hits: int = 0
    schema_misses: int = 0
    schema_unknown: int = 0


SCHEMA_FIELDS: Final = ("schema_hits", "schema_misses", "schema_unknown")
"""A report's schema-id counts, written only when not 0 (a flow without schema replication writes the old layout)."""


def report_key(flow: str, topic: str, partition: int) -> bytes:
    """Encode the key of a partition's reports, ``{"flow":..,"topic":..,"partition":..}``."""
    return json.dumps({"flow": flow, "topic": topic, "partition": partition}, separators=(",", ":")).encode()


def encode_report(r: PartitionReport) -> tuple[bytes, bytes]:
    """Encode a report as ``(key, value)`` in the layout of :mod:`mirrorspark.core.progress_records`."""
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
        "topic_id": r.topic_id,
        "epoch": r.epoch,
        "run": r.run,
        "attempt": r.attempt,
        "seq": r.seq,
    }
    for f in SCHEMA_FIELDS:
        if n := getattr(r, f):
            value[f] = n
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


def decode_report(key: bytes | None, value: bytes | None) -> PartitionReport:
    """Decode one progress-channel record; raises CorruptRecordError if it is not a report of this layout.

    The reader skips such a record with a WARNING and never acts on it.
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
    bad = [f for f in _INT_FIELDS if not nonneg_int(v.get(f))]
    if bad:
        raise CorruptRecordError(f"task progress record: {', '.join(bad)} must be integers >= 0")
    raw = v.get("segments")
    if not isinstance(raw, list):
        raise CorruptRecordError("task progress record: segments must be a list")
    segments = []
    for s in raw:
        if not (isinstance(s, list) and len(s) == 3 and all(nonneg_int(x) for x in s) and s[2] >= 1):
            raise CorruptRecordError(f"task progress record: bad segment {s!r}")
        segments.append(CopiedSegment(s[0], s[1], s[2]))
    hist = v.get("latency_hist") or []
    if not isinstance(hist, list) or not all(nonneg_int(x) for x in hist):
        raise CorruptRecordError("task progress record: latency_hist must be a list of integers >= 0")
    optional: dict[str, Any] = {f: v.get(f) for f in ("latency_ms_min", "age_ms_min")}
    counts: dict[str, Any] = {
        f: v.get(f, 0) for f in ("age_ms_sum", "age_ms_max", "age_samples", "dropped", "epoch", "seq", *SCHEMA_FIELDS)
    }
    if not all(x is None or nonneg_int(x) for x in optional.values()) or not all(
        nonneg_int(x) for x in counts.values()
    ):
        raise CorruptRecordError("task progress record: latency and age figures must be integers >= 0")
    brokers: dict[str, Any] = {f: v.get(f, -1) for f in ("fetched_from", "leader")}
    if not all(isinstance(x, int) and not isinstance(x, bool) and x >= -1 for x in brokers.values()):
        raise CorruptRecordError("task progress record: fetched_from and leader must be broker ids or -1")
    topic_id, run, attempt = v.get("topic_id"), v.get("run"), v.get("attempt")
    if topic_id is not None and not isinstance(topic_id, str):
        raise CorruptRecordError("task progress record: topic_id must be a string or null")
    if not all(x is None or isinstance(x, str) for x in (run, attempt)):
        raise CorruptRecordError("task progress record: run and attempt must be strings or null")
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
        topic_id=topic_id,
        run=run,
        attempt=attempt,
    )


MAX_GAPS: Final = 4096
"""Most missing report numbers :class:`ReportSequences` keeps per task attempt and partition."""


class ReportSequences:
    """Which progress reports a reader counted already, by ``(attempt, seq)`` per partition (no I/O).

    A task attempt numbers its reports of a partition 1, 2, ...; a report written again after its
    write timed out keeps its number, and may arrive after newer ones. Per attempt and partition
    this keeps the highest number seen and the numbers below it not seen yet (at most
    :data:`MAX_GAPS`): a report is new when its number is above the highest, or one of those.
    A report without an attempt (written before reports were numbered) is always new.
    """

    def __init__(self) -> None:
        self._seen: dict[tuple[str, int, str], tuple[int, set[int]]] = {}

    def first_time(self, r: PartitionReport) -> bool:
        """Tell whether ``r`` is counted for the first time (and note it)."""
        if r.attempt is None or r.seq <= 0:
            return True
        key = (r.topic, r.partition, r.attempt)
        top, missing = self._seen.get(key, (0, set()))
        if r.seq > top:
            missing.update(range(max(top + 1, r.seq - MAX_GAPS), r.seq))
            self._seen[key] = (r.seq, missing)
            return True
        if r.seq in missing:
            missing.discard(r.seq)
            return True
        return False


def newest_segments(kept: Sequence[CopiedSegment], new: Sequence[CopiedSegment]) -> tuple[CopiedSegment, ...]:
    """Append ``new`` runs to ``kept`` (merging one that continues the last); keep the newest :data:`SEGMENTS_KEPT`."""
    out = list(kept)
    for s in new:
        if out:
            last = out[-1]
            if s.upstream_start == last.upstream_end and s.downstream_start == last.downstream_start + last.count:
                out[-1] = CopiedSegment(last.upstream_start, last.downstream_start, last.count + s.count)
                continue
        out.append(s)
    return tuple(out[-SEGMENTS_KEPT:])


__all__ = [
    "FORMAT_VERSION",
    "MAX_GAPS",
    "SCHEMA_FIELDS",
    "SEGMENTS_KEPT",
    "PartitionReport",
    "ReportSequences",
    "decode_report",
    "encode_report",
    "newest_segments",
    "report_key",
]
