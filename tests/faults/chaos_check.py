"""The randomized fault checker's verdict, proven from the clusters, the feed's log and the fault log.

For each flow (one per mode) it reads the remote topics on the target (``read_committed`` in
exactly-once mode, every copy in at-least-once mode), the flow's checkpoints
(``<source>.checkpoints.internal``, MM2's format), its stored positions (``mm2-offsets.<source>.internal``)
and the gaps ``mirrorspark status --json`` names, and checks them against what the faults did.
It trusts nothing the system says about itself: a gap is only a claim, believed as far as the
fault log (:class:`chaos_feed.Removal`: which records of which partition and incarnation each
``delete-records`` or ``recreate-topic`` removed, and when) shows those records removed.

* **lost**: every produced record is on the target, or both named by a gap and removed by a fault
  before the gap was found, and before it was copied: no later record of its partition that the
  same removal took is on the target (a flow copies a partition in order: a copy past it was made
  while it was still on the source, a position jump). A gap names
  records of its flow, topic and partition: a gap naming an old topic id (a topic deleted, or
  deleted and re-created) that incarnation's records from its ``first_lost`` on, and a
  ``recreated`` gap every record of an incarnation between its old and new ids (created and
  deleted again while the flow could not look); a ``deleted``/``truncated`` gap without an old id
  its exact range, found while that incarnation lived (a gap with no known start names nothing).
  A gap wider than what the faults removed excuses only the removed records;
* **spurious gap**: a gap no removal of the fault log grounds (done before the gap was found, on
  its partition, overlapping what it names; for an old topic id, that incarnation's
  re-creation) is a position jump over records still on the source, a violation by itself;
* **copied twice**: copies beyond the first; exactly-once: none; at-least-once: at most the bound;
* **order**: in each remote partition, the first copies of a source partition's records appear in
  upstream-offset order (and in the partition of the same number);
* **checkpoint**: no checkpoint translates an upstream offset ``u`` to a downstream offset past
  every copy of the record at ``u`` (a failed-over consumer would skip it);
* **stored position**: no position in ``mm2-offsets`` of a live partition lies past its end, other
  than the foreign records the faults wrote (a flow adopting one would skip records).
"""

from __future__ import annotations

import bisect
import json
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos_feed import FedRecord, Incarnation, Removal, parse_value
from confluent_kafka import Consumer, KafkaError, TopicPartition
from helpers import admin, client_config, unique_name

from mirrorspark.errors import MirrorsparkError
from mirrorspark.mm2.connect_offsets import decode_source_offset
from mirrorspark.mm2.records import Checkpoint

__all__ = [
    "Copies",
    "FlowVerdict",
    "Violation",
    "add_position_violations",
    "check_flow",
    "read_checkpoints",
    "read_copies",
    "read_topic",
    "status_gaps",
    "watermarks",
]

GAP_GRACE_MS = 60_000
"""A ``deleted``/``truncated`` gap found up to this long after its incarnation's deletion still names it, ms."""


@dataclass(frozen=True)
class Violation:
    """One broken guarantee: its kind, what, and the records concerned (a few)."""

    kind: str
    detail: str
    records: tuple[str, ...] = ()

    def line(self, seed: int, mode: str) -> str:
        """``seed 7 exactly-once: copied-twice: ...``, with the first records."""
        recs = f" records: {', '.join(self.records[:5])}" if self.records else ""
        return f"seed {seed} {mode}: {self.kind}: {self.detail}{recs}"


