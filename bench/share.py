"""One client of a ceiling pass: librdkafka (confluent-kafka) reading or writing one share of the partitions.

``python -m bench.share consume <bootstrap> <topic> <partitions> <records> <timeout ms>``
reads the given partitions (comma-separated) of ``topic`` from the beginning until it has
``records`` records; ``python -m bench.share produce <bootstrap> <topic> <partitions>
<records> <value bytes> <timeout ms>`` writes ``records`` records of that size into them,
round-robin, and waits for every acknowledgement. Either prints one result line,
``records=<n> bytes=<keys + values> start.ms=<epoch ms> end.ms=<epoch ms>`` (first read or
send to last record read or acknowledged), and exits 0 only when all ``records`` were read
or acknowledged. ``python -m bench.share copy <source bootstrap> <topic> <partitions> <target
bootstrap> <target topic> <records> <timeout ms>`` reads the partitions as ``consume`` does and writes
every record, as read, to the same partition of the target topic as ``produce`` does, with a delivery
callback per record that keeps its target offset: the least a copy with exact offset syncs does in
Python, in one thread (the ``ceiling-copy`` pass, the floor of a copy on this client).

These are the clients mirrorspark's copy tasks use (librdkafka through confluent-kafka),
with the copy tasks' settings, doing half of a copy each: a replicator with the same
client on the same machine cannot be faster than the slower of the two passes. The
producer matches the copy tasks' producer (``enable.idempotence`` hence ``acks=all``,
``linger.ms=5``, librdkafka's 1 MB batches, no compression); the consumer is librdkafka's
with the copy tasks' settings (``COPY_CONSUMER_DEFAULTS``; ``assign()``, no group commits),
reading in batches of up to 10,000 records as they do. Values are slices of one random buffer and keys
``k<11 digits>``, as the workload's.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

_KEY_FORMAT = b"k%011d"
_POOL_SLACK = 8191


def _ms() -> int:
    return int(time.time() * 1000)


def _consumer(bootstrap: str, client_id: str) -> Any:
    """A consumer with the copy tasks' settings: librdkafka's defaults but ``COPY_CONSUMER_DEFAULTS`` (issue #26)."""
    from confluent_kafka import Consumer

    from mirrorspark.replication.connector.task_configs import COPY_CONSUMER_DEFAULTS

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": client_id,
            "client.id": client_id,
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_uncommitted",
            "log_level": 3,
            **COPY_CONSUMER_DEFAULTS,
        }
    )


def consume(bootstrap: str, topic: str, partitions: list[int], records: int, timeout_ms: int) -> int:
    """Read ``records`` records of ``partitions`` from their beginning; print the result line.

    Returns
    -------
    int
        The exit status: 0 when every record was read, 1 on timeout or a read error.
    """
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    c = _consumer(bootstrap, "bench-ceiling-consume")
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    deadline = time.monotonic() + timeout_ms / 1000.0
    n = size = 0
    start = end = 0
    status = 0
    while n < records:
        if time.monotonic() > deadline:
            print(f"timeout after {n} of {records} records", file=sys.stderr)
            status = 1
            break
        batch = c.consume(10_000, 0.5)
        for m in batch:
            if m.error() is not None:
                print(f"read error: {m.error()}", file=sys.stderr)
                status = 1
                continue
            if not start:
                start = _ms()
            n += 1
            size += len(m.value() or b"") + len(m.key() or b"")
        if batch:
            end = _ms()
    c.close()
    print(f"records={n} bytes={size} start.ms={start} end.ms={end}", flush=True)
    return status


def _producer(bootstrap: str, client_id: str) -> Any:
    """The copy tasks' producer settings: idempotent (so ``acks=all``), ``linger.ms=5``, no compression."""
    from confluent_kafka import Producer

    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "enable.idempotence": True,
            "linger.ms": 5,
            "queue.buffering.max.messages": 500_000,
            "compression.type": "none",
            "log_level": 3,
        }
    )


