"""The copy tasks of a flow, as MM2's ``MirrorSourceConnector.taskConfigs`` cuts them (round-robin)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from mirrorspark.client.connect_tasks import transactional_id
from mirrorspark.client.context import FlowContext
from mirrorspark.core.link_sizing import RECEIVE_MARGIN_BYTES, long_link_fetch_settings
from mirrorspark.errors import ConfigError
from mirrorspark.replication.task.spec import (
    CopyTaskSpec,
    PartitionAssignment,
    PartitionKey,
    ProvenanceSpec,
    SchemaIdsSpec,
)

T = TypeVar("T")

COMMIT_TIMEOUT_MS = 3000
"""``message.timeout.ms`` of the commit producers: a commit record lands within this, or fails the task."""

COPY_CONSUMER_DEFAULTS: dict[str, Any] = {
    # librdkafka (>= 2.4) stops fetching a partition whose local queue holds queued.min.messages (100,000)
    # and looks again only after this (default 1,000 ms): a backlog was copied in bursts, the loop idle
    # between them (105,000 records/s of 100 B at one partition; 10 ms: 232,000, issue #26)
    "fetch.queue.backoff.ms": 10,
    # Java's consumer keeps fetching while its records are handed out; librdkafka's one fetch at a time per
    # broker carries more per round trip instead (1 KiB records at one partition: +8 %)
    "max.partition.fetch.bytes": 4 * 1024 * 1024,
}
"""librdkafka settings of a copy task's source consumer that the user's settings may override."""


def assign_round_robin(partitions: Sequence[T], tasks_max: int) -> list[list[T]]:
    """Split partitions over ``min(tasks_max, len(partitions))`` tasks: the k-th to task ``k mod n`` (MM2)."""
    n = min(tasks_max, len(partitions))
    if n <= 0:
        return []
    groups: list[list[T]] = [[] for _ in range(n)]
    for k, p in enumerate(partitions):
        groups[k % n].append(p)
    return groups


def init_transactions_timeout_s(producer_properties: Mapping[str, str]) -> float:
    """Seconds a copy task's ``init_transactions`` may take: the target producer's Java ``max.block.ms``.

    60.0 (Java's default) when unset; raises ``ConfigError`` unless a whole number of ms > 0.
    """
    raw = producer_properties.get("max.block.ms")
    if raw is None or str(raw).strip() == "":
        return 60.0
    try:
        ms = int(str(raw).strip())
    except ValueError:
        ms = 0
    if ms <= 0:
        raise ConfigError(
            f"max.block.ms of the target producer is {raw!r}: set it to a whole number of milliseconds > 0 "
            "(it bounds init_transactions in exactly-once mode; Java's default is 60000)"
        )
    return ms / 1000.0


def _receive_above_fetch(conf: dict[str, Any]) -> None:
    """Raise ``receive.message.max.bytes`` above a larger ``fetch.max.bytes`` the user set (librdkafka's rule)."""
    fetch, receive = str(conf.get("fetch.max.bytes", "")), str(conf.get("receive.message.max.bytes", ""))
    if fetch.isdigit() and receive.isdigit() and int(receive) < int(fetch) + 512:
        conf["receive.message.max.bytes"] = int(fetch) + RECEIVE_MARGIN_BYTES


class TaskConfigs:
    """Builds a flow's copy tasks; the clients' configurations are built once, at the first call."""

    def __init__(self, context: FlowContext, *, isolation_level: str) -> None:
        self.context = context
        self.isolation_level = isolation_level
        self._confs: dict[str, Any] | None = None

    @property
    def exactly_once(self) -> bool:
        """Whether the flow copies exactly once: ``<target>.exactly.once.source.support=enabled`` (KIP-618)."""
        return self.context.flow_config.exactly_once_source_support == "enabled"

    def _client_confs(self) -> dict[str, Any]:
        """Return the tasks' client configurations (``client.id`` by the flow context's rule), built once."""
        if self._confs is not None:
            return self._confs
        ctx = self.context
        cfg = ctx.flow_config
        consumer = ctx.client_conf(
            "source_consumer",
            "replication-consumer",
            # a long link (replication.link.rtt.ms): fetches carry its bandwidth-delay product per round trip
            defaults={**COPY_CONSUMER_DEFAULTS, **long_link_fetch_settings(cfg.link_rtt_ms, cfg.link_rate)},
            # "error": an offset out of range is reported to the task, never silently reset (a gap)
            overrides={
                "enable.auto.commit": False,
                "enable.partition.eof": False,
                "auto.offset.reset": "error",
                "isolation.level": self.isolation_level,
            },
        )
        consumer.setdefault("group.id", f"mirrorspark-{cfg.name}")
        _receive_above_fetch(consumer)
        producer = ctx.client_conf(
            "target_producer",
            "replication-producer",
            defaults={"linger.ms": 5, "queue.buffering.max.messages": 500000},
            overrides={"enable.idempotence": True},
        )
        # commit records land within COMMIT_TIMEOUT_MS or fail the task: never late, after a lease moved on;
        # linger.ms 5 batches a commit's writes (offset syncs every offset.lag.max records, positions, reports)
        # into a request or two: at 0, each write was a request of its own and cost the copy loop ~50 us
        idempotent = {"enable.idempotence": True, "linger.ms": 5, "message.timeout.ms": COMMIT_TIMEOUT_MS}
        commit = ctx.client_conf("target_producer", "offsets-target-producer", overrides=idempotent)
        syncs = None
        on_source = cfg.offset_syncs_topic_location == "source"
        if cfg.emit_offset_syncs_enabled:
            side = "source" if on_source else "target"
            syncs = ctx.client_conf(
                "source_producer" if on_source else "target_producer",
                f"offset-syncs-{side}-producer",
                overrides=idempotent,
            )
        offsets_consumer = offsets_admin = source_admin = None
        if self.exactly_once:  # the task reads its own source offsets after init_transactions (KIP-618)
            offsets_consumer = ctx.client_conf(
                "target_consumer",
                "offsets-target-consumer",
                overrides={
                    "enable.auto.commit": False,
                    "enable.partition.eof": False,
                    "isolation.level": "read_committed",
                },
            )
            # the group.id of every assign-only consumer of the flow (never joined; its DESCRIBE ACL is documented)
            offsets_consumer.setdefault("group.id", f"mirrorspark-{cfg.name}")
            offsets_admin = ctx.client_conf("target_admin", "offsets-target-admin")
            source_admin = ctx.client_conf("source_admin", "topic-ids-source-admin")  # re-created under the task?
        # a driver on another network than its executors: the copy tasks reach the clusters elsewhere
        source, target = cfg.executor_source_bootstrap_servers.strip(), cfg.executor_target_bootstrap_servers.strip()
        for conf, bootstrap in (
            (consumer, source),
            (producer, target),
            (commit, target),
            (offsets_consumer, target),
            (offsets_admin, target),
            (source_admin, source),
        ):
            if bootstrap and conf is not None:
                conf["bootstrap.servers"] = bootstrap
        if syncs is not None and (source if on_source else target):
            syncs["bootstrap.servers"] = source if on_source else target
        self._confs = {
            "consumer": consumer,
            "producer": producer,
            "commit": commit,
            "syncs": syncs,
            "offsets_consumer": offsets_consumer,
            "offsets_admin": offsets_admin,
            "source_admin": source_admin,
        }
        return self._confs

    def _assignments(
        self,
        keys: Sequence[PartitionKey],
        positions: Mapping[PartitionKey, int],
        remote_topics: Mapping[str, str],
        topic_ids: Mapping[str, str],
        restarted: frozenset[PartitionKey],
    ) -> tuple[PartitionAssignment, ...]:
        """One task's partitions from their committed positions, with remote topic, transforms and topic id."""
        return tuple(
            PartitionAssignment(
                t,
                p,
                remote_topics[t],
                positions[(t, p)],
                self.context.bound_transforms(t),
                topic_id=topic_ids.get(t),
                restarted=(t, p) in restarted,
            )
            for t, p in keys
        )

    def specs(
        self,
        order: Sequence[PartitionKey],
        *,
        positions: Mapping[PartitionKey, int],
        remote_topics: Mapping[str, str],
        offsets_partitions: int,
        generation: int,
        grant_address: tuple[str, int, str],
        stop_at: Mapping[PartitionKey, int] | None = None,
        topic_ids: Mapping[str, str] | None = None,
        restarted: frozenset[PartitionKey] = frozenset(),
        epoch: int = 0,
        run: str | None = None,
        schemas: SchemaIdsSpec | None = None,
        provenance: ProvenanceSpec | None = None,
    ) -> list[CopyTaskSpec]:
        """Cut ``order`` into ``min(tasks.max, partitions)`` copy tasks from their positions, in task-index order.

        ``grant_address`` is the driver's grant server ``(host, port, token)``; ``stop_at`` a bounded copy's end
        offsets; ``topic_ids`` (KIP-516) and ``restarted`` go into each
        :class:`~mirrorspark.replication.task.spec.PartitionAssignment`; ``epoch`` (0: no lease) and ``run``
        into the :class:`~mirrorspark.replication.task.spec.CopyTaskSpec`, as do ``schemas`` (schema-id
        translation; ``None``: bytes as they are) and ``provenance`` (the header's cluster ids; ``None``: off).
        Raises ``ConfigError`` when a client setting (e.g. ``max.block.ms``) is invalid.
        """
        cfg, names = self.context.flow_config, self.context.internal_topics
        confs = self._client_confs()
        eos = self.exactly_once
        flush_ms = (
            (cfg.transaction_boundary_interval_ms or cfg.offset_flush_interval_ms)
            if eos
            else (cfg.offset_flush_interval_ms)
        )
        init_timeout_s = init_transactions_timeout_s(self.context.settings("target_producer").properties)
        out = []
        for index, keys in enumerate(assign_round_robin(order, cfg.tasks_max)):
            parts = self._assignments(keys, positions, remote_topics, topic_ids or {}, restarted)
            out.append(
                CopyTaskSpec(
                    flow=cfg.name,
                    source=cfg.source,
                    target=cfg.target,
                    task_index=index,
                    generation=generation,
                    consumer_conf=confs["consumer"],
                    producer_conf=confs["producer"],
                    commit_conf=confs["commit"],
                    syncs_conf=confs["syncs"],
                    offsets_topic=names.offsets,
                    offsets_partitions=offsets_partitions,
                    syncs_topic=names.offset_syncs,
                    progress_topic=names.progress_channel,
                    partitions=parts,
                    offset_lag_max=cfg.offset_lag_max,
                    flush_interval_s=flush_ms / 1000.0,
                    flush_records=cfg.offset_flush_records,
                    connector_name=cfg.source_connector_name,
                    grant_address=grant_address,
                    transactional_id=transactional_id(cfg, index) if eos else None,
                    boundary=cfg.transaction_boundary,
                    init_timeout_s=init_timeout_s,
                    offsets_consumer_conf=confs["offsets_consumer"],
                    offsets_admin_conf=confs["offsets_admin"],
                    source_admin_conf=confs["source_admin"],
                    stop_at=None if stop_at is None else {k: stop_at.get(k, positions[k]) for k in keys},
                    epoch=epoch,
                    run=run,
                    schemas=schemas,
                    provenance=provenance,
                    catch_up_readers=cfg.catch_up_readers,
                    catch_up_backlog_records=cfg.catch_up_backlog_records,
                )
            )
        return out


__all__ = ["COMMIT_TIMEOUT_MS", "TaskConfigs", "assign_round_robin", "init_transactions_timeout_s"]