@dataclass
class FlowVerdict:
    """What one flow (one mode) did under a seed's faults."""

    mode: str
    produced: int
    copied: int
    in_gaps: int
    lost: int
    copied_twice: int
    bound: int
    gaps_named: int
    checkpoints: int
    spurious_gaps: int = 0
    violations: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No violation."""
        return not self.violations


Copies = dict[bytes, list[tuple[int, int]]]
"""value -> [(remote partition, remote offset)] of each copy, in read order."""


def watermarks(bootstrap: str, topic: str, *, read_committed: bool) -> dict[int, int]:
    """``{partition: end offset}`` of ``topic`` (the last stable offset when ``read_committed``); ``{}`` if missing."""
    consumer = Consumer(
        client_config(
            bootstrap,
            **{
                "group.id": "chaos-watermarks",
                "client.id": "mirrorspark-chaos|watermarks",
                "isolation.level": "read_committed" if read_committed else "read_uncommitted",
            },
        )
    )
    try:
        meta = consumer.list_topics(topic=topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None:
            return {}
        return {
            p: int(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]) for p in meta.partitions
        }
    finally:
        consumer.close()


def read_topic(bootstrap: str, topic: str, *, read_committed: bool, timeout_s: float = 120.0) -> list[Any]:
    """Every record of ``topic`` (all partitions, to the end offsets taken now), as confluent-kafka messages."""
    meta = admin(bootstrap).list_topics(topic=topic, timeout=30).topics.get(topic)
    if meta is None or meta.error is not None:
        return []
    consumer = Consumer(
        client_config(
            bootstrap,
            **{
                "group.id": unique_name("chaos-check"),
                "client.id": "mirrorspark-chaos|check",
                "enable.auto.commit": False,
                "isolation.level": "read_committed" if read_committed else "read_uncommitted",
            },
        )
    )
    out: list[Any] = []
    try:
        ends = {}  # a read_committed consumer's high watermark is the last stable offset
        for p in meta.partitions:
            lo, hi = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            if hi > lo:
                ends[p] = hi
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
        pending = set(ends)
        deadline = time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=10_000, timeout=0.5):
                if m.error() is None:
                    out.append(m)
                elif m.error().code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(f"reading {topic}: {m.error()}")
            for tp in consumer.position([TopicPartition(topic, p) for p in pending]):
                if tp.offset >= ends[tp.partition]:
                    pending.discard(tp.partition)
        if pending:
            raise RuntimeError(f"reading {topic}: partitions {sorted(pending)} not read to their end in {timeout_s} s")
    finally:
        consumer.close()
    return out


def read_copies(bootstrap: str, remote_topics: Sequence[str], *, read_committed: bool) -> Copies:
    """The copies of feed values in ``remote_topics``, as a ``read_committed`` (or uncommitted) consumer sees them."""
    copies: Copies = defaultdict(list)
    for topic in remote_topics:
        msgs = read_topic(bootstrap, topic, read_committed=read_committed)
        for m in sorted(msgs, key=lambda m: (m.partition(), m.offset())):
            value = m.value() or b""
            if parse_value(value) is not None:
                copies[value].append((int(m.partition()), int(m.offset())))
    return dict(copies)


def status_gaps(properties: Path, env: Mapping[str, str]) -> list[dict[str, Any]]:
    """The gaps ``mirrorspark status <properties> --json`` names (every flow).

    Raises
    ------
    RuntimeError
        If the command fails or prints no JSON.
    """
    done = subprocess.run(
        [sys.executable, "-m", "mirrorspark", "status", str(properties), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(env),
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"mirrorspark status --json exited {done.returncode}: {done.stderr[-2000:]}")
    return list(json.loads(done.stdout)["gaps"])


Gap = Mapping[str, Any]
"""A gap as ``mirrorspark status --json`` prints it (``flow``, ``topic``, ``partition``, ``reason``, ...)."""

Claim = tuple[int, int, int | None]
"""What a gap says was lost on its partition: ``(incarnation, first offset, last offset or None: to its end)``."""


def _claims(g: Gap, lives: Sequence[Incarnation]) -> list[Claim]:
    """The records a gap says its flow lost, per incarnation of its topic (the system's word, not yet believed)."""
    index = {i.topic_id: i.index for i in lives}
    old, new = index.get(g.get("old_topic_id") or ""), index.get(g.get("new_topic_id") or "")
    out: list[Claim] = []
    if g["reason"] == "recreated" and old is not None and new is not None:
        out += [(i, 0, None) for i in range(old + 1, new)]  # incarnations the flow never saw, between the two
    if g["first_lost"] is None:
        return out
    if g.get("old_topic_id") is not None:  # a whole incarnation went: its records from first_lost on
        return [*out, (old, g["first_lost"], None)] if old is not None else out
    if g["last_lost"] is None:
        return out
    for life in lives:  # found while that incarnation lived (or just after its deletion)
        if g["at"] >= life.created_ms and (life.deleted_ms is None or g["at"] <= life.deleted_ms + GAP_GRACE_MS):
            out.append((life.index, g["first_lost"], g["last_lost"]))
    return out


def _in_claims(rec: FedRecord, claims: Sequence[Claim]) -> bool:
    """Whether ``rec`` is among the records ``claims`` name."""
    return any(
        rec.incarnation == i and first <= rec.offset and (last is None or rec.offset <= last)
        for i, first, last in claims
    )


def _grounds(
    g: Gap, claims: Sequence[Claim], lives: Sequence[Incarnation], removals: Sequence[Removal]
) -> list[Removal]:
    """The fault log's removals a gap reports; none: the gap is spurious (no fault removed what it names).

    A removal grounds a gap if it was done before the gap was found, on the gap's partition, and
    removed records the gap names (an overlap of incarnation and offsets). A gap naming an old topic
    id needs the re-creation of that incarnation (of any of its partitions) in the fault log (and its
    new id a later incarnation);
    then that re-creation and every removal of the incarnations it names ground it (the range may be
    empty: nothing was left to copy).
    """
    topic_before = [r for r in removals if r.topic == g["topic"] and r.at_ms <= g["at"]]
    before = [r for r in topic_before if r.partition == g["partition"]]
    named = {i for i, _, _ in claims}
    old_id = g.get("old_topic_id")
    if old_id is not None:
        index = {i.topic_id: i.index for i in lives}
        new_id = g.get("new_topic_id")
        if new_id is not None and index.get(new_id, -1) <= index.get(old_id, len(lives)):
            return []
        # the topic's re-creation, logged per partition it had: a partition the old topic may have had (added
        # while the flow could not look) is named too, and holds no record of it unless another removal shows one
        gone = [r for r in topic_before if r.kind == "recreate-topic" and r.topic_id == old_id]
        return [*gone, *(r for r in before if r.incarnation in named and r not in gone)] if gone else []
    return [
        r
        for r in before
        if any(r.incarnation == i and first < r.end and (last is None or r.first <= last) for i, first, last in claims)
    ]


@dataclass(frozen=True)
class _Judged:
    """A gap of a flow, judged against the fault log: what it names and the removals that ground it."""

    gap: Gap
    claims: list[Claim]
    grounds: list[Removal]


def _judge(gaps: Sequence[Gap], lives: Mapping[str, list[Incarnation]], removals: Sequence[Removal]) -> list[_Judged]:
    """Each gap with what it names and its grounds in the fault log."""
    out = []
    for g in gaps:
        topic_lives = lives.get(g["topic"], [])
        claims = _claims(g, topic_lives)
        out.append(_Judged(g, claims, _grounds(g, claims, topic_lives, removals)))
    return out


Reached = Mapping[tuple[str, int, int], Sequence[int]]
"""``(topic, incarnation, partition) -> sorted upstream offsets`` of the records on the target."""


def _reached(log: Mapping[bytes, FedRecord], copies: Copies) -> dict[tuple[str, int, int], list[int]]:
    """The upstream offsets copied, sorted, per source partition and incarnation."""
    out: dict[tuple[str, int, int], list[int]] = defaultdict(list)
    for value, rec in log.items():
        if value in copies:
            out[(rec.topic, rec.incarnation, rec.partition)].append(rec.offset)
    return {k: sorted(v) for k, v in out.items()}


def _before_copied(rec: FedRecord, r: Removal, reached: Reached) -> bool:
    """Whether ``r`` removed ``rec`` before the flow reached it: no later record ``r`` removed was copied.

    A flow copies a partition in offset order, and ``r`` removed ``[r.first, r.end)`` at once: a
    copy of a record after ``rec`` in that range was made while ``rec`` was still on the source, so
    the flow went past ``rec`` (a position jump), whatever a gap says later.
    """
    done = reached.get((rec.topic, rec.incarnation, rec.partition), ())
    i = bisect.bisect_right(done, rec.offset)
    return i == len(done) or done[i] >= r.end


def _excused(rec: FedRecord, judged: Sequence[_Judged], reached: Reached) -> bool:
    """Whether a gap names ``rec`` and the fault log shows it removed before it was copied (a gap's grounds hold it).

    A gap wider than what its faults removed excuses only the removed records, and none the flow went past.
    """
    return any(
        j.gap["topic"] == rec.topic
        and j.gap["partition"] == rec.partition
        and _in_claims(rec, j.claims)
        and any(r.holds(rec) and _before_copied(rec, r, reached) for r in j.grounds)
        for j in judged
    )


def _named(rec: FedRecord, judged: Sequence[_Judged]) -> bool:
    """Whether some gap names ``rec`` (excused or not: the violation says so)."""
    return any(
        j.gap["topic"] == rec.topic and j.gap["partition"] == rec.partition and _in_claims(rec, j.claims)
        for j in judged
    )


def _spurious(judged: Sequence[_Judged]) -> list[Violation]:
    """A gap no fault of the fault log grounds: the flow jumped over records still on the source."""
    out = []
    for j in judged:
        if j.grounds:
            continue
        g = j.gap
        ids = f" topic id {g.get('old_topic_id')} -> {g.get('new_topic_id')}" if g.get("old_topic_id") else ""
        detail = (
            f"{g['flow']} {g['topic']}-{g['partition']} {g['reason']} {g['first_lost']}..{g['last_lost']}{ids} "
            f"found at {g['at']}: no fault removed these records before it (a position jump?)"
        )
        out.append(Violation("spurious-gap", detail))
    return out


def _order(copies: Copies, log: Mapping[bytes, FedRecord]) -> list[Violation]:
    """First copies of each source partition's records must appear in upstream-offset order."""
    firsts = sorted((where[0], value) for value, where in copies.items() if value in log)
    newest: dict[tuple[str, int, int], tuple[int, bytes]] = {}
    out: list[Violation] = []
    for (rp, ro), value in firsts:
        rec = log[value]
        if rec.partition != rp:
            detail = f"{rec.topic}-{rec.partition} upstream {rec.offset} copied into remote partition {rp}"
            out.append(Violation("order", detail, (_show(value),)))
            continue
        key = (rec.topic, rec.incarnation, rec.partition)
        prev = newest.get(key)
        if prev is not None and prev[0] > rec.offset:
            detail = (
                f"{rec.topic}-{rec.partition} (incarnation {rec.incarnation}): upstream {rec.offset} first copied "
                f"at remote offset {ro}, after upstream {prev[0]}"
            )
            out.append(Violation("order", detail, (_show(value), _show(prev[1]))))
        else:
            newest[key] = (rec.offset, value)
    return out


def _show(value: bytes) -> str:
    """A feed value without its padding, for a violation's records."""
    return value.decode(errors="replace").rstrip(".")


TimedCheckpoint = tuple[Checkpoint, int]
"""A checkpoint and its record's timestamp (epoch ms: when it was written)."""

AMBIGUOUS_MS = 30_000
"""A checkpoint written this close to a re-creation of its topic may be of either incarnation: not judged, ms."""


def _incarnation_at(lives: Sequence[Incarnation], at_ms: int) -> int | None:
    """The incarnation live at ``at_ms``, ``None`` if that is within :data:`AMBIGUOUS_MS` of a re-creation."""
    if any(abs(at_ms - life.created_ms) < AMBIGUOUS_MS for life in lives[1:]):
        return None
    live = [life.index for life in lives if life.created_ms <= at_ms]
    return live[-1] if live else None


def _checkpoints(
    checkpoints: Sequence[TimedCheckpoint],
    alias: str,
    copies: Copies,
    log: Mapping[bytes, FedRecord],
    lives: Mapping[str, list[Incarnation]],
) -> list[Violation]:
    """No checkpoint may translate upstream ``u`` to a downstream offset past every copy of the record at ``u``.

    The record at ``u`` is the one of the topic's incarnation live when the checkpoint was written
    (checkpoints carry no topic id).
    """
    at: dict[tuple[str, int, int, int], bytes] = {}
    for value, rec in log.items():
        at[(rec.topic, rec.incarnation, rec.partition, rec.offset)] = value
    out = []
    prefix = f"{alias}."
    for c, ts in checkpoints:
        topic = c.topic[len(prefix) :]
        if not c.topic.startswith(prefix) or topic not in lives:
            continue
        inc = _incarnation_at(lives[topic], ts)
        value = None if inc is None else at.get((topic, inc, c.partition, c.upstream_offset))
        if value is None or value not in copies:
            continue  # no such record (consumed to the end), never copied, or an ambiguous incarnation
        if all(ro < c.downstream_offset for (_, ro) in copies[value]):
            detail = (
                f"group {c.consumer_group_id} {c.topic}-{c.partition} (incarnation {inc}): upstream {c.upstream_offset}"
                f" -> downstream {c.downstream_offset}, past its last copy at {max(ro for _, ro in copies[value])}"
            )
            out.append(Violation("checkpoint", detail, (_show(value),)))
    return out


def read_checkpoints(target: str, alias: str) -> list[TimedCheckpoint]:
    """Every checkpoint record of ``<alias>.checkpoints.internal`` on the target (MM2's format), with its timestamp."""
    out = []
    for m in read_topic(target, f"{alias}.checkpoints.internal", read_committed=False):
        if m.value() is not None:
            out.append((Checkpoint.decode(m.key(), m.value()), int(m.timestamp()[1])))
    return out


def _positions(
    target: str, alias: str, feed_ends: Mapping[tuple[str, int], int], foreign: set[tuple[str, int, int]]
) -> list[Violation]:
    """Stored positions past a live partition's end (not written by a fault) are violations."""
    latest: dict[tuple[str, int], int] = {}
    for m in read_topic(target, f"mm2-offsets.{alias}.internal", read_committed=True):
        try:
            so = decode_source_offset(m.key() or b"", m.value())
        except MirrorsparkError:
            continue  # not ours to judge: the flow warns about corrupt records itself
        if so is not None and so.cluster == alias and so.offset is not None:
            latest[(so.topic, so.partition)] = so.offset
    out = []
    for (topic, part), offset in latest.items():
        end = feed_ends.get((topic, part))
        if end is not None and offset + 1 > end and (topic, part, offset) not in foreign:
            out.append(
                Violation("stored-position", f"{topic}-{part}: stored {offset} (next {offset + 1}) past end {end}")
            )
    return out


def check_flow(
    mode: str,
    alias: str,
    *,
    log: Mapping[bytes, FedRecord],
    lives: Mapping[str, list[Incarnation]],
    copies: Copies,
    gaps: Sequence[Mapping[str, Any]],
    removals: Sequence[Removal],
    checkpoints: Sequence[TimedCheckpoint],
    bound: int,
) -> FlowVerdict:
    """The verdict of one flow: lost, spurious gaps, copied twice against ``bound`` (0 in exactly-once), order,
    checkpoints. ``removals``: the fault log, the only ground on which a gap excuses a record."""
    judged = _judge([g for g in gaps if g["flow"].split("->")[0] == alias], lives, removals)
    unnamed, in_gaps, unfounded = [], 0, 0
    reached = _reached(log, copies)
    for value, rec in log.items():
        if value in copies:
            continue
        if _excused(rec, judged, reached):
            in_gaps += 1
        else:
            unnamed.append((rec, value))
            unfounded += _named(rec, judged)
    twice = sum(len(w) - 1 for v, w in copies.items() if v in log)
    v = FlowVerdict(
        mode=mode,
        produced=len(log),
        copied=sum(1 for value in log if value in copies),
        in_gaps=in_gaps,
        lost=len(unnamed),
        copied_twice=twice,
        bound=bound,
        gaps_named=len(judged),
        checkpoints=len(checkpoints),
        spurious_gaps=sum(1 for j in judged if not j.grounds),
    )
    if unnamed:
        by_part: dict[tuple[str, int, int], list[int]] = defaultdict(list)
        for rec, _ in unnamed:
            by_part[(rec.topic, rec.incarnation, rec.partition)].append(rec.offset)
        spans = [
            f"{t}-{p} (incarnation {i}) upstream {min(o)}..{max(o)} ({len(o)})"
            for (t, i, p), o in sorted(by_part.items())
        ]
        v.violations.append(
            Violation(
                "lost",
                f"{len(unnamed)} record(s) neither copied nor removed by a fault inside a named gap"
                + (f" ({unfounded} inside a gap, not removed by a fault before they were copied)" if unfounded else "")
                + ": "
                + "; ".join(spans[:6]),
                tuple(_show(x) for _, x in unnamed[:5]),
            )
        )
    if twice > bound:
        dup = [_show(x) for x, w in copies.items() if len(w) > 1 and x in log][:5]
        v.violations.append(Violation("copied-twice", f"{twice} record(s) copied twice, bound {bound}", tuple(dup)))
    foreign = [x for x in copies if x not in log]
    if foreign:
        v.violations.append(
            Violation(
                "foreign",
                f"{len(foreign)} value(s) on the target the source never acknowledged",
                tuple(_show(x) for x in foreign[:5]),
            )
        )
    v.violations += _spurious(judged)[:20]
    v.violations += _order(copies, log)[:20]
    v.violations += _checkpoints(checkpoints, alias, copies, log, lives)[:20]
    return v


def add_position_violations(
    verdict: FlowVerdict,
    target: str,
    alias: str,
    feed_ends: Mapping[tuple[str, int], int],
    foreign: set[tuple[str, int, int]],
) -> None:
    """Add :func:`_positions`' violations (stored positions past a live end) to ``verdict``."""
    verdict.violations += _positions(target, alias, feed_ends, foreign)
