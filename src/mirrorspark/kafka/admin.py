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
"""

from __future__ import annotations

from typing import Final, TypeVar

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
    "is_transient",
]
