"""Disaster-recovery drills: what a failover would lose, re-read and skip, and the drill history's records (no I/O).

``mirrorspark drill`` (:mod:`mirrorspark.migration.drill`) measures a flow ``S->T`` before anyone needs it:

* the **recovery point** — per source partition, the records not yet on the target (end offset minus the
  copied position) and their age (seconds since the oldest of them was written);
* per consumer group with checkpoints, what a failover would do: the target offsets it would commit,
  the records the group would **read again** (copies of records it already consumed on the source) and
  the records it would **skip** (must be 0): :func:`predict_partition`;
* with ``--execute``, the same measured by a real consumer of a shadow group (:func:`shadow_group`) reading
  the target from the committed offsets to the end, each record matched to its source original
  (:func:`match_copies`).

Every drill's result is a record of the compacted topic ``mm2-drills<isep><source><isep>internal`` on the
target (``InternalTopics.drills``), keyed by flow and time, its value the JSON of :class:`DrillResult`
(:func:`encode_drill`, :func:`decode_drill`; layout in ``docs/drills.md``). MM2 has no counterpart: it
offers lag metrics and ``RemoteClusterUtils.translateOffsets``, never a measured failover.

Offsets are Kafka's: a *position* or committed offset is the next offset to read.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

from mirrorspark.core.failover_policy import PartitionHealth, breach_reason
from mirrorspark.errors import CorruptRecordError

DRILLS_PREFIX: Final = "mm2-drills"
"""Prefix of the drill history topic (drills of flows from one source, on their target)."""

SHADOW_PREFIX: Final = "mirrorspark-drill."
"""Prefix of the shadow consumer groups ``drill --execute`` commits to (never the real group)."""

RECORD_VERSION: Final = 1
"""Version (``"v"``) of the drill history's value layout."""

Basis = Literal["exact", "offset-syncs", "unknown"]
"""Where a predicted re-read count comes from: verified against the records, MM2's bound, or not known."""

_ANY_GROUP: Final = "\x00any consumer group \u2603\x00"


def shadow_group(group: str) -> str:
    """Return the shadow group a drill of ``group`` commits to: ``mirrorspark-drill.<group>``."""
    return f"{SHADOW_PREFIX}{group}"


def matches_any_group(pattern: str) -> bool:
    """Tell whether a ``--groups`` regular expression matches any group id at all (``.*``, ``.+``, ``(?s).*``).

    ``drill --execute`` refuses such a pattern without ``--yes``.
    """
    return re.fullmatch(pattern, _ANY_GROUP, re.DOTALL) is not None


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class PartitionRecoveryPoint:
    """One source partition's data a failover would lose now.

    ``position`` is the next offset to copy (-1: never copied); ``seconds`` the age of the oldest record
    not on the target (0.0: none waits, -1.0: unknown).
    """

    topic: str
    partition: int
    end_offset: int
    position: int
    records: int
    seconds: float


@dataclass(frozen=True)
class RecoveryPoint:
    """A flow's recovery point: what is on the source and not (yet) on the target."""

    partitions: tuple[PartitionRecoveryPoint, ...]
    gap_events: int = 0
    gap_records: int = 0

    @property
    def records(self) -> int:
        """Records not yet on the target, over all partitions."""
        return sum(p.records for p in self.partitions)

    @property
    def max_records(self) -> int:
        """The largest partition's records not yet on the target."""
        return max((p.records for p in self.partitions), default=0)

    @property
    def seconds(self) -> float:
        """The oldest record not yet on the target, in seconds (``-1.0`` when a waiting partition's age is unknown)."""
        waiting = [p.seconds for p in self.partitions if p.records > 0]
        if any(s < 0 for s in waiting):
            return -1.0
        return max(waiting, default=0.0)


@dataclass(frozen=True)
class GroupPartitionDrill:
    """One partition of a consumer group's failover: predicted, and measured by ``--execute``.

    ``None`` means unknown or not measured; ``rereads``/``skips`` count from ``committed`` (or from
    ``checkpoint_upstream`` when that is unknown).
    """

    topic: str
    partition: int
    source_topic: str
    committed: int | None
    checkpoint_upstream: int
    target_offset: int
    rereads: int | None
    skips: int | None
    basis: str
    source_lag: int | None = None
    measured_rereads: int | None = None
    measured_skips: int | None = None
    failback_offset: int | None = None
    failback_rereads: int | None = None


