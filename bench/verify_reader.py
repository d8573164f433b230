"""Which reader ``mirrorspark verify``'s executors should use: measured on a real local cluster (issue #42).

Run from the repository root (a local KRaft cluster is started under ``bench/.work/verify-reader`` and
stopped at the end; topics are loaded once and kept while the cluster directory lives)::

    nice -n 19 .venv/bin/python -m bench.verify_reader                      # every reader, 3 repeats
    nice -n 19 .venv/bin/python -m bench.verify_reader --readers ck,spark-py --repeat 1 --scale 0.1

Each measurement runs in a fresh child process (``--child``) that reads an exact offset range
(``[0, end)`` of every partition) and digests every record while reading: ``blake2b`` (16 bytes) over a
length frame, the key, the value, every header and the timestamp, the record digests folded into one
per partition (in offset order), as verify's range digests will be. The child reports records, wall
seconds and the CPU seconds of its whole process tree (itself, Spark's JVM and Python workers) over
the read alone (start-up and a warm-up read excluded); records/s per core = records / CPU seconds.

Readers
-------
``ck``
    confluent-kafka ``Consumer``, one per partition (a Spark task's view), ``assign()`` at the start
    offset and ``consume(num_messages=min(batch, left))`` until the end offset (never waiting a timeout
    at the tail), librdkafka's default fetch sizes.
``ck-fetch``
    The same with large fetches (``fetch.max.bytes`` 64 MiB, ``max.partition.fetch.bytes`` 16 MiB).
``ck-backoff``
    ``ck-fetch`` with ``fetch.queue.backoff.ms`` 10 (librdkafka's default 1,000: a fetcher whose queue is
    full, 64 MiB or 100,000 messages by default, waits up to a second before fetching again).
``ck-tuned``
    The same with large fetches (``fetch.max.bytes`` 64 MiB, ``max.partition.fetch.bytes`` 16 MiB,
    ``queued.min.messages`` 1,000,000) and ``check.crcs`` off (the digest reads every byte anyway).
``spark-py``
    Spark's Kafka source (``spark-sql-kafka-0-10``, batch ``read.format("kafka")``, starting and ending
    offsets as JSON, ``includeHeaders``) on ``local[1]``, the digest in Python (``mapInArrow``).
``spark-jvm``
    The same source with ``xxhash64`` over the same fields in the JVM: not the digest verify needs
    (no blake2b in Spark SQL), the floor of what the Spark source costs to read and hash.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from hashlib import blake2b
from pathlib import Path
from typing import Any, cast

from bench.workload import Workload, load_topic

READERS = ("ck", "ck-fetch", "ck-backoff", "ck-tuned", "spark-py", "spark-jvm")
"""Every reader, in report order."""

CASES = ((1024, 1_000_000, 1), (1024, 1_000_000, 12), (100, 2_000_000, 1), (100, 2_000_000, 12))
"""``(value bytes, records, partitions)`` of each measured topic (issue #42's sizes)."""

BATCH = 10_000
"""Messages per ``consume()`` call of the confluent-kafka readers."""

FETCH = {"fetch.max.bytes": 64 << 20, "max.partition.fetch.bytes": 16 << 20}
"""The ``ck-fetch`` reader's consumer settings on top of the defaults: large fetches."""

BACKOFF = FETCH | {"fetch.queue.backoff.ms": 10}
"""The ``ck-backoff`` reader's: large fetches, and a fetcher that waits 10 ms, not 1 s, when its queue is full."""

TUNED = FETCH | {
    "queued.min.messages": 1_000_000,
    "queued.max.messages.kbytes": 1 << 20,
    "check.crcs": False,
}
"""The ``ck-tuned`` reader's consumer settings on top of the defaults."""

_FRAME = ">iiiq"  # key length, value length, header count, timestamp (ms): -1 for a null


def record_digest(
    key: bytes | None, value: bytes | None, headers: Sequence[tuple[str, bytes | None]], ts: int
) -> bytes:
    """16-byte blake2b of one record: a length frame, key, value, headers (name, value) and timestamp."""
    h = blake2b(
        struct.pack(_FRAME, -1 if key is None else len(key), -1 if value is None else len(value), len(headers), ts),
        digest_size=16,
    )
    if key:
        h.update(key)
    if value:
        h.update(value)
    for name, v in headers:
        h.update(name.encode())
        h.update(b"\0" if v is None else b"\1" + v)
    return h.digest()


# ------------------------------------------------------------------------------------------------
# Readers (in the child process)
# ------------------------------------------------------------------------------------------------


def read_ck(bootstrap: str, topic: str, ends: dict[int, int], *, tuned: dict[str, Any]) -> dict[int, tuple[int, str]]:
    """Read ``[0, end)`` of each partition, one confluent-kafka consumer per partition; per partition (n, digest)."""
    from confluent_kafka import Consumer, TopicPartition

    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": "verify-reader-bench",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": False,
        "log_level": 3,
    }
    conf |= tuned
    out: dict[int, tuple[int, str]] = {}
    for p, end in sorted(ends.items()):
        c = Consumer(conf)
        c.assign([TopicPartition(topic, p, 0)])
        fold = blake2b(digest_size=16)
        nxt = n = 0
        while nxt < end:
            for m in c.consume(num_messages=min(BATCH, end - nxt), timeout=10.0):
                if m.error() is not None:
                    raise RuntimeError(str(m.error()))
                headers = cast("list[tuple[str, bytes | None]]", m.headers() or [])
                fold.update(record_digest(m.key(), m.value(), headers, m.timestamp()[1]))
                nxt = int(m.offset() or 0) + 1
                n += 1
        c.close()
        out[p] = (n, fold.hexdigest())
    return out


