"""Altering and resetting a flow's source offsets (Kafka Connect's KIP-875 ``alterOffsets``/``resetOffsets``).

The pure half of ``mirrorspark offsets source list|alter|reset``: which records go to ``mm2-offsets.<source>.internal``
and which offset syncs go with them (:mod:`mirrorspark.migration.source_offset_tools` does the I/O).

Positions: a **position** is the next source offset the flow copies; Connect stores ``position - 1`` (the **last
copied** record, ``{"offset":N}``, mm2.md §5) and MM2 seeks to ``stored + 1``. MM2 3.7+ (KAFKA-13988) reads a
negative stored offset as *no offset*, so position 0 is written as a tombstone ("start at ``auto.offset.reset``"),
allowed only when that is ``earliest``.

Offset syncs after an alter: the next run copies the new position ``p`` to the remote partition's end ``E``, so the
alter writes ``OffsetSync(u, E)``, ``u`` the first source record at or after ``p``: the sync the next run's first
record would write. A *rewind* (``u`` below the newest sync) makes the ``OffsetSyncStore`` drop older syncs; a
*skip* appends it. No sync is written when it could be untrue (the topic is transformed, no record at or after
``p`` yet, no remote topic, or no offset syncs): the next run writes it then.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, Literal

from mirrorspark.errors import SourceOffsetsRequestError
from mirrorspark.mm2.connect_offsets import source_offset_key, source_offset_value
from mirrorspark.mm2.records import MIRROR_SOURCE_CONNECTOR, OffsetSync

PartitionKey = tuple[str, int]
"""``(topic, partition)`` of a source partition."""

Change = Literal["rewind", "skip", "set", "unchanged", "reset", "none"]
"""What a planned record does to a partition's position (:attr:`OffsetChange.change`)."""

ALTER_NOTE: Final = (
    "offset syncs: a rewind or skip starts a new segment of copies; the next run copies the new position to "
    "the remote topic's end, and MM2's offset-sync store drops the older syncs of a rewound partition, so "
    "consumer groups behind the new position get no checkpoints until they pass it; checkpoints already "
    "written stay (a group's checkpoint only moves back when its own offset does)"
)
"""The note printed after an alter (docs/migration.md, *Source offsets of a flow*)."""


@dataclass(frozen=True, slots=True)
class PartitionFacts:
    """What is known of one source partition of a flow when planning; ``stored``/``remote_end`` ``None`` if absent."""

    topic: str
    partition: int
    stored: int | None
    start: int
    end: int
    remote_topic: str
    remote_end: int | None = None
    transformed: bool = False

    @property
    def position(self) -> int | None:
        """The next source offset the flow copies (``stored + 1``), ``None`` if none is stored."""
        return None if self.stored is None else self.stored + 1

    @property
    def lag(self) -> int | None:
        """Records not copied yet, ``end - position`` (never negative), or ``None`` if none is stored."""
        pos = self.position
        return None if pos is None else max(0, self.end - pos)


@dataclass(frozen=True, slots=True)
class OffsetChange:
    """One planned record of ``mm2-offsets.<source>.internal`` and its offset sync, if any (``None`` = tombstone)."""

    topic: str
    partition: int
    old_position: int | None
    new_position: int | None
    key: bytes
    value: bytes | None
    sync: OffsetSync | None = None

    @property
    def stored_offset(self) -> int | None:
        """The Connect offset written (``new_position - 1``), ``None`` for a tombstone."""
        return None if self.value is None else (self.new_position or 0) - 1

    @property
    def change(self) -> Change:
        """What the record does to the position: ``rewind``, ``skip``, ``set``, ``unchanged``, ``reset`` or ``none``."""
        old, new = self.old_position, self.new_position
        if self.value is None and new is None:
            return "none" if old is None else "reset"
        if old is None:
            return "set"
        if new is None or new == old:
            return "unchanged" if new == old else "reset"
        return "rewind" if new < old else "skip"


