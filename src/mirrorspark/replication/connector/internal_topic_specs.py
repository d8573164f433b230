"""How a run creates each internal topic of a flow: cluster, partitions, replication factor and configs, declared once.

Every component that creates one at its start (topic sync, gap ledger, totals, checkpoints, lease,
heartbeats) takes its :class:`InternalTopicSpec` from here, and ``mirrorspark plan`` lists the same
ones, so the plan cannot drift from the run. The names are :class:`~mirrorspark.config.internal_topics.InternalTopics`'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mirrorspark.client.context import FlowContext, Side
from mirrorspark.kafka.admin import ClusterAdmin, TopicSpec

Role = Literal["offsets", "offset_syncs", "progress_channel", "gaps", "totals", "checkpoints", "lease", "heartbeats"]
"""Which internal topic (the :class:`~mirrorspark.config.internal_topics.InternalTopics` attribute)."""

_COMPACT = {"cleanup.policy": "compact"}


@dataclass(frozen=True)
class InternalTopicSpec:
    """One internal topic a run creates if missing: its ``role``, the ``side`` of the flow it lives on and its spec."""

    role: Role
    side: Side
    spec: TopicSpec

    def ensure(self, admin: ClusterAdmin) -> bool:
        """Create the topic on ``admin``'s cluster unless it exists; return whether it did (``ClusterError``)."""
        s = self.spec
        return admin.ensure_topic(
            s.name, partitions=s.partitions, replication_factor=s.replication_factor, config=s.config
        )


def internal_topic(context: FlowContext, role: Role) -> InternalTopicSpec:
    """Return how a run creates the flow's ``role`` topic (whether it does at all: :func:`run_internal_topics`)."""
    cfg, names = context.flow_config, context.internal_topics
    cp_rf = cfg.checkpoints_topic_replication_factor
    side: Side = "target"
    if role == "offsets":
        spec = TopicSpec(names.offsets, cfg.offset_storage_partitions, cfg.offset_storage_replication_factor, _COMPACT)
    elif role == "offset_syncs":
        side = "source" if cfg.offset_syncs_topic_location == "source" else "target"
        spec = TopicSpec(names.offset_syncs, 1, cfg.offset_syncs_topic_replication_factor, _COMPACT)
    elif role == "progress_channel":
        # the last hour of reports stays a readable stream; the newest per partition is kept for good
        config = {**_COMPACT, "min.compaction.lag.ms": "3600000"}
        spec = TopicSpec(names.progress_channel, 1, cfg.offset_storage_replication_factor, config)
    elif role == "heartbeats":
        spec = TopicSpec(names.heartbeats, 1, cfg.heartbeats_topic_replication_factor, _COMPACT)
    else:  # gaps, totals, checkpoints, lease: one compacted partition each, as the checkpoints topic
        spec = TopicSpec(getattr(names, role), 1, cp_rf, _COMPACT)
    return InternalTopicSpec(role, side, spec)


def run_internal_topics(context: FlowContext) -> list[InternalTopicSpec]:
    """Return the internal topics a run of the enabled flow creates at its start, in creation order (not heartbeats)."""
    cfg = context.flow_config
    roles: list[Role] = ["offsets"]
    if cfg.emit_offset_syncs_enabled:
        roles.append("offset_syncs")
    roles += ["progress_channel", "gaps", "totals"]
    if cfg.emit_checkpoints_enabled:
        roles.append("checkpoints")
    roles.append("lease")
    return [internal_topic(context, r) for r in roles]


__all__ = ["InternalTopicSpec", "Role", "internal_topic", "run_internal_topics"]
