"""What a cluster's ``__consumer_offsets`` says of its groups, as read so far: committed offsets and members (no I/O).

Fed the decoded records in log order (:mod:`mirrorspark.mm2.consumer_offsets`); a tombstone removes what it
names. Beyond MM2: KIP-1292's follower of the source's commits, and the target's view group offset sync
checks before it writes.
"""

from __future__ import annotations

from dataclasses import dataclass

from mirrorspark.mm2.consumer_offsets import GroupMetadata, OffsetCommit

PartitionKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Committed:
    """A group's committed offset of one partition: the next offset to read, its metadata and commit time (epoch ms)."""

    offset: int
    metadata: str
    commit_timestamp_ms: int


class FollowedGroups:
    """Every group's committed offsets and members, as of the records applied so far; not thread-safe."""

    def __init__(self) -> None:
        self._offsets: dict[str, dict[PartitionKey, Committed]] = {}
        self._members: dict[str, tuple[str, ...]] = {}

    def apply(self, record: OffsetCommit | GroupMetadata) -> Committed | None:
        """Apply one decoded record; return the commit as kept when it is one (not a tombstone), else ``None``."""
        if isinstance(record, GroupMetadata):
            if record.protocol_type is None:
                self._members.pop(record.group, None)
            else:
                self._members[record.group] = record.members
            return None
        key = (record.topic, record.partition)
        if record.offset is None:
            group = self._offsets.get(record.group)
            if group is not None:
                group.pop(key, None)
                if not group:
                    del self._offsets[record.group]
            return None
        # librdkafka stores its C string's NUL with the metadata; its consumers' committed() cuts it, and so
        # do checkpoints, so a followed commit carries what MM2's cycles read
        kept = Committed(record.offset, record.metadata.removesuffix("\x00"), record.commit_timestamp_ms)
        self._offsets.setdefault(record.group, {})[key] = kept
        return kept

    def committed(self, group: str) -> dict[PartitionKey, Committed]:
        """Return the group's committed offsets by ``(topic, partition)`` (a copy; ``{}``: none)."""
        return dict(self._offsets.get(group, {}))

    def members(self, group: str) -> tuple[str, ...] | None:
        """Return the member ids of the group's newest metadata record; ``None`` when none was read."""
        return self._members.get(group)

    def groups(self) -> list[str]:
        """Return the groups with committed offsets, sorted."""
        return sorted(self._offsets)


__all__ = ["Committed", "FollowedGroups", "PartitionKey"]
