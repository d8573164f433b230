"""An exactly-once flow's copy tasks as Kafka Connect identifies them: transactional ids, and how many to fence.

A copy task's ``transactional.id`` is Connect's (``Worker.taskTransactionalId``, KIP-618),
``<group.id>-<connector>-<task>``: ``<source>-mm2-MirrorSourceConnector-<i>`` in MM2's dedicated mode.
Before an exactly-once flow's first tasks start, every id of the replicator it takes over from is fenced
(Connect's ``fenceZombies``) for ``i`` below that replicator's task count, which is, in order:

1. read from Connect's config topic on the target (the worker's ``config.storage.topic`` or
   ``mm2-configs.<source>.internal``), as Connect's leader reads it (:func:`read_previous_task_count`);
2. else ``mirrorspark.exactly.once.fence.tasks.max`` when set;
3. else nothing beyond ``tasks.max``, **unless** the offsets topic holds source offsets the flow's own
   reports do not account for: the flow then refuses to start (:func:`previous_tasks_to_fence`), since
   a zombie above ``tasks.max`` could still commit records the new tasks copy again.
"""

from __future__ import annotations

import logging

from mirrorspark.client.context import FlowContext
from mirrorspark.config.model import FlowConfig
from mirrorspark.errors import ClusterError, ConfigError
from mirrorspark.kafka.protocols import MessageLike
from mirrorspark.kafka.reader import ALL_PARTITIONS, TopicReader
from mirrorspark.mm2.connect_configs import ConnectTaskCounts
from mirrorspark.mm2.connect_offsets import task_transactional_id

log = logging.getLogger(__name__)


def transactional_id(cfg: FlowConfig, task_index: int) -> str:
    """Return ``<group.id>-<connector>-<i>``: the id the taken-over replicator gave its task ``task_index``."""
    return task_transactional_id(cfg.connect_group_id, cfg.source_connector_name, task_index)


def read_previous_task_count(context: FlowContext, *, timeout_s: float = 60.0) -> int | None:
    """Read the task count Connect recorded for the flow's source connector in its config topic.

    Read ``read_committed`` to its end within ``timeout_s`` seconds; ``None`` when the topic is missing,
    holds no record of the connector, or cannot be read (logged at WARNING).
    """
    cfg = context.flow_config
    counts = ConnectTaskCounts(cfg.source_connector_name)

    def on_message(m: MessageLike) -> None:
        counts.add(m.key(), m.value())

    client_id = context.client_id("connect-configs-consumer")
    reader = TopicReader(
        cfg.target_consumer,
        cfg.target_admin,
        cfg.target,
        context.internal_topics.connect_configs,
        client_id=client_id,
        partition=ALL_PARTITIONS,
        clients=context.clients,
        admin_client_id=client_id.rsplit("|", 1)[0] + "|connect-configs-admin",
        consumer_overrides={"enable.partition.eof": False, "isolation.level": "read_committed"},
    )
    try:
        reader.read_messages(on_message, timeout_s=timeout_s)
    except ClusterError as e:
        log.warning(
            "flow %s: cannot read Kafka Connect's config topic %s on cluster '%s' (%s): the previous task count "
            "of connector '%s' is unknown",
            cfg.name,
            context.internal_topics.connect_configs,
            cfg.target,
            e,
            cfg.source_connector_name,
        )
        return None
    finally:
        reader.close()
    return counts.task_count


def previous_tasks_to_fence(cfg: FlowConfig, read: int | None, *, foreign: bool) -> int:
    """Return how many task indexes of the previous replicator to fence (the rules in the module docstring).

    ``read``, else the configured maximum, else 0. Raises ConfigError (naming the keys that fix it) when
    neither is known and the offsets topic holds ``foreign`` offsets.
    """
    if read is not None:
        return read
    if cfg.fence_tasks_max > 0 or not foreign:
        return cfg.fence_tasks_max
    raise ConfigError(
        f"flow {cfg.name}: exactly-once hand-over refused: {cfg.offset_storage_topic} on cluster '{cfg.target}' "
        f"holds source offsets of connector '{cfg.source_connector_name}' that mirrorspark did not write, and the "
        f"previous replicator's task count is unknown ({cfg.config_storage_topic} has no record of the connector), "
        f"so its tasks' transactional ids ({transactional_id(cfg, 0).rsplit('-', 1)[0]}-<task>) cannot all be fenced "
        "and a zombie could commit records twice; give mirrorspark the Connect worker's config "
        f"('{cfg.target}.config.storage.topic' and '{cfg.target}.group.id', or the worker's properties file beside "
        f"the connector configs), or set '{cfg.name}.mirrorspark.exactly.once.fence.tasks.max' to at least the "
        "previous replicator's tasks.max"
    )


__all__ = ["previous_tasks_to_fence", "read_previous_task_count", "transactional_id"]
