"""The control half of MM2's ``MirrorSourceConnector`` for one flow: internal topics, discovery, remote topics, configs.

Discovery is MM2's ``shouldReplicateTopic`` with the lists of the config file and ``mirrorspark
control``; remote topics get the source's partitions and configs (``config.properties.exclude``),
grow with it and are placed by ``mirrorspark.replica.placement``; config sync is MM2's
``syncTopicConfigs`` (KIP-894).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mirrorspark.client.context import FlowContext
from mirrorspark.kafka.admin import ClusterAdmin, PartitionKey, TopicSpec
from mirrorspark.mm2.config_sync import topic_config_changes
from mirrorspark.mm2.filters import should_replicate_topic
from mirrorspark.replication.connector.internal_topic_specs import run_internal_topics
from mirrorspark.replication.connector.live_filters import LiveFilters
from mirrorspark.replication.connector.remote_placement import RemotePlacement

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TopicRefresh:
    """What one topic refresh found: topics ``wanted`` now, ``dropped`` ones, and every topic ``on_source``."""

    wanted: dict[str, int]
    dropped: tuple[str, ...]
    on_source: frozenset[str]


@dataclass
class RemoteTopicsPlan:
    """Remote topics a topic refresh creates and grows (``{remote: (partitions now, then)}``), and their sources."""

    create: list[TopicSpec] = field(default_factory=list)
    grow: dict[str, tuple[int, int]] = field(default_factory=dict)
    grow_assignments: dict[str, Sequence[Sequence[int]]] = field(default_factory=dict)
    source_of: dict[str, str] = field(default_factory=dict)


class TopicSync:
    """One flow's topics (see the module notes); not thread-safe."""

    def __init__(self, context: FlowContext, source_admin: ClusterAdmin, target_admin: ClusterAdmin) -> None:
        cfg = context.flow_config
        self.context = context
        self.config = cfg
        self._src_admin = source_admin
        self._tgt_admin = target_admin
        self.topic_filter = context.topic_filter
        self.live_filters = LiveFilters(context)
        self.placement = None if cfg.replica_placement is None else RemotePlacement(cfg.replica_placement, target_admin)
        self.topic_partitions: dict[str, int] = {}
        self.remote_topics: dict[str, str] = {}
        self.offsets_partitions = cfg.offset_storage_partitions
        self.collisions: dict[str, tuple[str, ...]] = {}

    def create_internal_topics(self) -> None:
        """Create the offsets, offset-syncs (when emitted) and progress topics if missing; raises ``ClusterError``."""
        cfg, names = self.config, self.context.internal_topics
        if self.placement is not None:
            self.placement.check()  # mirrorspark.replica.placement against the target's racks
        for topic in run_internal_topics(self.context):
            if topic.role in ("offsets", "offset_syncs", "progress_channel"):
                topic.ensure(self._src_admin if topic.side == "source" else self._tgt_admin)
            if topic.role == "offsets":
                listed = self._tgt_admin.list_topics()
                self.offsets_partitions = listed.get(names.offsets, cfg.offset_storage_partitions)

    def should_replicate(self, topic: str) -> bool:
        """MM2's ``MirrorSourceConnector.shouldReplicateTopic`` for this flow, with the lists in effect."""
        return should_replicate_topic(
            topic,
            topic_filter=self.topic_filter,
            policy=self.context.policy,
            target_alias=self.config.target,
            heartbeats_replication_enabled=self.config.heartbeats_replication_enabled,
        )

    def refresh(self) -> TopicRefresh:
        """List the source's topics; create or grow their remote topics; drop those no longer replicated.

        A replicated topic missing from the listing is described before it counts as deleted (a deletion is a
        gap, a passing metadata error is not). Raises ``ClusterError``.
        """
        wanted, source_topics = self.discover()
        self.apply_remote_topics(self.plan_remote_topics(wanted))
        dropped = tuple(t for t in self.topic_partitions if t not in wanted)
        for topic in dropped:
            self.forget(topic)
        return TopicRefresh(wanted, dropped, frozenset(source_topics))

    def discover(self, pending: Mapping[str, TopicSpec] | None = None) -> tuple[dict[str, int], dict[str, int]]:
        """Return ``({replicated source topic: partitions}, {every source topic: partitions})``, writing nothing.

        The lists in effect are read first (config file and control topic); ``pending``: source topics taken as
        existing (a plan's, created by the run before). Raises ``ClusterError``.
        """
        self.live_filters.poll()
        self.topic_filter = self.live_filters.topic_filter(self.topic_filter)
        source_topics = {**{t: s.partitions for t, s in (pending or {}).items()}, **self._src_admin.list_topics()}
        missing = [t for t in self.topic_partitions if t not in source_topics]
        if missing:  # listed with an error, or deleted: only a topic that cannot be described is gone
            source_topics.update({t: len(d.replicas) for t, d in self._src_admin.describe_topics(missing).items()})
        wanted = {t: n for t, n in sorted(source_topics.items()) if n > 0 and self.should_replicate(t)}
        return self._without_collisions(wanted), source_topics

    def _without_collisions(self, wanted: dict[str, int]) -> dict[str, int]:
        """Refuse source topics that would land on one remote topic, naming them; one the flow already copies stays.

        Checked on every refresh, before anything is created or copied: only the colliding topics are refused, the
        rest of the flow runs (:attr:`collisions`: remote topic -> its source topics; logged once per collision).
        """
        by_remote: dict[str, list[str]] = {}
        for topic in wanted:
            by_remote.setdefault(self.context.policy.format_remote_topic(self.config.source, topic), []).append(topic)
        refused: set[str] = set()
        for remote, topics in by_remote.items():
            if len(topics) < 2:
                self.collisions.pop(remote, None)
                continue
            kept = [t for t in topics if t in self.topic_partitions][:1]
            refused.update(t for t in topics if t not in kept)
            if self.collisions.get(remote) != tuple(topics):
                self.collisions[remote] = tuple(topics)
                log.error(
                    "%s: source topics %s would all be replicated to remote topic %r: refused %s (nothing of them "
                    "is written); rename one of them, exclude it from the flow or change the flow's renaming",
                    self.config.name,
                    " and ".join(repr(t) for t in topics),
                    remote,
                    ", ".join(repr(t) for t in topics if t not in kept),
                )
        return {t: n for t, n in wanted.items() if t not in refused}

    def plan_remote_topics(
        self, wanted: Mapping[str, int], pending: Mapping[str, TopicSpec] | None = None
    ) -> RemoteTopicsPlan:
        """Return the remote topics of ``wanted`` to create and to grow on the target, writing nothing.

        New topics get the source's configs that config sync copies (``config.properties.exclude``,
        ``use.defaults.from``; those of ``pending`` source topics, as :meth:`discover`) and, with
        ``mirrorspark.replica.placement``, their replicas. Raises ``ClusterError``.
        """
        cfg = self.config
        policy = self.context.policy
        pending = pending or {}
        target_topics = self._tgt_admin.list_topics()
        new_topics = [t for t in wanted if policy.format_remote_topic(cfg.source, t) not in target_topics]
        listed = [t for t in new_topics if t not in pending]
        configs = (
            self._src_admin.topic_configs(listed, include_defaults=cfg.use_defaults_from == "source") if listed else {}
        )
        configs.update({t: dict(pending[t].config) for t in new_topics if t in pending})
        plan = RemoteTopicsPlan()
        placement = self.placement
        if placement is not None:
            placement.begin_refresh()
        for topic, n in wanted.items():
            remote = policy.format_remote_topic(cfg.source, topic)
            if remote not in target_topics:
                conf = {
                    k: v
                    for k, v in configs.get(topic, {}).items()
                    if self.context.config_filter.should_replicate_config_property(k)
                }
                placed = placement.assignment(remote, n) if placement is not None else None
                plan.create.append(TopicSpec(remote, n, cfg.replication_factor, conf, placed))
                plan.source_of[remote] = topic
            elif target_topics[remote] < n:
                have = target_topics[remote]
                plan.grow[remote] = (have, n)
                plan.source_of[remote] = topic
                placed = placement.assignment(remote, n - have, first_partition=have) if placement is not None else None
                if placed is not None:
                    plan.grow_assignments[remote] = placed
        return plan

    def apply_remote_topics(self, plan: RemoteTopicsPlan) -> None:
        """Create and grow the remote topics of ``plan`` (:meth:`plan_remote_topics`); raises ``ClusterError``."""
        cfg = self.config
        if plan.create:
            created = self._tgt_admin.create_topics(plan.create, wait_for_leaders=False)
            if created:
                log.info(
                    "%s: created %d remote topic(s): %s",
                    cfg.name,
                    len(created),
                    ", ".join(created[:10]) + (" …" if len(created) > 10 else ""),
                )
        if plan.grow:
            grow = {remote: n for remote, (_, n) in plan.grow.items()}
            self._tgt_admin.create_partitions(grow, assignments=plan.grow_assignments)
            log.info("%s: grew remote topics %s", cfg.name, grow)

    def add(self, wanted: dict[str, int]) -> list[PartitionKey]:
        """Take the partitions of ``wanted`` new to the flow; return them in discovery order."""
        added: list[PartitionKey] = []
        for topic, n in wanted.items():
            self.remote_topics[topic] = self.context.policy.format_remote_topic(self.config.source, topic)
            have = self.topic_partitions.get(topic, 0)
            if n > have:
                added.extend((topic, p) for p in range(have, n))
                self.topic_partitions[topic] = n
        return added

    def forget(self, topic: str) -> None:
        """Stop knowing ``topic`` (dropped from the lists, or re-created: added again as new)."""
        self.topic_partitions.pop(topic, None)
        self.remote_topics.pop(topic, None)

    def sync_configs(self) -> dict[str, dict[str, str | None]]:
        """Bring remote topics' configs in line with their sources (MM2 ``syncTopicConfigs``, KIP-894).

        Returns ``{remote topic: {name: value or None (deleted)}}`` of the changes; raises ``ClusterError``.
        """
        topics = sorted(self.topic_partitions)
        changes = {
            remote: {name: to for name, (_, to) in delta.items()}
            for remote, delta in self.config_changes({t: self.remote_topics[t] for t in topics}).items()
        }
        if changes:
            self._tgt_admin.alter_topic_configs(changes)
            log.info("%s: synced topic configs %s", self.config.name, changes)
        return changes

    def config_changes(self, remote_of: Mapping[str, str]) -> dict[str, dict[str, tuple[str | None, str | None]]]:
        """Return what config sync changes on existing remote topics, writing nothing.

        ``remote_of``: ``{source topic: remote topic}``. Returns ``{remote topic: {name: (now, then)}}``, a
        value ``None`` when unset (then: the override deleted); raises ``ClusterError``.
        """
        if not remote_of:
            return {}
        source = self._src_admin.describe_topic_configs(sorted(remote_of))
        remote_of = {t: r for t, r in remote_of.items() if t in source}
        target = self._tgt_admin.describe_topic_configs(remote_of.values())
        changes: dict[str, dict[str, tuple[str | None, str | None]]] = {}
        for topic, remote in sorted(remote_of.items()):
            have = target.get(remote)
            if have is None:
                continue
            delta = topic_config_changes(source[topic], have, self.context.config_filter)
            if delta:
                changes[remote] = {k: (have[k].value if k in have else None, v) for k, v in delta.items()}
        return changes

    def close(self) -> None:
        """Release the live filters' consumer."""
        self.live_filters.close()


__all__ = ["RemoteTopicsPlan", "TopicRefresh", "TopicSync"]
