"""Replica placement: Confluent's placement JSON, assignments over racks, and the repairs they need.

Pure code (no I/O). Confluent Platform's Multi-Region Clusters describe where a topic's replicas
go with a *replica placement* (``kafka-topics --replica-placement f.json``, topic config
``confluent.placement.constraints``)::

    {"version": 2,
     "replicas": [{"count": 2, "constraints": {"rack": "east"}},
                  {"count": 1, "constraints": {"rack": "west"}}],
     "observers": [...],                          # Confluent only: refused here
     "observerPromotionPolicy": "under-min-isr"}  # version 2 only: accepted, no effect

Apache Kafka has no placement constraints and no observers, so mirrorspark keeps the constraints
itself and turns them into explicit replica assignments:

* :func:`parse_placement` / :func:`parse_placement_rules` validate the JSON (a rack once,
  ``count`` >= 1, version 1 or 2) and refuse ``observers``, naming the alternative;
* :func:`assign_replicas` computes the assignment of a new topic (``CreateTopics`` with a
  replica assignment): ``count`` brokers of each rack per partition, the preferred leader
  (the first replica) in the first rack listed, leaders spread round-robin over that rack's
  brokers;
* :func:`violations` tells why an existing assignment does not satisfy a placement;
* :func:`plan_moves` computes the reassignment of only the partitions that do not satisfy their
  placement (Confluent's ``confluent-rebalancer --replica-placement-only``), keeping the
  replicas already in the right racks and adding the least-loaded brokers of each rack;
* :func:`reassignment_json` writes the plan in the format of Kafka's
  ``kafka-reassign-partitions --reassignment-json-file``, and :func:`parse_reassignment_list`
  reads that tool's ``--list`` output back.

Invariants: an assignment returned by :func:`assign_replicas` or a target of :func:`plan_moves`
has exactly ``count`` distinct brokers of each constrained rack, no broker of another rack, and
its first broker in the first rack listed; :func:`violations` of it is empty.
"""

from __future__ import annotations

import json
import re
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from mirrorspark.errors import PlacementError

PROMOTION_POLICIES: Final = ("under-min-isr", "under-replicated", "leader-is-observer")
"""Confluent's ``observerPromotionPolicy`` values (placement version 2)."""

OBSERVERS_ALTERNATIVE: Final = (
    "observers (asynchronous replicas outside the ISR) do not exist on Apache Kafka (Confluent Server only; "
    "KIP-929 was never implemented); remove 'observers' and copy the topics to that region with a mirrorspark "
    "replication flow to a cluster in that region (e.g. 'A->B.enabled = true'): like an observer it is "
    "asynchronous and never slows acks=all, and failing over to it means moving clients with translated offsets"
)
"""Why ``observers`` are refused, and what to do instead."""

_PLACEMENT_KEYS: Final = ("version", "replicas", "observers", "observerPromotionPolicy")
_RULE_KEYS: Final = ("topics", "placement")

Assignment = tuple[tuple[int, ...], ...]
"""Replicas per partition (index = partition id), each a tuple of broker ids, preferred leader first."""


@dataclass(frozen=True)
class RackReplicas:
    """One entry of a placement's ``replicas``: ``count`` replicas in ``rack``."""

    rack: str
    count: int


@dataclass(frozen=True)
class Placement:
    """A validated replica placement (Confluent's placement JSON without observers)."""

    version: int
    replicas: tuple[RackReplicas, ...]
    observer_promotion_policy: str | None = None

    @property
    def replication_factor(self) -> int:
        """The number of replicas per partition: the sum of the ``count`` values."""
        return sum(r.count for r in self.replicas)

    @property
    def racks(self) -> tuple[str, ...]:
        """The constrained racks, in order (the first holds the preferred leaders)."""
        return tuple(r.rack for r in self.replicas)

    @property
    def notes(self) -> tuple[str, ...]:
        """Warnings about accepted parts that have no effect (``observerPromotionPolicy``)."""
        if self.observer_promotion_policy is None:
            return ()
        return (
            f"observerPromotionPolicy '{self.observer_promotion_policy}' has no effect: it promotes observers, "
            "which do not exist on Apache Kafka; a failed region's partitions fail over by leader election "
            "among their replicas (or, across clusters, by moving clients to a mirrorspark flow's target)",
        )

    def to_json(self) -> dict[str, Any]:
        """Return the placement in Confluent's JSON shape (without observers)."""
        doc: dict[str, Any] = {
            "version": self.version,
            "replicas": [{"count": r.count, "constraints": {"rack": r.rack}} for r in self.replicas],
        }
        if self.observer_promotion_policy is not None:
            doc["observerPromotionPolicy"] = self.observer_promotion_policy
        return doc