def _total(values: Iterable[int | None]) -> int | None:
    vals = list(values)
    if any(v is None for v in vals):
        return None
    return sum(v for v in vals if v is not None)


@dataclass(frozen=True)
class GroupDrill:
    """A consumer group's drilled failover; ``recovery_ms`` runs from the shadow group's commit to its first record."""

    group: str
    partitions: tuple[GroupPartitionDrill, ...]
    target_members: int
    source_members: int | None
    refused: str | None = None
    recovery_ms: int | None = None
    records_read: int | None = None
    without_checkpoint: tuple[str, ...] = ()

    @property
    def rereads(self) -> int | None:
        """Predicted re-reads over the partitions (``None`` when one is unknown)."""
        return _total(p.rereads for p in self.partitions)

    @property
    def skips(self) -> int | None:
        """Predicted skips over the partitions (``None`` when one is unknown)."""
        return _total(p.skips for p in self.partitions)

    @property
    def source_lag(self) -> int | None:
        """The group's lag on the source over the partitions (``None`` when one is unknown)."""
        return _total(p.source_lag for p in self.partitions)

    @property
    def measured_rereads(self) -> int | None:
        """Measured re-reads (``None`` unless every partition was measured)."""
        return _total(p.measured_rereads for p in self.partitions) if self.recovery_ms is not None else None

    @property
    def measured_skips(self) -> int | None:
        """Measured skips (``None`` unless every partition was measured)."""
        return _total(p.measured_skips for p in self.partitions) if self.recovery_ms is not None else None

    @property
    def skipping(self) -> list[GroupPartitionDrill]:
        """Partitions where the prediction or the measurement skips records."""
        return [p for p in self.partitions if (p.skips or 0) > 0 or (p.measured_skips or 0) > 0]


@dataclass(frozen=True)
class PolicyVerdict:
    """What the flow's failover policy (``mirrorspark.failover.policy``) would do now, and why."""

    policy: str
    breached: bool
    action: str
    reason: str
    groups: tuple[str, ...]
    grace_ms: int


