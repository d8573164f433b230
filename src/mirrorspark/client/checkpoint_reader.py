"""Reading MM2's checkpoints and offset syncs back (MM2 ``MirrorClient``)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from mirrorspark.config.internal_topics import InternalTopics
from mirrorspark.config.model import ClientSettings, FlowConfig, MirrorConfig
from mirrorspark.errors import CorruptRecordError
from mirrorspark.kafka.factory import ClientFactory
from mirrorspark.kafka.reader import TopicReader, read_topic
from mirrorspark.mm2.records import Checkpoint, OffsetSync
from mirrorspark.mm2.sync_store import OffsetSyncStore

log = logging.getLogger(__name__)


def read_checkpoints(
    consumer_settings: ClientSettings,
    admin_settings: ClientSettings,
    alias: str,
    topic: str,
    *,
    client_id: str,
    timeout_s: float = 30.0,
    clients: ClientFactory | None = None,
) -> list[Checkpoint]:
    """Read a checkpoints topic from the beginning to its current end (MM2 ``MirrorClient.remoteConsumerOffsets``).

    Partition 0 only, as MM2; undecodable records are skipped with a warning; a missing topic reads as empty.

    Returns
    -------
    list[Checkpoint]
        In topic order; the last one per (group, topic, partition) is the current one.

    Raises
    ------
    ClusterError
        The end is not reached within ``timeout_s`` (seconds, default 30): MM2 returns what it read, but a
        partial answer could move a group backwards; ClusterUnreachableError if the cluster does not answer.
    """
    out: list[Checkpoint] = []

    def on_record(key: bytes | None, value: bytes | None) -> None:
        try:
            out.append(Checkpoint.decode(key, value))
        except CorruptRecordError as e:
            log.warning("skipping a corrupt checkpoint in %s on %s: %s", topic, alias, e)

    read_topic(
        consumer_settings,
        admin_settings,
        alias,
        topic,
        on_record,
        client_id=client_id,
        timeout_s=timeout_s,
        clients=clients,
    )
    return out


class OffsetSyncReader:
    """Keeps an :class:`OffsetSyncStore` up to date from a flow's offset-syncs topic (corrupt records skipped, as MM2).

    ``read_to_end_required`` is MM2's ``initializationMustReadToEnd``.
    """

    def __init__(
        self,
        config: MirrorConfig,
        flow: FlowConfig,
        topics: InternalTopics,
        *,
        read_to_end_required: bool,
        client_id: str,
        clients: ClientFactory | None = None,
    ) -> None:
        side = "source" if flow.offset_syncs_topic_location == "source" else "target"
        alias, topic = (flow.source if side == "source" else flow.target), topics.offset_syncs
        # MM2's offsetSyncsTopicConsumerConfig / offsetSyncsTopicAdminConfig: the flow's clients of that side
        consumer, admin = getattr(flow, f"{side}_consumer"), getattr(flow, f"{side}_admin")
        self.store = OffsetSyncStore(read_to_end_required=read_to_end_required)
        self._reader = TopicReader(consumer, admin, alias, topic, client_id=client_id, clients=clients)

    def _on_record(self, key: bytes | None, value: bytes | None) -> None:
        try:
            self.store.update(OffsetSync.decode(key, value))
        except CorruptRecordError as e:
            log.warning("skipping a corrupt offset sync in %s: %s", self._reader.topic, e)

    def load(self, *, cancelled: Callable[[], bool] | None = None) -> bool:
        """Read to the end, then allow translation (MM2: none before the initial read-to-end).

        Return ``False`` when ``cancelled`` (checked between polls) before the end: the store stays uninitialized.
        """
        self._reader.read(self._on_record, timeout_s=60, cancelled=cancelled)
        if cancelled is not None and cancelled():
            return False
        self.store.mark_initialized()
        return True

    def poll(self) -> int:
        """Read syncs written since the last call; return how many."""
        return self._reader.read(self._on_record)

    def close(self) -> None:
        """Close the underlying consumer."""
        self._reader.close()


__all__ = ["OffsetSyncReader", "read_checkpoints"]
