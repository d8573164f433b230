"""The Kafka cluster ids the provenance header names, learned once per cluster when the flows start.

A flow with ``provenance.header.enable`` stamps its source's id on every record it copies and skips records
whose header names its target (:mod:`mirrorspark.core.provenance`): so both ids must be known, and two
clusters must not share a 4-byte fingerprint, before any copy task starts.
"""

from __future__ import annotations

from collections.abc import Sequence

from mirrorspark.config.model import FlowConfig
from mirrorspark.core.provenance import check_fingerprints
from mirrorspark.errors import ClusterError, ConfigError
from mirrorspark.kafka.admin import REACHABLE_TIMEOUT_S, ClusterAdmin
from mirrorspark.replication.connector.flow import Flow
from mirrorspark.replication.task.spec import ProvenanceSpec


def learn_cluster_ids(flows: Sequence[Flow]) -> None:
    """Set :attr:`Flow.provenance` of every flow with the header on, describing each cluster once.

    Raises ConfigError when a cluster tells no id or two clusters share a fingerprint, ClusterError when a
    cluster cannot be described.
    """
    ids: dict[str, str] = {}
    for flow in flows:
        if not flow.config.provenance_header_enable:
            continue
        for alias, admin in ((flow.config.source, flow.source_admin), (flow.config.target, flow.target_admin)):
            if alias not in ids:
                ids[alias] = _cluster_id(admin, alias, flow.name)
        flow.provenance = ProvenanceSpec(ids[flow.config.source], ids[flow.config.target])
    check_fingerprints(ids)


def flow_provenance(cfg: FlowConfig, source_admin: ClusterAdmin, target_admin: ClusterAdmin) -> ProvenanceSpec | None:
    """Return one flow's :class:`ProvenanceSpec` (both clusters described), ``None`` with the header off.

    Raises ConfigError when a cluster tells no id, ClusterError when a cluster cannot be described.
    """
    if not cfg.provenance_header_enable:
        return None
    return ProvenanceSpec(
        _cluster_id(source_admin, cfg.source, cfg.name), _cluster_id(target_admin, cfg.target, cfg.name)
    )


def _cluster_id(admin: ClusterAdmin, alias: str, flow: str) -> str:
    """Return the Kafka cluster id of ``alias`` (``DescribeCluster``)."""
    need = f"flow {flow} has provenance.header.enable, which stamps records with cluster '{alias}''s Kafka cluster id"
    try:
        described = admin.with_timeout(min(REACHABLE_TIMEOUT_S, admin.timeout_s)).describe_cluster()
    except ClusterError as e:
        raise type(e)(f"{need}, but describing the cluster failed: {e}", kafka_code=e.kafka_code) from e
    cluster_id = getattr(described, "cluster_id", None)
    if not cluster_id:
        raise ConfigError(
            f"{need}, but the cluster tells no id (DescribeCluster answered none): use brokers that have one "
            "(every KRaft and ZooKeeper cluster since Kafka 0.10.1 does), or set provenance.header.enable = false"
        )
    return str(cluster_id)


__all__ = ["flow_provenance", "learn_cluster_ids"]
