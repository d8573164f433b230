"""One admin wrapper per cluster: :class:`ClusterAdmin` (topics, configs, offsets, consumer groups, brokers, ACLs).

A :class:`ClusterAdmin` carries a confluent-kafka ``AdminClient``, the cluster alias and the timeout of
every call (seconds, from ``admin.timeout.ms``), and translates errors with one rule
(:mod:`mirrorspark.kafka.admin_base`): a ``KafkaException`` becomes a
:class:`~mirrorspark.errors.ClusterError` naming the call and the cluster, with Kafka's error name and
whether it is worth retrying (:func:`is_transient`); no answer becomes a
:class:`~mirrorspark.errors.ClusterUnreachableError` naming the alias, its bootstrap servers and the fix.
It plays the part of MM2's ``TopicAdmin`` (and of quix-streams' ``TopicAdmin``).

Get one from :meth:`~mirrorspark.client.context.FlowContext.cluster_admin` (a flow's side, the flow's
``admin.timeout.ms``) or :meth:`~mirrorspark.client.context.ReplicationContext.cluster_admin` (a
cluster, the configuration's ``admin.timeout.ms``). Its methods are defined by subject in
:mod:`mirrorspark.kafka.admin_topics` (topics, topic configs, offsets), :mod:`mirrorspark.kafka.admin_groups`
(consumer groups) and :mod:`mirrorspark.kafka.admin_cluster` (brokers, ACLs, dynamic configs, replicas).

The free functions at the end (``end_offsets(admin, alias, ...)``...) are thin delegates onto
:class:`ClusterAdmin`, kept until ``replication/`` moves to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, Final, TypeVar

from mirrorspark.kafka.admin_base import PartitionKey, is_transient
from mirrorspark.kafka.admin_cluster import ClusterCalls, ConfigTarget
from mirrorspark.kafka.admin_groups import GroupCalls, GroupDescription
from mirrorspark.kafka.admin_topics import CREATE_TOPICS_CHUNK, ConfigValue, TopicCalls, TopicDescription, TopicSpec
from mirrorspark.kafka.factory import serve_logs

T = TypeVar("T")

REACHABLE_TIMEOUT_S: Final = 10.0
"""Most seconds :meth:`ClusterAdmin.check_reachable` waits (it fails fast, before the real work)."""


class ClusterAdmin(TopicCalls, GroupCalls, ClusterCalls):
    """The admin calls of one cluster, with its alias, its timeout and one error rule (MM2 ``TopicAdmin``).

    Parameters
    ----------
    admin:
        The cluster's confluent-kafka ``AdminClient`` (:func:`~mirrorspark.kafka.factory.create`),
        or an object offering the methods called (``tests/fakes.py``).
    alias:
        The cluster alias, named in every error.
    timeout_s:
        Seconds every call waits for its answer: the ``request_timeout`` sent and the
        ``future.result(timeout=...)`` waited (one deadline for a call of several futures).
        Normally ``admin.timeout.ms`` / 1000; default 60 s (``admin.timeout.ms``'s default).
    bootstrap_servers:
        The cluster's ``bootstrap.servers``, named when it does not answer; ``None`` if unknown.
    timeout_setting:
        What the fix of a timeout tells to raise: ``"admin.timeout.ms"`` (default), ``"--timeout"``
        for a command's own bound.

    Notes
    -----
    Errors (the one rule, :mod:`~mirrorspark.kafka.admin_base`): a ``KafkaException`` becomes a
    :class:`~mirrorspark.errors.ClusterError` (``kafka_code`` = Kafka's error name, ``retriable`` as
    :func:`is_transient` says); no answer (a timeout, librdkafka's ``_TIMED_OUT`` or ``_TRANSPORT``)
    a :class:`~mirrorspark.errors.ClusterUnreachableError` (``retriable``). A call's own outcomes are
    no errors: an unknown topic is left out, "already exists" and "already that many partitions"
    are ignored, an unknown group is ``Dead``.

    Methods: topics (:meth:`list_topics`, :meth:`describe_topics`, :meth:`create_topics`,
    :meth:`ensure_topic`, :meth:`create_partitions`), topic configs (:meth:`describe_topic_configs`,
    :meth:`topic_configs`, :meth:`alter_topic_configs`), offsets (:meth:`end_offsets`,
    :meth:`start_offsets`, :meth:`offsets_for_timestamp`, :meth:`partition_offsets`), consumer groups
    (:meth:`list_groups`, :meth:`describe_group`, :meth:`describe_groups`, :meth:`group_offsets`,
    :meth:`committed_group_offsets`, :meth:`alter_group_offsets`), brokers and ACLs
    (:meth:`check_reachable`, :meth:`describe_cluster`, :meth:`broker_racks`, :meth:`broker_config`,
    :meth:`describe_acls`, :meth:`create_acls`, :meth:`dynamic_configs`, :meth:`delete_dynamic_configs`),
    replicas (:meth:`describe_partitions`, :meth:`elect_leaders`).

    confluent-kafka's ``AdminClient`` has no ``close``: the client goes with its last reference.
    Thread-safe as the ``AdminClient`` is.
    """

    # ------------------------------------------------------------------ lifecycle

    def with_timeout(self, timeout_s: float, *, setting: str | None = None) -> ClusterAdmin:
        """Return a wrapper of the same client whose calls wait ``timeout_s`` instead.

        For a caller that truly needs another bound than ``admin.timeout.ms``: a command's
        ``--timeout``, a read whose whole budget bounds its admin calls too
        (:class:`~mirrorspark.kafka.reader.TopicReader`), a scrape that must answer within 10 s.

        Parameters
        ----------
        timeout_s:
            Seconds each call of the new wrapper waits.
        setting:
            What its timeout fix names (default: this wrapper's :attr:`timeout_setting`).

        Returns
        -------
        ClusterAdmin
            A new wrapper sharing :attr:`admin`.
        """
        return ClusterAdmin(
            self.admin,
            self.alias,
            timeout_s=timeout_s,
            bootstrap_servers=self.bootstrap_servers,
            timeout_setting=self.timeout_setting if setting is None else setting,
        )

    def close(self) -> None:
        """Hand librdkafka's last queued log lines to Python logging (the client itself has no ``close``)."""
        serve_logs(self.admin)

    def __enter__(self) -> ClusterAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def check_reachable(self, *, timeout_s: float | None = None) -> None:
        """Fail fast when no broker of the cluster answers (a metadata request).

        Parameters
        ----------
        timeout_s:
            Seconds to wait; default ``min(REACHABLE_TIMEOUT_S, timeout_s)`` (10 s at most): this check
            comes before the real work and must not keep a command waiting for ``admin.timeout.ms``.

        Raises
        ------
        ClusterUnreachableError
            Naming the alias, its bootstrap servers and the fix.
        ClusterError
            A broker answered with an error.
        """
        bound = min(REACHABLE_TIMEOUT_S, self.timeout_s) if timeout_s is None else timeout_s
        self.with_timeout(bound).list_topics()


# --------------------------------------------------------------------------- free functions
# Kept until replication/ moves to ClusterAdmin: thin delegates, one ClusterAdmin per call.


def wait(future: Future[T], timeout_s: float, what: str, alias: str) -> T:
    """Wait for an admin call's result; no answer within ``timeout_s`` is a :class:`ClusterUnreachableError`.

    Kept until replication/ moves to ClusterAdmin. A ``KafkaException`` is raised as the call raises
    it (callers translate it); a timeout follows the one rule of :class:`ClusterAdmin`.
    """
    try:
        return future.result(timeout=timeout_s)
    except TimeoutError as e:
        raise ClusterAdmin(None, alias, timeout_s=timeout_s)._error(e, what) from e  # noqa: SLF001 - the one rule


def check_reachable(admin: Any, alias: str, bootstrap_servers: str, *, timeout_s: float = REACHABLE_TIMEOUT_S) -> None:
    """See :meth:`ClusterAdmin.check_reachable` (kept until replication/ moves to ClusterAdmin)."""
    ClusterAdmin(admin, alias, timeout_s=timeout_s, bootstrap_servers=bootstrap_servers).check_reachable(
        timeout_s=timeout_s
    )


def list_topics(admin: Any, alias: str, *, timeout_s: float = 30.0) -> dict[str, int]:
    """See :meth:`ClusterAdmin.list_topics` (kept until replication/ moves to ClusterAdmin)."""
    return ClusterAdmin(admin, alias, timeout_s=timeout_s).list_topics()


def describe_topics(
    admin: Any, alias: str, topics: Iterable[str], *, timeout_s: float = 30.0
) -> dict[str, TopicDescription]:
    """See :meth:`ClusterAdmin.describe_topics` (kept until replication/ moves to ClusterAdmin)."""
    return ClusterAdmin(admin, alias, timeout_s=timeout_s).describe_topics(topics)


def topic_configs(
    admin: Any, alias: str, topics: Iterable[str], *, include_defaults: bool, timeout_s: float = 30.0
) -> dict[str, dict[str, str]]:
    """See :meth:`ClusterAdmin.topic_configs` (kept until replication/ moves to ClusterAdmin)."""
    return ClusterAdmin(admin, alias, timeout_s=timeout_s).topic_configs(topics, include_defaults=include_defaults)


def describe_topic_configs(
    admin: Any, alias: str, topics: Iterable[str], *, timeout_s: float = 30.0
) -> dict[str, dict[str, ConfigValue]]:
    """See :meth:`ClusterAdmin.describe_topic_configs` (kept until replication/ moves to ClusterAdmin)."""
    return ClusterAdmin(admin, alias, timeout_s=timeout_s).describe_topic_configs(topics)


def alter_topic_configs(
    admin: Any, alias: str, changes: Mapping[str, Mapping[str, str | None]], *, timeout_s: float = 30.0
) -> None:
    """See :meth:`ClusterAdmin.alter_topic_configs` (kept until replication/ moves to ClusterAdmin)."""
    ClusterAdmin(admin, alias, timeout_s=timeout_s).alter_topic_configs(changes)


def create_topics(
    admin: Any, alias: str, topics: Sequence[TopicSpec], *, wait_for_leaders: bool = True, timeout_s: float = 30.0
) -> list[str]:
    """See :meth:`ClusterAdmin.create_topics` (kept until replication/ moves to ClusterAdmin)."""
    return ClusterAdmin(admin, alias, timeout_s=timeout_s).create_topics(topics, wait_for_leaders=wait_for_leaders)


def ensure_topic(
    admin: Any,
    alias: str,
    name: str,
    *,
    partitions: int,
    replication_factor: int,
    config: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
) -> bool:
    """See :meth:`ClusterAdmin.ensure_topic` (kept until replication/ moves to ClusterAdmin)."""
    return ClusterAdmin(admin, alias, timeout_s=timeout_s).ensure_topic(
        name, partitions=partitions, replication_factor=replication_factor, config=config
    )


def create_partitions(
    admin: Any,
    alias: str,
    increases: Mapping[str, int],
    *,
    assignments: Mapping[str, Sequence[Sequence[int]]] | None = None,
    timeout_s: float = 30.0,
) -> None:
    """See :meth:`ClusterAdmin.create_partitions` (kept until replication/ moves to ClusterAdmin)."""
    ClusterAdmin(admin, alias, timeout_s=timeout_s).create_partitions(increases, assignments=assignments)


def end_offsets(
    admin: Any,
    alias: str,
    partitions: Iterable[PartitionKey],
    *,
    read_committed: bool = False,
    timeout_s: float = 30.0,
) -> dict[PartitionKey, int]:
    """See :meth:`ClusterAdmin.end_offsets` (kept until replication/ moves to ClusterAdmin)."""
    return ClusterAdmin(admin, alias, timeout_s=timeout_s).end_offsets(partitions, read_committed=read_committed)


def start_offsets(
    admin: Any, alias: str, partitions: Iterable[PartitionKey], *, timeout_s: float = 30.0
) -> dict[PartitionKey, int]:
    """See :meth:`ClusterAdmin.start_offsets` (kept until replication/ moves to ClusterAdmin)."""
    return ClusterAdmin(admin, alias, timeout_s=timeout_s).start_offsets(partitions)


def offsets_for_timestamp(
    admin: Any, alias: str, partitions: Iterable[PartitionKey], timestamp_ms: int, *, timeout_s: float = 30.0
) -> dict[PartitionKey, int]:
    """See :meth:`ClusterAdmin.offsets_for_timestamp` (kept until replication/ moves to ClusterAdmin)."""
    return ClusterAdmin(admin, alias, timeout_s=timeout_s).offsets_for_timestamp(partitions, timestamp_ms)


def describe_group(admin: Any, alias: str, group: str, *, timeout_s: float = 30.0) -> GroupDescription:
    """See :meth:`ClusterAdmin.describe_group` (kept until replication/ moves to ClusterAdmin)."""
    return ClusterAdmin(admin, alias, timeout_s=timeout_s).describe_group(group)


def group_offsets(
    admin: Any, alias: str, group: str, *, timeout_s: float = 30.0
) -> dict[PartitionKey, tuple[int, str]]:
    """See :meth:`ClusterAdmin.group_offsets` (kept until replication/ moves to ClusterAdmin)."""
    return ClusterAdmin(admin, alias, timeout_s=timeout_s).group_offsets(group)


def committed_group_offsets(
    consumer: Any, alias: str, group: str, *, timeout_s: float = 30.0, topics: Iterable[str] | None = None
) -> dict[PartitionKey, tuple[int, str]]:
    """See :meth:`ClusterAdmin.committed_group_offsets` (kept until replication/ moves to ClusterAdmin)."""
    return ClusterAdmin(None, alias, timeout_s=timeout_s).committed_group_offsets(consumer, group, topics=topics)


def alter_group_offsets(
    admin: Any, alias: str, group: str, offsets: Mapping[PartitionKey, tuple[int, str]], *, timeout_s: float = 30.0
) -> None:
    """See :meth:`ClusterAdmin.alter_group_offsets` (kept until replication/ moves to ClusterAdmin)."""
    ClusterAdmin(admin, alias, timeout_s=timeout_s).alter_group_offsets(group, offsets)


def broker_racks(admin: Any, alias: str, *, timeout_s: float = 30.0) -> dict[int, str | None]:
    """See :meth:`ClusterAdmin.broker_racks` (kept until replication/ moves to ClusterAdmin)."""
    return ClusterAdmin(admin, alias, timeout_s=timeout_s).broker_racks()


def dynamic_configs(
    admin: Any, alias: str, resources: Iterable[ConfigTarget], names: Iterable[str], *, timeout_s: float = 30.0
) -> dict[ConfigTarget, dict[str, str]]:
    """See :meth:`ClusterAdmin.dynamic_configs` (kept until replication/ moves to ClusterAdmin)."""
    return ClusterAdmin(admin, alias, timeout_s=timeout_s).dynamic_configs(resources, names)


def delete_dynamic_configs(
    admin: Any, alias: str, changes: Mapping[ConfigTarget, Iterable[str]], *, timeout_s: float = 30.0
) -> None:
    """See :meth:`ClusterAdmin.delete_dynamic_configs` (kept until replication/ moves to ClusterAdmin)."""
    ClusterAdmin(admin, alias, timeout_s=timeout_s).delete_dynamic_configs(changes)


__all__ = [
    "CREATE_TOPICS_CHUNK",
    "REACHABLE_TIMEOUT_S",
    "ClusterAdmin",
    "ConfigTarget",
    "ConfigValue",
    "GroupDescription",
    "PartitionKey",
    "TopicDescription",
    "TopicSpec",
    "alter_group_offsets",
    "alter_topic_configs",
    "broker_racks",
    "check_reachable",
    "committed_group_offsets",
    "create_partitions",
    "create_topics",
    "delete_dynamic_configs",
    "describe_group",
    "describe_topic_configs",
    "describe_topics",
    "dynamic_configs",
    "end_offsets",
    "ensure_topic",
    "group_offsets",
    "is_transient",
    "list_topics",
    "offsets_for_timestamp",
    "start_offsets",
    "topic_configs",
    "wait",
]
