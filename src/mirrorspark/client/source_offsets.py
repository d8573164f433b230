"""Reading the source offsets MM2's ``MirrorSourceTask`` commits to ``mm2-offsets.<source>.internal``."""

from __future__ import annotations

import logging
import time

from confluent_kafka import KafkaError, TopicPartition

from mirrorspark.config.model import ClientSettings
from mirrorspark.errors import ClusterError, CorruptRecordError
from mirrorspark.kafka.clients import PartitionKey, admin_client, consumer, end_offsets, list_topics
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
) -> dict[PartitionKey, int]:
    """Read MirrorSourceConnector offsets for one source cluster from a Connect offsets topic.

    Reads every partition of ``topic`` from the beginning to its end offset
    (captured first); the last record per key wins and a tombstone deletes.

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
    admin = admin_client(admin_settings, client_id=client_id.rsplit("|", 1)[0] + "|offsets-target-admin")
    parts = list_topics(admin, alias).get(topic)
    if not parts:
        return {}
    ends = end_offsets(admin, alias, [(topic, p) for p in range(parts)])
    todo = {p: e for (_, p), e in ends.items() if e > 0}
    out: dict[PartitionKey, int] = {}
    if not todo:
        return out
    c = consumer(settings, client_id=client_id, overrides={"enable.partition.eof": False})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in todo])  # 0 = from the log start (reset earliest)
        deadline = time.monotonic() + timeout_s
        while todo:
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"reading offsets topic '{topic}' on cluster '{alias}' did not reach its end within "
                    f"{timeout_s:.0f} s"
                )
            for m in c.consume(num_messages=5000, timeout=0.5):
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise ClusterError(f"reading '{topic}' on cluster '{alias}' failed: {err.str()}")
                try:
                    decoded = decode_source_offset(m.key() or b"", m.value())
                except CorruptRecordError as e:
                    log.warning("skipping a corrupt record in %s-%d@%d: %s", topic, m.partition(), m.offset(), e)
                    continue
                if decoded is None:
                    continue
                cluster, t, p, off = decoded
                if cluster != source_alias:
                    continue
                if off is None:
                    out.pop((t, p), None)
                else:
                    out[(t, p)] = off
            for tp in c.position([TopicPartition(topic, p) for p in list(todo)]):
                if tp.offset >= todo[tp.partition]:
                    del todo[tp.partition]
    finally:
        c.close()
    return out


__all__ = ["read_source_offsets"]
