"""What the consumer migration tools report: translations, failover plans, reset plans."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass

from mirrorspark.client.failover import FailoverOffset
from mirrorspark.mm2.checkpoint_rules import TopicPartitionKey


def reset_plan_csv(offsets: Mapping[str, Mapping[TopicPartitionKey, int]], *, with_group: bool) -> str:
    r"""Write offsets as a reset plan for ``kafka-consumer-groups --reset-offsets --from-file`` (ConsumerGroupCommand).

    ``with_group`` adds the group column (any number of groups); without it ``offsets`` must hold one group
    (else ValueError). No header, ``\n`` line ends, sorted; ``""`` when there is nothing to reset.
    """
    if not with_group and len(offsets) > 1:
        raise ValueError(f"the 3-column reset plan holds one group, got {len(offsets)}: use with_group=True")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for group in sorted(offsets):
        for (topic, partition), offset in sorted(offsets[group].items()):
            writer.writerow([group, topic, partition, offset] if with_group else [topic, partition, offset])
    return buf.getvalue()


@dataclass(frozen=True)
class OffsetTranslation:
    """One committed offset of a source group, translated to the target now (``mirrorspark offsets translate``).

    Offsets are next offsets to read; ``target_offset`` ``None`` = not translatable (yet); ``rereads`` is
    exact without compaction gaps or transaction markers, else an upper bound; ``basis`` is
    ``"checkpoint"``, ``"offset-syncs"`` or ``"none"``.
    """

    group: str
    topic: str
    partition: int
    source_offset: int
    target_topic: str
    target_offset: int | None
    target_end_offset: int | None
    rereads: int | None
    basis: str


@dataclass(frozen=True)
class FailoverPlan:
    """What :meth:`ConsumerMigration.failover` did (or would, with ``dry_run``); ``source_members`` None: unknown."""

    group: str
    source: str
    target: str
    offsets: tuple[FailoverOffset, ...]
    applied: bool
    source_members: int | None

    @property
    def total_rereads(self) -> int:
        """Sum of the known re-read counts."""
        return sum(o.rereads for o in self.offsets if o.rereads is not None)

    @property
    def consumed_since(self) -> int:
        """Records the group consumed on the source after its checkpoints (0 when the source was not read)."""
        return sum(o.consumed_since for o in self.offsets)

    @property
    def unknown_rereads(self) -> int:
        """Partitions whose re-read count is unknown."""
        return sum(1 for o in self.offsets if o.rereads is None)


__all__ = ["FailoverOffset", "FailoverPlan", "OffsetTranslation", "reset_plan_csv"]
