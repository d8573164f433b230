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
    """Return the min ISR the broker enforces: ``min(min.insync.replicas, replication factor)``, at least 1.

    Parameters
    ----------
    min_insync_replicas:
        The topic's ``min.insync.replicas`` (replicas).
    replication_factor:
        The partition's assigned replicas.

    Returns
    -------
    int
        Replicas (>= 1).
    """
    return max(1, min(min_insync_replicas, replication_factor))


@dataclass(frozen=True, slots=True)
class PartitionHealth:
    """One source partition as the source's metadata describes it (``describe_topics``).

    Attributes
    ----------
    topic, partition:
        The source partition.
    leader:
        The leader's broker id, ``None`` when the partition has no leader (offline).
    isr:
        Replicas in the ISR.
    replicas:
        Assigned replicas (the replication factor).
    min_isr:
        The topic's ``min.insync.replicas`` as configured.
    """

    topic: str
    partition: int
    leader: int | None
    isr: int
    replicas: int
    min_isr: int

    @classmethod
    def of(cls, layout: Any, min_isr: int) -> PartitionHealth:
        """Build it from a partition's metadata.

        Parameters
        ----------
        layout:
            Anything with ``topic``, ``partition``, ``leader`` (``-1`` = none), ``isr`` and ``replicas``
            (broker id sequences), e.g. :class:`~mirrorspark.kafka.admin.PartitionLayout`.
        min_isr:
            The topic's ``min.insync.replicas``.
        """
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
    """Return the partitions that count as failed under ``policy``, in the given order.

    Parameters
    ----------
    policy:
        One of :data:`POLICIES`.
    partitions:
        The flow's source partitions.

    Raises
    ------
    ValueError
        For an unknown policy.
    """
    if policy == "offline":
        return [p for p in partitions if p.offline]
    if policy in ("under-min-isr", "manual"):
        return [p for p in partitions if p.under_min_isr]
    raise ValueError(f"unknown failover policy {policy!r}: expected one of {', '.join(POLICIES)}")


def breach_reason(
    policy: str, partitions: Sequence[PartitionHealth], *, source: str, reachable: bool = True
) -> str | None:
    """Say why the source counts as failed under ``policy``, or ``None`` when it does not.

    Parameters
    ----------
    policy:
        One of :data:`POLICIES`.
    partitions:
        The flow's source partitions (ignored when ``reachable`` is false).
    source:
        The source alias (for the text).
    reachable:
        Whether any broker of the source answered; an unreachable source counts as all partitions offline.

    Returns
    -------
    str | None
        E.g. ``"source cluster 'A' unreachable"``, or ``"2 of 6 source partitions offline: t-0 (no leader),
        t-1 (no leader)"``; at most :data:`PARTITIONS_SHOWN` partitions are named.
    """
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
    """What :meth:`FailoverWatch.observe` fires.

    Attributes
    ----------
    event:
        ``"failover"`` (the condition held for the grace period) or ``"recovered"``.
    since_ms:
        When the condition began (epoch ms).
    at_ms:
        The observation that fired it (epoch ms).
    reason:
        For ``failover``: why (:func:`breach_reason`); for ``recovered``: the reason of the failover.
    """

    event: Literal["failover", "recovered"]
    since_ms: int
    at_ms: int
    reason: str


class FailoverWatch:
    """The state machine of one flow's failover policy: ``healthy`` -> ``pending`` -> ``failed-over`` -> ``healthy``.

    Parameters
    ----------
    grace_ms:
        How long (ms) the condition must hold, observation to observation, before ``failover`` fires; 0 =
        at the first observation.

    Notes
    -----
    Not thread-safe; one driver job feeds it. A failed observation (the watch could not ask the
    source) is not fed: an unreachable source is an observation (``reason`` set), a crash is not.
    """

    def __init__(self, *, grace_ms: int) -> None:
        self.grace_ms = grace_ms
        self.state: Literal["healthy", "pending", "failed-over"] = "healthy"
        self.since_ms: int | None = None
        self.reason: str | None = None

    def observe(self, now_ms: int, reason: str | None) -> Transition | None:
        """Feed one observation; return the transition it fires, if any.

        Parameters
        ----------
        now_ms:
            When the source was described (epoch ms).
        reason:
            Why the source counts as failed now (:func:`breach_reason`), ``None`` when it does not.
        """
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
    """One line saying what a failover event is and did (the WARNING log line, ``mirrorspark status``).

    Parameters
    ----------
    e:
        The event.

    Returns
    -------
    str
        E.g. ``"flow A->B: failover (policy offline; failed since 2026-11-25T12:00:00+00:00: 1 of 1 source
        partitions offline: t-0 (no leader)); groups: g1 moved (3 offsets), g2 refused: consumer group 'g2'
        has 1 active member on cluster 'B' ..."``.
    """
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
