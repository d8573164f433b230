"""Where each replicated source partition of a flow stands, and the gaps found on the way.

A flow's :class:`Positions` hold every partition's committed **position** (the next upstream offset
to copy) and totals, the stored source offsets read at start from ``mm2-offsets.<source>.internal``
(MM2's layout: MM2 and mirrorspark resume each other), the furthest position the flow's own progress
reports reached and the source topics' ids as recorded in the gap ledger. Positions are checked
against the log start and end and the topic id; records lost before being copied are gap events
(:mod:`mirrorspark.core.gaps`), recorded, logged at ERROR and counted, then ``mirrorspark.on.gap``
applies. A stored offset past the source's end is the flow's own (a ``truncated`` gap) only when its
reports reached past it; otherwise it is foreign or corrupt: skipped with a WARNING and counted.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from mirrorspark.core.gaps import GapEvent, check_position, recreated_gap
from mirrorspark.core.progress_records import PartitionReport, ReportSequences
from mirrorspark.kafka.admin import ClusterAdmin, PartitionKey
from mirrorspark.mm2.connect_offsets import OffsetHistory, last_valid_offset
from mirrorspark.mm2.offset_syncs import CopiedSegment
from mirrorspark.replication.connector.gap_ledger import GapLedger

log = logging.getLogger(__name__)


@dataclass
class PartitionPosition:
    """Driver-side state of one replicated source partition.

    ``position`` is the next upstream offset to copy; ``end_offset`` the source end at the last listing (``-1``
    before); latencies in ms over ``latency_samples`` (every 16th record); ``dropped`` counts records a transform
    dropped; ``schema_*`` the records whose schema id was translated from the id cache, translated after asking the
    registries, or unknown to the source registry. ``from_generation``: the first task generation whose reports may
    move ``position`` (the topic was re-created under an earlier one, ``engine-audit.md`` F2). ``restarted``: the
    topic was re-created and no task reported since, so its stored offset is the old topic's.
    """

    position: int
    end_offset: int = -1
    records: int = 0
    value_bytes: int = 0
    key_bytes: int = 0
    latency_ms_sum: int = 0
    latency_ms_max: int = 0
    latency_samples: int = 0
    last_segment: CopiedSegment | None = None
    dropped: int = 0
    schema_hits: int = 0
    schema_misses: int = 0
    schema_unknown: int = 0
    from_generation: int = 0
    restarted: bool = False

    @property
    def lag(self) -> int:
        """Records on the source not yet copied (``end_offset - position``, ≥ 0)."""
        return max(0, self.end_offset - self.position) if self.end_offset >= 0 else 0

    def add(self, report: PartitionReport) -> None:
        """Add one progress report's interval to the totals."""
        self.records += report.records
        self.dropped += report.dropped
        self.schema_hits += report.schema_hits
        self.schema_misses += report.schema_misses
        self.schema_unknown += report.schema_unknown
        self.value_bytes += report.value_bytes
        self.key_bytes += report.key_bytes
        self.latency_ms_sum += report.latency_ms_sum
        self.latency_ms_max = max(self.latency_ms_max, report.latency_ms_max)
        self.latency_samples += report.latency_samples
        if report.segments:
            self.last_segment = report.segments[-1]


