"""The metrics service's Spark Structured Streaming job: raw measurements in, window aggregates out.

Reads every progress channel on the served cluster (``mm2-task-progress<isep><source><isep>internal``,
:mod:`mirrorspark.core.progress_records`) with Spark's Kafka source, turns each record into samples of
the series of :data:`~mirrorspark.service.aggregates.SERIES`, folds them over the sliding windows
of :data:`~mirrorspark.service.aggregates.WINDOWS` (one streaming aggregation, event time = the
record's ``at``, watermark :data:`~mirrorspark.service.aggregates.WATERMARK_MS`) and writes one
aggregate record per window, flow, series, topic, partition and group to the compacted topic
``mirrorspark.service.metrics.topic`` (update mode: an open window's record is rewritten at every
trigger). The job's Kafka offsets and window state live in its checkpoint location, so a
restarted service resumes where it stopped; without a checkpoint it starts from the channels'
beginning (their last hour) and rebuilds the windows.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from mirrorspark.kafka.jars import jar_dir
from mirrorspark.mm2.internal_topics import TASK_PROGRESS_PREFIX
from mirrorspark.mm2.metrics import HISTOGRAM_SIZE, LATENCY_BUCKETS_MS
from mirrorspark.service.aggregates import AGGREGATE_FORMAT_VERSION, WATERMARK_MS, WINDOWS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

MAX_OFFSETS_PER_TRIGGER = 200_000
"""Most raw records one micro-batch reads (the first one after a long stop catches up in steps)."""

_SAMPLE = (
    "named_struct('metric', {metric}, 'topic', CAST({topic} AS STRING), 'remote_topic', CAST({remote} AS STRING), "
    "'partition', CAST({partition} AS INT), 'grp', CAST({grp} AS STRING), 'cnt', CAST({cnt} AS BIGINT), "
    "'total', CAST({total} AS DOUBLE), 'mn', CAST({mn} AS DOUBLE), 'mx', CAST({mx} AS DOUBLE), "
    "'last', CAST({last} AS DOUBLE), 'hist', CAST({hist} AS ARRAY<BIGINT>))"
)


def _sample(
    metric: str,
    *,
    topic: str = "NULL",
    remote: str = "NULL",
    partition: str = "NULL",
    grp: str = "NULL",
    cnt: str = "1",
    total: str,
    mn: str | None = None,
    mx: str | None = None,
    last: str | None = None,
    hist: str = "NULL",
) -> str:
    return _SAMPLE.format(
        metric=f"'{metric}'",
        topic=topic,
        remote=remote,
        partition=partition,
        grp=grp,
        cnt=cnt,
        total=total,
        mn=mn or total,
        mx=mx or total,
        last=last or total,
        hist=hist,
    )


SCHEMA_SERIES: Final = (
    ("schema-id-cache-hit-count", "schema_hits"),
    ("schema-id-cache-miss-count", "schema_misses"),
    ("schema-id-unknown-count", "schema_unknown"),
)
"""The schema-id series of a partition report: ``(series, report field)``."""


def samples_sql() -> str:
    """Return the SQL expression turning one parsed record (``kind``, ``k``, ``v``) into an array of samples.

    * a partition report: ``record-count`` and ``byte-count`` (one sample each), ``dropped-record-count``
      when a transform dropped records in the interval, the ``schema-id-*`` counts (:data:`SCHEMA_SERIES`)
      when not 0, and when sampled
      ``replication-latency-ms`` and ``record-age-ms`` (count, sum, min, max, histogram);
    * a ``lag`` record: per partition ``replication-lag-records`` and ``replication-lag-ms``;
    * a ``group`` record: ``checkpoint-latency-ms`` per group and ``checkpoint-lag-records`` per
      group partition.
    """
    report = ", ".join(
        [
            _sample("record-count", topic="k.topic", partition="k.partition", total="v.records"),
            _sample("byte-count", topic="k.topic", partition="k.partition", total="v.value_bytes"),
            "IF(coalesce(v.dropped, 0) > 0, "
            + _sample("dropped-record-count", topic="k.topic", partition="k.partition", total="v.dropped")
            + ", NULL)",
            *(
                f"IF(coalesce(v.{field}, 0) > 0, "
                + _sample(series, topic="k.topic", partition="k.partition", total=f"v.{field}")
                + ", NULL)"
                for series, field in SCHEMA_SERIES
            ),
            "IF(v.latency_samples > 0, "
            + _sample(
                "replication-latency-ms",
                topic="k.topic",
                partition="k.partition",
                cnt="v.latency_samples",
                total="v.latency_ms_sum",
                mn="coalesce(v.latency_ms_min, v.latency_ms_sum / v.latency_samples)",
                mx="v.latency_ms_max",
                last="v.latency_ms_sum / v.latency_samples",
                hist="IF(size(v.latency_hist) > 0, v.latency_hist, NULL)",
            )
            + ", NULL)",
            "IF(coalesce(v.age_samples, 0) > 0, "
            + _sample(
                "record-age-ms",
                topic="k.topic",
                partition="k.partition",
                cnt="v.age_samples",
                total="v.age_ms_sum",
                mn="v.age_ms_min",
                mx="v.age_ms_max",
                last="v.age_ms_sum / v.age_samples",
            )
            + ", NULL)",
        ]
    )
    lag = (
        "flatten(transform(v.partitions, x -> array("
        + _sample("replication-lag-records", topic="k.topic", remote="v.remote_topic", partition="x.p", total="x.lag")
        + ", IF(x.lag_ms IS NULL, NULL, "
        + _sample("replication-lag-ms", topic="k.topic", remote="v.remote_topic", partition="x.p", total="x.lag_ms")
        + "))))"
    )
    group = (
        "concat(array(IF(v.latency_ms IS NULL, NULL, "
        + _sample("checkpoint-latency-ms", grp="k.group", total="v.latency_ms")
        + ")), transform(filter(v.partitions, x -> x.lag IS NOT NULL), x -> "
        + _sample(
            "checkpoint-lag-records",
            topic="x.topic",
            remote="x.remote_topic",
            partition="x.p",
            grp="k.group",
            total="x.lag",
        )
        + "))"
    )
    return (
        f"CASE WHEN kind = 'report' THEN array({report}) "
        f"WHEN kind = 'lag' THEN {lag} "
        f"WHEN kind = 'group' THEN {group} END"
    )


def quantile_sql(q: float, hist: str = "hist", lo: str = "mn", hi: str = "mx") -> str:
    """Return the SQL of :func:`mirrorspark.mm2.metrics.quantile` over column ``hist``, clamped to ``[lo, hi]``."""
    n = HISTOGRAM_SIZE
    lowers = "array(" + ", ".join(["0D", *(f"{b}D" for b in LATENCY_BUCKETS_MS)]) + ")"
    uppers = "array(" + ", ".join([*(f"{b}D" for b in LATENCY_BUCKETS_MS), f"CAST({hi} AS DOUBLE)"]) + ")"
    total = f"aggregate({hist}, 0L, (a, x) -> a + coalesce(x, 0L))"
    rank = f"({q}D * {total})"
    step = (
        f"(acc, i) -> CASE "
        f"WHEN acc.val IS NOT NULL OR coalesce(element_at({hist}, i + 1), 0L) = 0 "
        f"THEN named_struct('cum', acc.cum + coalesce(element_at({hist}, i + 1), 0L), 'val', acc.val) "
        f"WHEN acc.cum + element_at({hist}, i + 1) >= {rank} "
        f"THEN named_struct('cum', acc.cum + element_at({hist}, i + 1), 'val', "
        f"element_at({lowers}, i + 1) + (element_at({uppers}, i + 1) - element_at({lowers}, i + 1)) "
        f"* ({rank} - acc.cum) / element_at({hist}, i + 1)) "
        f"ELSE named_struct('cum', acc.cum + element_at({hist}, i + 1), 'val', acc.val) END"
    )
    folded = (
        f"aggregate(sequence(0, {n - 1}), named_struct('cum', 0D, 'val', CAST(NULL AS DOUBLE)), {step}, acc -> acc.val)"
    )
    return (
        f"CASE WHEN {hist} IS NULL OR {total} = 0 THEN NULL "
        f"ELSE least(greatest(coalesce({folded}, CAST({hi} AS DOUBLE)), CAST({lo} AS DOUBLE)), "
        f"CAST({hi} AS DOUBLE)) END"
    )


@functools.cache
def _schemas() -> tuple[Any, Any]:
    from pyspark.sql.types import ArrayType, IntegerType, LongType, StringType, StructField, StructType

    def fields(names: str, t: Any) -> list[Any]:
        return [StructField(n, t) for n in names.split()]

    key = StructType([*fields("flow topic kind group", StringType()), StructField("partition", IntegerType())])
    part = StructType(
        fields("p position end lag lag_ms records value_bytes upstream checkpoint_upstream", LongType())
        + fields("checkpoint_downstream rereads", LongType())
        + fields("topic remote_topic", StringType())
    )
    value = StructType(
        [
            *fields(
                "at records value_bytes latency_ms_sum latency_ms_max latency_samples latency_ms_min "
                "age_ms_sum age_ms_min age_ms_max age_samples latency_ms dropped "
                "schema_hits schema_misses schema_unknown",
                LongType(),
            ),
            StructField("latency_hist", ArrayType(LongType())),
            StructField("remote_topic", StringType()),
            StructField("partitions", ArrayType(part)),
        ]
    )
    return key, value


def progress_pattern() -> str:
    """Return the Kafka source's ``subscribePattern``: every progress channel, whatever the policy's separator."""
    return TASK_PROGRESS_PREFIX + r".+internal"


def aggregate_stream(raw: DataFrame) -> DataFrame:
    """Build the job's plan, from Kafka rows (binary ``key``, ``value``) to ``key``/``value`` JSON strings.

    Stages: samples (:func:`_samples`), repeated per window (:func:`_windowed`), folded per window, flow,
    series, topic, partition and group (:func:`_folded`), written as aggregate records (one row per updated
    window, layout of :mod:`mirrorspark.service.aggregates`).
    """
    return _aggregate_records(_folded(_windowed(_samples(raw))))


def _samples(raw: DataFrame) -> DataFrame:
    """Parse the channel records and explode each into its samples (``flow``, ``ts`` and the sample's columns)."""
    from pyspark.sql import functions as F

    key_schema, value_schema = _schemas()
    parsed = raw.select(
        F.from_json(F.col("key").cast("string"), key_schema).alias("k"),
        F.from_json(F.col("value").cast("string"), value_schema).alias("v"),
    ).where("k IS NOT NULL AND v IS NOT NULL AND k.flow IS NOT NULL AND v.at IS NOT NULL")
    parsed = parsed.withColumn(
        "kind", F.expr("CASE WHEN k.kind IS NULL AND k.partition IS NOT NULL THEN 'report' ELSE k.kind END")
    )
    return (
        parsed.select(
            F.col("k.flow").alias("flow"),
            F.expr("timestamp_millis(v.at)").alias("ts"),
            F.explode(F.expr(samples_sql())).alias("s"),
        )
        .where("s IS NOT NULL")
        .select("flow", "ts", "s.*")
        .withWatermark("ts", f"{WATERMARK_MS // 1000} seconds")
    )


def _windowed(samples: DataFrame) -> DataFrame:
    """Repeat each sample once per sliding window of each of :data:`WINDOWS` holding it (``w``, ``win``)."""
    from pyspark.sql import functions as F

    windowed = None
    for w in WINDOWS:
        part = samples.select(
            F.lit(w.name).alias("w"),
            F.window("ts", f"{w.size_ms // 1000} seconds", f"{w.slide_ms // 1000} seconds").alias("win"),
            *[c for c in samples.columns if c != "ts"],
            "ts",
        )
        windowed = part if windowed is None else windowed.unionByName(part)
    assert windowed is not None
    return windowed


def _folded(windowed: DataFrame) -> DataFrame:
    """Fold the samples of each window, flow, series, topic, partition and group (the streaming aggregation)."""
    from pyspark.sql import functions as F

    hist_sums = [F.sum(F.element_at("hist", i + 1)).alias(f"h{i}") for i in range(HISTOGRAM_SIZE)]
    agg = windowed.groupBy("w", "win", "flow", "metric", "topic", "partition", "grp").agg(
        F.max("remote_topic").alias("remote_topic"),
        F.sum("cnt").alias("count"),
        F.sum("total").alias("sum"),
        F.min("mn").alias("mn"),
        F.max("mx").alias("mx"),
        F.max_by("last", "ts").alias("last"),
        F.max("ts").alias("last_ts"),
        *hist_sums,
    )
    hist = F.array(*[F.col(f"h{i}") for i in range(HISTOGRAM_SIZE)])
    return agg.withColumn(
        "hist",
        F.when(F.col("h0").isNull() & F.col(f"h{HISTOGRAM_SIZE - 1}").isNull(), None).otherwise(
            F.transform(hist, lambda x: F.coalesce(x, F.lit(0)))
        ),
    )


def _aggregate_records(agg: DataFrame) -> DataFrame:
    """Write each folded window as an aggregate record (key, value: JSON; :mod:`~mirrorspark.service.aggregates`)."""
    from pyspark.sql import functions as F

    start = F.expr("unix_millis(win.start)")
    end = F.expr("unix_millis(win.end)")
    now = F.expr("unix_millis(current_timestamp())")
    elapsed = F.greatest(F.least(end, now) - start, F.lit(1000))
    key = F.to_json(
        F.struct(
            F.col("w"),
            start.alias("start"),
            F.col("flow"),
            F.col("metric"),
            F.col("topic"),
            F.col("partition"),
            F.col("grp").alias("group"),
        ),
        {"ignoreNullFields": "false"},
    )
    value = F.to_json(
        F.struct(
            F.lit(AGGREGATE_FORMAT_VERSION).alias("v"),
            F.col("w"),
            start.alias("start"),
            end.alias("end"),
            F.col("flow"),
            F.col("metric"),
            F.col("topic"),
            F.col("remote_topic"),
            F.col("partition"),
            F.col("grp").alias("group"),
            F.col("count"),
            F.col("sum"),
            F.col("mn").alias("min"),
            F.col("mx").alias("max"),
            F.col("last"),
            F.expr("unix_millis(last_ts)").alias("last_at"),
            F.expr("IF(count > 0, sum / count, NULL)").alias("avg"),
            (F.col("sum") * 1000.0 / elapsed).alias("rate"),
            F.expr(quantile_sql(0.5)).alias("p50"),
            F.expr(quantile_sql(0.99)).alias("p99"),
            F.col("hist"),
            now.alias("updated"),
        ),
        {"ignoreNullFields": "false"},
    )
    return agg.select(key.alias("key"), value.alias("value"))


def spark_jars() -> str:
    """``spark.jars`` for Spark's Kafka source and sink: every jar of the ``spark`` jar set (``make install``).

    Raises
    ------
    LocalClusterError
        The jars are not resolved (the message says to run ``make install``).
    """
    return ",".join(str(p) for p in sorted(jar_dir("spark").glob("*.jar")))


def service_spark_conf(*, shuffle_partitions: int = 2) -> dict[str, str]:
    """Spark properties of the service's session: the Kafka jars, few shuffle partitions, small state, no codegen."""
    return {
        "spark.jars": spark_jars(),
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.streaming.stateStore.minDeltasForSnapshot": "5",
        "spark.sql.streaming.minBatchesToRetain": "20",
        "spark.sql.adaptive.enabled": "false",
        "spark.ui.enabled": "false",
        # Interpreted, not generated code: each micro-batch handles a few hundred raw records, and
        # generating and compiling its code (Janino, then the JIT) cost more CPU than running it
        # (an idle service: 0.75 -> 0.53 cores at a 2 s trigger, 2026-11-25)
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    }


def default_checkpoint(cluster: str, base: str | os.PathLike[str] = ".mirrorspark/service") -> str:
    """Return the default checkpoint location of ``cluster``'s service: ``<base>/<cluster>/checkpoint``, absolute."""
    return str((Path(base) / cluster / "checkpoint").resolve())


def start_aggregation(
    spark: SparkSession,
    *,
    read_options: Mapping[str, str],
    write_options: Mapping[str, str],
    metrics_topic: str,
    checkpoint: str,
    trigger_ms: int,
    query_name: str = "mirrorspark-metrics",
) -> StreamingQuery:
    """Start the aggregation query and return it (stop it with ``stop()``).

    ``read_options``/``write_options`` are Spark Kafka options of the served cluster's consumer and
    producer; ``metrics_topic`` is the compacted aggregates topic (created by the caller); ``trigger_ms`` is
    the micro-batch interval in ms.
    """
    raw = (
        spark.readStream.format("kafka")
        .options(**read_options)
        .option("subscribePattern", progress_pattern())
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "false")  # compaction and retention remove raw records: expected here
        .option("maxOffsetsPerTrigger", str(MAX_OFFSETS_PER_TRIGGER))
        .load()
    )
    out = aggregate_stream(raw)
    return (
        out.writeStream.format("kafka")
        .options(**write_options)
        .option("topic", metrics_topic)
        .option("checkpointLocation", checkpoint)
        .outputMode("update")
        .queryName(query_name)
        .trigger(processingTime=f"{trigger_ms} milliseconds")
        .start()
    )


__all__ = [
    "MAX_OFFSETS_PER_TRIGGER",
    "SCHEMA_SERIES",
    "aggregate_stream",
    "default_checkpoint",
    "progress_pattern",
    "quantile_sql",
    "samples_sql",
    "service_spark_conf",
    "spark_jars",
    "start_aggregation",
]
