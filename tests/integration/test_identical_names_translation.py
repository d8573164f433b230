"""A group failing over between identically named topics that both flows write (A<->B, identity, provenance).

One Replicator runs ``primary->backup`` and ``backup->primary`` with ``IdentityReplicationPolicy`` and
``provenance.header.enable``: topic ``t`` on each side holds its own records and copies of the other's.
Records are produced on both sides while two groups consume ``t`` on primary, committing. ``steady``
stops after :data:`CONSUME_S`; then ``backup->primary`` is held back (``t`` denied through live control:
the reverse flow lags, as when it is slow or down) while ``held`` goes on consuming as long again. Traffic
goes on briefly, and each group fails over to backup at its newest checkpoint
(:meth:`~mirrorspark.migration.consumer_migration.ConsumerMigration.failover`, as ``mirrorspark failover``).
Ground truth comes from the values (unique over both sides): a record of backup's ``t`` below the group's
new position that the group never consumed on primary is a **skip**; one at or past it that it consumed is
a **re-read**. Skips must be 0 (``core.identical_names`` N1) and re-reads within the drill's prediction; for ``held``,
MM2's rule alone would have skipped records.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from helpers import consume_all, create_topic, run_in_thread, unique_name
from pyspark.sql import SparkSession

from mirrorspark.client.control_store import ControlStore
from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.core.drills import GroupDrill
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.migration.consumer_migration import ConsumerMigration
from mirrorspark.migration.drill import FlowDrill
from mirrorspark.mm2.checkpoint_rules import translate_group_offset
from mirrorspark.replication.driver import Replicator
from polling import assert_eventually

pytestmark = [pytest.mark.integration, pytest.mark.spark]

A, B = "primary", "backup"
IDENTITY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
PARTITIONS = 2
CONSUME_S = 10.0  # each group consumes (and commits) this long while both sides produce; held as long again
AFTER_S = 3.0  # traffic goes on this long after the groups stopped

Offsets = dict[tuple[str, int], int]
Records = dict[int, list[tuple[int, bytes]]]


def _produce(bootstrap: str, topic: str, prefix: str, stop: threading.Event) -> None:
    """Produce ``<prefix>-<n>`` every 10 ms round robin over the partitions until ``stop``; then flush."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    i = 0
    while not stop.is_set():
        p.produce(topic, f"{prefix}-{i}".encode(), partition=i % PARTITIONS)
        p.poll(0)
        i += 1
        time.sleep(0.01)
    p.flush(10)


def _consume(bootstrap: str, topic: str, group: str, seconds: float) -> None:
    """Consume ``topic`` in ``group`` for ``seconds``, committing every 0.5 s and once at the end."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    c.subscribe([topic])
    end, next_commit = time.monotonic() + seconds, time.monotonic() + 0.5
    try:
        while time.monotonic() < end:
            c.poll(0.05)
            if time.monotonic() >= next_commit:
                with contextlib.suppress(KafkaException):  # nothing consumed since the last commit
                    c.commit(asynchronous=False)
                next_commit += 0.5
        with contextlib.suppress(KafkaException):
            c.commit(asynchronous=False)
    finally:
        c.close()


def _by_partition(bootstrap: str, topic: str) -> dict[int, list[tuple[int, bytes]]]:
    """Each partition's ``(offset, value)`` records, by offset."""
    out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
    for r in sorted(consume_all(bootstrap, topic), key=lambda r: (r["partition"], r["offset"])):
        out[r["partition"]].append((r["offset"], r["value"]))
    return out


def _below(records: list[tuple[int, bytes]], offset: int) -> list[bytes]:
    return [v for o, v in records if o < offset]


def _from(records: list[tuple[int, bytes]], offset: int) -> list[bytes]:
    return [v for o, v in records if o >= offset]


@dataclass(frozen=True)
class Failover:
    """One group's failover to backup, counted on the records, next to the drill's prediction."""

    group: str
    consumed: int
    from_b: int
    rereads: int
    skips: int
    predicted_rereads: int | None
    predicted_skips: int | None
    mm2_skips: int

    def line(self) -> str:
        return (
            f"{self.group}: consumed {self.consumed} on {A} ({self.from_b} copies of {B}'s); failover to {B} "
            f"re-reads {self.rereads}, skips {self.skips}; drill predicted re-reads {self.predicted_rereads}, "
            f"skips {self.predicted_skips}; MM2's rule alone would skip {self.mm2_skips}"
        )


def _checkpointed(migration: ConsumerMigration, topic: str, group: str, committed: Offsets) -> bool:
    """Each partition's newest checkpoint is for the group's offset, or already where it translates now."""
    latest = migration.latest_checkpoints([group])[group]
    migration.translator.load_syncs()
    for p in range(PARTITIONS):
        cp, x = latest[(topic, p)], committed[(topic, p)]
        if cp.upstream_offset != x:  # while B->A is held back the clamp stays put: no newer checkpoint
            live = migration.translator.translate(group, topic, p, x).checkpoint
            assert live is not None and cp.downstream_offset >= live.downstream_offset, (cp, live)
    return True


@dataclass(frozen=True)
class Moved:
    """A group's positions on B after its failover, MM2's rule's alone, and the drill's prediction before it."""

    position: dict[int, int]
    mm2_alone: dict[int, int]
    predicted: GroupDrill


