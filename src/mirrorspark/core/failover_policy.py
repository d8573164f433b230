"""When a flow's source counts as failed: the failover policy's pure rules (no I/O).

Modelled on Confluent's ``observerPromotionPolicy`` (Multi-Region Clusters), which promotes observers
when a partition falls ``under-min-isr``; Apache Kafka has no observers, so the "async replica in
another region" is the remote topic a flow writes, and promotion means moving consumer groups to it.
Per flow, ``mirrorspark.failover.policy`` says which source partitions count as failed:

``offline``
    a partition without a leader (every replica of it is down);
``under-min-isr``
    a partition without a leader, or whose ISR is below its *effective* min ISR,
    ``min(min.insync.replicas, replication factor)`` (what the broker itself uses for ``acks=all``
    and its ``UnderMinIsr`` metric);
``manual``
    as ``under-min-isr``, but only recorded: nothing is moved (MRC's ``leader-is-observer``, where
    failover is an operator's unclean election).

A source cluster that does not answer at all counts as every partition offline.

:class:`FailoverWatch` is the state machine the driver feeds one observation at a time: when the
condition has held for ``mirrorspark.failover.grace.ms`` it fires a ``failover`` transition once;
when the condition clears after that it fires ``recovered`` once (failback stays the operator's
decision). A condition that clears within the grace period fires nothing.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from mirrorspark.core.progress_records import FailoverEvent

POLICIES: Final = ("manual", "under-min-isr", "offline")
"""Values of ``mirrorspark.failover.policy``."""

Policy = Literal["manual", "under-min-isr", "offline"]

PARTITIONS_SHOWN: Final = 10
"""Most failed partitions a reason names (the rest are counted)."""


def effective_min_isr(min_insync_replicas: int, replication_factor: int) -> int:
    """Return the min ISR the broker enforces: ``min(min.insync.replicas, replication factor)``, at least 1."""
    return max(1, min(min_insync_replicas, replication_factor))


@dataclass(frozen=True, slots=True)
class PartitionHealth:
    """One source partition as ``describe_topics`` describes it; ``leader`` is ``None`` when offline."""

    topic: str
    partition: int
    leader: int | None
    isr: int
    replicas: int
    min_isr: int

    @classmethod
    def of(cls, layout: Any, min_isr: int) -> PartitionHealth:
        """Build it from a partition's metadata, whose ``leader`` is -1 when none."""
        leader = layout.leader if layout.leader >= 0 else None
        return cls(layout.topic, layout.partition, leader, len(layout.isr), len(layout.replicas), min_isr)

    @property
    def offline(self) -> bool:
        """Whether the partition has no leader."""
        return self.leader is None

    @property
    def under_min_isr(self) -> bool:
        """Whether the partition is offline or its ISR is below the effective min ISR."""
        return self.offline or self.isr < effective_min_isr(self.min_isr, self.replicas)

    def describe(self) -> str:
        """``"t-0 (no leader)"`` or ``"t-0 (ISR 1 < min ISR 2)"``."""
        if self.offline:
            return f"{self.topic}-{self.partition} (no leader)"
        return (
            f"{self.topic}-{self.partition} (ISR {self.isr} < min ISR {effective_min_isr(self.min_isr, self.replicas)})"
        )


def failed_partitions(policy: str, partitions: Sequence[PartitionHealth]) -> list[PartitionHealth]:
    """Return the partitions that count as failed under ``policy``, in order; ValueError for an unknown policy."""
    if policy == "offline":
        return [p for p in partitions if p.offline]
    if policy in ("under-min-isr", "manual"):
        return [p for p in partitions if p.under_min_isr]
    raise ValueError(f"unknown failover policy {policy!r}: expected one of {', '.join(POLICIES)}")


def breach_reason(
    policy: str, partitions: Sequence[PartitionHealth], *, source: str, reachable: bool = True
) -> str | None:
    """Say why the source counts as failed under ``policy``, or ``None`` when it does not."""
    if not reachable:
        return f"source cluster '{source}' unreachable"
    bad = failed_partitions(policy, partitions)
    if not bad:
        return None
    what = "offline" if policy == "offline" else "offline or under min ISR"
    named = ", ".join(p.describe() for p in bad[:PARTITIONS_SHOWN])
    more = f" and {len(bad) - PARTITIONS_SHOWN} more" if len(bad) > PARTITIONS_SHOWN else ""
    return f"{len(bad)} of {len(partitions)} source partitions {what}: {named}{more}"


@dataclass(frozen=True, slots=True)
class Transition:
    """What :meth:`FailoverWatch.observe` fires."""

    event: Literal["failover", "recovered"]
    since_ms: int
    at_ms: int
    reason: str


class FailoverWatch:
    """The state machine of one flow's failover policy: ``healthy`` -> ``pending`` -> ``failed-over`` -> ``healthy``.

    ``grace_ms``: how long (ms) the condition must hold before ``failover`` fires; 0 = at the first
    observation. Not thread-safe; one driver job feeds it. An unreachable source is an observation
    (``reason`` set); a failed observation (a crash) is not fed.
    """

    def __init__(self, *, grace_ms: int) -> None:
        self.grace_ms = grace_ms
        self.state: Literal["healthy", "pending", "failed-over"] = "healthy"
        self.since_ms: int | None = None
        self.reason: str | None = None

    def observe(self, now_ms: int, reason: str | None) -> Transition | None:
        """Feed one observation; return the transition it fires, if any."""
        if reason is None:
            fired = self.state == "failed-over"
            since, why = self.since_ms, self.reason
            self.state, self.since_ms, self.reason = "healthy", None, None
            if fired and since is not None and why is not None:
                return Transition("recovered", since, now_ms, why)
            return None
        if self.state == "healthy":
            self.state, self.since_ms = "pending", now_ms
        if self.state == "pending" and self.since_ms is not None and now_ms - self.since_ms >= self.grace_ms:
            self.state, self.reason = "failed-over", reason
            return Transition("failover", self.since_ms, now_ms, reason)
        return None


def _utc(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC).isoformat(timespec="seconds")


def event_summary(e: FailoverEvent) -> str:
    """One line saying what a failover event is and did (the WARNING log line, ``mirrorspark status``)."""
    mode = f"policy {e.policy}{', dry run' if e.dry_run else ''}"
    if e.event == "recovered":
        return (
            f"flow {e.flow}: source recovered at {_utc(e.at)} ({mode}; it had failed since {_utc(e.since)}: "
            f"{e.reason}); failback is the operator's decision"
        )
    parts = []
    for g in e.groups:
        text = f"{g.group} {g.outcome} ({g.offsets} offset{'s' if g.offsets != 1 else ''})"
        parts.append(f"{text}: {g.detail}" if g.detail else text)
    groups = "; ".join(parts) if parts else "none listed"
    return f"flow {e.flow}: failover ({mode}; failed since {_utc(e.since)}: {e.reason}); groups: {groups}"


__all__ = [
    "PARTITIONS_SHOWN",
    "POLICIES",
    "FailoverWatch",
    "PartitionHealth",
    "Policy",
    "Transition",
    "breach_reason",
    "effective_min_isr",
    "event_summary",
    "failed_partitions",
]