@dataclass(frozen=True)
class PlacementRule:
    """A placement for the topics whose whole name matches ``topics``."""

    topics: str
    placement: Placement
    _pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "_pattern", re.compile(self.topics))
        except re.error as e:
            raise PlacementError(
                f"placement rule 'topics': {self.topics!r} is not a valid regular expression ({e}); fix the regex"
            ) from e

    def matches(self, topic: str) -> bool:
        """Whether ``topic`` (its whole name) matches :attr:`topics`."""
        return self._pattern.fullmatch(topic) is not None


@dataclass(frozen=True)
class PlacementRules:
    """Placements by topic regex; the first rule whose regex matches a topic's whole name wins."""

    rules: tuple[PlacementRule, ...]

    def for_topic(self, topic: str) -> Placement | None:
        """Return the placement of ``topic``, or ``None`` if no rule matches (the cluster's default applies)."""
        for rule in self.rules:
            if rule.matches(topic):
                return rule.placement
        return None

    @property
    def notes(self) -> tuple[str, ...]:
        """Warnings of every rule's placement (:attr:`Placement.notes`), each once."""
        return tuple(dict.fromkeys(n for r in self.rules for n in r.placement.notes))


# --------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _unknown_keys(doc: Mapping[str, Any], known: Sequence[str], what: str) -> None:
    unknown = sorted(set(doc) - set(known))
    if unknown:
        raise PlacementError(
            f"{what} has unknown key(s) {', '.join(repr(k) for k in unknown)}: expected {', '.join(known)}"
        )


def _rack_entries(value: object, what: str) -> tuple[RackReplicas, ...]:
    if not isinstance(value, list) or not value:
        raise PlacementError(f'\'{what}\' must be a non-empty list of {{"count": N, "constraints": {{"rack": "R"}}}}')
    out: list[RackReplicas] = []
    for i, entry in enumerate(value):
        here = f"'{what}[{i}]'"
        if not isinstance(entry, dict):
            raise PlacementError(f'{here} must be an object {{"count": N, "constraints": {{"rack": "R"}}}}')
        _unknown_keys(entry, ("count", "constraints"), here)
        count = _int(entry.get("count"))
        if count is None or count < 1:
            raise PlacementError(f"{here}: 'count' must be an integer >= 1, got {entry.get('count')!r}")
        constraints = entry.get("constraints")
        if not isinstance(constraints, dict):
            raise PlacementError(f'{here}: \'constraints\' must be an object {{"rack": "R"}}')
        _unknown_keys(constraints, ("rack",), f"{here} 'constraints' (only rack constraints exist)")
        rack = constraints.get("rack")
        if not isinstance(rack, str) or not rack.strip():
            raise PlacementError(f"{here}: 'constraints.rack' must be a non-empty string (a broker.rack)")
        out.append(RackReplicas(rack, count))
    seen = Counter(r.rack for r in out)
    twice = sorted(rack for rack, n in seen.items() if n > 1)
    if twice:
        raise PlacementError(
            f"'{what}' names rack {twice[0]!r} more than once: list each rack once with its total count"
        )
    return tuple(out)


def parse_placement(doc: object) -> Placement:
    """Validate one decoded placement as Confluent Server's ``TopicPlacement`` does.

    Raises PlacementError for anything Confluent refuses and for any non-empty ``observers``
    (:data:`OBSERVERS_ALTERNATIVE` says what to do instead).
    """
    if not isinstance(doc, dict):
        raise PlacementError(
            "a replica placement must be a JSON object "
            '{"version": 1, "replicas": [{"count": N, "constraints": {"rack": "R"}}]}'
        )
    _unknown_keys(doc, _PLACEMENT_KEYS, "the placement")
    version = _int(doc.get("version"))
    if version not in (1, 2):
        raise PlacementError(f"placement 'version' must be 1 or 2, got {doc.get('version')!r}")
    replicas = _rack_entries(doc.get("replicas"), "replicas")
    observers = doc.get("observers")
    if observers not in (None, []):
        raise PlacementError(f"the placement has 'observers': {OBSERVERS_ALTERNATIVE}")
    policy = doc.get("observerPromotionPolicy")
    if policy is not None:
        if version == 1:
            raise PlacementError(
                "'observerPromotionPolicy' needs placement version 2 (version 1 always behaves as "
                'leader-is-observer); set "version": 2 or remove it'
            )
        if policy not in PROMOTION_POLICIES:
            raise PlacementError(
                f"'observerPromotionPolicy' must be one of {', '.join(PROMOTION_POLICIES)}, got {policy!r}"
            )
    return Placement(version, replicas, policy)


