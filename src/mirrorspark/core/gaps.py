"""Gaps: source records a flow could not copy, found and described exactly (no I/O).

MM2 has no counterpart: a ``MirrorSourceTask`` whose consumer finds its position out of range
silently follows ``auto.offset.reset`` (``earliest`` by default), so records deleted by retention or
``kafka-delete-records`` before they were copied, and the first records of a topic deleted and
re-created, are lost without a word. mirrorspark checks every position it resumes from against the
partition's log start and end offsets and its topic id, and records each loss as a
:class:`GapEvent`:

* ``"deleted"`` — the next offset to copy is below the log start: the records
  ``[position, log start)`` were deleted from the source (retention, delete-records) before they
  were copied. The flow resumes at the log start (MM2 with ``auto.offset.reset=earliest``). A
  topic deleted from the source is the same reason with ``old_topic_id`` set: its records from
  ``position`` on were never copied (``[position, end offset last listed)`` known; later ones, if
  any, went with it).
* ``"truncated"`` — the next offset to copy is above the log end (the source log was truncated,
  e.g. after an unclean leader election): the copies of ``[log end, position)`` on the target have
  no counterpart on the source any more, and new source records will reuse those offsets. The flow
  resumes at the log end, so none of the new records is skipped.
* ``"recreated"`` — the topic id changed: the topic was deleted and created again. The old topic's
  records from ``position`` on are lost (``[position, old end)`` known, the old end being what the
  flow last listed; records it received after that listing went with it); the flow resumes at the
  new topic's beginning. The topic may have been re-created more than once while the flow could not
  look (stopped, or cut off from the target): every record of an incarnation between the two ids,
  created and deleted again unseen, is lost too, and named by the same gap.

Gap events are kept in a compacted topic on the target, ``mm2-gaps<isep><source><isep>internal``
(``InternalTopics.gaps``), with the topic ids last seen per replicated topic, so that both survive
restarts (:func:`encode_gap`, :func:`encode_topic_id`, :func:`decode_ledger_record`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final, Literal

from mirrorspark.errors import CorruptRecordError

GapReason = Literal["deleted", "truncated", "recreated"]
"""Why records were lost: deleted before copied, source log truncated, topic re-created."""

GAP_REASONS: Final[tuple[GapReason, ...]] = ("deleted", "truncated", "recreated")

GAPS_PREFIX: Final = "mm2-gaps"
"""Prefix of mirrorspark's gap ledger topic (gap events and topic ids of flows from one source)."""

ON_GAP_CHOICES: Final = ("continue", "stop")
"""Values of ``mirrorspark.on.gap``."""


@dataclass(frozen=True)
class GapEvent:
    """Source records of one partition a flow lost (``at`` in epoch ms).

    ``first_lost``..``last_lost`` are inclusive upstream offsets; ``None`` where not known (a deleted
    topic's position or its end). Topic ids are base64, as Kafka prints them.
    """

    flow: str
    topic: str
    partition: int
    reason: GapReason
    first_lost: int | None
    last_lost: int | None
    at: int
    old_topic_id: str | None = None
    new_topic_id: str | None = None

    @property
    def lost(self) -> int:
        """Number of offsets lost (0 when unknown)."""
        if self.first_lost is None or self.last_lost is None:
            return 0
        return max(0, self.last_lost - self.first_lost + 1)

    def describe(self) -> str:
        """One line for logs and errors: flow, partition, reason and exact range."""
        where = f"flow {self.flow}: {self.topic}-{self.partition}"
        span = (
            f"offsets {self.first_lost}..{self.last_lost} ({self.lost} records)"
            if self.first_lost is not None and self.last_lost is not None
            else "no known offsets"
        )
        if self.old_topic_id is not None:  # a whole incarnation of the topic went: open-ended
            lost = (
                "records from an unknown offset on"
                if self.first_lost is None
                else f"records from offset {self.first_lost} on"
            )
            known = f" ({span} known)" if self.last_lost is not None else " (none known)"
            if self.reason == "deleted":
                gone = f"the topic (id {self.old_topic_id}) was deleted from the source"
                return f"{where}: {gone}; its {lost}{known} were never copied"
            return (
                f"{where}: the topic was deleted and re-created (topic id {self.old_topic_id} -> "
                f"{self.new_topic_id}); the old topic's {lost}{known} were never copied, nor the records "
                "of any incarnation in between (created and deleted again before the flow saw it)"
            )
        if self.reason == "deleted":
            return f"{where}: {span} were deleted from the source before they were copied"
        return f"{where}: the source log was truncated; the copies of {span} no longer match the source"


@dataclass(frozen=True)
class Resume:
    """Where to resume a partition, and the gap found (if any) — the result of :func:`check_position`."""

    position: int
    gap: GapEvent | None = None


def check_position(
    flow: str,
    topic: str,
    partition: int,
    position: int,
    log_start: int,
    log_end: int,
    *,
    at: int,
    known_topic_id: str | None = None,
    topic_id: str | None = None,
    old_end: int | None = None,
) -> Resume:
    """Decide where to resume a partition whose next offset to copy is ``position`` (``at`` in epoch ms).

    Returns ``position`` unchanged while ``log_start <= position <= log_end`` and the topic id (``None`` =
    unknown, not compared) is the same; else the new topic's ``log_start`` (re-created), the ``log_start``
    (records deleted) or the ``log_end`` (truncated), with the gap. Never resumes past a record still on
    the source. Raises ValueError for ``log_start > log_end`` or a negative offset.
    """
    if log_start < 0 or log_end < log_start:
        raise ValueError(f"invalid log range [{log_start}, {log_end}) of {topic}-{partition}")
    if known_topic_id is not None and topic_id is not None and known_topic_id != topic_id:
        return Resume(log_start, recreated_gap(flow, topic, partition, position, old_end, known_topic_id, topic_id, at))
    if position < log_start:
        return Resume(log_start, GapEvent(flow, topic, partition, "deleted", position, log_start - 1, at))
    if position > log_end:
        return Resume(log_end, GapEvent(flow, topic, partition, "truncated", log_end, position - 1, at))
    return Resume(position)


