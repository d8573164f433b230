"""The failover policy at run time: each flow's source watched, consumer groups moved when it fails.

Every ``mirrorspark.failover.check.interval.ms`` (on its own thread, so a dead source holds up
nothing else) the source's leaders, ISRs and ``min.insync.replicas`` feed
``mirrorspark.failover.policy``'s :class:`~mirrorspark.core.failover_policy.FailoverWatch`; a source
that does not answer counts as all partitions offline. Failed for ``mirrorspark.failover.grace.ms``, a
failover event is logged and written to the progress channel and, unless ``manual`` or dry run, the
groups of ``mirrorspark.failover.groups`` get their newest checkpoints committed on the target as
``mirrorspark failover`` does (never a group with active members), once per event. Recovery is only
recorded; moving groups back is the operator's decision.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mirrorspark.client.checkpoint_reader import read_checkpoints
from mirrorspark.client.failover import commit_failover, failover_offsets, latest_by_group
from mirrorspark.core.failover_policy import FailoverWatch, PartitionHealth, breach_reason, event_summary
from mirrorspark.core.progress_records import FailoverEvent, GroupFailover, encode_failover_event
from mirrorspark.errors import ClusterError, ClusterUnreachableError, ControlError, MirrorsparkError
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.kafka.delivery import Outgoing, deliver
from mirrorspark.replication.connector.scheduler import PeriodicJob

if TYPE_CHECKING:
    from mirrorspark.replication.connector.flow import Flow

log = logging.getLogger(__name__)

PUBLISH_TIMEOUT_S = 10.0
"""Seconds a failover record's write waits to be acknowledged (a failed write is retried at the next check)."""

MIN_CALL_TIMEOUT_S = 5.0
"""Shortest timeout (s) of a source call of the watch, whatever ``mirrorspark.failover.check.interval.ms``."""

DEFAULT_MIN_ISR = 1
"""``min.insync.replicas`` assumed for a topic whose config could not be read (Kafka's default)."""

MIN_ISR_REFRESH_S = 300.0
"""Seconds between two reads of every watched topic's ``min.insync.replicas`` (new topics: at once; issue #26)."""

METADATA_SHARE_S = 1.0
"""Seconds a source's ``Metadata`` answer serves the other watchers of the same cluster (:class:`SourceMetadata`)."""


