"""``kill -9`` of ``mirrorspark run`` while it follows a source group's commits (#40, O1): no checkpoint ever
translates past a copied record.

A feed writes ``<tag>|<n>|...`` into one source partition (so ``n`` is the record's source offset) while a
source group reads it and commits every 0.3-1 s with the metadata ``src:<offset>``. The run (at least
once, ``emit.checkpoints.on.commit`` and ``sync.group.offsets.enabled`` on) is killed :data:`KILLS` times,
each time just after it wrote checkpoints, and relaunched at once. Then every checkpoint ever written to
``primary.checkpoints.internal`` (the whole topic, not only the newest per key), with upstream offset P
and downstream offset D, must have D <= the target partition's end and, if D > 0, the target record at
D - 1 a copy of a source record before P (after a kill the target holds duplicates: the record at D - 1
is checked, not D == P). The group's commits on the target written by mirrorspark (their metadata is the
source commit's, ``src:<P>``) must satisfy the same.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from helpers import assert_eventually, consume_all, consumer_offsets_of, create_topic, end_offsets, unique_name
from scenario import AT_LEAST_ONCE, Feed, RunProcess, Tail, feed_sequence, mode_properties

from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.consumer_offsets import OffsetCommit
from mirrorspark.mm2.records import Checkpoint

KILLS = 2
"""Kills of the whole run in a row (a relaunch costs ~30 s: Spark starts, the lease changes hands)."""

RATE = 100
"""Records per second the feed writes into the one source partition."""

COPY_S = 2.0
"""Seconds of caught-up copying (and followed commits) after each launch before waiting for its checkpoints."""

SEED = 40
"""Seed of the source group's commit pauses and of the kills' delays."""

CHECKPOINTS = "primary.checkpoints.internal"


class SourceGroup:
    """A consumer of the source topic in ``group``, committing its position every 0.3-1 s with metadata ``src:<P>``."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        self.bootstrap, self.topic, self.group = bootstrap, topic, group
        self.commits = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"source-group-{group}", daemon=True)

    def start(self) -> SourceGroup:
        self._thread.start()
        return self

    def _commit(self, c: Consumer, position: int | None) -> None:
        if position is not None:
            c.commit(offsets=[TopicPartition(self.topic, 0, position, metadata=f"src:{position}")], asynchronous=False)
            self.commits += 1

    def _run(self) -> None:
        rng = random.Random(SEED)
        c = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        c.subscribe([self.topic])
        position: int | None = None
        next_commit = time.monotonic() + rng.uniform(0.3, 1.0)
        try:
            while not self._stop.is_set():
                msg = c.poll(0.05)
                if msg is not None and msg.error() is None:
                    position = msg.offset() + 1
                if time.monotonic() >= next_commit:
                    self._commit(c, position)
                    next_commit = time.monotonic() + rng.uniform(0.3, 1.0)
            self._commit(c, position)
        finally:
            c.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)


def _checkpoints_written(bootstrap: str) -> int:
    try:
        return sum(end for _, end in end_offsets(bootstrap, CHECKPOINTS).values())
    except Exception:  # not created yet
        return 0


def _past_a_copied_record(upstream: int, downstream: int, copies: dict[int, int | None], end: int) -> str | None:
    """Why a translation ``upstream -> downstream`` is past a copied record (``None``: it is not)."""
    if downstream > end:
        return f"{upstream} -> {downstream}: past the target's end {end}"
    copy = copies.get(downstream - 1) if downstream > 0 else None
    if downstream > 0 and (copy is None or copy >= upstream):
        return f"{upstream} -> {downstream}: the target record at {downstream - 1} is a copy of {copy}"
    return None


@pytest.mark.timeout(900)
def test_followed_checkpoints_never_translate_past_a_copied_record_across_kills(
    fault_clusters: LocalClusters, tmp_path: Path
) -> None:
    """O1 across ``kill -9``: every checkpoint (and synced commit) ever written points at or before a copy of P."""
    src, dst = fault_clusters.bootstrap("primary"), fault_clusters.bootstrap("backup")
    topic, group = unique_name("fault-follow"), unique_name("fault-follow-group")
    remote = f"primary.{topic}"
    create_topic(src, topic, partitions=1)
    props = tmp_path / "mm2.properties"
    props.write_text(
        fault_clusters.mm2_properties(
            [("primary", "backup")],
            extra={
                "topics": topic,
                "groups": group,
                "emit.checkpoints.on.commit": "true",
                "sync.group.offsets.enabled": "true",
                "emit.heartbeats.interval.seconds": "1",
                "refresh.topics.interval.seconds": "5",
                **mode_properties(AT_LEAST_ONCE, "primary", "backup"),
            },
        )
    )
    rng = random.Random(SEED)
    began = time.monotonic()
    feed = Feed(src, topic, 1, RATE)
    tail = Tail(dst, remote, 1, AT_LEAST_ONCE).start()
    source_group = SourceGroup(src, topic, group)
    run = RunProcess(props, tmp_path)
    try:
        feed.start()
        source_group.start()
        run.launch()
        for _ in range(KILLS + 1):
            tail.wait_copying(feed, copy_s=COPY_S, alive=run.check)
            before = _checkpoints_written(dst)
            assert_eventually(
                lambda: run.check() or _checkpoints_written(dst) > before,  # noqa: B023 (called in the loop)
                timeout_s=120,
                message="the run wrote no checkpoint",
            )
            if run.launches > KILLS:
                break
            time.sleep(rng.uniform(0.0, 0.5))  # a random moment of following, not a wait for a condition
            run.kill()
            run.launch()
        produced = feed.finish()
        tail.wait_all(produced, alive=run.check)
        source_group.stop()
        assert run.stop() == 0, run.tail()
    finally:
        source_group.stop()
        run.stop(timeout_s=30)
        with contextlib.suppress(AssertionError):
            feed.finish()
        tail.stop()
    source = consume_all(src, topic, timeout_s=120)
    assert [feed_sequence(r["value"]) for r in source] == [r["offset"] for r in source]  # n is the source offset
    target = consume_all(dst, remote, timeout_s=120)
    copies = {r["offset"]: feed_sequence(r["value"]) for r in target}
    end = end_offsets(dst, remote)[0][1]
    written = [Checkpoint.decode(r["key"], r["value"]) for r in consume_all(dst, CHECKPOINTS, timeout_s=120)]
    ours = [cp for cp in written if cp.consumer_group_id == group]
    past = [_past_a_copied_record(cp.upstream_offset, cp.downstream_offset, copies, end) for cp in ours]
    synced = [
        rec
        for _, rec in consumer_offsets_of(dst, group)
        if isinstance(rec, OffsetCommit) and rec.offset is not None and rec.metadata.startswith("src:")
    ]
    past_synced = [_past_a_copied_record(int(rec.metadata[4:].rstrip("\0")), rec.offset, copies, end) for rec in synced]
    print(
        f"{KILLS} kills in {time.monotonic() - began:.0f} s: {len(source)} records, {len(target) - len(source)} "
        f"copied twice; {source_group.commits} source commits; {len(ours)} checkpoints and {len(synced)} synced "
        f"commits audited: {sum(x is not None for x in past)} and {sum(x is not None for x in past_synced)} past a "
        "copied record"
    )
    assert [x for x in past if x is not None] == []
    assert [x for x in past_synced if x is not None] == []
    assert ours and synced
