"""What a run would do now, per enabled flow, written nowhere (``mirrorspark plan``): the run's own computations.

Topics come from :class:`~mirrorspark.replication.connector.topic_sync.TopicSync` (``discover``,
``plan_remote_topics``, ``config_changes``), ACLs from
:meth:`~mirrorspark.replication.connector.acl_sync.TopicAclSync.missing`, group offsets from
:meth:`~mirrorspark.replication.connector.group_offset_sync.GroupOffsetSync.plan` over the checkpoints
stored on the target, internal topics from
:mod:`~mirrorspark.replication.connector.internal_topic_specs`: the same functions the run calls before it
writes, so the plan cannot drift from the run. What a principal lacks is read from the cluster's authorized
operations (KIP-430) and a validate-only ``CreateTopics`` of every topic to create. No Spark, no write.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from confluent_kafka import KafkaError
from confluent_kafka.admin import AclBinding, AclOperation

from mirrorspark.client.context import FlowContext, ReplicationContext, Side
from mirrorspark.config.runnable import runnable_flows
from mirrorspark.errors import ClusterError
from mirrorspark.kafka.admin import ClusterAdmin, TopicSpec
from mirrorspark.replication.connector.acl_sync import TopicAclSync
from mirrorspark.replication.connector.checkpoint_emitter import CheckpointEmitter
from mirrorspark.replication.connector.internal_topic_specs import (
    InternalTopicSpec,
    internal_topic,
    run_internal_topics,
)
from mirrorspark.replication.connector.topic_sync import RemoteTopicsPlan, TopicSync

_DENIED = frozenset({KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED})


@dataclass(frozen=True)
class TopicCreation:
    """A topic a run would create: name on its cluster, partitions, replication factor (-1: broker default), configs."""

    topic: str
    partitions: int
    replication_factor: int
    config: dict[str, str]
    source_topic: str | None = None
    """The source topic a remote topic replicates (``None``: an internal topic)."""


@dataclass(frozen=True)
class TopicChange:
    """An existing remote topic a run would change: partitions ``(now, then)`` and configs ``{name: (now, then)}``.

    A config value ``None`` is unset (then: the target's override deleted).
    """

    topic: str
    source_topic: str
    partitions: tuple[int, int] | None = None
    configs: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)


@dataclass(frozen=True)
class AclAddition:
    """A topic ACL binding ACL sync would create on the target (LITERAL TOPIC, MM2's mapping)."""

    topic: str
    principal: str
    host: str
    operation: str
    permission: str


@dataclass(frozen=True)
class GroupOffsetWrite:
    """A committed offset group offset sync would write: ``before`` (``None``: none committed) → ``after``."""

    group: str
    topic: str
    partition: int
    before: int | None
    after: int


@dataclass(frozen=True)
class SkippedGroup:
    """A target group group offset sync would leave alone now: ``reason`` ``"active"`` (members) or ``"unknown"``."""

    group: str
    state: str | None
    reason: str


@dataclass(frozen=True)
class InternalTopicCreation(TopicCreation):
    """An internal topic a run would create on ``cluster`` (its ``role``: ``offsets``, ``heartbeats`` ...)."""

    cluster: str = ""
    role: str = ""


@dataclass(frozen=True)
class Lack:
    """An operation the run needs that the principal of ``cluster`` is not authorized for, and what needs it."""

    cluster: str
    operation: str
    resource: str
    needed_for: str


@dataclass(frozen=True)
class FlowPlan:
    """What a run would do for one flow ``source->target`` now; ``problems``: what it would fail or skip (text)."""

    flow: str
    source: str
    target: str
    topics_to_create: tuple[TopicCreation, ...] = ()
    topics_to_change: tuple[TopicChange, ...] = ()
    acls_to_add: tuple[AclAddition, ...] = ()
    group_offsets: tuple[GroupOffsetWrite, ...] = ()
    skipped_groups: tuple[SkippedGroup, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def changes(self) -> bool:
        """Whether the run would write anything for the flow (topics, configs, partitions, ACLs, group offsets)."""
        return bool(self.topics_to_create or self.topics_to_change or self.acls_to_add or self.group_offsets)


@dataclass(frozen=True)
class RunPlan:
    """What a run of the enabled flows would do now: per flow, the internal topics to create, what principals lack.

    ``problems``: topics the brokers would refuse to create for another reason than a permission (text).
    """

    flows: tuple[FlowPlan, ...]
    internal_topics: tuple[InternalTopicCreation, ...]
    lacks: tuple[Lack, ...]
    problems: tuple[str, ...] = ()

    @property
    def changes(self) -> bool:
        """Whether the run would write anything, or would need an operation a principal lacks."""
        return bool(self.internal_topics or self.lacks or any(f.changes for f in self.flows))


class _Planner:
    """Builds a :class:`RunPlan`: one admin wrapper per cluster and side, the flows' own components."""

    def __init__(
        self, context: ReplicationContext, flows: Sequence[FlowContext], targets: Sequence[str] | None
    ) -> None:
        self.context = context
        self.flows = flows
        self.targets = targets
        self.admins: dict[str, ClusterAdmin] = {}
        self.listed: dict[str, dict[str, int]] = {}
        self.creations: dict[str, list[TopicSpec]] = {}  # cluster -> topics to create (validated for CREATE)
        self.lacks: list[Lack] = []
        self.problems: list[str] = []

    def admin(self, ctx: FlowContext, side: Side) -> ClusterAdmin:
        alias = ctx.alias(side)
        if alias not in self.admins:
            self.admins[alias] = ctx.cluster_admin(side, f"plan-{side}-admin")
        return self.admins[alias]

    def topics_of(self, alias: str) -> dict[str, int]:
        if alias not in self.listed:
            self.listed[alias] = self.admins[alias].list_topics()
        return self.listed[alias]

    def flow(self, ctx: FlowContext, internal: Sequence[InternalTopicCreation]) -> FlowPlan:
        cfg = ctx.flow_config
        src, tgt = self.admin(ctx, "source"), self.admin(ctx, "target")
        # created on the source before the flow starts (its heartbeats, by the reverse heartbeat connector)
        pending = {
            t.topic: TopicSpec(t.topic, t.partitions, t.replication_factor, t.config)
            for t in internal
            if t.cluster == cfg.source
        }
        topics = TopicSync(ctx, src, tgt)
        with contextlib.closing(topics):
            wanted, _ = topics.discover(pending)
            remote = topics.plan_remote_topics(wanted, pending)
            created = {s.name for s in remote.create}
            existing = {t: ctx.policy.format_remote_topic(cfg.source, t) for t in wanted}
            existing = {t: r for t, r in existing.items() if r not in created and t not in pending}
            configs = topics.config_changes(existing) if cfg.sync_topic_configs_enabled else {}
            problems = [
                f"source topics {' and '.join(repr(t) for t in both)} would land on one remote topic {remote!r}: "
                "the run refuses them (rename one, exclude it, or change the flow's renaming)"
                for remote, both in topics.collisions.items()
            ]
            acls = self._acls(ctx, topics, src, tgt, problems) if cfg.sync_topic_acls_enabled else []
        self.creations.setdefault(cfg.target, []).extend(remote.create)
        writes, skipped = self._groups(ctx, problems)
        return FlowPlan(
            cfg.name,
            cfg.source,
            cfg.target,
            topics_to_create=tuple(
                TopicCreation(s.name, s.partitions, s.replication_factor, dict(s.config), remote.source_of[s.name])
                for s in remote.create
            ),
            topics_to_change=_changes(remote, configs, existing),
            acls_to_add=tuple(_acl(b) for b in acls),
            group_offsets=writes,
            skipped_groups=skipped,
            problems=tuple(problems),
        )

    def _acls(
        self, ctx: FlowContext, topics: TopicSync, src: ClusterAdmin, tgt: ClusterAdmin, problems: list[str]
    ) -> list[AclBinding]:
        cfg = ctx.flow_config
        sync = TopicAclSync(
            name=cfg.name,
            source=cfg.source,
            target=cfg.target,
            admins=lambda: (src, tgt),
            should_replicate=topics.should_replicate,
            remote_topic=lambda t: ctx.policy.format_remote_topic(cfg.source, t),
        )
        try:
            missing = sync.missing()
        except ClusterError as e:
            if e.kafka_code == "CLUSTER_AUTHORIZATION_FAILED":
                self.lacks.append(Lack(cfg.source, "DESCRIBE", "cluster", f"{cfg.name}: ACL sync"))
            else:
                problems.append(f"ACL sync: {e.message}")
            return []
        if missing and AclOperation.ALTER not in _cluster_operations(tgt):
            self.lacks.append(Lack(cfg.target, "ALTER", "cluster", f"{cfg.name}: ACL sync"))
        return missing

    def _groups(
        self, ctx: FlowContext, problems: list[str]
    ) -> tuple[tuple[GroupOffsetWrite, ...], tuple[SkippedGroup, ...]]:
        cfg = ctx.flow_config
        if not (cfg.emit_checkpoints_enabled and cfg.sync_group_offsets_enabled):
            return (), ()
        emitter = CheckpointEmitter(ctx.for_connector("checkpoint"), reverse=None)
        with contextlib.closing(emitter):
            emitter.load_checkpoints(timeout_s=cfg.admin_timeout_s)
            plans = emitter.group_sync.plan()
        writes: list[GroupOffsetWrite] = []
        skipped: list[SkippedGroup] = []
        for group, p in sorted(plans.items()):
            if p.skipped is not None:
                skipped.append(SkippedGroup(group, p.state, p.skipped))
                if p.error is not None and p.skipped == "unknown":
                    problems.append(f"group {group}: state or offsets unreadable: {p.error}")
            for (topic, partition), (offset, _) in sorted(p.offsets.items()):
                writes.append(GroupOffsetWrite(group, topic, partition, p.before.get((topic, partition)), offset))
            for cp, end in p.invalid:
                where = "does not exist" if end is None else f"ends at {end}"
                problems.append(
                    f"group {group}: checkpoint {cp.topic}-{cp.partition}@{cp.downstream_offset} not synced: the "
                    f"partition {where} (foreign or corrupt checkpoint)"
                )
        return tuple(writes), tuple(skipped)

    def internal(self) -> list[InternalTopicCreation]:
        specs: dict[tuple[str, str], tuple[InternalTopicSpec, str]] = {}
        for ctx in self.flows:
            self.admin(ctx, "source"), self.admin(ctx, "target")
            for s in run_internal_topics(ctx):
                specs.setdefault((ctx.alias(s.side), s.spec.name), (s, ctx.alias(s.side)))
        for ctx in self.heartbeat_flows():
            s = internal_topic(ctx, "heartbeats")
            self.admin(ctx, "target")
            specs.setdefault((ctx.alias("target"), s.spec.name), (s, ctx.alias("target")))
        out: list[InternalTopicCreation] = []
        for (alias, name), (s, _) in specs.items():
            if name in self.topics_of(alias):
                continue
            t = s.spec
            out.append(
                InternalTopicCreation(
                    name, t.partitions, t.replication_factor, dict(t.config), cluster=alias, role=s.role
                )
            )
            self.creations.setdefault(alias, []).append(t)
        return out

    def heartbeat_flows(self) -> list[FlowContext]:
        flows = self.context.config.heartbeat_flows(self.targets)
        return [self.context.of(f).for_connector("heartbeat") for f in flows if f.emit_heartbeats_enabled]

    def creation_lacks(self) -> None:
        for alias, specs in sorted(self.creations.items()):
            if not specs:
                continue
            for topic, err in sorted(self.admins[alias].validate_topics(specs).items()):
                if err.code() in _DENIED:
                    self.lacks.append(Lack(alias, "CREATE", f"topic {topic}", "topic creation"))
                else:
                    why = f"{err.str()} ({err.name()})"
                    self.problems.append(f"cluster '{alias}' would refuse to create topic '{topic}': {why}")

    def close(self) -> None:
        for admin in self.admins.values():
            admin.close()


def plan_run(context: ReplicationContext, targets: Sequence[str] | None = None) -> RunPlan:
    """Return what a run of the enabled flows (MM2's ``--clusters`` ``targets``) would do now, writing nothing.

    Raises ``ConfigError`` when no flow is enabled, ``ClusterUnreachableError`` or ``ClusterError`` when a
    cluster cannot be read (a missing permission is reported in :attr:`RunPlan.lacks`, not raised, where the
    run's own computation tells it apart).
    """
    flows = [context.of(f) for f in runnable_flows(context.config, targets)]
    planner = _Planner(context, flows, targets)
    try:
        internal = planner.internal()
        flow_plans = tuple(planner.flow(ctx, internal) for ctx in flows)
        planner.creation_lacks()
        return RunPlan(flow_plans, tuple(internal), tuple(dict.fromkeys(planner.lacks)), tuple(planner.problems))
    finally:
        planner.close()


def _changes(
    remote: RemoteTopicsPlan, configs: dict[str, dict[str, tuple[str | None, str | None]]], existing: dict[str, str]
) -> tuple[TopicChange, ...]:
    source_of = {r: t for t, r in existing.items()}
    names = sorted(set(remote.grow) | set(configs))
    return tuple(
        TopicChange(name, source_of.get(name) or remote.source_of[name], remote.grow.get(name), configs.get(name, {}))
        for name in names
    )


def _acl(b: AclBinding) -> AclAddition:
    return AclAddition(
        b.name,
        b.principal,
        b.host,
        b.operation.name,  # type: ignore[union-attr]
        b.permission_type.name,  # type: ignore[union-attr]
    )


def _cluster_operations(admin: ClusterAdmin) -> list[AclOperation]:
    """Return the principal's operations on ``admin``'s cluster (KIP-430; every one without an authorizer)."""
    return list(admin.describe_cluster(include_authorized_operations=True).authorized_operations or [])


__all__ = [
    "AclAddition",
    "FlowPlan",
    "GroupOffsetWrite",
    "InternalTopicCreation",
    "Lack",
    "RunPlan",
    "SkippedGroup",
    "TopicChange",
    "TopicCreation",
    "plan_run",
]
