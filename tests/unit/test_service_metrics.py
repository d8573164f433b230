"""The metrics service's pure parts: MM2 names, histograms, lag in time, windows, summaries, record formats."""

from __future__ import annotations

import json
import math

import pytest

from mirrorspark.core.group_sync_counts import GroupSyncCounts
from mirrorspark.core.progress_records import (
    FlowMetrics,
    GroupMetrics,
    GroupPartition,
    GroupSync,
    PartitionLag,
    PartitionReport,
    TopicLag,
    decode_flow_metrics,
    decode_group_metrics,
    decode_group_sync,
    decode_report,
    decode_topic_lag,
    encode_flow_metrics,
    encode_group_metrics,
    encode_group_sync,
    encode_report,
    encode_topic_lag,
    record_kind,
)
from mirrorspark.errors import CorruptRecordError
from mirrorspark.mm2.metrics import (
    HISTOGRAM_SIZE,
    LATENCY_BUCKETS_MS,
    MM2_METRICS,
    LagClock,
    bucket_of,
    histogram,
    prometheus_name,
    quantile,
)
from mirrorspark.service.aggregates import (
    WINDOWS,
    Aggregate,
    AggregateKey,
    Summary,
    decode_aggregate,
    encode_aggregate,
    figure,
    merge,
    merge_all,
    window,
)

pytestmark = pytest.mark.unit


# ------------------------------------------------------------------------------------------ names


@pytest.mark.parametrize(
    ("group", "attribute", "name"),
    [
        ("MirrorSourceConnector", "record-count", "kafka_connect_mirror_mirrorsourceconnector_record_count"),
        ("MirrorSourceConnector", "record-age-ms-avg", "kafka_connect_mirror_mirrorsourceconnector_record_age_ms_avg"),
        (
            "MirrorSourceConnector",
            "replication-latency-ms-max",
            "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_max",
        ),
        (
            "MirrorCheckpointConnector",
            "checkpoint-latency-ms-max",
            "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms_max",
        ),
        ("mirrorspark", "replication-lag-seconds", "mirrorspark_replication_lag_seconds"),
    ],
)
def test_prometheus_names_are_strimzis(group: str, attribute: str, name: str) -> None:
    assert prometheus_name(group, attribute) == name


def test_the_mm2_catalogue_has_mm2_4_0s_attributes_and_tags() -> None:
    source = {m.name for m in MM2_METRICS if m.group == "MirrorSourceConnector"}
    stems = ("record-age-ms", "replication-latency-ms")
    expected = {"record-count", "record-rate", "byte-count", "byte-rate"} | {
        f"{s}{x}" for s in stems for x in ("", "-min", "-max", "-avg")
    }
    assert source == expected
    checkpoint = [m for m in MM2_METRICS if m.group == "MirrorCheckpointConnector"]
    assert {m.name for m in checkpoint} == {f"checkpoint-latency-ms{x}" for x in ("", "-min", "-max", "-avg")}
    assert checkpoint[0].tags == ("source", "target", "group", "topic", "partition")
    assert MM2_METRICS[0].tags == ("source", "target", "topic", "partition")


# ------------------------------------------------------------------------------------------ histograms


def test_buckets_are_inclusive_upper_bounds_with_an_overflow_bucket() -> None:
    assert bucket_of(0) == 0 and bucket_of(1) == 0 and bucket_of(2) == 1 and bucket_of(3) == 2
    assert bucket_of(LATENCY_BUCKETS_MS[-1] + 1) == HISTOGRAM_SIZE - 1
    assert sum(histogram([1, 5, 5, 10_000_000])) == 4


def test_quantiles_stay_within_what_was_seen() -> None:
    assert quantile([0] * HISTOGRAM_SIZE, 0.5) is None
    one = histogram([37])
    assert quantile(one, 0.5, 37, 37) == 37.0 and quantile(one, 0.99, 37, 37) == 37.0
    many = histogram(list(range(1, 1001)))
    p50, p99 = quantile(many, 0.5, 1, 1000), quantile(many, 0.99, 1, 1000)
    assert p50 is not None and p99 is not None
    assert 200 <= p50 <= 1000 and p50 <= p99 <= 1000
    # overflow bucket: interpolated up to the largest sample
    huge = histogram([10_000_000] * 10)
    assert quantile(huge, 0.5, 10_000_000, 10_000_000) == 10_000_000


