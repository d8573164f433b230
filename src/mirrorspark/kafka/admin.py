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

    ``timeout_s`` is what every call waits, in seconds (normally ``admin.timeout.ms`` / 1000); ``timeout_setting``
    is the setting a timeout's message says to raise. Thread-safe as the ``AdminClient`` is.
    """

    # ------------------------------------------------------------------ lifecycle

    def with_timeout(self, timeout_s: float, *, setting: str | None = None) -> ClusterAdmin:
        """Return a wrapper of the same client whose calls wait ``timeout_s`` instead."""
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

        Waits at most :data:`REACHABLE_TIMEOUT_S` by default. Raises ClusterUnreachableError naming the alias, its
        bootstrap servers and the fix.
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
