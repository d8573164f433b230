"""Reading the source offsets MM2's ``MirrorSourceTask`` commits to ``mm2-offsets.<source>.internal``."""

from __future__ import annotations

import logging
from typing import Any

from mirrorspark.client.context import FlowContext
from mirrorspark.config.model import ClientSettings
from mirrorspark.errors import CorruptRecordError
from mirrorspark.kafka.admin import PartitionKey
from mirrorspark.kafka.factory import ClientFactory
from mirrorspark.kafka.reader import ALL_PARTITIONS, TopicReader
from mirrorspark.mm2.connect_offsets import OffsetHistory, decode_source_offset, decode_topic_id_marker
from mirrorspark.mm2.records import MIRROR_SOURCE_CONNECTOR

log = logging.getLogger(__name__)


def read_source_offset_history(
    settings: ClientSettings,
    admin_settings: ClientSettings,
    alias: str,
    topic: str,
    source_alias: str,
    *,
    client_id: str,
    timeout_s: float = 60.0,
    clients: ClientFactory | None = None,
    connector_name: str = MIRROR_SOURCE_CONNECTOR,
) -> dict[PartitionKey, OffsetHistory]:
    """Read MirrorSourceConnector offsets for one source cluster, keeping fall-backs for invalid ones.

    Like :func:`read_source_offsets`, but per partition the stored offsets a later check against
    the source's end offsets may fall back to
    (:class:`~mirrorspark.mm2.connect_offsets.OffsetHistory`). Records with an offset below
    ``-1`` are skipped with a WARNING. The topic is always read ``read_committed``, to its last
    stable offset, whatever ``isolation.level`` ``settings`` hold: Kafka Connect forces it on its
    offsets consumer (KIP-618), so that source offsets of an aborted or still-open transaction
    (an exactly-once task killed mid-commit) are never adopted. A partition's topic-id marker
    (:data:`~mirrorspark.mm2.connect_offsets.TOPIC_ID_MARKER`) goes to its history's ``topic_id``.

    Parameters
    ----------
    settings, admin_settings, alias, topic, source_alias, client_id, timeout_s, clients:
        As for :func:`read_source_offsets`.
    connector_name:
        The source connector whose offsets are read (``mirrorspark.source.connector.name``; MM2's
        dedicated mode: ``MirrorSourceConnector``).

    Returns
    -------
    dict[PartitionKey, OffsetHistory]
        ``{(topic, partition): history}``; partitions whose newest record is a tombstone are left out.

    Raises
    ------
    ClusterError
        The topic could not be read to its end within ``timeout_s``.
    """
    out: dict[PartitionKey, OffsetHistory] = {}

    def on_message(m: Any) -> None:
        try:
            decoded = decode_source_offset(m.key() or b"", m.value(), connector_name=connector_name)
        except CorruptRecordError as e:
            log.warning("skipping a corrupt record in %s-%d@%d: %s", topic, m.partition(), m.offset(), e)
            return
        if decoded is None:
            marker = decode_topic_id_marker(m.key() or b"", m.value())
            if marker is not None and marker[0] == source_alias:
                out.setdefault((marker[1], marker[2]), OffsetHistory()).topic_id = marker[3]
            return
        cluster, t, p, off = decoded
        if cluster != source_alias:
            return
        history = out.setdefault((t, p), OffsetHistory())
        if not history.add(off):
            log.warning(
                "skipping the source offset of %s-%d in %s-%d@%d: offset %d is below -1, which no partition "
                "can hold (a foreign or corrupt record)",
                t,
                p,
                topic,
                m.partition(),
                m.offset(),
                off,
            )

    reader = TopicReader(
        settings,
        admin_settings,
        alias,
        topic,
        client_id=client_id,
        partition=ALL_PARTITIONS,
        clients=clients,
        admin_client_id=client_id.rsplit("|", 1)[0] + "|offsets-target-admin",
        # Kafka Connect forces read_committed on its offsets consumer, whatever consumer.isolation.level says
        # (engine-audit F6): an offset written in a transaction that is later aborted is never adopted
        consumer_overrides={"enable.partition.eof": False, "isolation.level": "read_committed"},
    )
    try:
        reader.read_messages(on_message, timeout_s=timeout_s)
    finally:
        reader.close()
    return {k: h for k, h in out.items() if h.offsets}


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
    connector_name: str = MIRROR_SOURCE_CONNECTOR,
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
    connector_name:
        The source connector whose offsets are read (default ``MirrorSourceConnector``, MM2's dedicated mode).

    Returns
    -------
    dict[PartitionKey, int]
        ``{(topic, partition): offset of the last replicated upstream record}``.

    Raises
    ------
    CorruptRecordError
        Never: corrupt records are skipped with a warning (as Connect's reader logs and skips), and
        so are offsets below ``-1``.
    ClusterError
        The topic could not be read to its end within ``timeout_s``.
    """
    history = read_source_offset_history(
        settings,
        admin_settings,
        alias,
        topic,
        source_alias,
        client_id=client_id,
        timeout_s=timeout_s,
        clients=clients,
        connector_name=connector_name,
    )
    return {k: h.offsets[-1] for k, h in history.items()}


def read_flow_source_offsets(ctx: FlowContext, purpose: str, *, timeout_s: float = 60.0) -> dict[PartitionKey, int]:
    """Read the source offsets a flow committed (:func:`read_source_offsets` on its target's offsets topic).

    Parameters
    ----------
    ctx:
        The flow's context.
    purpose:
        What the consumer does, the last part of its ``client.id``, e.g. ``"status-offsets-consumer"``.
    timeout_s:
        Seconds to reach the end offsets (default 60).

    Returns
    -------
    dict[PartitionKey, int]
        ``{(topic, partition): offset of the last replicated upstream record}``.

    Raises
    ------
    ClusterError
        The topic could not be read to its end within ``timeout_s``.
    """
    flow = ctx.flow
    return read_source_offsets(
        flow.target_consumer,
        flow.target_admin,
        flow.target,
        flow.offset_storage_topic,
        flow.source,
        client_id=ctx.client_id(purpose),
        timeout_s=timeout_s,
        clients=ctx.clients,
        connector_name=flow.source_connector_name,
    )


__all__ = ["read_flow_source_offsets", "read_source_offset_history", "read_source_offsets"]
