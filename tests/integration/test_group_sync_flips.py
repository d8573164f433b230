"""The flip test of #40: followed commits synced into target groups that keep joining and leaving (G1, G2).

Each source group commits every 0.5-1 s with the metadata ``src:<n>`` while the same group on the target
alternates between empty and consuming (a ``subscribe()`` consumer of the remote topic, classic protocol,
that joins, reads a few records, commits with metadata ``""``, also on close, and leaves; pauses of
0.5-2.5 s from a seeded RNG) for :data:`FLIP_FOR_S`. The audit reads the target broker's own records
(its ``__consumer_offsets`` in log order: a group's records are in one partition): a commit carrying a
``src:`` metadata is mirrorspark's, and the group's newest ``GroupMetadata`` before it must have no members;
per partition the committed offsets never decrease, whoever wrote them.

Intervals: ``emit.checkpoints.interval.seconds`` and ``sync.group.offsets.interval.seconds`` at 5 s (shorter
than MM2's 60 s), so that the backstop jobs race the flips too.
"""

from __future__ import annotations

import functools
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from helpers import consumer_offsets_of, create_topic, produce_until, run_in_thread, unique_name
from pyspark.sql import SparkSession

from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.consumer_offsets import GroupMetadata, OffsetCommit
from mirrorspark.replication.driver import Replicator
from polling import assert_eventually

pytestmark = [pytest.mark.integration, pytest.mark.spark]

FLIP_FOR_S = 60.0
"""Seconds the target groups flip while the source groups commit (each flips about 15 times: pauses of 0.5-2.5 s)."""

FLIP_S = (0.5, 2.5)
"""Shortest and longest pause, and stay, of a flipper (seconds): every backstop interval (5 s) sees a flip."""

GROUPS = 3
"""Groups followed and flipped in parallel (more flips in the same time)."""

PARTITIONS = 2
"""Partitions of the source topic."""

SEED = 40
"""Seed of the flippers' RNGs (group ``i`` uses ``SEED + i``)."""

MIRRORSPARK_METADATA = "src:"
"""Prefix of the source commits' metadata: a target commit carrying it was written by mirrorspark."""


@dataclass
class Flips:
    """What one target group's flipper did: sessions (joins), its own commits, errors of its commits."""

    sessions: int = 0
    commits: int = 0
    errors: list[str] = field(default_factory=list)


def _consumer(bootstrap: str, group: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "classic",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )


def _commit_source(bootstrap: str, topic: str, group: str, stop: threading.Event, seed: int) -> None:
    """Consume ``topic`` in ``group`` on the source, committing every 0.5-1 s with metadata ``src:<n>``."""
    rng = random.Random(seed)
    c = _consumer(bootstrap, group)
    c.subscribe([topic])
    positions: dict[int, int] = {}
    n, next_commit = 0, time.monotonic() + rng.uniform(0.5, 1.0)
    try:
        while not stop.is_set():
            msg = c.poll(0.05)
            if msg is not None and msg.error() is None:
                positions[msg.partition()] = msg.offset() + 1
            if time.monotonic() >= next_commit and positions:
                n += 1
                meta = f"{MIRRORSPARK_METADATA}{n}"
                c.commit(offsets=[TopicPartition(topic, p, o, metadata=meta) for p, o in positions.items()])
                next_commit = time.monotonic() + rng.uniform(0.5, 1.0)
    finally:
        c.close()


def _commit_target(c: Consumer, positions: dict[tuple[str, int], int], flips: Flips) -> None:
    if not positions:
        return
    try:
        c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in positions.items()], asynchronous=False)
        flips.commits += 1
    except KafkaException as e:  # a rebalance under way: counted, the next commit carries the same offsets
        flips.errors.append(str(e))


def _session(bootstrap: str, topic: str, group: str, seconds: float, budget: int, flips: Flips) -> None:
    """Join ``group`` on the target, read at most ``budget`` records, commit as it goes and on close, leave."""
    c = _consumer(bootstrap, group)
    c.subscribe([topic])
    flips.sessions += 1
    positions: dict[tuple[str, int], int] = {}
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            msg = c.poll(0.05)
            if msg is None or msg.error() is not None:
                continue
            if (
                budget <= 0
            ):  # read enough: stay a member without reading on (behind the source group: work for the sync)
                c.pause(c.assignment())
                continue
            positions[(msg.topic(), msg.partition())] = msg.offset() + 1
            budget -= 1
            if budget % 3 == 0:
                _commit_target(c, positions, flips)
        _commit_target(c, positions, flips)
    finally:
        c.close()


