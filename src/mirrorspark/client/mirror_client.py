"""A small client API over what replication leaves in a cluster (MM2 ``MirrorClient`` / ``RemoteClusterUtils``).

Like MM2's ``connect-mirror-client``, it reads only topic names and the checkpoints topic, with no Spark
and no running flow. Every method works on **one** (local) cluster, normally a target::

    from mirrorspark.client import translate_offsets
    from mirrorspark.config import load_config

    config = load_config("mm2.properties")
    offsets = translate_offsets(config, cluster="backup", remote_alias="primary", group="orders")
    # {("primary.orders", 0): 1234, ...}: seek a consumer of primary.orders there

The functions open a :class:`MirrorClient` per call, as ``RemoteClusterUtils``; keep one for several
calls. The policy is that of the flows into the cluster, without ``source.cluster.alias``
(:func:`~mirrorspark.client.context.cluster_policy`).
"""

from __future__ import annotations

from mirrorspark.client.checkpoint_reader import read_checkpoints
from mirrorspark.client.context import ReplicationContext, cluster_policy
from mirrorspark.config.model import MirrorConfig
from mirrorspark.mm2 import topology as _topology
from mirrorspark.mm2.checkpoint_rules import TopicPartitionKey


class MirrorClient:
    """Replication facts of one cluster, read from its topics (MM2 ``MirrorClient``).

    Parameters
    ----------
    timeout_s:
        Seconds for each cluster call and for reading a checkpoints topic to its end; ``None`` = the
        top-level ``admin.timeout.ms`` (60 s unless set).

    Raises
    ------
    UnknownAliasError
        ``cluster`` is not in ``clusters``.

    Notes
    -----
    Every method lists the topics afresh. Not thread-safe; a context manager (or call :meth:`close`).
    """

    def __init__(
        self,
        config: MirrorConfig,
        cluster: str,
        *,
        timeout_s: float | None = None,
        context: ReplicationContext | None = None,
    ) -> None:
        self.config = config
        self.alias = cluster
        self.cluster = config.cluster(cluster)
        self.context = context if context is not None else ReplicationContext(config)
        self.policy = self.context.cluster_policy(cluster)
        self._client_id = f"{cluster}|mirrorspark|mirror-client"
        self._admin = self.context.cluster_admin(cluster, "mirror-client-admin")
        if timeout_s is not None:
            self._admin = self._admin.with_timeout(timeout_s, setting="timeout_s")
        self.timeout_s = self._admin.timeout_s

    def __enter__(self) -> MirrorClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def topics(self) -> set[str]:
        """Every topic name of the cluster (internal ones included).

        Raises
        ------
        ClusterUnreachableError
            The cluster does not answer within ``timeout_s``.
        ClusterError
            It answers with an error.
        """
        return set(self._admin.list_topics())

    def replication_hops(self, upstream_alias: str) -> int:
        """Fewest hops from ``upstream_alias`` to this cluster along heartbeat topics; ``-1`` if unreachable."""
        return _topology.replication_hops(self.policy, self.topics(), upstream_alias)

    def heartbeat_topics(self) -> set[str]:
        """Heartbeat topics of this cluster (``heartbeats``, ``primary.heartbeats``, ...)."""
        return _topology.heartbeat_topics(self.policy, self.topics())

    def checkpoint_topics(self) -> set[str]:
        """Checkpoint topics of this cluster (``primary.checkpoints.internal``, ...)."""
        return _topology.checkpoint_topics(self.policy, self.topics())

    def upstream_clusters(self) -> set[str]:
        """Aliases of every cluster replicating into this one, directly or not (from heartbeat topics)."""
        return _topology.upstream_clusters(self.policy, self.topics())

    def remote_topics(self, source: str | None = None) -> set[str]:
        """Remote (replicated) topics of this cluster, optionally only those replicated directly from ``source``."""
        return _topology.remote_topics(self.policy, self.topics(), source)

    def remote_consumer_offsets(
        self, group: str, remote_alias: str, *, timeout_s: float | None = None
    ) -> dict[TopicPartitionKey, int]:
        """Where ``group`` of cluster ``remote_alias`` resumes on this cluster (MM2 ``remoteConsumerOffsets``).

        Reads partition 0 of ``<remote_alias>.checkpoints.internal`` to its end offset (within ``timeout_s``
        seconds, default the client's); the last checkpoint per partition wins; undecodable records are skipped.

        Returns
        -------
        dict[tuple[str, int], int]
            ``{(topic on this cluster, partition): committed offset}`` (next offset to read); ``{}`` without
            checkpoints or topic.

        Raises
        ------
        UnknownAliasError
            ``remote_alias`` is not in ``clusters``.
        ClusterError
            The end is not reached in time (MM2 returns what it read) or the cluster fails
            (ClusterUnreachableError if it does not answer).
        """
        self.config.cluster(remote_alias)
        records = read_checkpoints(
            self.cluster.consumer,
            self.cluster.admin,
            self.alias,
            self.policy.checkpoints_topic(remote_alias),
            client_id=f"{self._client_id}-consumer",
            timeout_s=self.timeout_s if timeout_s is None else timeout_s,
            clients=self.context.clients,
        )
        out: dict[TopicPartitionKey, int] = {}
        for cp in records:
            if cp.consumer_group_id == group:
                out[(cp.topic, cp.partition)] = cp.downstream_offset
        return dict(sorted(out.items()))

    def close(self) -> None:
        """Release the client (the admin client closes when collected; kept for symmetry with MM2)."""
        self._admin.close()