def produce(bootstrap: str, topic: str, partitions: list[int], records: int, value_bytes: int, timeout_ms: int) -> int:
    """Write ``records`` records of ``value_bytes`` into ``partitions`` round-robin; print the result line.

    Returns
    -------
    int
        The exit status: 0 when every record was acknowledged, 1 otherwise.
    """
    p = _producer(bootstrap, "bench-ceiling-produce")
    acked = 0
    failed: list[str] = []
    end = 0

    def on_delivery(err: Any, _msg: Any) -> None:
        nonlocal acked, end
        if err is None:
            acked += 1
            end = _ms()
        elif len(failed) < 5:
            failed.append(str(err))

    pool = os.urandom(value_bytes + _POOL_SLACK + 1)
    deadline = time.monotonic() + timeout_ms / 1000.0
    send = p.produce
    count = len(partitions)
    start = _ms()
    for i in range(records):
        o = (i * 7919) % _POOL_SLACK
        while True:
            try:
                value, key = pool[o : o + value_bytes], _KEY_FORMAT % i
                send(topic, value, key, partition=partitions[i % count], on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.01)
        if i % 1000 == 0:
            p.poll(0)
    p.flush(max(0.0, deadline - time.monotonic()))
    size = acked * (value_bytes + len(_KEY_FORMAT % 0))
    print(f"records={acked} bytes={size} start.ms={start} end.ms={end}", flush=True)
    if failed:
        print(f"delivery errors: {failed}", file=sys.stderr)
    return 0 if acked == records and not failed else 1


def copy(
    source: str, topic: str, partitions: list[int], target: str, target_topic: str, records: int, timeout_ms: int
) -> int:
    """Copy ``records`` records of ``partitions`` from their beginning to the same partitions of ``target_topic``.

    One thread: read a batch of up to 10,000 records, produce each (key, value, timestamp, partition;
    the workload has no headers) with a callback that keeps its target offset, serve delivery reports,
    read again; then wait for every acknowledgement. Prints the result line (first record read to
    last acknowledged).

    Returns
    -------
    int
        The exit status: 0 when every record was copied and acknowledged, 1 otherwise.
    """
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    c = _consumer(source, "bench-ceiling-copy")
    p = _producer(target, "bench-ceiling-copy")
    c.assign([TopicPartition(topic, q, OFFSET_BEGINNING) for q in partitions])
    acked: list[int] = []
    failed: list[str] = []
    keep = acked.append

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            keep(msg.offset())
        elif len(failed) < 5:
            failed.append(str(err))

    deadline = time.monotonic() + timeout_ms / 1000.0
    send, serve = p.produce, p.poll
    n = size = start = 0
    while n < records and time.monotonic() < deadline and not failed:
        batch = c.consume(min(10_000, records - n), 0.5)
        if batch and not start:
            start = _ms()
        for m in batch:
            if m.error() is not None:
                failed.append(f"read error: {m.error()}")
                break
            value, key = m.value(), m.key()
            while True:
                try:
                    send(target_topic, value, key, m.partition(), on_delivery, None, m.timestamp()[1])
                    break
                except BufferError:
                    serve(0.01)
            n += 1
            size += len(value or b"") + len(key or b"")
        serve(0)
    p.flush(max(0.0, deadline - time.monotonic()))
    end = _ms()
    c.close()
    print(f"records={len(acked)} bytes={size} start.ms={start} end.ms={end}", flush=True)
    if failed or len(acked) < records:
        print(f"copied {len(acked)} of {records} records; errors: {failed}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    """Run one client from the command line (see the module docstring); returns the exit status."""
    if len(argv) == 6 and argv[0] == "consume":
        return consume(argv[1], argv[2], [int(x) for x in argv[3].split(",")], int(argv[4]), int(argv[5]))
    if len(argv) == 7 and argv[0] == "produce":
        parts = [int(x) for x in argv[3].split(",")]
        return produce(argv[1], argv[2], parts, int(argv[4]), int(argv[5]), int(argv[6]))
    if len(argv) == 8 and argv[0] == "copy":
        parts = [int(x) for x in argv[3].split(",")]
        return copy(argv[1], argv[2], parts, argv[4], argv[5], int(argv[6]), int(argv[7]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
