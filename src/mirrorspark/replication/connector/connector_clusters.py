"""One alias, one Kafka cluster: the connectors of a flow that run clients of their own must reach the same clusters.

Connectors with their own clients (issue #37) may reach a cluster at other addresses, but two clusters
under one alias are not one flow (offset syncs written on one, read on the other, translate nothing).
So at start each such connector's admin is asked for its cluster id; addresses alone cannot tell.
"""

from __future__ import annotations

from typing import Final

from mirrorspark.client.context import FlowContext, Side
from mirrorspark.config.keys import CONNECTOR_CLIENT_KINDS
from mirrorspark.errors import ConfigError
from mirrorspark.kafka.admin import REACHABLE_TIMEOUT_S

USED_SIDES: Final[dict[str, tuple[Side, ...]]] = {
    "source": ("source", "target"),
    "checkpoint": ("source", "target"),
    "heartbeat": ("target",),  # MirrorHeartbeatConnector never reaches the source
}
"""The sides whose clusters each connector's clients reach (MM2's ``MirrorSourceConnector`` / ...)."""


def check_connector_clusters(ctx: FlowContext) -> None:
    """Refuse a flow whose connectors' clients reach one alias in two Kafka clusters (different cluster ids).

    Raises ``ConfigError`` naming both connectors, servers, ids and the fix; ``ClusterError`` when not described.
    """
    own = [(kind, ctx.for_connector(kind)) for kind in CONNECTOR_CLIENT_KINDS]
    own = [(kind, c) for kind, c in own if c is not ctx]
    if not own:
        return
    for side in ("source", "target"):
        found: dict[str, tuple[str, str]] = {}  # cluster id -> (connector, bootstrap servers)
        checked: set[str] = set()
        for kind, c in [("source", ctx), *own]:
            servers = getattr(c.flow_config, f"{side}_admin").bootstrap_servers
            if side not in USED_SIDES[kind] or servers in checked:
                continue
            checked.add(servers)
            cluster_id = _cluster_id(c, side, kind)
            if cluster_id is None:  # a broker that does not tell its id: nothing to compare
                continue
            found.setdefault(cluster_id, (kind, servers))
            if len(found) > 1:
                _refuse(ctx, side, found)


def _cluster_id(c: FlowContext, side: Side, kind: str) -> str | None:
    admin = c.cluster_admin(side, f"{kind}-connector-cluster-check")
    try:
        described = admin.with_timeout(min(REACHABLE_TIMEOUT_S, admin.timeout_s)).describe_cluster()
    finally:
        admin.close()
    return getattr(described, "cluster_id", None) or None


def _refuse(ctx: FlowContext, side: Side, found: dict[str, tuple[str, str]]) -> None:
    (id_a, (kind_a, at_a)), (id_b, (kind_b, at_b)) = list(found.items())[:2]
    alias = ctx.alias(side)
    raise ConfigError(
        f"flow {ctx.name}: the {kind_a} connector's clients reach cluster '{alias}' at {at_a} (Kafka cluster id "
        f"{id_a}), the {kind_b} connector's at {at_b} (cluster id {id_b}): one alias must name one Kafka cluster "
        f"(remote topics, offset syncs and checkpoints are named by it); point the {kind_b} connector's "
        f"{side}.cluster.bootstrap.servers / {side}.admin.bootstrap.servers (in mm2.properties "
        f"'{ctx.name}.mirrorspark.{kind_b}.{side}.*') at the {kind_a} connector's cluster, or give the other "
        "cluster an alias of its own"
    )


__all__ = ["USED_SIDES", "check_connector_clusters"]