def _fail_over(cfg: MirrorConfig, migration: ConsumerMigration, topic: str, group: str, committed: Offsets) -> Moved:
    """Predict with a drill, then fail over as ``mirrorspark failover --execute``."""
    with FlowDrill(cfg, source=A, target=B, groups=group) as drill:
        [predicted] = drill.predict().groups
    plan = migration.failover(group)
    syncs = migration.translator.syncs
    mm2_alone = {}
    for p in range(PARTITIONS):  # MM2's rule without the clamp, over the same offset syncs
        go = translate_group_offset(
            migration.translator.policy, A, B, group, topic, p, committed[(topic, p)], syncs=syncs and syncs.store
        )
        assert go.checkpoint is not None
        mm2_alone[p] = go.checkpoint.downstream_offset
    return Moved({o.partition: o.offset for o in plan.offsets}, mm2_alone, predicted)


def _count(group: str, on_a: Records, on_b: Records, committed: Offsets, topic: str, moved: Moved) -> Failover:
    """Count skips and re-reads on the records: values are unique over both clusters."""
    position, mm2_alone, predicted = moved.position, moved.mm2_alone, moved.predicted
    consumed_all: list[bytes] = []
    skips = rereads = mm2_skips = 0
    for p in range(PARTITIONS):
        seen = _below(on_a[p], committed[(topic, p)])
        consumed_all += seen
        consumed = set(seen)
        skips += sum(1 for v in _below(on_b[p], position[p]) if v not in consumed)
        rereads += sum(1 for v in _from(on_b[p], position[p]) if v in consumed)
        mm2_skips += sum(1 for v in _below(on_b[p], mm2_alone[p]) if v not in consumed)
    from_b = sum(1 for v in consumed_all if v.startswith(B.encode()))
    return Failover(group, len(consumed_all), from_b, rereads, skips, predicted.rereads, predicted.skips, mm2_skips)


def test_a_failover_between_identically_named_topics_skips_nothing(
    local_clusters: LocalClusters, spark: SparkSession
) -> None:
    a, b = local_clusters.bootstrap(A), local_clusters.bootstrap(B)
    topic, prefix = unique_name("same-names"), unique_name("same-names-group")
    steady, held = f"{prefix}-steady", f"{prefix}-held"
    for boot in (a, b):
        create_topic(boot, topic, partitions=PARTITIONS)
    text = local_clusters.mm2_properties(
        [(A, B), (B, A)],
        extra={
            "topics": topic,
            "groups": f"{prefix}-.*",
            "replication.policy.class": IDENTITY,
            "provenance.header.enable": "true",
            "refresh.groups.interval.seconds": "1",
            "refresh.topics.interval.seconds": "1",
            "emit.checkpoints.interval.seconds": "1",
            "emit.heartbeats.enabled": "false",
            "offset.lag.max": "10",
        },
    )
    cfg = parse_config(parse_properties(text))
    r = Replicator(cfg, spark)
    r.start()
    errors: list[BaseException] = []
    runner = run_in_thread(r, errors)
    stop = threading.Event()
    producers = [
        threading.Thread(target=_produce, args=(boot, topic, alias, stop), daemon=True)
        for boot, alias in ((a, A), (b, B))
    ]
    migration = ConsumerMigration(cfg, source=A, target=B)
    moved: dict[str, Moved] = {}
    try:
        for t in producers:
            t.start()
        for f in r.flows:  # both flows copy before the groups start
            assert_eventually(lambda f=f: any(p.position > 0 for p in f.partitions.values()), timeout_s=120)
        first = threading.Thread(target=_consume, args=(a, topic, steady, CONSUME_S), daemon=True)
        first.start()
        _consume(a, topic, held, CONSUME_S)
        first.join(30)
        with ControlStore(cfg, B, A) as control:
            control.apply("topics", add_deny=[topic])  # B->A stops copying t at its next topic refresh (1 s)
        _consume(a, topic, held, CONSUME_S)
        committed = {g: {k: off for k, (off, _) in migration.group_offsets(A, g).items()} for g in (steady, held)}
        time.sleep(AFTER_S)
        for g in (steady, held):
            assert_eventually(lambda g=g: _checkpointed(migration, topic, g, committed[g]), timeout_s=60)
        stop.set()
        for t in producers:
            t.join(30)
        assert not errors, errors
        moved = {g: _fail_over(cfg, migration, topic, g, committed[g]) for g in (steady, held)}
    finally:
        stop.set()
        r.request_stop()
        runner.join(120)
        migration.close()
    on_a, on_b = _by_partition(a, topic), _by_partition(b, topic)
    counted = {g: _count(g, on_a, on_b, committed[g], topic, moved[g]) for g in (steady, held)}
    totals = {alias: sum(len(v) for v in side.values()) for alias, side in ((A, on_a), (B, on_b))}
    print(f"\nidentical names A<->B, {PARTITIONS} partitions, records at the end {totals}")
    for f in counted.values():
        print(f.line())
    assert counted[held].mm2_skips > 0, "the scenario lost its point: MM2's rule alone would skip nothing"
    for f in counted.values():
        assert f.skips == 0, f.line()
        assert f.predicted_skips == 0, f.line()
        assert f.predicted_rereads is not None and f.rereads <= f.predicted_rereads, f.line()
