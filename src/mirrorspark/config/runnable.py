"""What makes a loaded configuration one that may run: its flows' policies, no identity cycle, a flow to run.

:func:`flow_policy` is the one place a flow's policy is loaded (:class:`~mirrorspark.client.context.FlowContext`
holds its result); :func:`check_cycles` refuses, when the file is parsed, enabled flows that loop through an
identity-style policy; :func:`runnable_flows` refuses a run with no flow.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mirrorspark.config.model import FlowConfig, MirrorConfig
from mirrorspark.core.provenance import check_hop_bound
from mirrorspark.core.renaming import RENAMING_POLICY_NAMES, RenamingReplicationPolicy
from mirrorspark.core.transforms import RoutedReplicationPolicy, build_chain, routers
from mirrorspark.errors import ConfigError
from mirrorspark.mm2.policy import IDENTITY_PROBE_TOPIC, ReplicationPolicy, load_policy
from mirrorspark.mm2.topology import PROVENANCE_HEADER_KEY, Edge, check_identity_cycles, is_identity_style


def base_policy(flow: FlowConfig, source_cluster_alias: str | None) -> ReplicationPolicy:
    """Load the policy ``flow``'s ``replication.policy.*`` and ``topic.rename.*`` keys name, without its routers.

    ``RenamingReplicationPolicy`` when the flow renames topics or names it; raises ConfigError if the policy class
    cannot be loaded or configured.
    """
    if flow.renaming or flow.policy.class_name.strip() in RENAMING_POLICY_NAMES:
        return RenamingReplicationPolicy(
            renaming=flow.renaming,
            source_cluster_alias=source_cluster_alias,
            separator=flow.policy.separator,
            internal_topic_separator_enabled=flow.policy.internal_topic_separator_enabled,
        )
    return load_policy(
        flow.policy.class_name,
        separator=flow.policy.separator,
        internal_topic_separator_enabled=flow.policy.internal_topic_separator_enabled,
        source_cluster_alias=source_cluster_alias,
    )


def flow_policy(flow: FlowConfig) -> ReplicationPolicy:
    """Load the replication policy of ``flow`` (:func:`base_policy`, ``source.cluster.alias`` = its source).

    Raises ConfigError if the policy class cannot be loaded or configured.
    """
    policy = base_policy(flow, flow.source)
    if flow.transforms.routes:  # RegexRouter renames the flow's remote topics (docs/transforms.md)
        return RoutedReplicationPolicy(policy, build_chain(routers(flow.transforms)))
    return policy


def _has_cycle(edges: list[tuple[str, str]]) -> bool:
    """Whether the directed graph of ``edges`` has a cycle (depth first, three colours)."""
    adjacency: dict[str, list[str]] = {}
    for source, target in edges:
        adjacency.setdefault(source, []).append(target)
    done: set[str] = set()

    def visit(node: str, path: set[str]) -> bool:
        if node in path:
            return True
        if node in done:
            return False
        path.add(node)
        found = any(visit(nxt, path) for nxt in adjacency.get(node, []))
        path.discard(node)
        done.add(node)
        return found

    return any(visit(node, set()) for node in list(adjacency))


def check_cycles(config: MirrorConfig) -> None:
    """Refuse enabled flows that form a cycle through an identity-style flow, unless the file allows it.

    A cycle whose every flow has ``provenance.header.enable`` is allowed; header-on flows along which a record
    could travel more than 3 hops are refused (:func:`~mirrorspark.core.provenance.check_hop_bound`).

    Every enabled flow of the file counts, whichever ``--clusters`` a node serves. Raises ConfigError naming
    :attr:`MirrorConfig.source_name` (as :func:`~mirrorspark.mm2.topology.check_identity_cycles`).
    """
    enabled = [f for f in config.flows if f.enabled]
    headed = {(f.source, f.target) for f in enabled if f.provenance_header_enable}
    check_hop_bound(sorted(headed), where=config.source_name)
    if config.data_path.identity_allow_cycles or not _has_cycle([(f.source, f.target) for f in enabled]):
        return
    flows = [(f.source, f.target, flow_policy(f)) for f in enabled]
    _check_cycles_of(flows, headed, where=config.source_name)


def _check_cycles_of(flows: list[tuple[str, str, ReplicationPolicy]], headed: set[Edge], *, where: str) -> None:
    """Refuse identity cycles as :func:`check_identity_cycles`; a header-on flow that renames does not make one safe.

    Such a flow's records would stop going round, but each lap would create a topic renamed once more
    (``orders.dr.dr``), so only header-on flows that keep topic names count.
    """
    renaming = {
        (s, t)
        for s, t, p in flows
        if (s, t) in headed
        and is_identity_style(p, s)
        and p.format_remote_topic(s, IDENTITY_PROBE_TOPIC) != IDENTITY_PROBE_TOPIC
    }
    try:
        check_identity_cycles(flows, where=where, headed=headed - renaming)
    except ConfigError as e:
        if not renaming:
            raise
        check_identity_cycles(flows, where=where, headed=headed)  # refused anyway: the general message
        names = ", ".join(f"{s}->{t}" for s, t in sorted(renaming))
        raise ConfigError(
            f"{where}: {names} rename topics without their source alias and are on a replication cycle; "
            f"'{PROVENANCE_HEADER_KEY}' cannot make that cycle safe: records would stop, but each lap would create a "
            "topic renamed once more (e.g. orders.dr.dr). Fix: keep topic names (IdentityReplicationPolicy) on the "
            "flows of the cycle, or break the cycle"
        ) from e


def runnable_flows(config: MirrorConfig, targets: Sequence[str] | None = None) -> tuple[FlowConfig, ...]:
    """Return the flows a run replicates: :meth:`MirrorConfig.enabled_flows`, at least one.

    Raises ConfigError if no flow is enabled (for ``targets``); the message says how to enable one; UnknownAliasError if
    ``targets`` names an alias not in ``clusters``.
    """
    flows = config.enabled_flows(targets)
    if not flows:
        raise ConfigError(
            f"no replication flow is enabled in {config.source_name}"
            + (f" for target(s) {', '.join(targets)}" if targets else "")
            + ": set e.g. 'A->B.enabled=true'"
        )
    return flows


def spare_slots(flows: Iterable[FlowConfig]) -> int:
    """Return the task slots ``flows`` need besides their copy tasks': 1 when one samples continuously, else 0."""
    return 1 if any(f.verify_sampling_enable for f in flows) else 0


def most_task_slots(flows: Sequence[FlowConfig]) -> int:
    """Return the most Spark task slots ``flows`` may use: ``tasks.max`` each, plus :func:`spare_slots`."""
    return sum(f.tasks_max for f in flows) + spare_slots(flows)


__all__ = ["base_policy", "check_cycles", "flow_policy", "most_task_slots", "runnable_flows", "spare_slots"]