def recreated_gap(
    flow: str,
    topic: str,
    partition: int,
    position: int | None,
    old_end: int | None,
    old_topic_id: str,
    new_topic_id: str,
    at: int,
) -> GapEvent:
    """Build the gap of a partition whose topic was deleted and re-created (``None`` arguments = unknown)."""
    known = position is not None and old_end is not None and old_end > position
    return GapEvent(
        flow,
        topic,
        partition,
        "recreated",
        position,
        old_end - 1 if known and old_end is not None else None,
        at,
        old_topic_id,
        new_topic_id,
    )


# --------------------------------------------------------------------------- ledger records


@dataclass(frozen=True)
class KnownTopicId:
    """The topic id a flow last saw for a source topic (a ledger record)."""

    flow: str
    topic: str
    topic_id: str


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, sort_keys=True).encode()


def encode_gap(event: GapEvent) -> tuple[bytes, bytes]:
    """Key and value bytes of a gap event's ledger record (compact JSON, UTF-8).

    The key is unique per event (``{"at","flow","kind":"gap","partition","reason","topic"}``), so
    compaction keeps every event; the value holds every field of :class:`GapEvent`.
    """
    key = _dumps(
        {
            "kind": "gap",
            "flow": event.flow,
            "topic": event.topic,
            "partition": event.partition,
            "reason": event.reason,
            "at": event.at,
        }
    )
    value = _dumps(
        {
            "flow": event.flow,
            "topic": event.topic,
            "partition": event.partition,
            "reason": event.reason,
            "first_lost": event.first_lost,
            "last_lost": event.last_lost,
            "at": event.at,
            "old_topic_id": event.old_topic_id,
            "new_topic_id": event.new_topic_id,
        }
    )
    return key, value


def encode_topic_id(flow: str, topic: str, topic_id: str) -> tuple[bytes, bytes]:
    """Key and value bytes of a known-topic-id ledger record (the latest per flow and topic wins)."""
    return _dumps({"kind": "topic_id", "flow": flow, "topic": topic}), _dumps({"topic_id": topic_id})


def _corrupt(what: str, data: bytes | None) -> CorruptRecordError:
    return CorruptRecordError(
        f"cannot decode a gap ledger record {what} {bytes(data or b'')[:200]!r}; check that the topic is "
        "mirrorspark's mm2-gaps topic"
    )


def _json(data: bytes, what: str) -> object:
    try:
        return json.loads(bytes(data).decode("utf-8"))
    except (ValueError, RecursionError) as e:
        raise _corrupt(what, data) from e


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _opt_int(v: object) -> bool:
    return v is None or (_is_int(v) and v >= 0)  # type: ignore[operator]


def _opt_str(v: object) -> bool:
    return v is None or isinstance(v, str)


def decode_ledger_record(key: bytes | None, value: bytes | None) -> GapEvent | KnownTopicId | None:
    """Decode a record of the gap ledger topic; ``None`` for a tombstone or a kind this version does not know.

    Raises CorruptRecordError if the key or value is not the JSON this module writes or holds values no
    cluster can hold.
    """
    if key is None:
        raise _corrupt("key", key)
    k = _json(key, "key")
    if not isinstance(k, dict) or not isinstance(k.get("kind"), str):
        raise _corrupt("key", key)
    if value is None:
        return None
    v = _json(value, "value")
    if not isinstance(v, dict):
        raise _corrupt("value", value)
    if k["kind"] == "topic_id":
        if not (
            isinstance(k.get("flow"), str) and isinstance(k.get("topic"), str) and isinstance(v.get("topic_id"), str)
        ):
            raise _corrupt("value", value)
        return KnownTopicId(k["flow"], k["topic"], v["topic_id"])
    if k["kind"] != "gap":
        return None
    flow, topic, partition, reason = v.get("flow"), v.get("topic"), v.get("partition"), v.get("reason")
    first, last, at = v.get("first_lost"), v.get("last_lost"), v.get("at")
    old_id, new_id = v.get("old_topic_id"), v.get("new_topic_id")
    if not (
        isinstance(flow, str)
        and isinstance(topic, str)
        and _is_int(partition)
        and 0 <= partition < 2**31  # type: ignore[operator]
        and reason in GAP_REASONS
        and _opt_int(first)
        and _opt_int(last)
        and (last is None or (first is not None and first <= last))
        and (last is not None or first is None or old_id is not None)  # open-ended: a whole incarnation
        and _is_int(at)
        and _opt_str(old_id)
        and _opt_str(new_id)
    ):
        raise _corrupt("value", value)
    return GapEvent(flow, topic, partition, reason, first, last, at, old_id, new_id)  # type: ignore[arg-type]


__all__ = [
    "GAPS_PREFIX",
    "GAP_REASONS",
    "ON_GAP_CHOICES",
    "GapEvent",
    "GapReason",
    "KnownTopicId",
    "Resume",
    "check_position",
    "decode_ledger_record",
    "encode_gap",
    "encode_topic_id",
    "recreated_gap",
]
