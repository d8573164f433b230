"""Reading the source offsets MM2's ``MirrorSourceTask`` commits to ``mm2-offsets.<source>.internal``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from mirrorspark.client.context import FlowContext
from mirrorspark.config.model import ClientSettings
from mirrorspark.errors import CorruptRecordError, SourceConnectorNameError
from mirrorspark.kafka.admin import PartitionKey
from mirrorspark.kafka.factory import ClientFactory
from mirrorspark.kafka.protocols import MessageLike
from mirrorspark.kafka.reader import ALL_PARTITIONS, TopicReader
from mirrorspark.mm2.connect_offsets import (
    TOPIC_ID_MARKER,
    OffsetHistory,
    decode_source_offset,
    decode_topic_id_marker,
    source_offset_connector,
)
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
    others: dict[str, dict[PartitionKey, int]] | None = None,
) -> dict[PartitionKey, OffsetHistory]:
    """Read MirrorSourceConnector offsets for one source cluster, keeping fall-backs for invalid ones.

    As :func:`read_source_offsets`, but per partition the stored offsets a later check against the
    source's end offsets may fall back to (:class:`~mirrorspark.mm2.connect_offsets.OffsetHistory`; the
    topic-id marker goes to its ``topic_id``). Always read ``read_committed``, as Connect forces on its
    offsets consumer (KIP-618), so an aborted or open transaction's offsets are never adopted. ``others``,
    when given, is filled with ``{other connector name: {(topic, partition): newest offset}}`` of
    ``source_alias`` (for :func:`check_connector_name`).

    Returns
    -------
    dict[PartitionKey, OffsetHistory]
        Partitions whose newest record is a tombstone are left out.

    Raises
    ------
    ClusterError
        The topic could not be read to its end within ``timeout_s``.
    """
    out: dict[PartitionKey, OffsetHistory] = {}

    def on_message(m: MessageLike) -> None:
        try:
            decoded = decode_source_offset(m.key() or b"", m.value(), connector_name=connector_name)
        except CorruptRecordError as e:
            log.warning("skipping a corrupt record in %s-%d@%d: %s", topic, m.partition(), m.offset(), e)
            return
        if decoded is None:
            marker = decode_topic_id_marker(m.key() or b"", m.value())
            if marker is not None and marker[0] == source_alias:
                out.setdefault((marker[1], marker[2]), OffsetHistory()).topic_id = marker[3]
            elif others is not None:
                _take_other(m.key() or b"", m.value(), source_alias, others)
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
    if others is not None:
        for name in [n for n, kept in others.items() if not kept]:
            del others[name]
    return {k: h for k, h in out.items() if h.offsets}


def _take_other(key: bytes, value: bytes | None, source_alias: str, others: dict[str, dict[PartitionKey, int]]) -> None:
    """Keep a source offset of ``source_alias`` stored under another connector name (corrupt ones skipped)."""
    name = source_offset_connector(key)
    if name is None or name == TOPIC_ID_MARKER:
        return
    try:
        decoded = decode_source_offset(key, value, connector_name=name)
    except CorruptRecordError:
        return
    if decoded is None or decoded.cluster != source_alias:
        return
    kept = others.setdefault(name, {})
    if decoded.offset is None or decoded.offset < -1:
        kept.pop((decoded.topic, decoded.partition), None)
    else:
        kept[(decoded.topic, decoded.partition)] = decoded.offset


def check_connector_name(
    own: Mapping[PartitionKey, OffsetHistory],
    others: Mapping[str, Mapping[PartitionKey, int]],
    *,
    flow: str,
    connector_name: str,
    offsets_topic: str,
    target: str,
    auto_offset_reset: str,
    replicates: Callable[[str], bool],
) -> None:
    """Refuse a flow whose connector name has no stored offsets while others hold its source's (engine-audit-2 N3).

    Only topics ``replicates`` counts matter (the flow leaves out heartbeats topics, which every connector
    of the source copies).

    Raises
    ------
    SourceConnectorNameError
        ``own`` holds no offset of a replicated topic while ``others`` does; the message names every other
        name, the offsets topic and both fixes.
    """
    if any(replicates(t) for t, _ in own):
        return
    found = {name: sorted(k for k in kept if replicates(k[0])) for name, kept in sorted(others.items())}
    found = {name: keys for name, keys in found.items() if keys}
    if not found:
        return
    source = flow.split("->", 1)[0]
    listed = "; ".join(
        f"'{name}' ({len(keys)} partition(s), e.g. {keys[0][0]}-{keys[0][1]})" for name, keys in found.items()
    )
    consequence = (
        "skip every record stored after those offsets" if auto_offset_reset == "latest" else "copy them all again"
    )
    old = next(iter(found))
    raise SourceConnectorNameError(
        f"flow {flow}: no source offsets are stored under its connector name '{connector_name}' in "
        f"'{offsets_topic}' on cluster '{target}', but the flow's topics have offsets there under other connector "
        f"name(s): {listed}; starting would ignore them and {consequence} (auto.offset.reset={auto_offset_reset}). "
        f"Move them to the new name: `mirrorspark offsets source move CONFIG --source {source} --target {target} "
        f"--from-connector {old} --to-connector {connector_name}` (previews; add --execute to write), or set the "
        f"connector name back: {flow}.mirrorspark.source.connector.name = {old} (or the Connect connector's name)"
    )


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

    Every partition to its end offset (captured first); the last record per key wins, a tombstone deletes;
    only keys of ``source_alias``, under ``connector_name``. Corrupt records and offsets below ``-1`` are
    skipped with a warning, as Connect's reader does.

    Returns
    -------
    dict[PartitionKey, int]
        ``{(topic, partition): offset of the last replicated upstream record}``.

    Raises
    ------
    ClusterError
        The topic could not be read to its end within ``timeout_s`` (seconds, default 60).
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

    Returns ``{(topic, partition): offset of the last replicated upstream record}``; raises ClusterError
    when the topic cannot be read to its end within ``timeout_s`` seconds.
    """
    flow = ctx.flow_config
    return read_source_offsets(
        flow.target_consumer,
        flow.target_admin,
        flow.target,
        ctx.internal_topics.offsets,
        flow.source,
        client_id=ctx.client_id(purpose),
        timeout_s=timeout_s,
        clients=ctx.clients,
        connector_name=flow.source_connector_name,
    )


__all__ = ["check_connector_name", "read_flow_source_offsets", "read_source_offset_history", "read_source_offsets"]
