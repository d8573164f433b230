"""Admin calls about replicas: partition layout with racks, per-partition offsets, leader elections.

Kept until replication/ moves to ClusterAdmin: these are now methods of
:class:`~mirrorspark.kafka.admin.ClusterAdmin` (:meth:`~mirrorspark.kafka.admin.ClusterAdmin.describe_partitions`,
:meth:`~mirrorspark.kafka.admin.ClusterAdmin.partition_offsets`,
:meth:`~mirrorspark.kafka.admin.ClusterAdmin.elect_leaders`); the functions below delegate to them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mirrorspark.kafka.admin import ClusterAdmin, PartitionKey
from mirrorspark.kafka.admin_cluster import PartitionLayout


def describe_partitions(
    admin: Any, alias: str, topics: Iterable[str], *, timeout_s: float = 30.0
) -> list[PartitionLayout]:
    """See :meth:`ClusterAdmin.describe_partitions` (kept until replication/ moves to ClusterAdmin)."""
    return ClusterAdmin(admin, alias, timeout_s=timeout_s).describe_partitions(topics)


def partition_offsets(
    admin: Any, alias: str, partitions: Iterable[PartitionKey], *, earliest: bool, timeout_s: float = 15.0
) -> dict[PartitionKey, int]:
    """See :meth:`ClusterAdmin.partition_offsets` (kept until replication/ moves to ClusterAdmin)."""
    return ClusterAdmin(admin, alias, timeout_s=timeout_s).partition_offsets(partitions, earliest=earliest)


def elect_leaders(
    admin: Any, alias: str, kind: str, partitions: Iterable[PartitionKey] | None, *, timeout_s: float = 60.0
) -> dict[PartitionKey, str | None]:
    """See :meth:`ClusterAdmin.elect_leaders` (kept until replication/ moves to ClusterAdmin)."""
    return ClusterAdmin(admin, alias, timeout_s=timeout_s).elect_leaders(kind, partitions)


__all__ = ["PartitionLayout", "describe_partitions", "elect_leaders", "partition_offsets"]