def _spark(jars: str) -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    root = str(Path(__file__).resolve().parent.parent)  # the Python workers import bench.verify_reader
    os.environ["PYTHONPATH"] = os.pathsep.join(x for x in (root, os.environ.get("PYTHONPATH")) if x)
    b = SparkSession.builder.master("local[1]").appName("verify-reader-bench")
    for k, v in {
        "spark.jars": jars,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": "2g",
        "spark.python.worker.reuse": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
    }.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _arrow_digests(batches: Iterator[Any]) -> Iterator[Any]:
    """``mapInArrow`` body: one ``(partition, n, digest)`` row per Arrow batch (offset order within a task)."""
    import pyarrow as pa

    for b in batches:
        cols = b.to_pydict()
        fold = blake2b(digest_size=16)
        for k, v, hs, ts in zip(cols["key"], cols["value"], cols["headers"], cols["ts"], strict=True):
            fold.update(record_digest(k, v, [(h["key"], h["value"]) for h in hs or ()], ts))
        parts = cols["partition"]
        yield pa.RecordBatch.from_pydict(
            {"partition": [parts[0] if parts else -1], "n": [len(parts)], "d": [fold.digest()]},
            schema=pa.schema([("partition", pa.int32()), ("n", pa.int64()), ("d", pa.binary())]),
        )


def read_spark(
    spark: Any, bootstrap: str, topic: str, ends: dict[int, int], *, python: bool
) -> dict[int, tuple[int, str]]:
    """Read ``[0, end)`` of each partition with Spark's Kafka source; per partition (n, digest of the batch digests)."""
    from pyspark.sql import functions as F

    df = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", json.dumps({topic: {str(p): 0 for p in ends}}))
        .option("endingOffsets", json.dumps({topic: {str(p): e for p, e in ends.items()}}))
        .option("includeHeaders", "true")
        .load()
        .select("key", "value", "headers", F.unix_millis("timestamp").alias("ts"), "partition")
    )
    out: dict[int, tuple[int, str]] = {}
    if python:
        rows = df.mapInArrow(_arrow_digests, "partition int, n long, d binary").collect()
        folds: dict[int, Any] = {}
        for r in rows:
            folds.setdefault(r.partition, blake2b(digest_size=16)).update(r.d)
            out[r.partition] = (out.get(r.partition, (0, ""))[0] + r.n, "")
        return {p: (n, folds[p].hexdigest()) for p, (n, _) in out.items()}
    agg = df.groupBy("partition").agg(
        F.count("*").alias("n"), F.bit_xor(F.xxhash64("key", "value", "headers", "ts")).alias("h")
    )
    return {r.partition: (r.n, str(r.h)) for r in agg.collect()}


def child(reader: str, bootstrap: str, topic: str, ends: dict[int, int], jars: str) -> dict[str, Any]:
    """Measure one read in this process: records, wall and CPU seconds of the process tree over the read alone."""
    from bench.cpu import delta, snapshot

    spark = None
    if reader.startswith("spark"):
        spark = _spark(jars)
        read_spark(spark, bootstrap, topic, {p: min(e, 1000) for p, e in ends.items()}, python=reader == "spark-py")
    before, t0 = snapshot(), time.perf_counter()
    if spark is not None:
        got = read_spark(spark, bootstrap, topic, ends, python=reader == "spark-py")
    else:
        got = read_ck(
            bootstrap,
            topic,
            ends,
            tuned={"ck": {}, "ck-fetch": FETCH, "ck-backoff": BACKOFF, "ck-tuned": TUNED}[reader],
        )
    wall, cpu = time.perf_counter() - t0, delta(before, snapshot()).total_s
    if spark is not None:
        spark.stop()
    records = sum(n for n, _ in got.values())
    if records != sum(ends.values()):
        raise RuntimeError(f"{reader} read {records} records of {sum(ends.values())}")
    return {"records": records, "wall_s": wall, "cpu_s": cpu, "digests": {str(p): d for p, (_, d) in got.items()}}


