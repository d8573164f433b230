"""The metrics service's store, views, REST API and /metrics on records made here (no broker, no Spark)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from mirrorspark.config.parse import parse_config
from mirrorspark.core.group_sync_counts import GroupSyncCounts
from mirrorspark.core.lifetime_totals import TopicTotals, encode_totals
from mirrorspark.core.progress_records import (
    FlowMetrics,
    GroupMetrics,
    GroupPartition,
    GroupSync,
    PartitionLag,
    PartitionReport,
    TopicLag,
    encode_flow_metrics,
    encode_group_metrics,
    encode_group_sync,
    encode_report,
    encode_topic_lag,
)
from mirrorspark.mm2.metrics import MIRRORSPARK_METRICS, MM2_METRICS, histogram, prometheus_name
from mirrorspark.mm2.records import Heartbeat
from mirrorspark.service.aggregates import Aggregate, AggregateKey, Summary, encode_aggregate, window
from mirrorspark.service.api import create_app
from mirrorspark.service.feed import Store, classify

pytestmark = pytest.mark.unit

NOW = 1_800_000_000_000
SECRET = "s3cr3t-sasl-password"
TOKEN = "tok-123"


def config() -> object:
    return parse_config(
        {
            "clusters": "A, B, C",
            "A.bootstrap.servers": "a:9092",
            "B.bootstrap.servers": "b:9092",
            "C.bootstrap.servers": "c:9092",
            "B.security.protocol": "SASL_PLAINTEXT",
            "B.sasl.mechanism": "PLAIN",
            "B.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="u" password="{SECRET}";',
            "A->B.enabled": "true",
            "mirrorspark.service.auth.token": TOKEN,
        }
    )


def filled_store() -> Store:
    store = Store("B", clock_ms=lambda: NOW)
    hb = Heartbeat("A", "B", NOW - 500)
    assert store.apply("heartbeats", hb.key(), hb.value())
    up = Heartbeat("C", "A", NOW - 1000)  # a flow into A, seen through A.heartbeats replicated to B
    assert store.apply("remote-heartbeats", up.key(), up.value())
    assert store.apply(
        "channel", *encode_flow_metrics(FlowMetrics("A->B", NOW - 100, "running", "continuous", 2, 1, 1, None, 1000))
    )
    lag = TopicLag(
        "A->B", "t", "A.t", NOW - 100, (PartitionLag(0, 90, 100, 10, 3000, 90, 900), PartitionLag(1, 5, 5, 0, 0, 5, 50))
    )
    assert store.apply("channel", *encode_topic_lag(lag))
    g = GroupMetrics("A->B", "g1", NOW - 100, 7, (GroupPartition("t", "A.t", 0, 80, 70, 70, 10, 12),))
    assert store.apply("channel", *encode_group_metrics(g))
    r = PartitionReport("A->B", "t", 0, 0, 1, 90, 90, 900, 0, 900, 20, 9, (), NOW - 2000, latency_ms_min=5)
    assert store.apply("channel", *encode_report(r))
    assert store.apply("progress", *encode_totals("A->B", "t", TopicTotals(95, 950, 0, NOW)))
    w = window("1m")
    start = w.latest_closed(NOW)
    for p, n in ((0, 60), (1, 30)):
        s = Summary(count=3, sum=float(n), min=5.0, max=30.0, last=10.0, last_at=start + 1000)
        k = AggregateKey("1m", start, "A->B", "record-count", "t", p, None)
        assert store.apply("aggregates", *encode_aggregate(Aggregate(k, None, s, NOW)))
        hist = tuple(histogram([5, 10, 30]))
        lat = Summary(count=3, sum=45.0, min=5.0, max=30.0, last=15.0, last_at=start + 1000, hist=hist)
        k = AggregateKey("1m", start, "A->B", "replication-latency-ms", "t", p, None)
        assert store.apply("aggregates", *encode_aggregate(Aggregate(k, None, lat, NOW)))
    assert not store.apply("channel", b'{"kind":"from-the-future","flow":"A->B"}', b"{}")  # skipped, not an error
    assert not store.apply("aggregates", b"{}", b"not json")
    return store


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app(filled_store(), config(), token=TOKEN)) as c:  # type: ignore[arg-type]
        c.headers["Authorization"] = f"Bearer {TOKEN}"
        yield c


def test_topics_are_classified_by_name() -> None:
    kinds = {
        t: classify(t, heartbeats=lambda x: x.endswith("heartbeats"), local_heartbeats="heartbeats", metrics_topic="m")
        for t in ("heartbeats", "A.heartbeats", "mm2-task-progress.A.internal", "mm2-progress.A.internal", "m", "t")
    }
    assert kinds == {
        "heartbeats": "heartbeats",
        "A.heartbeats": "remote-heartbeats",
        "mm2-task-progress.A.internal": "channel",
        "mm2-progress.A.internal": "progress",
        "m": "aggregates",
        "t": None,
    }


def test_replications_show_state_tasks_and_headline_figures(client: TestClient) -> None:
    rows = client.get("/api/v1/replications").json()
    local = next(r for r in rows if r["name"] == "A->B")
    assert local["state"] == "running" and local["engine"] == "mirrorspark" and local["local"]
    assert (local["tasks"], local["task_restarts"], local["topics"], local["partitions"]) == (2, 1, 1, 2)
    f = local["figures"]
    assert f["records_copied"] == 95 and f["lag_records"] == 10 and f["lag_ms"] == 3000
    assert f["record_rate_per_s"] == pytest.approx(90 / 60)
    assert f["latency_avg_ms"] == pytest.approx(15.0) and f["latency_max_ms"] == 30.0
    assert 5.0 <= f["latency_p50_ms"] <= f["latency_p99_ms"] <= 30.0
    remote = next(r for r in rows if r["name"] == "C->A")
    assert not remote["local"] and remote["engine"] == "unknown"
    assert client.get("/api/v1/replications", params={"remote": "false"}).json() == [local]


def test_topic_detail_groups_series_and_clusters(client: TestClient) -> None:
    t = client.get("/api/v1/replications/A/B/topics/t").json()
    assert t["remote_topic"] == "A.t" and [p["lag_records"] for p in t["partition_rows"]] == [10, 0]
    groups = client.get("/api/v1/replications/A/B/groups").json()
    assert groups[0]["checkpoint_lag_records"] == 10 and groups[0]["failover_rereads"] == 12
    s = client.get("/api/v1/replications/A/B/metrics/record-count", params={"window": "1m", "aggregate": "sum"}).json()
    assert [p["value"] for p in s["points"]] == [90.0]
    s = client.get("/api/v1/replications/A/B/metrics/record-count", params={"aggregate": "sum", "partition": 1}).json()
    assert [p["value"] for p in s["points"]] == [30.0]
    clusters = {c["alias"]: c for c in client.get("/api/v1/clusters").json()}
    assert clusters["B"]["served"] and clusters["B"]["upstream_clusters"] == ["A"]
    assert clusters["A"]["upstream_clusters"] == ["C"]


def test_each_groups_offset_sync_counts_are_served_and_exported_as_a_counter() -> None:
    store = filled_store()
    with TestClient(create_app(store, config(), token=TOKEN)) as c:  # type: ignore[arg-type]
        c.headers["Authorization"] = f"Bearer {TOKEN}"
        [g1] = c.get("/api/v1/replications/A/B/groups").json()
        assert g1["offset_sync"] is None  # a driver before the counts: none reported
        assert "mirrorspark_group_offset_sync" not in c.get("/metrics").text
        for m in (
            GroupSync("A->B", "g1", NOW - 50, GroupSyncCounts(5, 2, 1)),
            GroupSync("A->B", "g1", NOW - 900, GroupSyncCounts(1, 0, 0)),  # older, read later: ignored
            GroupSync("A->B", "g2", NOW - 60, GroupSyncCounts(0, 4, 0)),  # synced, never in a checkpoint cycle yet
        ):
            assert store.apply("channel", *encode_group_sync(m))
        groups = {g["group"]: g for g in c.get("/api/v1/replications/A/B/groups").json()}
        text = c.get("/metrics").text
    expected = {"synced": 5, "skipped_active": 2, "skipped_unknown": 1, "updated_ms": NOW - 50}
    assert groups["g1"]["offset_sync"] == expected
    assert groups["g1"]["checkpoint_lag_records"] == 10 and groups["g1"]["updated_ms"] == NOW - 100
    assert groups["g2"]["partitions"] == [] and groups["g2"]["updated_ms"] == NOW - 60
    assert groups["g2"]["offset_sync"]["skipped_active"] == 4
    [family] = [f for f in text_string_to_metric_families(text) if f.name == "mirrorspark_group_offset_sync"]
    assert family.type == "counter"
    got = {(s.name, s.labels["group"], s.labels["outcome"]): s.value for s in family.samples}
    assert got == {
        ("mirrorspark_group_offset_sync_total", g, outcome): n
        for g, counts in (("g1", (5, 2, 1)), ("g2", (0, 4, 0)))
        for outcome, n in zip(("synced", "skipped_active", "skipped_unknown"), counts, strict=True)
    }
    assert all(s.labels.keys() == {"source", "target", "group", "outcome"} for s in family.samples)
    documented = {prometheus_name(m.group, m.name) for m in MIRRORSPARK_METRICS}
    assert family.name in documented


def test_errors_are_problem_details(client: TestClient) -> None:
    for path in (
        "/api/v1/replications/A/C",
        "/api/v1/replications/A/B/topics/nope",
        "/api/v1/replications/A/B/metrics/x",
    ):
        r = client.get(path)
        assert r.status_code == 404 and r.headers["content-type"].startswith("application/problem+json"), path
        assert r.json()["status"] == 404 and r.json()["title"] == "Not found"
    r = client.get("/api/v1/replications/A/B/metrics/record-count", params={"window": "2m"})
    assert r.status_code == 422 and r.json()["status"] == 422


def test_a_token_is_required_and_no_secret_is_ever_served(client: TestClient) -> None:
    anonymous = TestClient(client.app)
    for path in ("/api/v1/replications", "/metrics", "/api/v1/clusters"):
        r = anonymous.get(path)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", path
        assert anonymous.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert anonymous.get("/api/v1/health").status_code == 200
    assert anonymous.get("/").status_code == 200
    spec = anonymous.get("/openapi.json").json()
    assert "HTTPBearer" in spec["components"]["securitySchemes"]
    bodies = [client.get(p).text for p in spec["paths"] if "{" not in p] + [client.get("/api/v1/replications/A/B").text]
    for body in bodies:
        assert SECRET not in body and TOKEN not in body and "jaas" not in body


def test_prometheus_exposition_uses_strimzis_names_and_labels(client: TestClient) -> None:
    text = client.get("/metrics").text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    rate = families["kafka_connect_mirror_mirrorsourceconnector_record_rate"]
    labels = {s.labels["partition"]: s for s in rate.samples}
    assert set(labels["0"].labels) == {"source", "target", "topic", "partition"}
    assert labels["0"].labels["topic"] == "A.t"  # the remote topic, as MM2 tags it
    assert labels["0"].value == pytest.approx(1.0)
    lat_max = families["kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_max"].samples
    assert {s.value for s in lat_max} == {30.0}
    ages = families["kafka_connect_mirror_mirrorsourceconnector_record_age_ms_avg"].samples
    assert all(s.value != s.value for s in ages)  # NaN without a sample in the window, as MM2
    lag = {s.labels["partition"]: s.value for s in families["mirrorspark_replication_lag_records"].samples}
    assert lag == {"0": 10.0, "1": 0.0}
    assert families["mirrorspark_replication_lag_seconds"].samples[0].value == 3.0
    cp = families["kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms"].samples[0]
    assert cp.labels == {"source": "A", "target": "B", "group": "g1", "topic": "A.t", "partition": "0"}
    assert families["mirrorspark_task_restarts"].samples[0].value == 1.0
    assert families["mirrorspark_heartbeat_age_seconds"].samples[0].value == 0.5
    documented = {prometheus_name(m.group, m.name) for m in (*MM2_METRICS, *MIRRORSPARK_METRICS)}
    assert set(families) - documented == {"mirrorspark_flow_state"}


def test_service_settings_are_parsed_and_the_token_never_shown() -> None:
    cfg = config()
    svc = cfg.service  # type: ignore[attr-defined]
    assert svc.auth_token == TOKEN and svc.metrics_topic == "mirrorspark-metrics.internal"
    assert svc.trigger_interval_ms == 5000 and TOKEN not in repr(svc) and TOKEN not in repr(cfg)
    assert cfg.data_path.metrics_interval_ms == 5000  # type: ignore[attr-defined]


def test_a_topic_the_flow_no_longer_reports_does_not_count_in_its_lag() -> None:
    """An earlier run of the flow (or a topic filtered out since) left lag 7 on ``old``: once the flow's
    newest round is more than two metrics intervals newer, ``old``'s lag is not the flow's lag."""
    store = filled_store()
    stale = TopicLag("A->B", "old", "A.old", NOW - 100_000, (PartitionLag(0, 3, 10, 7, 500, 3, 30),))
    assert store.apply("channel", *encode_topic_lag(stale))
    with TestClient(create_app(store, config(), token=TOKEN)) as c:  # type: ignore[arg-type]
        c.headers["Authorization"] = f"Bearer {TOKEN}"
        local = next(r for r in c.get("/api/v1/replications").json() if r["name"] == "A->B")
        assert local["figures"]["lag_records"] == 10  # t's 10, not 17
        assert c.get("/api/v1/replications/A/B/topics/t").json()["figures"]["lag_records"] == 10
        old = c.get("/api/v1/replications/A/B/topics/old").json()
        assert old["figures"]["lag_records"] is None  # still listed (it was copied), no stale lag
        text = c.get("/metrics").text
    assert 'topic="old"' not in "\n".join(line for line in text.splitlines() if "replication_lag" in line)
    view = store.flow("A", "B")
    assert "old" not in view.current_lags and "t" in view.current_lags


def test_records_a_transform_dropped_are_shown_with_their_rate() -> None:
    """Lifetime drops from the published totals, the window's drop rate from ``dropped-record-count``
    aggregates (the aggregation job's series of the reports' ``dropped``): in the API and in /metrics."""
    store = filled_store()
    assert store.apply("progress", *encode_totals("A->B", "t", TopicTotals(95, 950, 0, NOW, dropped=40)))
    start = window("1m").latest_closed(NOW)
    s = Summary(count=2, sum=30.0, min=10.0, max=20.0, last=20.0, last_at=start + 1000)
    k = AggregateKey("1m", start, "A->B", "dropped-record-count", "t", 0, None)
    assert store.apply("aggregates", *encode_aggregate(Aggregate(k, None, s, NOW)))
    with TestClient(create_app(store, config(), token=TOKEN)) as c:  # type: ignore[arg-type]
        c.headers["Authorization"] = f"Bearer {TOKEN}"
        f = next(r for r in c.get("/api/v1/replications").json() if r["name"] == "A->B")["figures"]
        assert f["records_copied"] == 95 and f["records_dropped"] == 40
        assert f["drop_rate_per_s"] == pytest.approx(30 / 60)
        text = c.get("/metrics").text
    families = {m.name: m for m in text_string_to_metric_families(text)}
    (total,) = families["mirrorspark_dropped_record_count"].samples
    assert total.labels["topic"] == "A.t" and total.value == 40.0
    rates = {s.labels["partition"]: s.value for s in families["mirrorspark_dropped_record_rate"].samples}
    assert rates == {"0": pytest.approx(0.5), "1": 0.0}