@dataclass(frozen=True)
class DrillResult:
    """One drill of a flow: the history topic's record value (``v`` 1)."""

    flow: str
    source: str
    target: str
    at: int
    executed: bool
    recovery_point: RecoveryPoint
    groups: tuple[GroupDrill, ...]
    policy: PolicyVerdict | None
    duration_ms: int

    @property
    def rereads(self) -> int | None:
        """Predicted re-reads over every group (``None`` when one is unknown)."""
        return _total(g.rereads for g in self.groups)

    @property
    def skips(self) -> int | None:
        """Predicted skips over every group (``None`` when one is unknown)."""
        return _total(g.skips for g in self.groups)

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object of ``--json`` and of the history record (with the totals the properties compute)."""
        out = asdict(self)
        out["v"] = RECORD_VERSION
        rp = self.recovery_point
        out["recovery_point"].update(records=rp.records, max_records=rp.max_records, seconds=rp.seconds)
        for g, raw in zip(self.groups, out["groups"], strict=True):
            raw.update(
                rereads=g.rereads,
                skips=g.skips,
                source_lag=g.source_lag,
                measured_rereads=g.measured_rereads,
                measured_skips=g.measured_skips,
            )
        out["rereads"], out["skips"] = self.rereads, self.skips
        return out


def policy_verdict(
    policy: str,
    health: Sequence[PartitionHealth],
    *,
    source: str,
    dry_run: bool,
    grace_ms: int,
    group_patterns: Sequence[str],
    groups: Iterable[str],
) -> PolicyVerdict:
    """Say what the failover policy would do now.

    A dry run of :mod:`mirrorspark.replication.connector.failover_watch`.
    """
    selected = tuple(g for g in groups if any(re.fullmatch(p, g) for p in group_patterns))
    reason = breach_reason(policy, health, source=source)
    if reason is None:
        what = "offline" if policy == "offline" else "offline or under min ISR"
        healthy = f"the source is healthy: none of its {len(health)} partitions is {what}"
        return PolicyVerdict(policy, False, "nothing", healthy, selected, grace_ms)
    action = "record only" if policy == "manual" or dry_run else "fail over"
    return PolicyVerdict(policy, True, action, reason, selected, grace_ms)


# --------------------------------------------------------------------------- prediction and measurement


def predict_partition(
    committed: int | None,
    copied_position: int | None,
    checkpoint_upstream: int,
    checkpoint_rereads: int,
    *,
    source_start: int = 0,
) -> tuple[int, int]:
    """Predict the records a consumer starting at a checkpoint's downstream offset reads again and skips.

    The consumer's first record on the target is the copy of source offset
    ``s0 = checkpoint_upstream - checkpoint_rereads``. Relative to the group's committed offset ``g``
    on the source, it reads again the copies of ``[s0, min(g, copied_position))`` and skips
    ``[g, s0)`` (a checkpoint ahead of the group: it was reset back since). Records the group consumed
    that were never copied are neither: they are not on the target (the recovery point).
    """
    g = checkpoint_upstream if committed is None else max(committed, source_start)
    s0 = checkpoint_upstream - checkpoint_rereads
    end = g if copied_position is None else min(g, copied_position)
    return max(0, end - s0), max(0, s0 - g)


@dataclass(frozen=True)
class CopyMatch:
    """Target records read by a drill's consumer, matched to their source originals (:func:`match_copies`).

    ``frontier`` is one past the newest source offset whose copy was read (``None``: none matched).
    """

    rereads: int
    skips: int
    unmatched: int
    frontier: int | None


def match_copies(target: Sequence[bytes], source: Sequence[tuple[int, bytes]], committed: int) -> CopyMatch:
    """Match the fingerprints of records read on the target to the source records they copy."""
    where: dict[bytes, list[int]] = {}
    for off, fp in source:
        where.setdefault(fp, []).append(off)
    seen: set[int] = set()
    prev = -1
    rereads = unmatched = 0
    for fp in target:
        cands = where.get(fp)
        if not cands:
            unmatched += 1
            continue
        i = bisect_right(cands, prev)
        off = cands[i] if i < len(cands) else cands[-1]
        if off < committed or off in seen:
            rereads += 1
        seen.add(off)
        prev = off
    if not seen:
        return CopyMatch(rereads, 0, unmatched, None)
    frontier = max(seen) + 1
    skips = sum(1 for off, _ in source if committed <= off < frontier and off not in seen)
    return CopyMatch(rereads, skips, unmatched, frontier)


# --------------------------------------------------------------------------- the history topic's records


def encode_drill(result: DrillResult) -> tuple[bytes, bytes]:
    """Key ``{"flow", "at"}`` (one per drill: compaction keeps them all) and value of a drill history record."""
    key = {"flow": result.flow, "at": result.at}
    return _dumps(key), _dumps(result.to_json())


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _req(obj: dict[str, Any], name: str, kinds: tuple[type, ...], *, optional: bool = False) -> Any:
    v = obj.get(name)
    if v is None and optional:
        return None
    if (isinstance(v, bool) and bool not in kinds) or not isinstance(v, kinds):
        raise CorruptRecordError(f"drill record: {name} must be {' or '.join(k.__name__ for k in kinds)}")
    return v


def _list(obj: dict[str, Any], name: str) -> list[dict[str, Any]]:
    raw = obj.get(name)
    if not isinstance(raw, list) or not all(isinstance(x, dict) for x in raw):
        raise CorruptRecordError(f"drill record: {name} must be a list of objects")
    return raw


def _strings(obj: dict[str, Any], name: str) -> list[str]:
    raw = obj.get(name)
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise CorruptRecordError(f"drill record: {name} must be a list of strings")
    return raw


def _partition_rp(x: dict[str, Any]) -> PartitionRecoveryPoint:
    return PartitionRecoveryPoint(
        topic=_req(x, "topic", (str,)),
        partition=_req(x, "partition", (int,)),
        end_offset=_req(x, "end_offset", (int,)),
        position=_req(x, "position", (int,)),
        records=_req(x, "records", (int,)),
        seconds=float(_req(x, "seconds", (int, float))),
    )


_OPTIONAL_INTS: Final = (
    "committed",
    "rereads",
    "skips",
    "source_lag",
    "measured_rereads",
    "measured_skips",
    "failback_offset",
    "failback_rereads",
)


def _group_partition(x: dict[str, Any]) -> GroupPartitionDrill:
    optional = {name: _req(x, name, (int,), optional=True) for name in _OPTIONAL_INTS}
    return GroupPartitionDrill(
        topic=_req(x, "topic", (str,)),
        partition=_req(x, "partition", (int,)),
        source_topic=_req(x, "source_topic", (str,)),
        checkpoint_upstream=_req(x, "checkpoint_upstream", (int,)),
        target_offset=_req(x, "target_offset", (int,)),
        basis=_req(x, "basis", (str,)),
        **optional,
    )


def _group(x: dict[str, Any]) -> GroupDrill:
    return GroupDrill(
        group=_req(x, "group", (str,)),
        partitions=tuple(_group_partition(p) for p in _list(x, "partitions")),
        target_members=_req(x, "target_members", (int,)),
        source_members=_req(x, "source_members", (int,), optional=True),
        refused=_req(x, "refused", (str,), optional=True),
        recovery_ms=_req(x, "recovery_ms", (int,), optional=True),
        records_read=_req(x, "records_read", (int,), optional=True),
        without_checkpoint=tuple(_strings(x, "without_checkpoint")),
    )


def _policy(x: dict[str, Any] | None) -> PolicyVerdict | None:
    if x is None:
        return None
    if not isinstance(x, dict):
        raise CorruptRecordError("drill record: policy must be an object")
    groups = _strings(x, "groups")
    return PolicyVerdict(
        policy=_req(x, "policy", (str,)),
        breached=_req(x, "breached", (bool,)),
        action=_req(x, "action", (str,)),
        reason=_req(x, "reason", (str,)),
        groups=tuple(groups),
        grace_ms=_req(x, "grace_ms", (int,)),
    )


def decode_drill_key(key: bytes | None) -> tuple[str, int]:
    """Decode a drill history record's key (:func:`encode_drill`): ``(flow, at)``, ``at`` in epoch ms.

    A tombstone (no value) names by its key the drill it deletes; raises CorruptRecordError if the key is
    not a JSON object with a string ``flow`` and an integer ``at``.
    """
    try:
        k = json.loads(key or b"")
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise CorruptRecordError(f"drill record key is not JSON: {type(e).__name__}") from e
    if not isinstance(k, dict):
        raise CorruptRecordError("drill record: the key must be a JSON object")
    return _req(k, "flow", (str,)), _req(k, "at", (int,))


def decode_drill(key: bytes | None, value: bytes | None) -> DrillResult:
    """Decode a drill history record (:func:`encode_drill`); raises CorruptRecordError naming the bad field."""
    try:
        k = json.loads(key or b"")
        v = json.loads(value or b"")
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise CorruptRecordError(f"drill record is not JSON: {type(e).__name__}") from e
    if not isinstance(k, dict) or not isinstance(v, dict):
        raise CorruptRecordError("drill record: key and value must be JSON objects")
    if v.get("v") != RECORD_VERSION:
        raise CorruptRecordError(f"drill record: unknown version {v.get('v')!r} (this reader knows {RECORD_VERSION})")
    rp = v.get("recovery_point")
    if not isinstance(rp, dict):
        raise CorruptRecordError("drill record: recovery_point must be an object")
    return DrillResult(
        flow=_req(v, "flow", (str,)),
        source=_req(v, "source", (str,)),
        target=_req(v, "target", (str,)),
        at=_req(v, "at", (int,)),
        executed=_req(v, "executed", (bool,)),
        recovery_point=RecoveryPoint(
            partitions=tuple(_partition_rp(p) for p in _list(rp, "partitions")),
            gap_events=_req(rp, "gap_events", (int,)),
            gap_records=_req(rp, "gap_records", (int,)),
        ),
        groups=tuple(_group(g) for g in _list(v, "groups")),
        policy=_policy(v.get("policy")),
        duration_ms=_req(v, "duration_ms", (int,)),
    )


__all__ = [
    "DRILLS_PREFIX",
    "RECORD_VERSION",
    "SHADOW_PREFIX",
    "Basis",
    "CopyMatch",
    "DrillResult",
    "GroupDrill",
    "GroupPartitionDrill",
    "PartitionRecoveryPoint",
    "PolicyVerdict",
    "RecoveryPoint",
    "decode_drill",
    "decode_drill_key",
    "encode_drill",
    "match_copies",
    "matches_any_group",
    "policy_verdict",
    "predict_partition",
    "shadow_group",
]
