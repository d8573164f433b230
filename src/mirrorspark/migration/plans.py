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

    Parameters
    ----------
    offsets:
        ``{group: {(topic, partition): committed offset}}`` (next offset to read).
    with_group:
        ``False``: ``topic,partition,offset`` lines, the format for exactly one
        group given with ``--group G``; ``True``: ``group,topic,partition,offset``
        lines, for any number of groups (``--group G1 --group G2`` or ``--all-groups``).

    Returns
    -------
    str
        No header, ``\n`` line ends, fields quoted only when needed (a group id
        with a comma or quote), sorted by group, topic and partition; ``""`` when
        there is nothing to reset.

    Raises
    ------
    ValueError
        If ``with_group`` is false and ``offsets`` holds more than one group.
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

    Attributes
    ----------
    group, topic, partition:
        The group and the **upstream** topic-partition it committed on the source.
    source_offset:
        The group's committed offset on the source (next offset to read there).
    target_topic:
        The topic the group reads on the target (:func:`rename_topic`).
    target_offset:
        Where the group resumes on the target (next offset to read), ``None``
        when the offset cannot be translated (yet).
    target_end_offset:
        The target partition's end offset, ``None`` if it does not exist.
    rereads:
        Records a consumer starting at ``target_offset`` reads again (copies of
        records the group consumed on the source), ``None`` when unknown. Exact when
        the partition has no compaction gaps or transaction markers; an upper
        bound otherwise.
    basis:
        ``"checkpoint"`` (the latest checkpoint is for exactly this committed
        offset: the running flow may have translated it exactly), ``"offset-syncs"``
        (translated live by MM2's rule) or ``"none"``.
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
    """What :meth:`ConsumerMigration.failover` did, or would do with ``dry_run``.

    Attributes
    ----------
    group, source, target:
        The group and the flow ``source->target``.
    offsets:
        One entry per partition, sorted by topic and partition.
    applied:
        Whether the offsets were committed (``False`` for a dry run).
    source_members:
        Active members of the group on the source, ``None`` if it was not reachable.
    """

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
