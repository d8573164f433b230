"""Replicas of a partition as an operator sees them: ``kafka-replica-status`` rows, elections, fetch sources (no I/O).

Confluent's ``kafka-replica-status`` (Multi-Region Clusters) prints one row per replica with the
leader's view of each follower. Apache Kafka's admin API gives less: per partition the leader,
the assigned replicas and the ISR (``DescribeTopicPartitions``) and the leader's log start and
end offsets (``ListOffsets``); no follower log end offset, no last-fetch or last-caught-up time,
no observers (KIP-929 was never implemented). :func:`replica_rows` builds the rows from what
Apache Kafka gives and fills the rest with ``-1`` (numbers) or the nearest Apache signal
(booleans), as :data:`LEGEND` tells the reader:

* ``isCaughtUp`` = in the ISR (a follower leaves the ISR after ``replica.lag.time.max.ms``
  behind the leader), so it is never true outside the ISR, unlike MRC's;
* ``isObserver`` is always false and ``isIsrEligible`` always true (every assigned replica may
  join the ISR);
* ``lastCaughtUpLagMs``/``lastFetchLagMs`` are 0 for the leader and -1 for followers;
* ``logStartOffset``/``logEndOffset`` are the leader's log start offset and high watermark, -1
  when the partition has no leader.

Also here: the per-partition counts MRC exposes as partition metrics (:func:`partition_counts`),
the partition list syntax of the tools (``0,5-7``, :func:`parse_partitions`), the outcome of a
leader election (:class:`ElectionOutcome`) and where librdkafka fetched each partition from
(KIP-392 follower fetching, :func:`fetch_sources`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from mirrorspark.errors import ConfigError

LeadersMode = Literal["all", "only", "exclude"]
"""``--leaders`` of ``replica-status``: every replica, leaders only, or followers only."""

ElectionKind = Literal["preferred", "unclean"]
"""``--type`` of ``elect``: Kafka's ``ElectionType.PREFERRED`` / ``UNCLEAN``."""

UNKNOWN: Final = -1
"""The value of a number Apache Kafka's APIs do not give (as ``kafka-replica-status`` prints -1)."""

LEGEND: Final = (
    "Apache Kafka gives per partition the leader, replicas and ISR, and the leader's log start offset and "
    "high watermark; -1 = not given by Apache Kafka (or the partition has no leader).\n"
    "  LogStartOffset/LogEndOffset: the leader's log start offset and high watermark (-1: no leader).\n"
    "  IsCaughtUp: in the ISR (followers leave it after replica.lag.time.max.ms behind); no follower log end "
    "offset is exposed.\n"
    "  IsObserver: always false (Apache Kafka has no observers); IsIsrEligible: always true.\n"
    "  LastCaughtUpLagMs/LastFetchLagMs: 0 for the leader, -1 for followers (the leader's per-follower "
    "fetch times are not exposed)."
)
"""What the ``-1`` and substituted columns of ``replica-status`` mean on Apache Kafka."""

JSON_KEYS: Final = (
    "topic",
    "partition",
    "replica",
    "rack",
    "isLeader",
    "isObserver",
    "isIsrEligible",
    "isInIsr",
    "isCaughtUp",
    "lastCaughtUpLagMs",
    "lastFetchLagMs",
    "logStartOffset",
    "logEndOffset",
)
"""Keys of a ``replica-status --json`` object, as ``kafka-replica-status`` names them (plus ``rack``)."""


def parse_partitions(spec: str) -> frozenset[int]:
    """Parse a ``--partitions`` list such as ``0,5-7``; raises ConfigError naming the bad item."""
    out: set[int] = set()
    items = [i.strip() for i in spec.split(",")]
    if not any(items):
        raise ConfigError(f"--partitions {spec!r} names no partition: give ids and ranges such as 0,5-7")
    for item in items:
        if not item:
            continue
        low, dash, high = item.partition("-")
        try:
            a = int(low)
            b = int(high) if dash else a
        except ValueError:
            raise ConfigError(
                f"--partitions: {item!r} is not a partition id or range: give ids and ranges such as 0,5-7"
            ) from None
        if a < 0 or b < a:
            raise ConfigError(f"--partitions: {item!r} is not a range of partition ids (a-b with 0 <= a <= b)")
        out.update(range(a, b + 1))
    return frozenset(out)


