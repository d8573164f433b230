"""Replica placement of the remote topics a flow creates (``mirrorspark.replica.placement``).

Kafka has no placement constraints, so the flow creates remote topics and partitions with explicit
assignments over the target brokers' ``broker.rack`` (:func:`~mirrorspark.core.placement_rules.assign_replicas`).
"""

from __future__ import annotations

import logging

from mirrorspark.core.placement_rules import Assignment, PlacementRules, assign_replicas, check_racks
from mirrorspark.kafka.admin import ClusterAdmin

log = logging.getLogger(__name__)


class RemotePlacement:
    """Assignments of a flow's new remote topics and partitions under its placement ``rules``; not thread-safe."""

    def __init__(self, rules: PlacementRules, admin: ClusterAdmin) -> None:
        self.rules = rules
        self._admin = admin
        self._alias = admin.alias
        self._brokers: dict[int, str | None] | None = None

    def check(self) -> None:
        """Check at start that the target's racks fit every placement.

        Raises ``PlacementError`` (a configuration error: exit 2) or ``ClusterError`` (brokers not described).
        """
        brokers = self._admin.broker_racks()
        for rule in self.rules.rules:
            check_racks(rule.placement, brokers, cluster=self._alias)

    def begin_refresh(self) -> None:
        """Forget the brokers read for the previous refresh (they are read again when next needed)."""
        self._brokers = None

    def assignment(self, remote: str, partitions: int, *, first_partition: int = 0) -> Assignment | None:
        """Return the replicas of ``partitions`` new partitions of ``remote`` from ``first_partition``, or ``None``.

        ``None`` when no rule matches; raises ``PlacementError`` when the racks no longer fit, or ``ClusterError``.
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