def translate_offsets(
    config: MirrorConfig, *, cluster: str, remote_alias: str, group: str, timeout_s: float | None = None
) -> dict[TopicPartitionKey, int]:
    """Return where ``group`` of ``remote_alias`` resumes on ``cluster`` (MM2 ``RemoteClusterUtils.translateOffsets``).

    A :class:`MirrorClient` on ``cluster`` for the call (:meth:`MirrorClient.remote_consumer_offsets`);
    ``timeout_s`` in seconds, default the top-level ``admin.timeout.ms``.

    Returns
    -------
    dict[tuple[str, int], int]
        ``{(topic on cluster, partition): committed offset}`` (next offset to read); ``{}`` without
        checkpoints or topic.

    Raises
    ------
    UnknownAliasError
        ``cluster`` or ``remote_alias`` is not in ``clusters``.
    ClusterError
        The end is not reached in time or the cluster fails (ClusterUnreachableError if it does not answer).
    """
    with MirrorClient(config, cluster, timeout_s=timeout_s) as client:
        return client.remote_consumer_offsets(group, remote_alias)


def replication_hops(config: MirrorConfig, cluster: str, upstream_alias: str) -> int:
    """Fewest hops from ``upstream_alias`` to ``cluster``, ``-1`` if unreachable (MM2 ``replicationHops``)."""
    with MirrorClient(config, cluster) as client:
        return client.replication_hops(upstream_alias)


def upstream_clusters(config: MirrorConfig, cluster: str) -> set[str]:
    """Aliases of every cluster replicating into ``cluster`` (MM2 ``upstreamClusters``)."""
    with MirrorClient(config, cluster) as client:
        return client.upstream_clusters()


def remote_topics(config: MirrorConfig, cluster: str, source: str | None = None) -> set[str]:
    """Remote topics of ``cluster``, optionally only those from ``source`` (MM2 ``remoteTopics``)."""
    with MirrorClient(config, cluster) as client:
        return client.remote_topics(source)


def heartbeat_topics(config: MirrorConfig, cluster: str) -> set[str]:
    """Heartbeat topics of ``cluster`` (MM2 ``heartbeatTopics``)."""
    with MirrorClient(config, cluster) as client:
        return client.heartbeat_topics()


def checkpoint_topics(config: MirrorConfig, cluster: str) -> set[str]:
    """Checkpoint topics of ``cluster`` (MM2 ``checkpointTopics``)."""
    with MirrorClient(config, cluster) as client:
        return client.checkpoint_topics()


__all__ = [
    "MirrorClient",
    "checkpoint_topics",
    "cluster_policy",
    "heartbeat_topics",
    "remote_topics",
    "replication_hops",
    "translate_offsets",
    "upstream_clusters",
]
