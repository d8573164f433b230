"""A group failing over between identically named topics that both flows write (A<->B, identity, provenance).

One Replicator runs ``primary->backup`` and ``backup->primary`` with ``IdentityReplicationPolicy`` and
``provenance.header.enable``: topic ``t`` on each side holds its own records and copies of the other's.
Records are produced on both sides while a group consumes ``t`` on primary, committing; the group stops,
traffic goes on briefly, and the group fails over to backup at its newest checkpoint
(:meth:`~mirrorspark.migration.consumer_migration.ConsumerMigration.failover`, as ``mirrorspark failover``).
Ground truth comes from the values (unique over both sides): a record of backup's ``t`` below the group's
new position that the group never consumed on primary is a **skip**; one at or past it that it consumed is
a **re-read**. Skips must be 0 (``core.identical_names`` N1) and re-reads within the drill's prediction.
"""

from __future__ import annotations

import contextlib
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from helpers import consume_all, create_topic, run_in_thread, unique_name
from pyspark.sql import SparkSession

from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
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
CONSUME_S = 20.0  # the group consumes (and commits) this long while both sides produce
AFTER_S = 3.0  # traffic goes on this long after the group stopped


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


def test_a_failover_between_identically_named_topics_skips_nothing(
    local_clusters: LocalClusters, spark: SparkSession
) -> None:
    a, b = local_clusters.bootstrap(A), local_clusters.bootstrap(B)
    topic, group = unique_name("same-names"), unique_name("same-names-group")
    for boot in (a, b):
        create_topic(boot, topic, partitions=PARTITIONS)
    text = local_clusters.mm2_properties(
        [(A, B), (B, A)],
        extra={
            "topics": topic,
            "groups": group,
            "replication.policy.class": IDENTITY,
            "provenance.header.enable": "true",
            "refresh.groups.interval.seconds": "1",
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
    try:
        for t in producers:
            t.start()
        _consume(a, topic, group, CONSUME_S)
        committed = migration.group_offsets(A, group)
        time.sleep(AFTER_S)

        def checkpointed() -> bool:
            latest = migration.latest_checkpoints([group])[group]
            return all(
                (topic, p) in latest and latest[(topic, p)].upstream_offset == committed[(topic, p)][0]
                for p in range(PARTITIONS)
            )

        assert_eventually(checkpointed, timeout_s=60)
        stop.set()
        for t in producers:
            t.join(30)
        assert not errors, errors
        with FlowDrill(cfg, source=A, target=B, groups=group) as drill:
            [predicted] = drill.predict().groups
        plan = migration.failover(group)
        mm2_alone = {  # MM2's rule without the clamp, for the figures
            p: translate_group_offset(
                migration.translator.policy,
                A,
                B,
                group,
                topic,
                p,
                committed[(topic, p)][0],
                syncs=migration.translator.syncs.store if migration.translator.syncs else None,
            ).checkpoint
            for p in range(PARTITIONS)
        }
    finally:
        stop.set()
        r.request_stop()
        runner.join(120)
        migration.close()
    on_a, on_b = _by_partition(a, topic), _by_partition(b, topic)
    position = {o.partition: o.offset for o in plan.offsets if o.topic == topic}
    skips = rereads = mm2_skips = 0
    for p in range(PARTITIONS):
        consumed = set(_below(on_a[p], committed[(topic, p)][0]))
        skips += sum(1 for v in _below(on_b[p], position[p]) if v not in consumed)
        rereads += sum(1 for v in _from(on_b[p], position[p]) if v in consumed)
        cp = mm2_alone[p]
        if cp is not None:
            mm2_skips += sum(1 for v in _below(on_b[p], cp.downstream_offset) if v not in consumed)
    consumed_total = sum(len(_below(on_a[p], committed[(topic, p)][0])) for p in range(PARTITIONS))
    print(
        f"\nidentical names A<->B, {PARTITIONS} partitions, group consumed {consumed_total} records on {A}: "
        f"failover to {B} re-reads {rereads}, skips {skips}; drill predicted re-reads {predicted.rereads}, "
        f"skips {predicted.skips}; MM2's rule alone would skip {mm2_skips}"
    )
    assert skips == 0
    assert predicted.skips == 0
    assert predicted.rereads is not None and rereads <= predicted.rereads