def parse_placement_rules(text: str) -> PlacementRules:
    """Parse a placement document: one placement, or a list of placements by topic regex.

    In a list ``[{"topics": REGEX, "placement": {...}}, ...]`` the first rule whose regex matches a topic's
    whole name wins; topics no rule matches keep the cluster's default. Raises PlacementError (invalid JSON
    with line and column, a malformed rule or regex, or a placement :func:`parse_placement` refuses).
    """
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise PlacementError(f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno})") from e
    if isinstance(doc, dict):
        return PlacementRules((PlacementRule(".*", parse_placement(doc)),))
    if not isinstance(doc, list) or not doc:
        raise PlacementError('expected a placement object or a non-empty list of {"topics": REGEX, "placement": {...}}')
    rules: list[PlacementRule] = []
    for i, entry in enumerate(doc):
        if not isinstance(entry, dict):
            raise PlacementError(f'rule {i} must be an object {{"topics": REGEX, "placement": {{...}}}}')
        _unknown_keys(entry, _RULE_KEYS, f"rule {i}")
        topics = entry.get("topics")
        if not isinstance(topics, str) or not topics:
            raise PlacementError(f"rule {i}: 'topics' must be a regular expression (a non-empty string)")
        try:
            placement = parse_placement(entry.get("placement"))
        except PlacementError as e:
            raise PlacementError(f"rule {i} ({topics!r}): {e.message}") from e
        rules.append(PlacementRule(topics, placement))
    return PlacementRules(tuple(rules))


# --------------------------------------------------------------------------------------
# Assignments
# --------------------------------------------------------------------------------------


def rack_brokers(brokers: Mapping[int, str | None]) -> dict[str, tuple[int, ...]]:
    """Group broker ids by rack (brokers without a rack are left out), ids sorted."""
    out: dict[str, list[int]] = {}
    for node, rack in sorted(brokers.items()):
        if rack is not None:
            out.setdefault(rack, []).append(node)
    return {rack: tuple(ids) for rack, ids in out.items()}


def check_racks(placement: Placement, brokers: Mapping[int, str | None], *, cluster: str) -> None:
    """Check that every constrained rack has at least ``count`` brokers; PlacementError lists the cluster's racks."""
    by_rack = rack_brokers(brokers)
    for want in placement.replicas:
        have = len(by_rack.get(want.rack, ()))
        if have >= want.count:
            continue
        known = ", ".join(f"{r} ({len(ids)})" for r, ids in sorted(by_rack.items())) or "none (no broker.rack set)"
        what = "no broker" if have == 0 else f"only {have} broker(s)"
        raise PlacementError(
            f"rack {want.rack!r} has {what} on cluster '{cluster}', the placement puts {want.count} replica(s) "
            f"there: racks (brokers) of '{cluster}' are {known}; fix the placement's racks or counts"
        )


def _rotation(topic: str) -> int:
    """Return a stable per-topic start offset, so that many small topics do not all lead on one broker."""
    return zlib.crc32(topic.encode("utf-8"))


def assign_replicas(
    placement: Placement,
    partitions: int,
    brokers: Mapping[int, str | None],
    *,
    topic: str = "",
    cluster: str = "target",
    first_partition: int = 0,
) -> Assignment:
    """Compute the replica assignment of a topic's partitions under a placement.

    For partition ``p`` and each rack in order, ``count`` consecutive brokers of that rack's
    sorted broker list, starting at ``(rotation(topic) + p) mod n``: the preferred leader is in
    the first rack and moves round-robin over its brokers from partition to partition.
    Raises PlacementError as :func:`check_racks`.
    """
    check_racks(placement, brokers, cluster=cluster)
    by_rack = rack_brokers(brokers)
    start = _rotation(topic)
    out: list[tuple[int, ...]] = []
    for p in range(first_partition, first_partition + partitions):
        replicas: list[int] = []
        for want in placement.replicas:
            ids = by_rack[want.rack]
            replicas.extend(ids[(start + p + j) % len(ids)] for j in range(want.count))
        out.append(tuple(replicas))
    return tuple(out)


def violations(placement: Placement, replicas: Sequence[int], brokers: Mapping[int, str | None]) -> tuple[str, ...]:
    """Tell why a partition's replicas do not satisfy a placement."""
    reasons: list[str] = []
    in_rack = Counter(brokers.get(b) for b in replicas)
    for want in placement.replicas:
        have = in_rack.get(want.rack, 0)
        if have != want.count:
            reasons.append(f"{have} replica(s) in rack {want.rack!r}, placement wants {want.count}")
    for b in replicas:
        rack = brokers.get(b)
        if rack not in placement.racks:
            reasons.append(
                f"replica on broker {b} ({'no rack' if rack is None else f'rack {rack!r}'}) outside the placement"
            )
    if replicas and brokers.get(replicas[0]) != placement.racks[0] and in_rack.get(placement.racks[0], 0) > 0:
        reasons.append(f"preferred leader {replicas[0]} is not in the first rack {placement.racks[0]!r}")
    return tuple(reasons)


