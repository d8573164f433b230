"""The consumer migration tools (SRM's ``srm-control offsets``, MM2's ``RemoteClusterUtils``)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
from collections.abc import Sequence

from mirrorspark.client.checkpoint_reader import read_checkpoints
from mirrorspark.client.context import ReplicationContext, Side
from mirrorspark.client.failover import commit_failover, failover_offsets, latest_by_group
from mirrorspark.client.translator import OffsetTranslator
from mirrorspark.config.model import MirrorConfig
from mirrorspark.errors import ClusterUnreachableError, ControlError
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.kafka.factory import LIBRDKAFKA_LOGGER
from mirrorspark.migration.plans import FailoverPlan, OffsetTranslation
from mirrorspark.mm2.checkpoint_rules import TopicPartitionKey, rename_topic, rereads_at, upstream_topic_of
from mirrorspark.mm2.records import Checkpoint


class ConsumerMigration:
    """Operator tools for moving consumer groups from S to T (SRM's ``srm-control offsets``, MM2's RemoteClusterUtils).

    Reads the flow's checkpoints on T (and, where needed, the group on S and the offset syncs); only
    :meth:`failover` writes. ``timeout_s`` in seconds per cluster call and checkpoints read (``None`` = the
    flow's ``admin.timeout.ms``). Raises UnknownAliasError before connecting; every command naming an
    *unknown group* (no checkpoints on T, nothing committed or no members on S) raises ControlError. Not
    thread-safe.
    """

    def __init__(
        self,
        config: MirrorConfig,
        *,
        source: str,
        target: str,
        timeout_s: float | None = None,
        context: ReplicationContext | None = None,
    ) -> None:
        self.flow_config = config.flow(source, target)
        contexts = context if context is not None else ReplicationContext(config)
        self.context = contexts.flow(source, target)
        self.source = source
        self.target = target
        self._explicit_timeout_s = timeout_s
        self.timeout_s = timeout_s if timeout_s is not None else self.flow_config.admin_timeout_s
        self.policy = self.context.policy
        self.topic_filter = self.context.topic_filter
        self.checkpoints_topic = self.context.internal_topics.checkpoints
        self.translator = OffsetTranslator(self.context, reverse=contexts.reverse(self.context))
        self._sides: dict[str, Side] = {source: "source", target: "target"}
        self._admins: dict[str, ClusterAdmin] = {}
        self._reachable: dict[str, bool] = {}
        self._syncs_loaded = False

    def __enter__(self) -> ConsumerMigration:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ clusters

    def admin(self, alias: str) -> ClusterAdmin:
        """Return the admin wrapper of ``alias`` (the source or target), created at first use."""
        if alias not in self._admins:
            side = self._sides[alias]
            admin = self.context.cluster_admin(
                side, f"migration-{side}-admin", overrides={"logger": logging.getLogger(LIBRDKAFKA_LOGGER)}
            )
            if self._explicit_timeout_s is not None:
                admin = admin.with_timeout(self._explicit_timeout_s, setting="--timeout")
            self._admins[alias] = admin
        return self._admins[alias]

    def group_offsets(self, alias: str, group: str) -> dict[TopicPartitionKey, tuple[int, str]]:
        """Read a group's committed offsets on ``alias`` with a consumer of the group.

        Never Admin ``listConsumerGroupOffsets``: librdkafka's admin client crashes when a group coordinator
        moves, which is likely while a source fails.
        """
        side = self._sides[alias]
        reader = self.context.consumer(side, f"migration-{side}-group-reader", overrides={"group.id": group})
        try:
            return self.admin(alias).committed_group_offsets(reader, group)
        finally:
            reader.close()

    def require_reachable(self, alias: str) -> None:
        """Fail fast with ClusterUnreachableError unless a broker of ``alias`` answers."""
        if self._reachable.get(alias):
            return
        try:
            self.admin(alias).check_reachable(timeout_s=min(10.0, self.timeout_s))
        except ClusterUnreachableError:
            self._reachable[alias] = False
            del self._admins[alias]  # destroyed: it would keep reconnecting in the background
            raise
        self._reachable[alias] = True

    def reachable(self, alias: str) -> bool:
        """Whether a broker of ``alias`` answers (checked once)."""
        if alias not in self._reachable:
            with contextlib.suppress(ClusterUnreachableError):
                self.require_reachable(alias)
        return self._reachable[alias]

    def _require_known(self, group: str) -> None:
        """Raise ControlError for a group without checkpoints unless it exists on the source."""
        where = f"no checkpoints in '{self.checkpoints_topic}' on '{self.target}'"
        if not self.reachable(self.source):
            raise ControlError(
                f"unknown group '{group}' ({where}; cluster '{self.source}' is unreachable, so the group could "
                "not be looked up there): check the group id, --source and --target"
            )
        if self.admin(self.source).describe_group(group).exists:
            return
        if self.group_offsets(self.source, group):
            return
        raise ControlError(
            f"unknown group '{group}': no such consumer group on cluster '{self.source}' ({where}); "
            "check the group id, --source and --target"
        )

    def _load_syncs(self) -> None:
        if not self._syncs_loaded:
            self.translator.load_syncs(read_to_end_required=False)
            self._syncs_loaded = True

    # ------------------------------------------------------------------ reading checkpoints

    def _read_checkpoints(self) -> list[Checkpoint]:
        """Every decodable checkpoint of ``<S>.checkpoints.internal`` on T, in topic order."""
        return read_checkpoints(
            self.flow_config.target_consumer,
            self.flow_config.target_admin,
            self.target,
            self.checkpoints_topic,
            client_id=self.context.client_id("checkpoints-target-consumer"),
            timeout_s=self.timeout_s,
            clients=self.context.clients,
        )

    def checkpoints(self, group: str | None = None) -> list[Checkpoint]:
        """Return the checkpoints on the target in topic order (``group``'s only if given); ControlError if unknown."""
        self.require_reachable(self.target)
        records = self._read_checkpoints()
        if group is None:
            return records
        mine = [cp for cp in records if cp.consumer_group_id == group]
        if not mine:
            self._require_known(group)
        return mine

    def latest_checkpoints(self, groups: Sequence[str] | None = None) -> dict[str, dict[TopicPartitionKey, Checkpoint]]:
        """Read the current checkpoint per group and downstream partition, sorted (MM2 ``translateOffsets``).

        ``groups`` ``None`` = every group with checkpoints; a known group without any maps to ``{}``; an
        unknown one raises ControlError.
        """
        self.require_reachable(self.target)
        by_group = latest_by_group(self._read_checkpoints())
        names = list(by_group) if groups is None else list(dict.fromkeys(groups))
        out: dict[str, dict[TopicPartitionKey, Checkpoint]] = {}
        for group in names:
            latest = by_group.get(group, {})
            if not latest:
                self._require_known(group)
            out[group] = latest
        return out

    # ------------------------------------------------------------------ live translation

    def translate_group(self, group: str) -> list[OffsetTranslation]:
        """Translate a source group's committed offsets to the target now, sorted (``mirrorspark offsets translate``).

        Live through the flow's offset syncs with MM2's rule, or in reverse through the opposite flow's for a
        failback topic; a latest checkpoint for exactly the committed offset is preferred (the running flow may
        have translated it exactly). Raises ControlError for an unknown group, ClusterError when a call fails.
        """
        self.require_reachable(self.source)
        self.require_reachable(self.target)
        latest = self.latest_checkpoints([group])[group]
        committed = self.group_offsets(self.source, group)
        self._load_syncs()
        tgt_admin = self.admin(self.target)
        rows = []
        renamed: dict[TopicPartitionKey, str] = {}
        for topic, partition in committed:
            if self.topic_filter.should_replicate_topic(topic):
                renamed[(topic, partition)] = rename_topic(self.policy, self.source, self.target, topic)
        existing = tgt_admin.list_topics()
        ends = tgt_admin.end_offsets([(t, p) for (_, p), t in renamed.items() if t in existing and p < existing[t]])
        for (topic, partition), target_topic in sorted(renamed.items()):
            offset, metadata = committed[(topic, partition)]
            live = self.translator.translate(group, topic, partition, offset, metadata)
            live_cp = live.checkpoint
            live_rereads = live.rereads if live.rereads >= 0 else None
            cp = latest.get((target_topic, partition))
            target_offset: int | None
            rereads: int | None
            if cp is not None and cp.upstream_offset == offset:
                target_offset, basis = cp.downstream_offset, "checkpoint"
                rereads = (
                    rereads_at(cp.downstream_offset, live_cp.downstream_offset, live_rereads)
                    if live_cp is not None and live_rereads is not None
                    else None
                )
            elif live_cp is not None:
                target_offset, basis, rereads = live_cp.downstream_offset, "offset-syncs", live_rereads
            else:
                target_offset, basis, rereads = None, "none", None
            rows.append(
                OffsetTranslation(
                    group=group,
                    topic=topic,
                    partition=partition,
                    source_offset=offset,
                    target_topic=target_topic,
                    target_offset=target_offset,
                    target_end_offset=ends.get((target_topic, partition)),
                    rereads=rereads,
                    basis=basis,
                )
            )
        return rows

    # ------------------------------------------------------------------ failover

    def failover(self, group: str, *, dry_run: bool = False) -> FailoverPlan:
        """Commit a group's latest checkpoints to the same group on the target (``mirrorspark failover``).

        Written with the source commit's metadata, forward or back; needs only the target (with the source
        reachable, re-reads and source members are counted too). ``dry_run`` changes nothing. Raises
        ControlError when the group is unknown, has no checkpoints or has active members on the target.
        """
        self.require_reachable(self.target)
        latest = self.latest_checkpoints([group])[group]
        if not latest:
            raise ControlError(
                f"group '{group}' has no checkpoints in '{self.checkpoints_topic}' on '{self.target}' yet: "
                f"nothing to fail over; let the flow {self.flow_config.name} run until it emits them "
                "(emit.checkpoints.interval.seconds)"
            )
        source_members: int | None = None
        upstream: dict[TopicPartitionKey, str] = {}
        now: dict[TopicPartitionKey, int] = {}  # the group's committed offsets on the source, by downstream key
        if self.reachable(self.source):
            source_members = self.admin(self.source).describe_group(group).members
            for (topic, partition), (offset, _) in self.group_offsets(self.source, group).items():
                renamed = (rename_topic(self.policy, self.source, self.target, topic), partition)
                upstream[renamed] = topic
                now[renamed] = offset
            self._load_syncs()

        def rereads(topic: str, partition: int, cp: Checkpoint) -> int | None:
            if not self._syncs_loaded:
                return None
            up = upstream.get((topic, partition)) or upstream_topic_of(self.policy, self.source, self.target, topic)
            if up is None:
                return None
            live = self.translator.translate(group, up, partition, cp.upstream_offset)
            if live.checkpoint is None or live.rereads < 0:
                return None
            return rereads_at(cp.downstream_offset, live.checkpoint.downstream_offset, live.rereads)

        tgt_admin = self.admin(self.target)
        offsets = failover_offsets(
            tgt_admin,
            group,
            latest,
            rereads=rereads,
            committed=functools.partial(self.group_offsets, self.target),
        )
        offsets = [dataclasses.replace(o, source_offset=now.get((o.topic, o.partition))) for o in offsets]
        if not dry_run:
            commit_failover(tgt_admin, group, offsets)
        return FailoverPlan(
            group=group,
            source=self.source,
            target=self.target,
            offsets=tuple(offsets),
            applied=not dry_run,
            source_members=source_members,
        )

    def close(self) -> None:
        """Release the consumers (admin clients close when collected)."""
        self.translator.close()


__all__ = ["ConsumerMigration"]