def running_connect_status(
    key: bytes | None, value: bytes | None, connector_name: str = MIRROR_SOURCE_CONNECTOR
) -> str | None:
    """Decode a record of Connect's status topic (``KafkaStatusBackingStore``): who runs the connector, or ``None``.

    ``"<key> on worker <worker_id>"`` for a ``RUNNING`` connector or task; graceful stops write ``UNASSIGNED``.
    """
    if key is None or value is None:
        return None
    name = key.decode("utf-8", "replace")
    if name != f"status-connector-{connector_name}" and not name.startswith(f"status-task-{connector_name}-"):
        return None
    try:
        status = json.loads(value.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(status, dict) or status.get("state") != "RUNNING":
        return None
    return f"{name} on worker {status.get('worker_id')}"


def parse_datetime_ms(text: str) -> int:
    """Parse ``--to-datetime`` (ISO 8601, no zone = UTC) to epoch ms; raises SourceOffsetsRequestError otherwise."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError as e:
        raise SourceOffsetsRequestError(
            f"--to-datetime {text!r} is not an ISO 8601 date-time: write e.g. 2026-11-25T10:00:00Z "
            "or 2026-11-25T11:00:00+01:00 (without a zone, UTC)"
        ) from e
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


def check_position(facts: PartitionFacts, position: int, *, auto_offset_reset: str) -> None:
    """Check a requested position against the source partition; raises SourceOffsetsRequestError.

    Refused: a position outside ``[start, end]``, or 0 while ``auto.offset.reset`` is not ``earliest`` (MM2 cannot
    store it, module notes).
    """
    where = f"{facts.topic}-{facts.partition}"
    if not facts.start <= position <= facts.end:
        raise SourceOffsetsRequestError(
            f"offset {position} is outside source partition {where} (log start {facts.start}, end {facts.end}): "
            f"give an offset from {facts.start} to {facts.end}, or --to-earliest / --to-latest"
        )
    if position == 0 and auto_offset_reset != "earliest":
        raise SourceOffsetsRequestError(
            f"position 0 of {where} cannot be stored for MM2 (it reads offset -1 as none stored and would follow "
            f"auto.offset.reset={auto_offset_reset}): set the source consumer's auto.offset.reset=earliest, "
            "or use 'offsets source reset'"
        )


def plan_alter(
    source_alias: str,
    facts: Sequence[PartitionFacts],
    positions: Mapping[PartitionKey, int],
    *,
    auto_offset_reset: str = "earliest",
    first_records: Mapping[PartitionKey, int] | None = None,
    emit_offset_syncs: bool = True,
    connector_name: str = MIRROR_SOURCE_CONNECTOR,
) -> list[OffsetChange]:
    """Plan an alter (KIP-875 ``PATCH /connectors/{name}/offsets``): one record per partition.

    Each is ``{"offset": position-1}``, or a tombstone for position 0; raises SourceOffsetsRequestError if a
    position fails :func:`check_position` or a partition has none.
    """
    firsts = first_records or {}
    out: list[OffsetChange] = []
    for f in facts:
        pk = (f.topic, f.partition)
        if pk not in positions:
            raise SourceOffsetsRequestError(f"no new position for {f.topic}-{f.partition}")
        pos = positions[pk]
        check_position(f, pos, auto_offset_reset=auto_offset_reset)
        key = source_offset_key(source_alias, f.topic, f.partition, connector_name)
        value = None if pos == 0 else source_offset_value(pos - 1)
        sync = None
        first = firsts.get(pk)
        if (
            emit_offset_syncs
            and pos != f.position
            and not f.transformed
            and f.remote_end is not None
            and first is not None
            and pos <= first < f.end
        ):
            sync = OffsetSync(f.topic, f.partition, first, f.remote_end)
        out.append(OffsetChange(f.topic, f.partition, f.position, pos, key, value, sync))
    return out


def plan_reset(
    source_alias: str, facts: Sequence[PartitionFacts], *, connector_name: str = MIRROR_SOURCE_CONNECTOR
) -> list[OffsetChange]:
    """Plan a reset (KIP-875 ``DELETE /connectors/{name}/offsets``): a tombstone per partition, stored offset or not.

    No offset sync: the next run starts at ``auto.offset.reset`` and its first copied record writes it.
    """
    return [
        OffsetChange(
            f.topic,
            f.partition,
            f.position,
            None,
            source_offset_key(source_alias, f.topic, f.partition, connector_name),
            None,
        )
        for f in facts
    ]


__all__ = [
    "ALTER_NOTE",
    "Change",
    "OffsetChange",
    "PartitionFacts",
    "PartitionKey",
    "check_position",
    "parse_datetime_ms",
    "plan_alter",
    "plan_reset",
    "running_connect_status",
]