def repair(
    placement: Placement, replicas: Sequence[int], brokers: Mapping[int, str | None], load: Mapping[int, int]
) -> tuple[int, ...]:
    """Compute the nearest assignment that satisfies a placement.

    Per rack in order: keep up to ``count`` of the current replicas in that rack (in their
    current order, so a preferred leader already in the first rack stays first), then add the
    least-loaded other brokers of the rack (ties: lowest id). Replicas outside every
    constrained rack, and surplus ones, are dropped.
    """
    by_rack = rack_brokers(brokers)
    target: list[int] = []
    for want in placement.replicas:
        keep = [b for b in replicas if brokers.get(b) == want.rack][: want.count]
        spare = sorted((b for b in by_rack.get(want.rack, ()) if b not in keep), key=lambda b: (load.get(b, 0), b))
        target.extend(keep + spare[: want.count - len(keep)])
    return tuple(target)


@dataclass(frozen=True)
class Move:
    """One partition's reassignment."""

    topic: str
    partition: int
    current: tuple[int, ...]
    target: tuple[int, ...]
    reasons: tuple[str, ...] = ()

    @property
    def adding(self) -> tuple[int, ...]:
        """Brokers that get a new replica (data is copied to them)."""
        return tuple(b for b in self.target if b not in self.current)

    @property
    def removing(self) -> tuple[int, ...]:
        """Brokers whose replica is deleted once the new ones are in sync."""
        return tuple(b for b in self.current if b not in self.target)


def plan_moves(
    topics: Mapping[str, Sequence[Sequence[int]]],
    placements: Mapping[str, Placement],
    brokers: Mapping[int, str | None],
    *,
    cluster: str = "target",
) -> list[Move]:
    """Plan the reassignments of the partitions that do not satisfy their placement, and only those.

    Confluent's ``confluent-rebalancer execute --replica-placement-only`` (Kafka's ``--generate`` would
    move all); moves by topic then partition, the load updated as they are planned. Raises PlacementError
    as :func:`check_racks`.
    """
    load: Counter[int] = Counter(b for parts in topics.values() for replicas in parts for b in replicas)
    moves: list[Move] = []
    for topic in sorted(placements):
        if topic not in topics:
            continue
        placement = placements[topic]
        check_racks(placement, brokers, cluster=cluster)
        for partition, replicas in enumerate(topics[topic]):
            reasons = violations(placement, replicas, brokers)
            if not reasons:
                continue
            target = repair(placement, replicas, brokers, load)
            move = Move(topic, partition, tuple(replicas), target, reasons)
            load.subtract(move.removing)
            load.update(move.adding)
            moves.append(move)
    return moves


def reassignment_json(moves: Sequence[Move]) -> dict[str, Any]:
    """Return the plan as Kafka's reassignment JSON (``kafka-reassign-partitions --reassignment-json-file``)."""
    return {
        "version": 1,
        "partitions": [{"topic": m.topic, "partition": m.partition, "replicas": list(m.target)} for m in moves],
    }


# --------------------------------------------------------------------------------------
# Reassignments in progress
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ongoing:
    """A reassignment in progress, as Kafka's ``ListPartitionReassignments`` reports it."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]

    @property
    def target(self) -> tuple[int, ...]:
        """The replicas once the move completes: :attr:`replicas` without :attr:`removing`."""
        return tuple(b for b in self.replicas if b not in self.removing)


_LIST_LINE = re.compile(
    r"^(?P<topic>.+)-(?P<partition>\d+): replicas: (?P<replicas>[\d,]*)\. "
    r"adding: (?P<adding>[\d,]*)\. removing: (?P<removing>[\d,]*)\.$"
)


def _ids(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x)


def parse_reassignment_list(text: str) -> dict[tuple[str, int], Ongoing]:
    """Read ``kafka-reassign-partitions --list``'s output (``ReassignPartitionsCommand``): ongoing moves."""
    out: dict[tuple[str, int], Ongoing] = {}
    for line in text.splitlines():
        m = _LIST_LINE.match(line.strip())
        if m is None:
            continue
        out[(m["topic"], int(m["partition"]))] = Ongoing(_ids(m["replicas"]), _ids(m["adding"]), _ids(m["removing"]))
    return out


__all__ = [
    "OBSERVERS_ALTERNATIVE",
    "PROMOTION_POLICIES",
    "Assignment",
    "Move",
    "Ongoing",
    "Placement",
    "PlacementRule",
    "PlacementRules",
    "RackReplicas",
    "assign_replicas",
    "check_racks",
    "parse_placement",
    "parse_placement_rules",
    "parse_reassignment_list",
    "plan_moves",
    "rack_brokers",
    "reassignment_json",
    "repair",
    "violations",
]