def test_lag_clock_counts_from_the_listing_that_first_saw_the_record() -> None:
    clock = LagClock()
    k = ("t", 0)
    assert clock.lag_ms(k, 0, 1000) is None
    clock.observe(k, 10, 1_000)  # records 0..9 exist at t=1000
    clock.observe(k, 20, 5_000)  # records 10..19 from t=5000
    assert clock.lag_ms(k, 0, 9_000) == 8_000  # oldest uncopied (offset 0) seen at 1000
    assert clock.lag_ms(k, 12, 9_000) == 4_000  # offset 12 seen at 5000
    assert clock.lag_ms(k, 20, 9_000) == 0  # caught up
    clock.observe(k, 5, 10_000)  # truncated / re-created: start again
    assert clock.lag_ms(k, 0, 11_000) == 1_000


# ------------------------------------------------------------------------------------------ channel v2


def _report(**kw: object) -> PartitionReport:
    base: dict[str, object] = {
        "flow": "A->B",
        "topic": "t",
        "partition": 1,
        "task": 0,
        "generation": 2,
        "next_offset": 50,
        "records": 10,
        "value_bytes": 100,
        "key_bytes": 5,
        "latency_ms_sum": 30,
        "latency_ms_max": 20,
        "latency_samples": 2,
        "segments": (),
        "at": 1_700_000_000_000,
    }
    base.update(kw)
    return PartitionReport(**base)  # type: ignore[arg-type]


def test_a_version_2_report_round_trips_and_a_version_1_record_still_reads() -> None:
    r = _report(
        latency_ms_min=10,
        latency_hist=tuple(histogram([10, 20])),
        age_ms_sum=9,
        age_ms_min=4,
        age_ms_max=5,
        age_samples=2,
    )
    key, value = encode_report(r)
    assert json.loads(value)["v"] == 2
    assert decode_report(key, value) == r
    v1 = {k: v for k, v in json.loads(value).items() if k in ("task", "generation", "next_offset", "records")}
    v1.update(value_bytes=1, key_bytes=0, latency_ms_sum=0, latency_ms_max=0, latency_samples=0, segments=[], at=1)
    old = decode_report(key, json.dumps(v1).encode())
    assert old.latency_ms_min is None and old.latency_hist == () and old.age_samples == 0


def test_driver_records_round_trip_and_are_told_apart_by_kind() -> None:
    f = FlowMetrics("A->B", 5, "running", "continuous", 2, 1, 3, None, 1000)
    lag = TopicLag(
        "A->B", "t", "A.t", 5, (PartitionLag(0, 10, 15, 5, 2000, 10, 100), PartitionLag(1, 3, 3, 0, 0, 3, 30))
    )
    g = GroupMetrics("A->B", "g1", 5, 12, (GroupPartition("t", "A.t", 0, 9, 7, 7, 2, 2),))
    assert decode_flow_metrics(*encode_flow_metrics(f)) == f
    assert decode_topic_lag(*encode_topic_lag(lag)) == lag
    assert decode_group_metrics(*encode_group_metrics(g)) == g
    assert [record_kind(encode_flow_metrics(f)[0]), record_kind(encode_topic_lag(lag)[0])] == ["flow", "lag"]
    assert record_kind(encode_group_metrics(g)[0]) == "group"
    assert record_kind(encode_report(_report())[0]) == "report"
    assert record_kind(b"[1]") == "unknown" and record_kind(b"nope") == "unknown"


def test_a_group_sync_record_round_trips_in_the_documented_layout_beside_the_group_record() -> None:
    m = GroupSync("A->B", "g1", 5, GroupSyncCounts(synced=3, skipped_active=2, skipped_unknown=1))
    key, value = encode_group_sync(m)
    assert json.loads(key) == {"kind": "group-sync", "flow": "A->B", "group": "g1"} and record_kind(key) == "group-sync"
    assert json.loads(value) == {"v": 1, "at": 5, "synced": 3, "skipped_active": 2, "skipped_unknown": 1}
    assert decode_group_sync(key, value) == m
    for bad in (b'"synced":-3', b'"synced":"3"', b'"synced":true'):
        with pytest.raises(CorruptRecordError):
            decode_group_sync(key, value.replace(b'"synced":3', bad))
    with pytest.raises(CorruptRecordError):
        decode_group_sync(key, b'{"v":1,"at":5,"synced":3}')  # a count missing: not "no counts" but corrupt
    # the group record keeps its version-1 layout: a reader before the counts reads it as it always did
    g = GroupMetrics("A->B", "g1", 5, 12, (GroupPartition("t", "A.t", 0, 9, 7, 7, 2, 2),))
    assert set(json.loads(encode_group_metrics(g)[1])) == {"v", "at", "latency_ms", "partitions"}