def _flip(bootstrap: str, topic: str, group: str, stop: threading.Event, seed: int, flips: Flips) -> None:
    """Alternate ``group`` on the target between empty and consuming, each for :data:`FLIP_S`, until ``stop``."""
    rng = random.Random(seed)
    while not stop.wait(rng.uniform(*FLIP_S)):
        _session(bootstrap, topic, group, rng.uniform(*FLIP_S), rng.randint(1, 10), flips)


@dataclass
class Audit:
    """One target group's ``__consumer_offsets`` audited: mirrorspark's commits, those into a group with members,
    and decreases per partition."""

    ours: int = 0
    theirs: int = 0
    into_members: list[str] = field(default_factory=list)
    decreases: list[str] = field(default_factory=list)


def _audit(records: list[tuple[int, object]]) -> Audit:
    """Audit one group's records of the target's ``__consumer_offsets`` (log order)."""
    audit = Audit()
    members: tuple[str, ...] = ()
    last: dict[tuple[str, int], tuple[int, int]] = {}
    for at, rec in records:
        if isinstance(rec, GroupMetadata):
            members = rec.members
            continue
        if not isinstance(rec, OffsetCommit) or rec.offset is None:
            continue
        if rec.metadata.startswith(MIRRORSPARK_METADATA):
            audit.ours += 1
            if members:
                audit.into_members.append(f"@{at} {rec.topic}-{rec.partition}={rec.offset} while {members}")
        else:
            audit.theirs += 1
        key = (rec.topic, rec.partition)
        if key in last and rec.offset < last[key][1]:
            audit.decreases.append(f"{rec.topic}-{rec.partition}: @{last[key][0]} {last[key][1]} -> @{at} {rec.offset}")
        last[key] = (at, rec.offset)
    return audit


def _threads(targets: list[tuple[Callable[..., None], tuple[Any, ...]]]) -> list[threading.Thread]:
    out = [threading.Thread(target=target, args=args, daemon=True) for target, args in targets]
    for t in out:
        t.start()
    return out


def test_followed_commits_never_land_in_a_group_with_members_nor_go_back(
    local_clusters: LocalClusters, spark: SparkSession
) -> None:
    """G1-G2 under flips: 0 offsets written while a target group had members, 0 decreases (broker's records)."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("flips")
    groups = [unique_name(f"flips-group{i}") for i in range(GROUPS)]
    remote = f"primary.{topic}"
    create_topic(p, topic, partitions=PARTITIONS)
    text = local_clusters.mm2_properties(
        [("primary", "backup")],
        extra={
            "topics": topic,
            "groups": "|".join(groups),
            "emit.checkpoints.on.commit": "true",
            "sync.group.offsets.enabled": "true",
            "emit.checkpoints.interval.seconds": "5",
            "sync.group.offsets.interval.seconds": "5",
            "emit.heartbeats.interval.seconds": "1",
        },
    )
    r = Replicator(parse_config(parse_properties(text)), spark)
    r.start()
    errors: list[BaseException] = []
    t = run_in_thread(r, errors)
    stop, stop_flips = threading.Event(), threading.Event()
    flips = [Flips() for _ in groups]
    workers: list[threading.Thread] = []
    try:
        workers += _threads([(functools.partial(produce_until, partitions=PARTITIONS), (p, topic, stop))])
        assert_eventually(
            lambda: all(r.flows[0].partitions[(topic, i)].position > 0 for i in range(PARTITIONS)), timeout_s=120
        )
        workers += _threads([(_commit_source, (p, topic, g, stop, SEED + i)) for i, g in enumerate(groups)])
        flippers = _threads([(_flip, (b, remote, g, stop_flips, SEED + i, flips[i])) for i, g in enumerate(groups)])
        time.sleep(FLIP_FOR_S)  # the scenario's length, not a wait for a condition
        stop_flips.set()
        for f in flippers:
            f.join(30)
        counts = {g: r.checkpoints[0].group_sync.counts.get(g) for g in groups}
    finally:
        stop.set()
        stop_flips.set()
        for w in workers:
            w.join(30)
        r.request_stop()
        t.join(120)
    assert not errors, errors
    for i, g in enumerate(groups):
        audit = _audit(consumer_offsets_of(b, g))
        c = counts[g]
        print(
            f"{g}: {flips[i].sessions} flips, {flips[i].commits} consumer commits ({len(flips[i].errors)} failed); "
            f"mirrorspark wrote {audit.ours} commit records ({c}); "
            f"{len(audit.into_members)} into members, {len(audit.decreases)} decreases"
        )
        assert not audit.into_members, audit.into_members[:5]
        assert not audit.decreases, audit.decreases[:5]
        assert audit.ours > 0 and audit.theirs > 0 and flips[i].sessions >= 5, (audit, flips[i])
        assert c is not None and c.synced > 0 and c.skipped_active > 0, c
