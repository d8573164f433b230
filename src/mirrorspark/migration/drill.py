"""Disaster-recovery drills of a flow: what a failover would lose, re-read and skip, measured beforehand.

Read-only by default (:meth:`FlowDrill.predict`); ``--execute`` fails each group over to a shadow group,
reads it to the end, fails it back and deletes the shadow groups, also when interrupted. The result's
format is :mod:`mirrorspark.core.drills`.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable
from dataclasses import replace

from mirrorspark.client.context import Side
from mirrorspark.client.gap_reader import read_gap_ledger
from mirrorspark.client.history_topic import append_history_record
from mirrorspark.client.partition_states import timestamps_at
from mirrorspark.client.source_offset_reader import read_flow_source_offsets
from mirrorspark.config.model import MirrorConfig
from mirrorspark.core.drills import (
    DrillResult,
    GroupDrill,
    GroupPartitionDrill,
    PartitionRecoveryPoint,
    PolicyVerdict,
    RecoveryPoint,
    encode_drill,
    match_copies,
    matches_any_group,
    policy_verdict,
    predict_partition,
    shadow_group,
)
from mirrorspark.core.failover_policy import PartitionHealth
from mirrorspark.core.replica_rows import lag_seconds
from mirrorspark.errors import BadRegexError, ControlError, MirrorsparkError
from mirrorspark.kafka.admin import PartitionKey
from mirrorspark.migration.consumer_migration import ConsumerMigration
from mirrorspark.migration.drill_reads import read_fingerprints, read_from_committed
from mirrorspark.mm2.checkpoint_rules import rereads_at, upstream_topic_of
from mirrorspark.mm2.records import Checkpoint
from mirrorspark.mm2.translation import translate_back

log = logging.getLogger(__name__)


class FlowDrill:
    """A disaster-recovery drill of the flow ``source->target`` (``mirrorspark drill``).

    ``groups``: a regex drilled group ids match in full (``None`` = every group with checkpoints);
    ``timeout_s`` in seconds per call and read; ``clock_ms`` epoch ms. Raises UnknownAliasError or BadRegexError.
    """

    def __init__(
        self,
        config: MirrorConfig,
        *,
        source: str,
        target: str,
        groups: str | None = None,
        timeout_s: float | None = None,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        try:
            self.pattern = re.compile(groups) if groups is not None else None
        except re.error as e:
            raise BadRegexError(
                f"--groups '{groups}' is not a regular expression ({e}): give one the group ids match in full, "
                "e.g. --groups 'orders-.*'"
            ) from None
        self.migration = ConsumerMigration(config, source=source, target=target, timeout_s=timeout_s)
        self.ctx = self.migration.context
        self.flow_config = self.migration.flow_config
        self.source, self.target = source, target
        self._clock_ms = clock_ms
        self._positions: dict[PartitionKey, int] = {}
        self._ends: dict[PartitionKey, int] = {}
        self._starts: dict[PartitionKey, int] = {}

    def __enter__(self) -> FlowDrill:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the clients."""
        self.migration.close()

    # ------------------------------------------------------------------ prediction

    def predict(self) -> DrillResult:
        """Measure the recovery point and predict each group's failover, changing nothing; needs both clusters."""
        at = self._clock_ms()
        started = time.monotonic()
        m = self.migration
        m.require_reachable(self.target)
        m.require_reachable(self.source)
        recovery_point = self._recovery_point(at)
        latest = m.latest_checkpoints(None)
        names = [g for g in latest if self.pattern is None or self.pattern.fullmatch(g)]
        m.translator.load_syncs(read_to_end_required=False)
        groups = tuple(self._group(g, latest[g]) for g in names)
        return DrillResult(
            flow=self.flow_config.name,
            source=self.source,
            target=self.target,
            at=at,
            executed=False,
            recovery_point=recovery_point,
            groups=groups,
            policy=self._policy(list(latest)),
            duration_ms=int((time.monotonic() - started) * 1000),
        )

    def _recovery_point(self, now_ms: int) -> RecoveryPoint:
        """Read the source's end offsets, the flow's copied positions and the gap ledger."""
        ctx, src = self.ctx, self.migration.admin(self.source)
        topics = {
            t: n
            for t, n in sorted(src.list_topics().items())
            if n > 0 and ctx.replicates_topic(t) and not ctx.policy.is_heartbeats_topic(t)
        }
        keys = [(t, p) for t, n in topics.items() for p in range(n)]
        self._ends = src.end_offsets(keys)
        self._starts = starts = src.start_offsets(keys)
        timeout_s = self.migration.timeout_s
        stored = read_flow_source_offsets(ctx, "drill-offsets-consumer", timeout_s=timeout_s)
        self._positions = {k: stored[k] + 1 for k in keys if k in stored}
        oldest = {k: max(self._positions.get(k, 0), starts.get(k, 0)) for k in keys}
        waiting = {k: off for k, off in oldest.items() if self._ends.get(k, 0) > off}
        stamps = timestamps_at(ctx, waiting, timeout_s=min(timeout_s, 10.0), purpose="drill-source-consumer")
        rows = []
        for k in keys:
            records = max(0, self._ends.get(k, 0) - oldest[k])
            rows.append(
                PartitionRecoveryPoint(
                    topic=k[0],
                    partition=k[1],
                    end_offset=self._ends.get(k, 0),
                    position=self._positions.get(k, -1),
                    records=records,
                    seconds=lag_seconds(records, stamps.get(k), now_ms),
                )
            )
        gaps = read_gap_ledger(ctx, client_id=ctx.client_id("drill-gaps-consumer"), timeout_s=timeout_s).gaps
        return RecoveryPoint(tuple(rows), len(gaps), sum(g.lost for g in gaps))

    def _group(self, group: str, latest: dict[PartitionKey, Checkpoint]) -> GroupDrill:
        """Predict one group's failover from its newest checkpoints."""
        m, policy = self.migration, self.ctx.policy
        committed = m.group_offsets(self.source, group)
        upstream = {(t, p): upstream_topic_of(policy, self.source, self.target, t) for (t, p) in latest}
        # an identically named topic holds the target's own records too: a matching record before the checkpoint
        # proves nothing there, the clamp's bound is the prediction (core.identical_names, N2)
        shared = {k for k, up in upstream.items() if up is not None and m.translator.shares_name(up)}
        targets = {
            k: (cp.downstream_offset, cp.upstream_offset) for k, cp in latest.items() if upstream[k] and k not in shared
        }
        exact = self._verified(targets, upstream)
        rows = []
        for (topic, partition), cp in latest.items():
            up = upstream[(topic, partition)]
            if up is None:
                continue
            got = committed.get((up, partition))
            g = got[0] if got is not None else None
            r_cp, basis = (0, "exact") if (topic, partition) in exact else self._bound(group, up, partition, cp)
            if (topic, partition) in shared and r_cp is not None:
                basis = "identical-names"
            rereads: int | None
            skips: int | None
            if r_cp is None:
                rereads, skips = None, (0 if g is None or g >= cp.upstream_offset else None)
            else:
                rereads, skips = predict_partition(
                    g,
                    self._positions.get((up, partition)),
                    cp.upstream_offset,
                    r_cp,
                    source_start=self._starts.get((up, partition), 0),
                )
            end = self._ends.get((up, partition))
            rows.append(
                GroupPartitionDrill(
                    topic=topic,
                    partition=partition,
                    source_topic=up,
                    committed=g,
                    checkpoint_upstream=cp.upstream_offset,
                    target_offset=cp.downstream_offset,
                    rereads=rereads,
                    skips=skips,
                    basis=basis,
                    source_lag=max(0, end - g) if end is not None and g is not None else None,
                )
            )
        covered = {(r.source_topic, r.partition) for r in rows}
        missing = tuple(f"{t}-{p}" for (t, p) in sorted(committed) if (t, p) not in covered and (t, p) in self._ends)
        return GroupDrill(
            group=group,
            partitions=tuple(rows),
            target_members=m.admin(self.target).describe_group(group).members,
            source_members=m.admin(self.source).describe_group(group).members,
            without_checkpoint=missing,
        )

    def _verified(
        self, targets: dict[PartitionKey, tuple[int, int]], upstream: dict[PartitionKey, str | None]
    ) -> set[PartitionKey]:
        """Return the checkpoints whose downstream offset is exactly the copy of their upstream offset."""
        t_ranges: dict[PartitionKey, tuple[int, int]] = {}
        s_ranges: dict[PartitionKey, tuple[int, int]] = {}
        for k, (down, up_off) in targets.items():
            back = 1 if down > 0 and up_off > 0 else 0
            t_ranges[k] = (down - back, down - back + 1)
            s_ranges[(str(upstream[k]), k[1])] = (up_off - back, up_off - back + 1)
        if not targets:
            return set()
        timeout_s = min(self.migration.timeout_s, 30.0)
        t_read = self._read("target", t_ranges, timeout_s)
        s_read = self._read("source", s_ranges, timeout_s)
        out = set()
        for k, (down, up_off) in targets.items():
            t, s = t_read.get(k), s_read.get((str(upstream[k]), k[1]))
            if (t and s and t[0][1] == s[0][1]) or (down == 0 and up_off == 0 and not t):
                out.add(k)
        return out

    def _read(
        self, side: Side, ranges: dict[PartitionKey, tuple[int, int]], timeout_s: float
    ) -> dict[PartitionKey, list[tuple[int, bytes]]]:
        alias = self.target if side == "target" else self.source
        consumer = self.ctx.consumer(side, f"drill-{side}-reader", overrides={"enable.partition.eof": True})
        try:
            return read_fingerprints(consumer, ranges, timeout_s=timeout_s, alias=alias)
        finally:
            consumer.close()

    def _bound(self, group: str, up: str, partition: int, cp: Checkpoint) -> tuple[int | None, str]:
        """Re-reads at a checkpoint by MM2's rule over the flow's offset syncs, ``(None, "unknown")`` when too old."""
        live = self.migration.translator.translate(group, up, partition, cp.upstream_offset)
        if live.checkpoint is None or live.rereads < 0:
            return None, "unknown"
        return rereads_at(cp.downstream_offset, live.checkpoint.downstream_offset, live.rereads), "offset-syncs"

    def _policy(self, groups: list[str]) -> PolicyVerdict:
        """Say what ``mirrorspark.failover.policy`` would do now, from the source's metadata."""
        cfg, src = self.flow_config, self.migration.admin(self.source)
        topics = sorted({t for t, _ in self._ends})
        layouts = src.partition_metadata(topics) if topics else []
        min_isr: dict[str, int] = {}
        with contextlib.suppress(MirrorsparkError):
            for t, entries in src.topic_config_values(topics).items():
                with contextlib.suppress(KeyError, TypeError, ValueError):
                    min_isr[t] = int(entries["min.insync.replicas"])  # type: ignore[arg-type]
        health = [PartitionHealth.of(p, min_isr.get(p.topic, 1)) for p in layouts]
        return policy_verdict(
            cfg.failover_policy,
            health,
            source=self.source,
            dry_run=cfg.failover_dry_run,
            grace_ms=cfg.failover_grace_ms,
            group_patterns=cfg.failover_groups,
            groups=groups,
        )

    # ------------------------------------------------------------------ execution

    def execute(self, *, yes: bool = False, on_group: Callable[[str], None] | None = None) -> DrillResult:
        """Predict, then fail every selected group over to its shadow group and measure what it reads.

        Per group (one with members is ``refused``): its newest checkpoints go to ``mirrorspark-drill.<group>``
        on the target, a consumer reads to the end offsets (recovery time: commit to first record), each record
        is matched to its original (:func:`~mirrorspark.core.drills.match_copies`), and the final positions are
        failed back to the source. Both shadow groups are deleted whatever happens (Ctrl-C included).
        ``on_group`` is called with each group's id first. Raises ControlError for a missing or all-matching
        pattern without ``yes``.
        """
        if not yes and (self.pattern is None or matches_any_group(self.pattern.pattern)):
            shown = "no --groups" if self.pattern is None else f"--groups '{self.pattern.pattern}'"
            raise ControlError(
                f"drill --execute with {shown} drills every consumer group of the flow {self.flow_config.name}: "
                "name the groups with --groups REGEX, or add --yes to drill them all"
            )
        predicted = self.predict()
        started = time.monotonic()
        groups = []
        for g in predicted.groups:
            if on_group is not None:
                on_group(g.group)
            groups.append(self._execute_group(g))
        took = predicted.duration_ms + int((time.monotonic() - started) * 1000)
        return replace(predicted, executed=True, groups=tuple(groups), duration_ms=took)

    def _execute_group(self, g: GroupDrill) -> GroupDrill:
        m = self.migration
        shadow = shadow_group(g.group)
        busy = [
            f"{n} on '{alias}'"
            for alias, n in ((self.target, g.target_members), (self.source, g.source_members or 0))
            if n
        ]
        if busy:
            return replace(g, refused=f"group '{g.group}' has active members ({', '.join(busy)}): not drilled")
        if not g.partitions:
            return g
        tgt, src = m.admin(self.target), m.admin(self.source)
        for admin in (tgt, src):
            if admin.describe_group(shadow).active:
                raise ControlError(
                    f"the shadow group '{shadow}' has active members on cluster '{admin.alias}': another drill of "
                    f"'{g.group}' is running; wait for it to end"
                )
        try:
            return self._measure(g, shadow)
        finally:
            for admin in (tgt, src):
                try:
                    admin.delete_group(shadow)
                except MirrorsparkError as e:  # reported, never hides the drill's own outcome
                    log.warning("the shadow group '%s' on '%s' was not deleted: %s", shadow, admin.alias, e)

    def _measure(self, g: GroupDrill, shadow: str) -> GroupDrill:
        """Fail ``g`` over to ``shadow`` on the target, read it to the end, match, fail back."""
        m = self.migration
        tgt = m.admin(self.target)
        keys = [(p.topic, p.partition) for p in g.partitions]
        ends = tgt.end_offsets(keys, read_committed=True)
        tgt.alter_group_offsets(shadow, {(p.topic, p.partition): (p.target_offset, "") for p in g.partitions})
        committed_at = time.monotonic()
        consumer = self.ctx.consumer(
            "target",
            "drill-shadow-consumer",
            overrides={
                "group.id": shadow,
                "enable.auto.commit": False,
                "auto.offset.reset": "error",
                "enable.partition.eof": True,
                "isolation.level": "read_committed",
            },
        )
        try:
            read = read_from_committed(consumer, ends, timeout_s=m.timeout_s * 4, alias=self.target)
        finally:
            consumer.close()
        first = read.first_record_s if read.first_record_s is not None else read.ready_s
        recovery_ms = int(((first or committed_at) - committed_at) * 1000)
        matched = [self._match(p, read.records[(p.topic, p.partition)]) for p in g.partitions]
        rows = self._fail_back(shadow, matched, read.positions)
        total = sum(len(v) for v in read.records.values())
        return replace(g, partitions=tuple(rows), recovery_ms=recovery_ms, records_read=total)

    def _match(self, p: GroupPartitionDrill, target: list[bytes]) -> tuple[GroupPartitionDrill, int | None]:
        """Match a partition's records read on the target to the source's; also return the copy frontier."""
        g = p.committed if p.committed is not None else p.checkpoint_upstream
        key = (p.source_topic, p.partition)
        lo = max(self._starts.get(key, 0), min(g, p.checkpoint_upstream) - len(target) - 1)
        hi = min(self._ends.get(key, 0), max(g, p.checkpoint_upstream) + 2 * len(target) + 1)
        source = self._read("source", {key: (lo, hi)}, self.migration.timeout_s * 4)[key] if target else []
        got = match_copies(target, source, g)
        if got.unmatched:
            log.warning(
                "drill of %s-%d: %d record(s) read on '%s' have no original among the source's offsets %d..%d",
                p.topic,
                p.partition,
                got.unmatched,
                self.target,
                lo,
                hi - 1,
            )
        return replace(p, measured_rereads=got.rereads, measured_skips=got.skips), got.frontier

    def _fail_back(
        self,
        shadow: str,
        matched: list[tuple[GroupPartitionDrill, int | None]],
        positions: dict[PartitionKey, int],
    ) -> list[GroupPartitionDrill]:
        """Translate the shadow group's target positions back to the source and commit them there."""
        syncs = self.migration.translator.syncs
        store = syncs.store if syncs is not None else None
        out, offsets = [], {}
        for p, frontier in matched:
            pos = positions[(p.topic, p.partition)]
            back = translate_back(store, None, p.source_topic, p.partition, pos)
            if back is None:
                out.append(p)
                continue
            offsets[(p.source_topic, p.partition)] = (back.downstream_offset, "")
            rereads = back.rereads if frontier is None else max(0, frontier - back.downstream_offset)
            out.append(replace(p, failback_offset=back.downstream_offset, failback_rereads=rereads))
        self.migration.admin(self.source).alter_group_offsets(shadow, offsets)
        return out


def record_drill(migration: ConsumerMigration, result: DrillResult) -> str:
    """Append a drill's result to the flow's drill history on the target (created if missing); return the topic."""
    ctx = migration.context
    topic = ctx.internal_topics.drills
    append_history_record(
        ctx,
        migration.admin(migration.flow_config.target),
        topic,
        encode_drill(result),
        what=f"flow {migration.flow_config.name}: drill record",
        purpose="drill-producer",
        timeout_s=migration.timeout_s,
    )
    return topic


__all__ = ["FlowDrill", "record_drill"]