@dataclass(frozen=True)
class PartitionState:
    """One partition as Apache Kafka's admin API describes it; ``leader`` and the log offsets are -1 when unknown."""

    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    racks: Mapping[int, str | None]
    log_start_offset: int = UNKNOWN
    log_end_offset: int = UNKNOWN
    internal: bool = False


@dataclass(frozen=True)
class ReplicaRow:
    """One row of ``replica-status``: one replica of one partition (``kafka-replica-status``'s columns).

    The observer and lag columns are what Apache Kafka allows (see the module docstring); -1 = unknown.
    """

    topic: str
    partition: int
    replica: int
    rack: str | None
    is_leader: bool
    is_observer: bool
    is_isr_eligible: bool
    is_in_isr: bool
    is_caught_up: bool
    last_caught_up_lag_ms: int
    last_fetch_lag_ms: int
    log_start_offset: int
    log_end_offset: int

    def to_json(self) -> dict[str, Any]:
        """Return the row keyed as ``kafka-replica-status --json`` names its fields (:data:`JSON_KEYS`)."""
        values = (
            self.topic,
            self.partition,
            self.replica,
            self.rack,
            self.is_leader,
            self.is_observer,
            self.is_isr_eligible,
            self.is_in_isr,
            self.is_caught_up,
            self.last_caught_up_lag_ms,
            self.last_fetch_lag_ms,
            self.log_start_offset,
            self.log_end_offset,
        )
        return dict(zip(JSON_KEYS, values, strict=True))


def replica_rows(
    states: Iterable[PartitionState],
    *,
    partitions: frozenset[int] | None = None,
    leaders: LeadersMode = "all",
    exclude_internal: bool = False,
) -> list[ReplicaRow]:
    """Build ``replica-status`` rows, one per replica, sorted by topic, partition and replica order."""
    rows: list[ReplicaRow] = []
    for s in sorted(states, key=lambda s: (s.topic, s.partition)):
        if (partitions is not None and s.partition not in partitions) or (exclude_internal and s.internal):
            continue
        for r in s.replicas:
            is_leader = r == s.leader
            if (leaders == "only" and not is_leader) or (leaders == "exclude" and is_leader):
                continue
            in_isr = s.leader != UNKNOWN and r in s.isr
            rows.append(
                ReplicaRow(
                    topic=s.topic,
                    partition=s.partition,
                    replica=r,
                    rack=s.racks.get(r),
                    is_leader=is_leader,
                    is_observer=False,
                    is_isr_eligible=True,
                    is_in_isr=in_isr,
                    is_caught_up=in_isr,
                    last_caught_up_lag_ms=0 if is_leader else UNKNOWN,
                    last_fetch_lag_ms=0 if is_leader else UNKNOWN,
                    log_start_offset=s.log_start_offset,
                    log_end_offset=s.log_end_offset,
                )
            )
    return rows


@dataclass(frozen=True)
class PartitionCounts:
    """MRC's partition metrics (``kafka.cluster:type=Partition``) computed from a :class:`PartitionState`."""

    replicas: int
    in_sync: int
    caught_up: int
    not_caught_up: int


def partition_counts(state: PartitionState) -> PartitionCounts:
    """Return the replica counts of one partition (:class:`PartitionCounts`)."""
    in_sync = 0 if state.leader == UNKNOWN else len([r for r in state.replicas if r in state.isr])
    return PartitionCounts(len(state.replicas), in_sync, in_sync, int(in_sync < len(state.replicas)))


@dataclass(frozen=True)
class RemoteCopy:
    """A copy of a partition in another cluster, kept by a replication flow (``replica-status --remote``).

    mirrorspark's observers: asynchronous, outside the source's ISR, never slowing ``acks=all``.
    ``position`` is the next source offset to copy (-1: none committed); ``lag_records`` and ``lag_s``
    are -1 when unknown.
    """

    topic: str
    partition: int
    flow: str
    cluster: str
    remote_topic: str
    position: int
    lag_records: int
    lag_s: float

    def to_json(self) -> dict[str, Any]:
        """Return the copy as JSON (``cluster``, ``flow``, ``remoteTopic``, ``position``, ``lagRecords``, ...)."""
        return {
            "cluster": self.cluster,
            "flow": self.flow,
            "remoteTopic": self.remote_topic,
            "position": self.position,
            "lagRecords": self.lag_records,
            "lagSeconds": self.lag_s,
        }


