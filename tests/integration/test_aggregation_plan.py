"""The metrics service's aggregation plan on real Spark, over a static DataFrame of raw records.

The live service test (``test_service.py``) runs the whole streaming job; this one checks series
that need inputs that flow does not produce, such as the drops of a transform.
"""

from __future__ import annotations

import dataclasses
import time

import pytest
from pyspark.sql import SparkSession

from mirrorspark.core.progress_records import PartitionReport, encode_report
from mirrorspark.service.aggregates import Summary, decode_aggregate
from mirrorspark.service.aggregation import aggregate_stream, service_spark_conf

pytestmark = [pytest.mark.integration, pytest.mark.spark]


DROPS_FLOW, SCHEMA_IDS_FLOW = "A->B", "C->D"
"""Each test's flow: both tests' records go through one aggregation (one query for the module), kept apart by flow."""


def report(
    flow: str,
    partition: int,
    records: int,
    dropped: int,
    at_ms: int,
    hits: int = 0,
    misses: int = 0,
    unknown: int = 0,
) -> tuple[bytes, bytes]:
    r = PartitionReport(flow, "t", partition, 0, 1, records, records, records, 0, 0, 0, 0, (), at_ms, dropped=dropped)
    return encode_report(dataclasses.replace(r, schema_hits=hits, schema_misses=misses, schema_unknown=unknown))


def raw_reports(now: int) -> list[tuple[bytes, bytes]]:
    """Both tests' raw records: a transform's drops (flow A->B), schema id counts (flow C->D)."""
    drops = [report(DROPS_FLOW, 0, 10, 7, now - 2000), report(DROPS_FLOW, 0, 5, 3, now - 1000)]
    drops.append(report(DROPS_FLOW, 1, 20, 0, now - 1000))
    return [
        *drops,
        report(SCHEMA_IDS_FLOW, 0, 10, 0, now - 2000, hits=8, misses=2),
        report(SCHEMA_IDS_FLOW, 0, 5, 0, now - 1000, hits=5, unknown=1),
        report(SCHEMA_IDS_FLOW, 1, 20, 0, now - 1000),  # a partition without schema ids: no sample
    ]


Minutes = dict[str, dict[tuple[str, int | None], Summary]]


def minute_series(spark: object, raw: list[tuple[bytes, bytes]]) -> Minutes:
    """The 1-minute summaries of the aggregation of ``raw``, per flow, then per series and partition."""
    df = spark.createDataFrame(raw, "key binary, value binary")  # type: ignore[attr-defined]
    aggregates = [
        decode_aggregate(bytes(r.key, "utf-8"), bytes(r.value, "utf-8")) for r in aggregate_stream(df).collect()
    ]
    minutes: Minutes = {}
    for a in aggregates:
        if a is not None and a.key.window == "1m":
            # windows slide: keep, per series, the window holding the most samples (all of them)
            minute = minutes.setdefault(a.key.flow, {})
            best = minute.get((a.key.metric, a.key.partition))
            if best is None or a.summary.count > best.count:
                minute[(a.key.metric, a.key.partition)] = a.summary
    return minutes


def service_sql_conf() -> dict[str, str]:
    """The service session's SQL settings (:func:`service_spark_conf`) that a running session can take."""
    return {k: v for k, v in service_spark_conf().items() if k.startswith("spark.sql.") and "streaming" not in k}


@pytest.fixture(scope="module")
def minutes(spark: SparkSession) -> Minutes:
    """The module's one aggregation, on the session's Spark set as the service's is (interpreted, 2 partitions).

    Without the settings the plan is generated and compiled into code (on an idle machine the setup took 18 s
    instead of 16 s, Spark's start included).
    """
    conf = service_sql_conf()  # here, not at import: it needs the resolved jars, which collecting does not
    before = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        return minute_series(spark, raw_reports(int(time.time() * 1000)))
    finally:
        for k, old in before.items():
            if old is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, old)


def test_a_transforms_drops_become_the_dropped_record_count_series(minutes: Minutes) -> None:
    minute = minutes[DROPS_FLOW]
    drops = minute[("dropped-record-count", 0)]
    assert (drops.count, drops.sum, drops.min, drops.max) == (2, 10.0, 3.0, 7.0)
    assert minute[("record-count", 0)].sum == 15.0
    assert ("dropped-record-count", 1) not in minute  # no drops in the interval: no sample
    assert minute[("record-count", 1)].sum == 20.0


def test_schema_id_counts_become_their_series(minutes: Minutes) -> None:
    minute = minutes[SCHEMA_IDS_FLOW]
    hits = minute[("schema-id-cache-hit-count", 0)]
    assert (hits.count, hits.sum) == (2, 13.0)
    assert minute[("schema-id-cache-miss-count", 0)].sum == 2.0
    assert minute[("schema-id-unknown-count", 0)].sum == 1.0
    assert not [k for k in minute if k[0].startswith("schema-") and k[1] == 1]
