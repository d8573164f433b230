"""Reading the source offsets MM2's ``MirrorSourceTask`` commits to ``mm2-offsets.<source>.internal``."""

from __future__ import annotations

import logging
from typing import Any

from mirrorspark.config.model import ClientSettings
from mirrorspark.errors import CorruptRecordError
from mirrorspark.kafka.clients import ClientFactory, PartitionKey
from mirrorspark.kafka.reader import ALL_PARTITIONS, TopicReader
from mirrorspark.mm2.connect_offsets import decode_source_offset

log = logging.getLogger(__name__)


def read_source_offsets(
    settings: ClientSettings,
    admin_settings: ClientSettings,
    alias: str,
    topic: str,
    source_alias: str,
    *,
    client_id: str,
    timeout_s: float = 60.0,
    clients: ClientFactory | None = None,
) -> dict[PartitionKey, int]:
    """Read MirrorSourceConnector offsets for one source cluster from a Connect offsets topic.

    Reads every partition of ``topic`` from the beginning to its end offset
    (captured first, :class:`~mirrorspark.kafka.reader.TopicReader`); the last record per
    key wins and a tombstone deletes.

    Parameters
    ----------
    settings, admin_settings:
        Consumer and admin client settings of the cluster holding the topic.
    alias:
        That cluster's alias (for messages).
    topic:
        The offsets topic, e.g. ``mm2-offsets.A.internal``.
    source_alias:
        Keep only keys whose ``cluster`` is this alias.
    client_id:
        The consumer's ``client.id``.
    timeout_s:
        Seconds to reach the end offsets (default 60).
    clients:
        Where clients come from (default: real confluent-kafka clients).

    Returns
    -------
    dict[PartitionKey, int]
        ``{(topic, partition): offset of the last replicated upstream record}``.

    Raises
    ------
    CorruptRecordError
        Never: corrupt records are skipped with a warning (as Connect's reader logs and skips).
    ClusterError
        The topic could not be read to its end within ``timeout_s``.
    """
    out: dict[PartitionKey, int] = {}

    def on_message(m: Any) -> None:
        try:
            decoded = decode_source_offset(m.key() or b"", m.value())
        except CorruptRecordError as e:
            log.warning("skipping a corrupt record in %s-%d@%d: %s", topic, m.partition(), m.offset(), e)
            return
        if decoded is None:
            return
        cluster, t, p, off = decoded
        if cluster != source_alias:
            return
        if off is None:
            out.pop((t, p), None)
        else:
            out[(t, p)] = off

    reader = TopicReader(
        settings,
        admin_settings,
        alias,
        topic,
        client_id=client_id,
        partition=ALL_PARTITIONS,
        clients=clients,
        admin_client_id=client_id.rsplit("|", 1)[0] + "|offsets-target-admin",
        consumer_overrides={"enable.partition.eof": False},
    )
    try:
        reader.read_messages(on_message, timeout_s=timeout_s)
    finally:
        reader.close()
    return out


__all__ = ["read_source_offsets"]