class Positions:
    """The positions of one flow's replicated source partitions (see the module notes); not thread-safe.

    ``order`` is discovery order (MM2 assigns tasks round-robin in it); ``run`` is this driver run's
    random id: only reports of its own generations move positions and totals; ``last_commit_at`` in
    epoch s. ``ledger`` ``None``: gaps are logged and counted only.
    """

    def __init__(
        self,
        flow: str,
        source_admin: ClusterAdmin,
        *,
        offsets_topic: str,
        auto_offset_reset: str,
        read_committed: bool,
        on_gap: str,
        ledger: GapLedger | None,
    ) -> None:
        self.flow_name = flow
        self._admin = source_admin
        self.offsets_topic = offsets_topic
        self.auto_offset_reset = auto_offset_reset
        self.read_committed = read_committed
        self.on_gap = on_gap
        self.ledger = ledger
        self.by_key: dict[PartitionKey, PartitionPosition] = {}
        self.order: list[PartitionKey] = []
        self.started_generation = 0  # the newest task generation started (Flow.task_specs)
        self.resets = 0  # topics forgotten and added again as new (re-created): the tasks must restart
        self.gaps: list[GapEvent] = []
        self.invalid_offsets = 0
        self.halted: str | None = None
        self.last_commit_at: float | None = None
        self.run = uuid.uuid4().hex[:16]
        self._counted = ReportSequences()  # reports added to the totals: one written twice counts once
        self._stored: dict[PartitionKey, int] = {}
        self._history: dict[PartitionKey, list[int]] = {}  # stored offsets to fall back on, oldest first
        self._stored_ids: dict[PartitionKey, str] = {}  # the topic id the stored offsets are of, where marked
        self._reached: dict[PartitionKey, int] = {}  # furthest position the flow's own progress reports name
        self._seen: dict[PartitionKey, int] = {}  # newest offset in mm2-offsets when last read, per partition
        self._topic_ids: dict[str, str] = {}  # source topic -> id last recorded in the gap ledger
        self._from_start: set[str] = set()  # re-created topics: their partitions start at the log start ...
        self._anew: set[PartitionKey] = set()  # ... but these, whose new start an earlier run committed
        self._unconfirmed: dict[str, str] = {}  # re-created topic -> new id, recorded once its new starts are committed
        self._other_ids: dict[tuple[str, str], dict[int, int]] = {}  # reports read of another id: furthest positions

    # ------------------------------------------------------------------ start-up

    def restore(self, history: Mapping[PartitionKey, OffsetHistory], topic_ids: Mapping[str, str]) -> None:
        """Take the stored source offsets (``mm2-offsets``, newest last) and the recorded topic ids at start."""
        self._stored = {k: h.offsets[-1] for k, h in history.items() if h.offsets}
        self._history = {k: list(h.offsets) for k, h in history.items() if h.offsets}
        self._stored_ids = {k: h.topic_id for k, h in history.items() if h.offsets and h.topic_id}
        self._seen = dict(self._stored)
        self._topic_ids = dict(topic_ids)

    def add(self, keys: Sequence[PartitionKey]) -> None:
        """Start replicating partitions at their start positions (:meth:`_start_position`).

        A partition resumes after the newest stored offset the source can hold (or held, per the flow's own
        reports); others are skipped as foreign (:attr:`invalid_offsets`). ``auto.offset.reset`` applies only
        without any stored offset; a re-created topic starts at its log start. Raises ``ClusterError`` when
        the source cannot be listed or a gap cannot be recorded.
        """
        keys = list(keys)
        starts = self._admin.start_offsets(keys)
        ends = self._admin.end_offsets(keys)  # high watermarks: what the source holds
        fresh = [k for k in keys if k not in self._stored and k[0] not in self._from_start]
        over = {k for k in keys if k[0] in self._from_start and k not in self._anew}  # started over
        latest = (
            self._admin.end_offsets(fresh, read_committed=self.read_committed)
            if self.auto_offset_reset == "latest" and fresh
            else {}
        )
        now = int(time.time() * 1000)
        for k in keys:
            log_start, log_end = starts.get(k, 0), ends.get(k, 0)
            if k in over:
                pos = log_start
                if log_start > 0:  # the new topic's first records went before the flow could copy them
                    self.record_gap(GapEvent(self.flow_name, k[0], k[1], "deleted", 0, log_start - 1, now))
            elif k in self._stored:
                pos = self._resumed(k, log_start, log_end)
                if k in starts and k in ends and log_start <= log_end:
                    r = check_position(self.flow_name, k[0], k[1], pos, log_start, log_end, at=now)
                    if r.gap is not None and self.record_gap(r.gap):
                        pos = r.position
            else:
                pos = latest.get(k, log_end) if self.auto_offset_reset == "latest" else log_start
            self.by_key[k] = PartitionPosition(
                position=pos, from_generation=self.started_generation + 1, restarted=k in over
            )
            self.order.append(k)
        self._from_start.difference_update(k[0] for k in keys)
        self._anew.difference_update(keys)

    def _resumed(self, k: PartitionKey, log_start: int, log_end: int) -> int:
        """Return where a partition with stored offsets resumes: after the newest one it can hold."""
        history = self._history.pop(k, None) or [self._stored[k]]
        off, skipped = last_valid_offset(history, log_end, reached=self._reached.get(k))
        if skipped:
            self.invalid_offsets += len(skipped)
            log.warning(
                "%s: ignoring %d stored source offset(s) of %s-%d in '%s' (%s) past the partition's end "
                "offset %d and past what the flow's progress reports reached (a foreign or corrupt record); "
                "resuming at %s",
                self.flow_name,
                len(skipped),
                k[0],
                k[1],
                self.offsets_topic,
                ", ".join(map(str, skipped)),
                log_end,
                f"the last valid one, offset {off + 1}" if off is not None else f"the log start, {log_start}",
            )
        return off + 1 if off is not None else log_start

    def reload(self, history: Mapping[PartitionKey, OffsetHistory]) -> None:
        """Move positions forward to the source offsets committed since they were last read (another instance's).

        Called on taking a flow's lease over. Only offsets written since the last read count, so the start-up
        checks are not undone (``engine-audit.md`` F1); new ones go through the same check. A ``restarted``
        partition takes nothing unless a topic-id marker names the new topic. Positions never move backwards.
        Raises ``ClusterError`` when the end offsets cannot be listed.
        """
        fresh: dict[PartitionKey, list[int]] = {}
        for k, h in history.items():
            if k in self.by_key and h.offsets and h.offsets[-1] != self._seen.get(k):
                self._seen[k] = h.offsets[-1]
                if self.by_key[k].restarted:
                    if h.topic_id is None or h.topic_id != self._unconfirmed.get(k[0]):
                        continue  # a re-created topic's new start is not committed yet: these are the old topic's
                    self.by_key[k].restarted = False  # marked: another instance committed the new start
                if h.offsets[-1] + 1 > self.by_key[k].position:
                    fresh[k] = list(h.offsets)
        if not fresh:
            return
        ends = self._admin.end_offsets(list(fresh))
        for k, offsets in fresh.items():
            if k not in ends:
                continue
            off, skipped = last_valid_offset(offsets, ends[k], reached=self._reached.get(k))
            if skipped:
                self.invalid_offsets += len(skipped)
                log.warning(
                    "%s: ignoring %d source offset(s) of %s-%d committed to '%s' (%s) past the partition's end "
                    "offset %d and past what the flow's progress reports reached (a foreign or corrupt record)",
                    self.flow_name,
                    len(skipped),
                    k[0],
                    k[1],
                    self.offsets_topic,
                    ", ".join(map(str, skipped)),
                    ends[k],
                )
            p = self.by_key[k]
            if off is not None and off + 1 > p.position:
                p.position = off + 1

    # ------------------------------------------------------------------ topics leaving and coming back

    def drop_topic(self, topic: str, *, on_source: bool) -> None:
        """Stop replicating ``topic``, keeping its positions in case it is allowed again.

        A topic no longer ``on_source`` (deleted) first gets a ``deleted`` gap over each partition's
        ``[position, end offset last listed)``. Raises ``ClusterError`` when the gap cannot be recorded.
        """
        if not on_source:
            self._record_deleted(topic)
        for key in [k for k in self.order if k[0] == topic]:
            self.order.remove(key)
            dropped = self.by_key.pop(key, None)
            if dropped is not None and dropped.position > 0 and on_source:
                self._stored[key] = dropped.position - 1  # resume here if allowed again
                self._history.pop(key, None)
                self._reached[key] = max(self._reached.get(key, -1), dropped.position)  # the flow's own

    def _record_deleted(self, topic: str) -> None:
        """Record a ``deleted`` gap for what each partition of a topic deleted from the source had not copied."""
        now = int(time.time() * 1000)
        keys = [k for k in self.order if k[0] == topic]
        for k in keys:
            p = self.by_key[k]
            if p.end_offset > p.position:
                tid = self._topic_ids.get(k[0], "unknown")
                gap = GapEvent(self.flow_name, k[0], k[1], "deleted", p.position, p.end_offset - 1, now, tid)
                self.record_gap(gap)
        if keys:
            log.warning(
                "%s: topic %s was deleted from the source; records it received after the flow last listed its "
                "end offsets and before the deletion, if any, were never copied and cannot be known",
                self.flow_name,
                topic,
            )

    def forget_topic(self, topic: str, *, keep: Iterable[int] = ()) -> None:
        """Drop every partition and stored offset of ``topic`` but those of ``keep`` (whose new start was committed)."""
        self.resets += 1
        kept = {(topic, p) for p in keep}
        for key in [k for k in self.order if k[0] == topic]:
            self.order.remove(key)
            self.by_key.pop(key, None)
        for key in [k for k in self._stored if k[0] == topic and k not in kept]:
            del self._stored[key]
            self._history.pop(key, None)
        for key in [k for k in self._reached if k[0] == topic and k not in kept]:
            del self._reached[key]

    @property
    def topic_ids(self) -> dict[str, str]:
        """``{source topic: topic id}`` (KIP-516) as last recorded (a copy; for the copy tasks' specs)."""
        return dict(self._topic_ids)

    def same_incarnation(self, report: PartitionReport) -> bool:
        """Whether a progress report describes the topic the flow knows: ``False`` only if both ids differ (KIP-516)."""
        known = self._topic_ids.get(report.topic)
        return report.topic_id is None or known is None or report.topic_id == known

    def note_other_incarnation(self, report: PartitionReport) -> None:
        """Keep the position an earlier run's report names for a topic id other than the recorded one."""
        if report.topic_id is not None:
            seen = self._other_ids.setdefault((report.topic, report.topic_id), {})
            seen[report.partition] = max(seen.get(report.partition, -1), report.next_offset)

    def current_topic_ids(self, topics: Iterable[str]) -> dict[str, str]:
        """Return the source topics' ids now (KIP-516); topics that do not exist are left out."""
        return {t: d.topic_id for t, d in self._admin.describe_topics(topics).items() if d.topic_id}

    def recreated(self, ids: Mapping[str, str]) -> set[str]:
        """Topics among ``ids`` whose id differs from the one recorded: deleted and created again."""
        return {t for t, i in ids.items() if self._topic_ids.get(t) not in (None, i)}

    def check_topic_ids(self, topics: Iterable[str]) -> set[str]:
        """Compare the ids of ``topics`` with those recorded; return the re-created ones, whose partitions are dropped.

        A new id is recorded in the gap ledger after the gap events (never when ``on.gap=stop`` halts), and only
        once a copy task committed the new start of every partition: until then a restart must find the topic
        re-created again. Raises ``ClusterError`` when the source or ledger cannot be reached.
        """
        self._confirm_topic_ids()
        described = {t: d for t, d in self._admin.describe_topics(topics).items() if d.topic_id}
        now = int(time.time() * 1000)
        changed: dict[str, str] = {}
        forgotten: set[str] = set()
        for topic, d in sorted(described.items()):
            tid, known = str(d.topic_id), self._topic_ids.get(topic)
            if known == tid:
                continue
            anew = self._committed_anew(topic, tid, len(d.replicas)) if known is not None else set()
            if known is not None and (not d.replicas or len(anew) < len(d.replicas)):
                if not self._record_recreated(topic, known, tid, now, partitions=len(d.replicas), skip=anew):
                    continue
                self.forget_topic(topic, keep=anew)
                self._from_start.add(topic)
                self._anew.update((topic, p) for p in anew)
                forgotten.add(topic)
            changed[topic] = tid
        if changed and self.halted is None:
            fresh = {t: i for t, i in changed.items() if t not in forgotten}
            if self.ledger is not None and fresh:
                self.ledger.record_topic_ids(fresh)
            self._unconfirmed.update({t: i for t, i in changed.items() if t in forgotten})
            self._topic_ids.update(changed)
        return forgotten

    def _committed_anew(self, topic: str, tid: str, partitions: int) -> set[int]:
        """Return the partitions of incarnation ``tid`` whose new start was committed already.

        Named by an earlier run's reports, or by the topic-id marker of their stored offsets
        (:data:`~mirrorspark.mm2.connect_offsets.TOPIC_ID_MARKER`): they resume from ``mm2-offsets``, not over.
        """
        seen = {p: n for p, n in self._other_ids.get((topic, tid), {}).items() if p < partitions}
        for (t, p), marked in self._stored_ids.items():
            if t == topic and marked == tid and p < partitions and (t, p) in self._stored:
                seen.setdefault(p, self._stored[(t, p)] + 1)
        for p, reached in seen.items():
            key = (topic, p)
            self._reached[key] = max(self._reached.get(key, -1), reached)
        if seen:
            log.info(
                "%s: topic %s has a new topic id %s (re-created) and the flow's copy tasks committed the new "
                "topic's start of partition(s) %s before the last run ended: resuming them from their stored "
                "source offsets",
                self.flow_name,
                topic,
                tid,
                ", ".join(map(str, sorted(seen))),
            )
        return set(seen)

    def _confirm_topic_ids(self) -> None:
        """Record the ids of re-created topics whose every partition's new start is committed."""
        done = {
            t: i
            for t, i in self._unconfirmed.items()
            if not any(p.restarted for k, p in self.by_key.items() if k[0] == t)
        }
        if done and self.ledger is not None:
            self.ledger.record_topic_ids(done)
        for t in done:
            del self._unconfirmed[t]

    def _record_recreated(
        self, topic: str, known: str, tid: str, now: int, *, partitions: int, skip: Iterable[int] = ()
    ) -> bool:
        """Record a gap for every partition of a re-created topic but ``skip``; whether the flow goes on.

        A partition of the new topic the flow never saw gets a gap from offset 0 (the old topic may have had it).
        """
        go_on = True
        skipped = set(skip)
        for k in [k for k in self.order if k[0] == topic and k[1] not in skipped]:
            p = self.by_key[k]
            end = p.end_offset if p.end_offset >= 0 else None
            go_on &= self.record_gap(recreated_gap(self.flow_name, topic, k[1], p.position, end, known, tid, now))
        for k in sorted(k for k in self._stored if k[0] == topic and k not in self.by_key and k[1] not in skipped):
            gap = recreated_gap(self.flow_name, topic, k[1], self._old_from(k), None, known, tid, now)
            go_on &= self.record_gap(gap)
        seen = {k[1] for k in (*self.order, *self._stored) if k[0] == topic} | skipped
        for partition in (p for p in range(partitions) if p not in seen):
            go_on &= self.record_gap(recreated_gap(self.flow_name, topic, partition, 0, None, known, tid, now))
        return go_on

    def _old_from(self, k: PartitionKey) -> int:
        """Where a re-created topic's uncopied records began on a partition the flow had not started yet.

        The newest stored offset + 1, unless the flow's own reports reached less (the old end is gone).
        """
        start = self._stored[k] + 1
        reached = self._reached.get(k)
        return min(start, reached) if reached is not None and reached >= 0 else start

    # ------------------------------------------------------------------ gaps

    def check_ranges(self, keys: Iterable[PartitionKey]) -> None:
        """Check ``keys``' positions against their log start and end; act on any gap; raises ``ClusterError``."""
        keys = [k for k in keys if k in self.by_key]
        if not keys:
            return
        starts = self._admin.start_offsets(keys)
        ends = self._admin.end_offsets(keys)
        now = int(time.time() * 1000)
        for k in keys:
            if k not in starts or k not in ends or starts[k] > ends[k] or self.halted is not None:
                continue
            p = self.by_key[k]
            r = check_position(self.flow_name, k[0], k[1], p.position, starts[k], ends[k], at=now)
            if r.gap is not None and self.record_gap(r.gap):
                p.position = r.position

    def record_gap(self, event: GapEvent) -> bool:
        """Log, count and record a gap; whether the flow goes on; raises ``ClusterError`` when not acknowledged."""
        stop = self.on_gap == "stop"
        log.error("%s; %s", event.describe(), _gap_action(event, stop=stop))
        if self.ledger is not None:
            self.ledger.record_gap(event)
        self.gaps.append(event)
        if not stop:
            return True
        if self.halted is None:
            self.halted = (
                f"{event.describe()}; mirrorspark.on.gap=stop halted flow {self.flow_name}: set "
                "mirrorspark.on.gap=continue to resume after the gap (the gap is kept in "
                f"'{self.ledger.topic if self.ledger else 'mm2-gaps'}' and shown by mirrorspark status)"
            )
        return False

    # ------------------------------------------------------------------ progress reports and end offsets

    def apply_report(self, report: PartitionReport, *, generation: int | None, segments_only: bool) -> bool:
        """Apply one copy task's progress report to position and totals (see :meth:`Flow.apply_report`).

        Only reports of this topic incarnation and of the running generation and :attr:`run` count
        (``engine-audit-2.md`` N6); a report written twice adds once (:class:`ReportSequences`).
        """
        if not self.same_incarnation(report):
            return False
        key = (report.topic, report.partition)
        if report.next_offset > self._reached.get(key, -1):
            self._reached[key] = report.next_offset  # the source held every offset below it once
        if segments_only:
            return True
        p = self.by_key.get(key)
        if p is None:
            if key in self._stored and report.next_offset - 1 > self._stored[key]:
                # a topic dropped from the lists while its tasks still committed: resume after it if allowed again
                self._stored[key] = report.next_offset - 1
            return False
        if report.generation >= p.from_generation:
            p.restarted = False  # a task of any later generation committed the new position: mm2-offsets holds it
        ours = report.run is None or report.run == self.run
        if generation is None or (ours and report.generation == generation and generation >= p.from_generation):
            if report.next_offset > p.position:
                p.position = report.next_offset
                self.last_commit_at = report.at / 1000.0
            if self._counted.first_time(report):
                p.add(report)
        return True

    def list_ends(self, keys: Sequence[PartitionKey] | None = None) -> list[PartitionKey]:
        """List the source end offsets of ``keys`` (default: all); return the partitions whose end is below position.

        Raises ``ClusterError`` when the source's end offsets cannot be listed.
        """
        keys = list(self.order if keys is None else keys)
        ends = self._admin.end_offsets(keys, read_committed=self.read_committed)
        behind = []
        for k, e in ends.items():
            p = self.by_key.get(k)
            if p is not None:
                if e < p.position:
                    behind.append(k)
                p.end_offset = e
        return behind

    def caught_up(self, targets: Mapping[PartitionKey, int]) -> bool:
        """Whether every position in ``targets`` (``{(topic, partition): offset}``) is at or past its target or end."""
        return all(
            p.position >= (min(e, p.end_offset) if p.end_offset >= 0 else e)
            for k, e in targets.items()
            if (p := self.by_key.get(k)) is not None
        )


def _gap_action(event: GapEvent, *, stop: bool) -> str:
    if stop:
        return "mirrorspark.on.gap=stop: the flow halts"
    if event.reason == "recreated":
        return "resuming at the new topic's beginning"
    if event.reason == "deleted":
        return "resuming at the source's log start"
    return "resuming at the source's log end"


__all__ = ["PartitionPosition", "Positions"]
