"""Replica placement of the remote topics a flow creates (``mirrorspark.replica.placement``).

Apache Kafka has no placement constraints (Confluent's ``confluent.placement.constraints``), so
the flow turns its placement into an explicit replica assignment when it creates a remote topic
or adds partitions to one (``CreateTopics`` / ``CreatePartitions`` with assignments), over the
target brokers' ``broker.rack`` (:func:`~mirrorspark.core.placement_rules.assign_replicas`). Topics
created before, or by someone else, are moved by ``mirrorspark placement apply``.
"""

from __future__ import annotations

import logging

from mirrorspark.core.placement_rules import Assignment, PlacementRules, assign_replicas, check_racks
from mirrorspark.kafka.admin import ClusterAdmin

log = logging.getLogger(__name__)


class RemotePlacement:
    """Assignments of a flow's new remote topics and partitions under its placement rules.

    Parameters
    ----------
    rules:
        The flow's ``mirrorspark.replica.placement``.
    admin:
        The target cluster's admin wrapper.

    Not thread-safe: the flow's topic refresh uses it.
    """

    def __init__(self, rules: PlacementRules, admin: ClusterAdmin) -> None:
        self.rules = rules
        self._admin = admin
        self._alias = admin.alias
        self._brokers: dict[int, str | None] | None = None

    def check(self) -> None:
        """Check at start that the target's racks fit every placement.

        Raises
        ------
        PlacementError
            A placement names a rack the target lacks, or wants more replicas in a rack than
            it has brokers (a configuration error: exit 2).
        ClusterError
            The brokers cannot be described.
        """
        brokers = self._admin.broker_racks()
        for rule in self.rules.rules:
            check_racks(rule.placement, brokers, cluster=self._alias)

    def begin_refresh(self) -> None:
        """Forget the brokers read for the previous refresh (they are read again when next needed)."""
        self._brokers = None

    def assignment(self, remote: str, partitions: int, *, first_partition: int = 0) -> Assignment | None:
        """Return the replicas of ``partitions`` new partitions of ``remote``, or ``None`` if no rule matches it.

        Parameters
        ----------
        remote:
            The remote topic.
        partitions:
            How many partitions to assign.
        first_partition:
            Id of the first new partition (the current partition count when a topic grows).

        Raises
        ------
        PlacementError
            The target's racks no longer fit the placement (e.g. a broker was removed).
        ClusterError
            The brokers cannot be described.
        """
        placement = self.rules.for_topic(remote)
        if placement is None:
            return None
        if self._brokers is None:
            self._brokers = self._admin.broker_racks()
        return assign_replicas(
            placement,
            partitions,
            self._brokers,
            topic=remote,
            cluster=self._alias,
            first_partition=first_partition,
        )


__all__ = ["RemotePlacement"]
