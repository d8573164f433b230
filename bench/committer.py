"""The commits case's load and its reading (:mod:`bench.commits`): the source topic's records, the committer, and
both clusters' ``__consumer_offsets``.

``python -m bench.committer --commit SPEC`` is the committer: every second ``k`` it commits offset ``k + 1`` of
every partition for each group, with one ``AdminClient.alter_consumer_group_offsets`` per group (librdkafka takes
one group per request; simple commits: the groups stay Empty, no consumer joins), the groups spread evenly over
:data:`SLICES` slices of the second.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["COMMIT_EVERY_S", "SLICES", "GroupPartition", "OffsetsLog", "Trickle"]

COMMIT_EVERY_S = 1.0
"""Seconds between two commits of one group."""
SLICES = 20
"""The committer spreads the groups over this many slices of each second."""
MAX_IN_FLIGHT = 500
"""Group commits the committer leaves unanswered at most (it waits for the oldest beyond)."""

GroupPartition = tuple[str, int]
"""``(group, partition)``."""


class OffsetsLog:
    """One cluster's ``__consumer_offsets`` from the end offsets at construction: the commits of one topic's groups."""

    def __init__(self, bootstrap: str, topic: str, group_prefix: str) -> None:
        from confluent_kafka import Consumer, TopicPartition

        from mirrorspark.mm2.consumer_offsets import CONSUMER_OFFSETS_TOPIC

        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "bench-commits-reader",  # never commits, never joins: assign() only
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "log_level": 3,
            }
        )
        meta = self._consumer.list_topics(CONSUMER_OFFSETS_TOPIC, timeout=30).topics[CONSUMER_OFFSETS_TOPIC]
        self._tps = [TopicPartition(CONSUMER_OFFSETS_TOPIC, p) for p in sorted(meta.partitions)]
        self._next = self._ends()
        self.topic, self._prefix = topic, group_prefix.encode()
        self.commits: dict[GroupPartition, list[tuple[int, int]]] = {}

    def _ends(self) -> dict[int, int]:
        return {tp.partition: self._consumer.get_watermark_offsets(tp, timeout=30)[1] for tp in self._tps}

    def read(self, timeout_s: float = 300.0) -> int:
        """Read to the current end offsets; keep the commits of the topic's groups; return records read."""
        from confluent_kafka import TopicPartition

        from mirrorspark.mm2.consumer_offsets import OffsetCommit, decode_consumer_offsets_record

        ends = self._ends()
        todo = {p for p, end in ends.items() if end > self._next[p]}
        if not todo:
            return 0
        self._consumer.assign([TopicPartition(tp.topic, tp.partition, self._next[tp.partition]) for tp in self._tps])
        n, deadline = 0, time.monotonic() + timeout_s
        last: dict[int, int] = {}
        while todo and time.monotonic() < deadline:
            for m in self._consumer.consume(10_000, 0.5):
                if m.error() is not None:
                    continue
                n += 1
                last[int(m.partition() or 0)] = int(m.offset() or 0)
                key = m.key()
                if key is None or self._prefix not in key:
                    continue
                rec = decode_consumer_offsets_record(key, m.value())
                if isinstance(rec, OffsetCommit) and rec.topic == self.topic and rec.offset is not None:
                    self.commits.setdefault((rec.group, rec.partition), []).append(
                        (rec.offset, rec.commit_timestamp_ms)
                    )
            positions = {tp.partition: tp.offset for tp in self._consumer.position(list(self._tps))}
            todo = {p for p in todo if max(positions.get(p, -1), last.get(p, -2) + 1) < ends[p]}
        self._consumer.unassign()
        if todo:
            raise RuntimeError(
                f"__consumer_offsets partitions {sorted(todo)} not read to their end in {timeout_s:.0f} s"
            )
        self._next = ends
        return n

    def reached(self, offset: int) -> int:
        """Group-partitions whose commits reached ``offset``."""
        return sum(1 for c in self.commits.values() if c and max(o for o, _ in c) >= offset)

    def close(self) -> None:
        self._consumer.close()


def _commit(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Commit offset ``k + 1`` of every partition for every group each second ``k``; return the counts.

    One ``alter_consumer_group_offsets`` per group (librdkafka takes one group per request), the groups spread over
    :data:`SLICES` slices of each second, starting at ``spec["start_wall"]`` (``time.time()``).
    """
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": spec["source"], "log_level": 3})
    groups = [f"{spec['prefix']}{i}" for i in range(int(spec["groups"]))]
    topic, partitions = str(spec["topic"]), int(spec["partitions"])
    counts = {"sent": 0, "done": 0, "errors": 0}
    errors: list[str] = []
    pending: deque[Any] = deque()

    def settle(limit: int) -> None:
        """Resolve the oldest futures here (no callbacks in librdkafka's thread) until ``limit`` are in flight."""
        while pending and (pending[0].done() or len(pending) > limit):
            exc = pending.popleft().exception(timeout=60)
            counts["done"] += 1
            if exc is not None:
                counts["errors"] += 1
                if len(errors) < 5:
                    errors.append(str(exc))

    late = 0.0
    start = float(spec["start_wall"])
    for k in range(int(spec["ticks"])):
        for j in range(SLICES):
            due = start + k * COMMIT_EVERY_S + j * COMMIT_EVERY_S / SLICES
            wait = due - time.time()
            if wait > 0:
                time.sleep(wait)
            late = max(late, -wait)
            for g in groups[j::SLICES]:
                tps = [TopicPartition(topic, p, k + 1) for p in range(partitions)]
                futures = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)], request_timeout=30)
                counts["sent"] += 1
                pending.extend(futures.values())
            settle(MAX_IN_FLIGHT)
    settle(0)
    usage = os.times()
    return {**counts, "late_s": late, "cpu_s": usage.user + usage.system, "error_samples": errors}


def _main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.committer", description="The commits case's committer.")
    parser.add_argument("--commit", metavar="SPEC", required=True, help="JSON spec (written by run_commits)")
    spec = json.loads(parser.parse_args(argv).commit)
    Path(spec["out"]).write_text(json.dumps(_commit(spec)))
    return 0


class Trickle:
    """Produces one small record per partition every ``every_s`` seconds in a thread: the copy keeps moving."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, every_s: float = 0.5) -> None:
        from confluent_kafka import Producer

        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 3})
        self.topic, self.partitions, self.every_s = topic, partitions, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-commits-trickle", daemon=True)

    def preload(self, per_partition: int) -> None:
        """Produce ``per_partition`` records into every partition and wait for them."""
        for i in range(per_partition):
            for p in range(self.partitions):
                self._producer.produce(self.topic, b"preload-%d" % i, partition=p)
        if self._producer.flush(60):
            raise RuntimeError(f"the preload of {self.topic} was not acknowledged")

    def start(self) -> Trickle:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            for p in range(self.partitions):
                self._producer.produce(self.topic, b"trickle", partition=p)
            self._producer.poll(0)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)
        self._producer.flush(10)


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
