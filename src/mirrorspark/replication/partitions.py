"""A flow's source partitions on the driver: copy progress per partition, and the idle watch that wakes caught-up ones.

What :class:`~mirrorspark.replication.flow.Flow` keeps per replicated source partition
(:class:`PartitionProgress`: position, end offset, counts, offset-sync state) and the one
long-polling consumer per flow that notices records arriving on partitions that were caught
up (:class:`IdleWatch`), so that they are not listed at every plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from confluent_kafka import TopicPartition

from mirrorspark.client.context import FlowContext
from mirrorspark.kafka.admin import (
    PartitionKey,
)
from mirrorspark.mm2.offset_syncs import CopiedSegment, SyncState


@dataclass
class PartitionProgress:
    """Driver-side state of one replicated source partition.

    Attributes
    ----------
    position:
        Next upstream offset to copy (every record before it is copied and committed).
    end_offset:
        Source end offset seen at the last plan (high watermark), ``-1`` before.
    sync_state:
        Offset-sync emission state (MM2 ``PartitionState``).
    records, value_bytes, key_bytes:
        Totals copied by this process.
    latency_ms_sum, latency_ms_max:
        Replication latency totals of the sampled copied records (ms).
    latency_samples:
        Records ``latency_ms_sum`` adds up (the data path samples every 16th).
    last_segment:
        The newest contiguous copied run, for exact translation later.
    dropped:
        Records read and dropped by a transform, by this process (never copied; their offsets are
        before ``position``).
    """

    position: int
    end_offset: int = -1
    sync_state: SyncState = field(default_factory=SyncState)
    records: int = 0
    value_bytes: int = 0
    key_bytes: int = 0
    latency_ms_sum: int = 0
    latency_ms_max: int = 0
    latency_samples: int = 0
    last_segment: CopiedSegment | None = None
    dropped: int = 0

    @property
    def lag(self) -> int:
        """Records on the source not yet copied (``end_offset - position``, ≥ 0)."""
        return max(0, self.end_offset - self.position) if self.end_offset >= 0 else 0


class IdleWatch:
    """Long-polls the source partitions a flow has caught up with: a batch's plan lists end offsets of busy ones only.

    A caught-up ("cold") partition is assigned to one driver-side consumer at the flow's
    position; a fetch returning any record there means new data: the partition turns "hot"
    again (it is unassigned, so busy partitions are never read twice) and its end offset is
    listed at every plan until it has caught up once more. Without this, every plan listed
    the end offsets of every replicated partition: 176 ms of CPU per call at 4 000 partitions,
    0.4 cores when idle. With it, an idle partition costs a share of one fetch request per
    ``fetch.wait.max.ms`` (500 ms), like MM2's own consumer. :class:`Flow` still lists every
    partition every :data:`~mirrorspark.replication.flow.FULL_REFRESH_MIN_S` (or more), which covers what a fetch never
    shows (e.g. aborted transactions under ``read_committed``).

    Parameters
    ----------
    context:
        The flow's context: the consumer has the flow's source consumer settings.
    client_role:
        The consumer's role in its ``client.id``.
    isolation_level:
        The data path's ``isolation.level`` (the flow plans and copies with the same one).
    """

    def __init__(
        self,
        context: FlowContext,
        *,
        client_role: str = "idle-watch-consumer",
        isolation_level: str = "read_uncommitted",
    ) -> None:
        self._consumer = context.consumer(
            "source",
            client_role,
            overrides={
                "enable.partition.eof": False,
                "fetch.message.max.bytes": 1024,  # a wake-up needs one record, not a batch's worth
                "queued.max.messages.kbytes": 1024,
                "log_level": 3,
                "isolation.level": isolation_level,
            },
        )
        self.watched: set[PartitionKey] = set()

    def watch(self, positions: Mapping[PartitionKey, int]) -> None:
        """Start watching partitions from their positions (next upstream offset to copy)."""
        new = {k: v for k, v in positions.items() if k not in self.watched}
        if new:
            self._consumer.incremental_assign([TopicPartition(t, p, off) for (t, p), off in new.items()])
            self.watched.update(new)

    def unwatch(self, keys: Iterable[PartitionKey]) -> None:
        """Stop watching partitions (no-op for those not watched)."""
        gone = [k for k in keys if k in self.watched]
        if gone:
            self._consumer.incremental_unassign([TopicPartition(t, p) for t, p in gone])
            self.watched.difference_update(gone)

    def woken(self) -> set[PartitionKey]:
        """Watched partitions that received a record since the last call; they stop being watched."""
        if not self.watched:
            return set()
        out: set[PartitionKey] = set()
        for m in self._consumer.consume(num_messages=10000, timeout=0):
            if m.error() is None:
                key = (m.topic(), m.partition())
                if key in self.watched:
                    out.add(key)
        self.unwatch(out)
        return out

    def close(self) -> None:
        """Release the consumer."""
        self._consumer.close()
        self.watched.clear()


__all__ = ["IdleWatch", "PartitionProgress"]
