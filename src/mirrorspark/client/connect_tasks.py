"""An exactly-once flow's copy tasks as Kafka Connect identifies them: transactional ids, and how many to fence.

A copy task's ``transactional.id`` is Connect's (``Worker.taskTransactionalId``, KIP-618),
``<group.id>-<connector>-<task>`` (:func:`transactional_id`): ``<source>-mm2-MirrorSourceConnector-<i>``
in MM2's dedicated mode, ``<worker group.id>-<connector name>-<i>`` for connector configs run on a Connect
cluster (the worker's ``group.id`` and the connector's ``name`` come with them).

Before an exactly-once flow's first copy tasks start, every transactional id the replicator it takes over
from may still hold is fenced (:mod:`mirrorspark.replication.worker.fencing`), Connect's ``fenceZombies``:
``<group.id>-<connector>-<i>`` for ``i`` below that replicator's task count. The count is, in order:

1. read from Kafka Connect's config topic (``config.storage.topic`` on the target: the worker's, given with
   the connector configs, or MM2's dedicated ``mm2-configs.<source>.internal``), as Connect's leader reads it
   (:func:`read_previous_task_count`);
2. else ``mirrorspark.exactly.once.fence.tasks.max`` when set;
3. else nothing beyond ``tasks.max`` and the flow's own reports, **unless** the offsets topic holds source
   offsets of the connector that the flow's own progress reports do not account for ("foreign" offsets:
   another replicator ran the flow, with a task count nobody knows): the flow then refuses to start
   (:func:`previous_tasks_to_fence`), since a zombie of a task index above ``tasks.max`` could still commit
   records the new tasks copy again.
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
    """Return the ``transactional.id`` of the flow's copy task ``task_index``: ``<group.id>-<connector>-<i>``.

    :func:`~mirrorspark.mm2.connect_offsets.task_transactional_id` of ``<T>.group.id`` (default
    ``<source>-mm2``) and ``mirrorspark.source.connector.name``: the id the replicator taken over from
    (MM2, or MM2's connectors on Kafka Connect) gave its task of that index.
    """
    return task_transactional_id(cfg.connect_group_id, cfg.source_connector_name, task_index)


def read_previous_task_count(context: FlowContext, *, timeout_s: float = 60.0) -> int | None:
    """Read the task count Connect recorded for the flow's source connector in its config topic.

    The topic is the flow's ``config.storage.topic`` (the Connect worker's; MM2's dedicated mode:
    ``mm2-configs.<source>.internal``) on the target, read ``read_committed`` to its end; the count is
    :attr:`~mirrorspark.mm2.connect_configs.ConnectTaskCounts.task_count` of the connector named
    ``mirrorspark.source.connector.name``.

    Parameters
    ----------
    context:
        The flow's context (its configuration and client factory).
    timeout_s:
        Seconds for the read (s).

    Returns
    -------
    int or None
        How many task indexes the connector may have run; ``None`` when the topic is missing, holds
        no record of the connector, or cannot be read (logged at WARNING with the error).
    """
    cfg = context.flow
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

    Parameters
    ----------
    cfg:
        The flow's configuration (``mirrorspark.exactly.once.fence.tasks.max``, names for the message).
    read:
        The count read from Connect's config topic (:func:`read_previous_task_count`), or ``None``.
    foreign:
        Whether the offsets topic holds source offsets of the flow's connector that no progress report
        of the flow accounts for.

    Returns
    -------
    int
        ``read``, else the configured maximum, else 0 (the flow's own ``tasks.max`` and reports cover it).

    Raises
    ------
    ConfigError
        Neither is known and ``foreign`` holds: the message names the keys that fix it.
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
