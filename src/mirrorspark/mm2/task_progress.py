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
    return PartitionReport(
        flow=flow,
        topic=topic,
        partition=partition,
        segments=tuple(segments),
        **{f: v[f] for f in _INT_FIELDS},
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


__all__ = ["SEGMENTS_KEPT", "PartitionReport", "decode_report", "encode_report", "newest_segments", "report_key"]
