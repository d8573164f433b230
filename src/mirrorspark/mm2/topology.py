"""Replication topology from topic names alone: cycles, hops, upstream clusters (MM2 ``MirrorClient``'s pure part)."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Mapping

from mirrorspark.errors import ConfigError
from mirrorspark.mm2.policy import ALLOW_IDENTITY_CYCLES_KEY, IDENTITY_PROBE_TOPIC, ReplicationPolicy

PROVENANCE_HEADER_KEY = "provenance.header.enable"
"""The key that allows an identity cycle whose every flow sets it (declared in ``config.CONFIG_KEYS``)."""

IDENTITY_PROBE_ALIAS = "mirrorspark-probe-alias"
"""A source alias no flow has, to probe whether a policy's names carry the source alias."""


def is_cycle(policy: ReplicationPolicy, topic: str, target_alias: str) -> bool:
    """Whether replicating ``topic`` to ``target_alias`` would bring it back where it came from (MM2 ``isCycle``).

    Follows ``topic_source``/``upstream_topic`` hop by hop; stops (no cycle) at a topic that is not remote or is its
    own upstream topic (identity-style policies).
    """
    seen: set[str] = set()
    current = topic
    while current not in seen:
        seen.add(current)
        source = policy.topic_source(current)
        if source is None:
            return False
        if source == target_alias:
            return True
        upstream = policy.upstream_topic(current)
        if upstream is None or upstream == current:
            return False
        current = upstream
    return False


Edge = tuple[str, str]
"""A replication flow as ``(source alias, target alias)``."""


def is_identity_style(policy: ReplicationPolicy, source_alias: str) -> bool:
    """Whether ``policy``'s remote names do not carry the source alias: kept names, or renamed without the alias.

    Probed with :data:`IDENTITY_PROBE_TOPIC`: the name is kept, or the source of the name it gets from another alias
    is not that alias (``IdentityReplicationPolicy``, ``RenamingReplicationPolicy``, a ``RegexRouter`` dropping
    the prefix). Such a policy leaves no trace of the source in names, so :func:`is_cycle` cannot see a topic came
    from the target.
    """
    remote = policy.format_remote_topic(source_alias, IDENTITY_PROBE_TOPIC)
    probe = policy.format_remote_topic(IDENTITY_PROBE_ALIAS, IDENTITY_PROBE_TOPIC)
    return remote == IDENTITY_PROBE_TOPIC or policy.topic_source(probe) != IDENTITY_PROBE_ALIAS


def _shortest_path(
    adjacency: Mapping[str, list[str]], start: str, goal: str, headed: Collection[Edge], bare: bool
) -> list[str] | None:
    """Clusters of a shortest directed path ``start -> ... -> goal`` (breadth first), or ``None``.

    Unless ``bare`` (the cycle has a flow without the provenance header already), the path must take a flow not in
    ``headed``.
    """
    first = (start, bare)
    previous: dict[tuple[str, bool], tuple[str, bool] | None] = {first: None}
    frontier = [first]
    while frontier:
        following: list[tuple[str, bool]] = []
        for state in frontier:
            node, seen_bare = state
            for nxt in adjacency.get(node, []):
                step = (nxt, seen_bare or (node, nxt) not in headed)
                if step in previous:
                    continue
                previous[step] = state
                if step == (goal, True):
                    path: list[str] = []
                    back: tuple[str, bool] | None = step
                    while back is not None:
                        path.append(back[0])
                        back = previous[back]
                    return path[::-1]
                following.append(step)
        frontier = following
    return None


def identity_cycle(
    flows: Iterable[tuple[str, str, ReplicationPolicy]], headed: Collection[Edge] = frozenset()
) -> tuple[Edge, ...]:
    """Find a shortest directed cycle of flows that contains a flow with an identity-style policy.

    No flow's cycle check along it can see the identity flow's source in the names, so a record comes back after one
    lap and, unless two consecutive flows prefix names, goes round forever (MM2's ``IdentityReplicationPolicy`` has
    the same caveat). A cycle whose every flow is in ``headed`` (``provenance.header.enable``: records are never
    copied back to a cluster they were on) is no such cycle.
    """
    adjacency: dict[str, list[str]] = {}
    identity: list[Edge] = []
    for source, target, policy in flows:
        if target not in adjacency.setdefault(source, []):
            adjacency[source].append(target)
        if is_identity_style(policy, source) and (source, target) not in identity:
            identity.append((source, target))
    best: tuple[Edge, ...] = ()
    for source, target in identity:
        path = _shortest_path(adjacency, target, source, headed, (source, target) not in headed)
        if path is None:
            continue
        nodes = [source, *path]
        cycle = tuple(itertools.pairwise(nodes))
        if not best or len(cycle) < len(best):
            best = cycle
    return best