class SourceMetadata:
    """The sources' last ``Metadata`` answers (or failures), shared by the watchers of one cluster (issue #44).

    The flows' checks run one after another on the failover thread, each every check interval: the
    first to ask a cluster sends the request, the next ones within :data:`METADATA_SHARE_S` read its
    answer, so many flows from one source cluster cost one request per interval, and a dead source one
    timeout instead of one per flow. Keyed by the source admin client's settings.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last: dict[object, tuple[float, Any]] = {}  # key -> (when answered, answer or ClusterError)

    def fetch(self, key: object, admin: ClusterAdmin) -> Any:
        """Return the cluster's ``Metadata`` answer of at most :data:`METADATA_SHARE_S` ago, else ``admin``'s now."""
        last = self._last.get(key)
        if last is None or self._clock() - last[0] >= METADATA_SHARE_S:
            try:
                got: Any = admin.cluster_metadata()
            except ClusterError as e:
                got = e
            last = (self._clock(), got)
            self._last[key] = last
        if isinstance(last[1], ClusterError):  # a dead source: the same failure for each of its flows
            raise last[1]
        return last[1]


class FailoverWatcher:
    """One flow's failover policy: watches the source, records failover events, moves consumer groups.

    ``active`` tells whether this instance runs the flow (a standby does nothing); ``clock_ms`` in epoch
    ms; ``metadata`` shares the source's ``Metadata`` answers with the other flows' watchers. :meth:`check`
    runs on the failover thread; its clients are used only there, so :meth:`close`
    only once it ended (:meth:`request_stop` is thread-safe).
    """

    def __init__(
        self,
        flow: Flow,
        *,
        active: Callable[[], bool] = lambda: True,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        metadata: SourceMetadata | None = None,
    ) -> None:
        cfg = flow.config
        self._metadata = metadata  # shared with the other watchers (None: a request of its own at each check)
        self.flow = flow
        self._active = active
        self.policy = cfg.failover_policy
        self.dry_run = cfg.failover_dry_run
        self.watch = FailoverWatch(grace_ms=cfg.failover_grace_ms)
        self.events = 0
        self.last: FailoverEvent | None = None
        self._groups = [re.compile(p) for p in cfg.failover_groups]
        self._clock_ms = clock_ms
        # each source call: at least 5 s (a slow answer is not an outage), at most admin.timeout.ms
        self._timeout_s = min(cfg.admin_timeout_s, max(MIN_CALL_TIMEOUT_S, cfg.failover_check_interval_s))
        self._min_isr: dict[str, int] = {}
        self._min_isr_read_at = float("-inf")  # when every topic's min.insync.replicas was last read (monotonic s)
        self._configs_read: set[str] = set()  # topics whose configs were read (not again until the refresh)
        self._src_admin: ClusterAdmin | None = None
        self._tgt_admin: ClusterAdmin | None = None
        self._producer: Any = None
        self._unpublished: FailoverEvent | None = None
        self._move_again = False
        self._closing = threading.Event()

    @property
    def stop_timeout_s(self) -> float:
        """Seconds a check still running after :meth:`request_stop` may take: two of its longest calls, and 5 s."""
        longest = max(self._timeout_s, self.flow.config.admin_timeout_s, PUBLISH_TIMEOUT_S)
        return 2 * longest + 5.0

    @property
    def name(self) -> str:
        """The flow's name, ``"S->T"``."""
        return self.flow.name

    def start(self) -> None:
        """Create the source's admin client (the target's clients are created at the first event)."""
        admin = self.flow.context.cluster_admin("source", "failover-source-admin")
        self._src_admin = admin.with_timeout(self._timeout_s)  # one check within its interval

    def _target_admin(self) -> ClusterAdmin:
        if self._tgt_admin is None:
            self._tgt_admin = self.flow.context.cluster_admin("target", "failover-target-admin")
        return self._tgt_admin

    # ------------------------------------------------------------------ observing the source

    def _describe(self) -> tuple[list[PartitionHealth], bool]:
        """Describe the source partitions now; whether the source answered (``ClusterError``: not about the topics)."""
        topics = dict(self.flow.topic_partitions)
        alias = self.flow.config.source
        assert self._src_admin is not None, "start() first"
        try:
            md = (
                None if self._metadata is None else self._metadata.fetch(self.flow.config.source_admin, self._src_admin)
            )
            layouts = self._src_admin.partition_metadata(topics, metadata=md)  # topics deleted since: left out
        except ClusterUnreachableError:
            return [], False
        if self._closing.is_set():
            return [], True
        names = sorted({p.topic for p in layouts})
        if time.monotonic() >= self._min_isr_read_at + MIN_ISR_REFRESH_S:
            self._min_isr_read_at = time.monotonic()
        else:
            names = [t for t in names if t not in self._configs_read]  # new topics (or a read that failed)
        self._refresh_min_isr(names)
        out = [PartitionHealth.of(p, self._min_isr.get(p.topic, DEFAULT_MIN_ISR)) for p in layouts]
        if topics and not out:
            raise ClusterError(f"flow {self.name}: the source '{alias}' described none of the flow's topics")
        return out, True

    def _refresh_min_isr(self, topics: list[str]) -> None:
        """Read the topics' ``min.insync.replicas`` (kept from the last read when a topic's read fails)."""
        if not topics or self._src_admin is None:
            return
        try:
            values = self._src_admin.topic_config_values(topics)
        except MirrorsparkError as e:
            log.debug("flow %s: min.insync.replicas of %s not read: %s", self.name, ", ".join(topics), e)
            return
        for topic, entries in values.items():
            self._configs_read.add(topic)
            with contextlib.suppress(KeyError, TypeError, ValueError):  # unreadable: kept from the last read
                self._min_isr[topic] = int(entries["min.insync.replicas"])  # type: ignore[arg-type]

    # ------------------------------------------------------------------ the job

    def jobs(self) -> list[PeriodicJob]:
        """Declare ``failover watch S->T``, every ``mirrorspark.failover.check.interval.ms``, first one interval in."""
        every = self.flow.config.failover_check_interval_s
        return [PeriodicJob(f"failover watch {self.name}", every, self.check, initial_delay_s=every)]

    def check(self) -> FailoverEvent | None:
        """Observe the source once; record (and act on) the event it fires and return it; raises ``ClusterError``."""
        if self._closing.is_set():
            return None
        if self._unpublished is not None:
            self._publish(self._unpublished)
        if not self._active():
            return None
        now = self._clock_ms()
        partitions, reachable = self._describe()
        if self._closing.is_set():
            return None  # stopping: no event from an observation the driver no longer waits for
        reason = breach_reason(self.policy, partitions, source=self.flow.config.source, reachable=reachable)
        was = self.watch.state
        t = self.watch.observe(now, reason)
        if was == "healthy" and self.watch.state == "pending":
            log.warning(
                "flow %s: the source counts as failed under failover policy %s (%s); a failover event follows "
                "in %.1f s unless it recovers",
                self.name,
                self.policy,
                reason,
                self.flow.config.failover_grace_ms / 1000,
            )
        if t is None:
            if self._move_again and self.watch.state == "failed-over" and self.last is not None:
                return self._record(self.last.since, self.last.reason, "failover", self._move_groups())
            return None
        if t.event == "failover":
            self.events += 1
            return self._record(t.since_ms, t.reason, "failover", self._move_groups())
        self._move_again = False
        return self._record(t.since_ms, t.reason, "recovered", ())

    def _record(self, since: int, reason: str, event: str, groups: tuple[GroupFailover, ...]) -> FailoverEvent:
        e = FailoverEvent(
            flow=self.name,
            at=self._clock_ms(),
            event=event,
            policy=self.policy,
            dry_run=self.dry_run,
            since=since,
            reason=reason,
            events=self.events,
            groups=groups,
        )
        self.last = e
        log.warning("%s", event_summary(e))
        self._publish(e)
        return e

    def _publish(self, e: FailoverEvent) -> None:
        """Write the event to the progress channel; keep it for the next check when the write fails."""
        if self._producer is None:
            self._producer = self.flow.context.producer("target", "failover-producer", overrides={"linger.ms": 0})
        try:
            deliver(
                self._producer,
                [Outgoing(self.flow.progress_topic, *encode_failover_event(e), partition=0)],
                what=f"flow {self.name}: failover event",
                alias=self.flow.config.target,
                timeout_s=PUBLISH_TIMEOUT_S,
            )
            self._unpublished = None
        except ClusterError as err:
            log.warning("%s; written again at the next check", err)
            self._unpublished = e

    # ------------------------------------------------------------------ moving groups

    def _move_groups(self) -> tuple[GroupFailover, ...]:
        """Commit the listed groups' newest checkpoints on the target (or say what would be done)."""
        cfg = self.flow.config
        ctx = self.flow.context
        self._move_again = False
        try:
            records = read_checkpoints(
                cfg.target_consumer,
                cfg.target_admin,
                cfg.target,
                ctx.internal_topics.checkpoints,
                client_id=ctx.client_id("failover-checkpoints-consumer"),
                timeout_s=cfg.admin_timeout_s,
                clients=ctx.clients,
            )
        except MirrorsparkError as e:
            self._move_again = self.policy != "manual"  # tried again at the next check
            return (GroupFailover("*", "failed", 0, f"reading the checkpoints failed (retried): {e}"),)
        by_group = latest_by_group(records)
        out = []
        for group, latest in by_group.items():
            if self._closing.is_set():
                break  # stopping: the groups not tried yet are left as they are
            if not any(p.fullmatch(group) for p in self._groups):
                continue
            out.append(self._move(group, latest))
        return tuple(out)

    def _move(self, group: str, latest: dict[Any, Any]) -> GroupFailover:
        target = self.flow.config.target
        if self.policy == "manual":
            return GroupFailover(group, "manual", len(latest), None)
        try:
            offsets = failover_offsets(self._target_admin(), group, latest, committed=self._committed)
            planned = ", ".join(f"{o.topic}-{o.partition}: {o.offset}" for o in offsets)
            if self.dry_run:
                log.warning(
                    "flow %s: dry run: would commit group '%s' on '%s' at %s", self.name, group, target, planned
                )
                return GroupFailover(group, "would-move", len(offsets), None)
            commit_failover(self._target_admin(), group, offsets)
            log.info("flow %s: committed group '%s' on '%s' at %s", self.name, group, target, planned)
            return GroupFailover(group, "moved", len(offsets), None)
        except ControlError as e:  # the only one: active members on the target
            return GroupFailover(group, "refused", len(latest), str(e))
        except MirrorsparkError as e:
            return GroupFailover(group, "failed", len(latest), str(e))

    def _committed(self, group: str) -> dict[tuple[str, int], tuple[int, str]]:
        """Read the group's committed offsets on the target with a consumer of the group (never the admin call)."""
        reader = self.flow.context.consumer("target", "failover-target-group-reader", overrides={"group.id": group})
        try:
            return self._target_admin().committed_group_offsets(reader, group)
        finally:
            reader.close()

    def request_stop(self) -> None:
        """Ask a running check to end at its next step (thread-safe): no further source call, group or event."""
        self._closing.set()

    def close(self) -> None:
        """Write a pending event one last time, then release the clients (only once the failover thread ended)."""
        self._closing.set()
        if self._unpublished is not None:
            self._publish(self._unpublished)
        if self._producer is not None:
            self._producer.flush(PUBLISH_TIMEOUT_S)
        self._producer = self._src_admin = self._tgt_admin = None


__all__ = ["MIN_ISR_REFRESH_S", "FailoverWatcher"]