def copy_lag(position: int, end_offset: int) -> int:
    """Return the records a remote copy is behind: ``end_offset - position`` (>= 0), ``-1`` if either is ``-1``."""
    if position < 0 or end_offset < 0:
        return UNKNOWN
    return max(0, end_offset - position)


def lag_seconds(lag_records: int, oldest_uncopied_ms: int | None, now_ms: int) -> float:
    """Seconds a remote copy is behind: the age of the oldest record it has not copied yet; -1.0 when unknown."""
    if lag_records == 0:
        return 0.0
    if lag_records < 0 or oldest_uncopied_ms is None or oldest_uncopied_ms < 0:
        return float(UNKNOWN)
    return max(0, now_ms - oldest_uncopied_ms) / 1000.0


# --------------------------------------------------------------------------- elections


@dataclass(frozen=True)
class ElectionOutcome:
    """What a leader election did to one partition (``mirrorspark elect``)."""

    topic: str
    partition: int
    leader_before: int
    leader_after: int
    end_before: int
    end_after: int
    error: str | None = None

    @property
    def truncated(self) -> int:
        """Records the election cut off the end of the log: ``end_before - end_after`` when both are known, else 0."""
        if self.end_before < 0 or self.end_after < 0:
            return 0
        return max(0, self.end_before - self.end_after)


NO_ELECTION_NEEDED: Final = "ELECTION_NOT_NEEDED"
"""Kafka's error code when the wanted leader already leads (not a failure of ``elect``)."""


def election_failures(outcomes: Sequence[ElectionOutcome]) -> list[ElectionOutcome]:
    """Return the outcomes that failed (an error other than :data:`NO_ELECTION_NEEDED`)."""
    return [o for o in outcomes if o.error is not None and o.error != NO_ELECTION_NEEDED]


# --------------------------------------------------------------------------- follower fetching


@dataclass(frozen=True)
class FetchSource:
    """Where a consumer fetched one partition from, by librdkafka's statistics (KIP-392)."""

    broker: int
    leader: int

    @property
    def from_follower(self) -> bool:
        """Whether a follower serves the fetches (KIP-392 follower fetching)."""
        return self.broker >= 0 and self.leader >= 0 and self.broker != self.leader


def fetch_sources(stats: Mapping[str, Any]) -> dict[tuple[str, int], FetchSource]:
    """Read each partition's fetch broker and leader from one librdkafka statistics document."""
    out: dict[tuple[str, int], FetchSource] = {}
    topics = stats.get("topics")
    if not isinstance(topics, Mapping):
        return out
    for name, t in topics.items():
        parts = t.get("partitions") if isinstance(t, Mapping) else None
        if not isinstance(parts, Mapping):
            continue
        for p in parts.values():
            if not isinstance(p, Mapping):
                continue
            pid, broker, leader = p.get("partition"), p.get("broker"), p.get("leader")
            if isinstance(pid, int) and pid >= 0 and isinstance(broker, int) and isinstance(leader, int):
                out[(str(name), pid)] = FetchSource(broker, leader)
    return out


def broker_rx_bytes(stats: Mapping[str, Any]) -> dict[int, int]:
    """Bytes a client received from each broker, by librdkafka's statistics (``brokers.*.rxbytes``)."""
    out: dict[int, int] = {}
    brokers = stats.get("brokers")
    if not isinstance(brokers, Mapping):
        return out
    for b in brokers.values():
        if not isinstance(b, Mapping):
            continue
        node, rx = b.get("nodeid"), b.get("rxbytes")
        if isinstance(node, int) and node >= 0 and isinstance(rx, int):
            out[node] = out.get(node, 0) + rx
    return out


__all__ = [
    "JSON_KEYS",
    "LEGEND",
    "NO_ELECTION_NEEDED",
    "UNKNOWN",
    "ElectionKind",
    "ElectionOutcome",
    "FetchSource",
    "LeadersMode",
    "PartitionCounts",
    "PartitionState",
    "RemoteCopy",
    "ReplicaRow",
    "broker_rx_bytes",
    "copy_lag",
    "election_failures",
    "fetch_sources",
    "lag_seconds",
    "parse_partitions",
    "partition_counts",
    "replica_rows",
]