def check_identity_cycles(
    flows: Iterable[tuple[str, str, ReplicationPolicy]],
    *,
    allow_cycles: bool = False,
    where: str = "the configuration",
    headed: Collection[Edge] = frozenset(),
) -> None:
    """Refuse enabled flows that form a cycle through an identity-style flow (see :func:`identity_cycle`).

    ``headed``: the flows with the provenance header on. Raises ConfigError naming the cycle's flows and the three
    fixes, unless ``allow_cycles``.
    """
    if allow_cycles:
        return
    flows = list(flows)
    cycle = identity_cycle(flows, headed)
    if not cycle:
        return
    keeping = {(s, t) for s, t, policy in flows if is_identity_style(policy, s)}
    names = ", ".join(f"{s}->{t}" for s, t in cycle)
    kept = ", ".join(f"{s}->{t}" for s, t in cycle if (s, t) in keeping)
    verb = "keeps" if len([e for e in cycle if e in keeping]) == 1 else "keep"
    raise ConfigError(
        f"{where}: the enabled flows {names} form a replication cycle and {kept} {verb} topic names "
        "(like IdentityReplicationPolicy), so the cycle check cannot see where a topic came from: records would "
        "come back to the cluster they were written to and can be copied round the cycle forever. "
        f"Fix: set '{PROVENANCE_HEADER_KEY} = true' on every flow of the cycle (records never go back to a cluster "
        "they were on), use DefaultReplicationPolicy for these flows, or give them topic filters "
        "('<source>-><target>.topics') that never match a topic replicated along the cycle and set "
        f"'{ALLOW_IDENTITY_CYCLES_KEY} = true'"
    )


def _count_hops(policy: ReplicationPolicy, topic: str, upstream_alias: str) -> int:
    """Hops from ``upstream_alias`` along one topic's chain of sources, or -1."""
    hops = 0
    visited: set[str] = set()
    current: str | None = topic
    while current is not None:
        hops += 1
        source = policy.topic_source(current)
        if source is None:
            return -1
        if source == upstream_alias:
            return hops
        if source in visited:
            return -1
        visited.add(source)
        current = policy.upstream_topic(current)
    return -1


def heartbeat_topics(policy: ReplicationPolicy, topics: Iterable[str]) -> set[str]:
    """Heartbeat topics among a cluster's topic names (MM2 ``MirrorClient.heartbeatTopics``)."""
    return {t for t in topics if policy.is_heartbeats_topic(t)}


def checkpoint_topics(policy: ReplicationPolicy, topics: Iterable[str]) -> set[str]:
    """Checkpoint topics among a cluster's topic names (MM2 ``MirrorClient.checkpointTopics``)."""
    return {t for t in topics if policy.is_checkpoints_topic(t)}


def replication_hops(policy: ReplicationPolicy, topics: Iterable[str], upstream_alias: str) -> int:
    """Fewest replication hops from a cluster to the local one (MM2 ``MirrorClient.replicationHops``); -1 if none.

    Counted along heartbeat topics: ``source1.source2.heartbeats`` is 2 hops from ``source2``.
    """
    counts = [_count_hops(policy, t, upstream_alias) for t in heartbeat_topics(policy, topics)]
    reachable = [c for c in counts if c != -1]
    return min(reachable) if reachable else -1


def _all_sources(policy: ReplicationPolicy, topic: str) -> set[str]:
    """Every source alias along one topic's chain of upstream topics."""
    sources: set[str] = set()
    current: str | None = topic
    while current is not None:
        source = policy.topic_source(current)
        if source is None or source in sources:
            break
        sources.add(source)
        current = policy.upstream_topic(current)
    return sources


def upstream_clusters(policy: ReplicationPolicy, topics: Iterable[str]) -> set[str]:
    """Aliases of all clusters upstream of the local one (MM2 ``MirrorClient.upstreamClusters``)."""
    result: set[str] = set()
    for t in heartbeat_topics(policy, topics):
        result |= _all_sources(policy, t)
    return result


def remote_topics(policy: ReplicationPolicy, topics: Iterable[str], source: str | None = None) -> set[str]:
    """Remote topics among a cluster's topic names (MM2 ``MirrorClient.remoteTopics``)."""
    result: set[str] = set()
    for t in topics:
        if policy.is_internal_topic(t):
            continue
        topic_source = policy.topic_source(t)
        if topic_source is not None and (source is None or topic_source == source):
            result.add(t)
    return result


__all__ = [
    "check_identity_cycles",
    "checkpoint_topics",
    "heartbeat_topics",
    "identity_cycle",
    "is_cycle",
    "is_identity_style",
    "remote_topics",
    "replication_hops",
    "upstream_clusters",
]