@pytest.mark.parametrize(
    "value",
    [b"{}", b'{"at":-1,"remote_topic":"x","partitions":[]}', b'{"at":1,"remote_topic":"x","partitions":[{"p":0}]}'],
)
def test_a_corrupt_lag_record_is_refused(value: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decode_topic_lag(b'{"kind":"lag","flow":"A->B","topic":"t"}', value)


# ------------------------------------------------------------------------------------------ windows and summaries


def test_a_sample_belongs_to_size_over_slide_windows() -> None:
    for w in WINDOWS:
        starts = w.starts(1_700_000_012_345)
        assert len(starts) == w.size_ms // w.slide_ms
        assert all(s <= 1_700_000_012_345 < s + w.size_ms for s in starts)
    w = window("1m")
    assert w.latest_closed(1_000_000) + w.size_ms <= 1_000_000
    with pytest.raises(KeyError):
        window("2m")


def test_summaries_merge_like_partitions_add_up() -> None:
    a = Summary(count=2, sum=30, min=10, max=20, last=5, last_at=100, hist=tuple(histogram([10, 20])))
    b = Summary(count=1, sum=40, min=40, max=40, last=7, last_at=50, hist=tuple(histogram([40])))
    m = merge(a, b)
    assert (m.count, m.sum, m.min, m.max, m.last) == (3, 70, 10, 40, 5)
    assert sum(m.hist) == 3
    assert merge(a, b, total="sum").last == 12 and merge(a, b, total="max").last == 7
    assert merge_all([]) == Summary()
    w = window("1m")
    assert figure(m, "avg", w=w, start_ms=0, now_ms=10**9) == pytest.approx(70 / 3)
    assert figure(m, "rate", w=w, start_ms=0, now_ms=10**9) == pytest.approx(70 / 60)
    assert figure(m, "rate", w=w, start_ms=0, now_ms=30_000) == pytest.approx(70 / 30)  # open window: elapsed part
    assert figure(Summary(), "avg", w=w, start_ms=0, now_ms=1) is None  # MM2: NaN without a sample
    assert figure(Summary(), "p99", w=w, start_ms=0, now_ms=1) is None


def test_aggregate_records_round_trip() -> None:
    key = AggregateKey("5m", 600_000, "A->B", "replication-latency-ms", "t", 0, None)
    s = Summary(count=2, sum=30.0, min=10.0, max=20.0, last=15.0, last_at=700_000, hist=tuple(histogram([10, 20])))
    a = Aggregate(key, "A.t", s, 800_000)
    k, v = encode_aggregate(a)
    doc = json.loads(v)
    assert doc["end"] == 900_000 and doc["avg"] == 15.0 and doc["p99"] <= 20.0
    assert json.loads(k)["w"] == "5m"
    assert decode_aggregate(k, v) == a
    assert decode_aggregate(k, None) is None
    with pytest.raises(CorruptRecordError):
        decode_aggregate(k, b'{"w":"7m","flow":"A->B","metric":"x"}')
    with pytest.raises(CorruptRecordError):
        decode_aggregate(k, json.dumps({**doc, "sum": "NaN"}).encode())
    assert not math.isnan(doc["rate"])


def _exported() -> set[str]:
    from mirrorspark.mm2.metrics import MIRRORSPARK_METRICS

    return {prometheus_name(m.group, m.name) for m in (*MM2_METRICS, *MIRRORSPARK_METRICS)} | {"mirrorspark_flow_state"}


def test_the_grafana_dashboard_queries_only_series_the_service_exports() -> None:
    import re
    from pathlib import Path

    doc = json.loads((Path(__file__).resolve().parents[2] / "docs" / "grafana-mirrorspark.json").read_text())
    exprs = [t["expr"] for p in doc["panels"] for t in p["targets"]]
    used = {n for e in exprs for n in re.findall(r"\b(?:kafka_connect_mirror_\w+|mirrorspark_\w+)", e)}
    assert used and used <= _exported(), used - _exported()