# ------------------------------------------------------------------------------------------------
# Driver
# ------------------------------------------------------------------------------------------------


def _ends(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "verify-reader-ends", "log_level": 3})
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)}
    finally:
        c.close()


def measure(reader: str, bootstrap: str, topic: str, ends: dict[int, int], jars: str) -> dict[str, Any]:
    """Run one measurement in a fresh child process; its JSON result."""
    args = [sys.executable, "-m", "bench.verify_reader", "--child", reader, bootstrap, topic, json.dumps(ends), jars]
    done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{reader} on {topic} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run(readers: Iterable[str], repeats: dict[str, int], scale: float, work_dir: Path) -> list[dict[str, Any]]:
    """Start a local cluster, load the cases' topics, measure each reader ``repeats[reader]`` times per case."""
    from mirrorspark.kafka.local.clusters import start_clusters, stop_clusters
    from mirrorspark.service.aggregation import spark_jars

    jars = spark_jars()
    clusters = start_clusters(["bench"], base_dir=work_dir, brokers=1, timeout_s=240.0)
    rows: list[dict[str, Any]] = []
    try:
        bootstrap = clusters.bootstrap("bench")
        for size, records, parts in CASES:
            w = Workload(f"verify-{size}", int(records * scale), size, parts, tagged=True)
            loaded = load_topic(bootstrap, w)
            print(f"loaded {w.topic}: {loaded.records} records in {loaded.seconds:.0f} s", flush=True)
            ends = _ends(bootstrap, w.topic, parts)
            for reader in readers:
                runs = [measure(reader, bootstrap, w.topic, ends, jars) for _ in range(repeats[reader])]
                row = summarize(reader, size, parts, runs)
                print(json.dumps(row), flush=True)
                rows.append(row)
    finally:
        stop_clusters(work_dir)
    return rows


def summarize(reader: str, size: int, parts: int, runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Median figures of the repeats of one reader on one case."""
    n = runs[0]["records"]
    if len({json.dumps(r["digests"], sort_keys=True) for r in runs}) != 1:
        raise RuntimeError(f"{reader}: the repeats' digests differ")
    return {
        "reader": reader,
        "value_bytes": size,
        "partitions": parts,
        "records": n,
        "repeats": len(runs),
        "wall_s": round(statistics.median(r["wall_s"] for r in runs), 2),
        "cpu_s": round(statistics.median(r["cpu_s"] for r in runs), 2),
        "records_per_s_wall": round(statistics.median(n / r["wall_s"] for r in runs)),
        "records_per_cpu_s": round(statistics.median(n / r["cpu_s"] for r in runs)),
    }


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    out = [
        "| reader | value | partitions | records | wall s | CPU s | records/s (wall) | records/s per core |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r['reader']} | {r['value_bytes']} B | {r['partitions']} | {r['records']:,} | {r['wall_s']} "
            f"| {r['cpu_s']} | {r['records_per_s_wall']:,} | {r['records_per_cpu_s']:,} |"
        )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: the driver (default) or one measurement (``--child``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--child":
        from bench import verify_reader  # not __main__: Spark pickles the Arrow function by reference

        reader, bootstrap, topic, ends, jars = argv[1:6]
        result = verify_reader.child(reader, bootstrap, topic, {int(p): e for p, e in json.loads(ends).items()}, jars)
        print(json.dumps(result), flush=True)
        return 0
    ap = argparse.ArgumentParser(prog="python -m bench.verify_reader", description=__doc__.splitlines()[0])
    ap.add_argument("--readers", default=",".join(READERS), help="comma-separated, of: " + ", ".join(READERS))
    ap.add_argument("--repeat", type=int, default=3, help="measurements per reader and case (median reported)")
    ap.add_argument("--spark-repeat", type=int, help="measurements of the Spark readers (default: --repeat)")
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of issue #42's record counts")
    ap.add_argument("--work-dir", type=Path, default=Path("bench/.work/verify-reader"))
    ap.add_argument("--json", type=Path, help="also write the rows to this file")
    a = ap.parse_args(argv)
    readers = [r for r in a.readers.split(",") if r]
    unknown = set(readers) - set(READERS)
    if unknown:
        ap.error(f"unknown readers: {sorted(unknown)}")
    spark_repeat = a.repeat if a.spark_repeat is None else a.spark_repeat
    repeats = {r: spark_repeat if r.startswith("spark") else a.repeat for r in readers}
    rows = run(readers, repeats, a.scale, a.work_dir)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1) + "\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
