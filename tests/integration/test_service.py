"""The metrics service as a person uses it: a live flow, ``mirrorspark service``, the API, OpenAPI, /metrics.

One continuous flow primary->backup copies a known workload; ``mirrorspark service`` runs in its
own process (its own Spark, the aggregation job, uvicorn on a free port) with a bearer token. The
API's figures are checked against ground truth (records copied = records produced, lag 0, latency
within what the test measured, the group's checkpoint), the live OpenAPI document is validated and
fuzzed with schemathesis (bounded), and ``/metrics`` is parsed with prometheus_client's parser.
Other tests' flows share the progress channel, so every figure is read for this test's topic.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from helpers import assert_eventually, create_topic, end_offsets, produce, unique_name
from hypothesis import HealthCheck, given, settings
from live_service import commit_group, served_flow
from openapi_spec_validator import validate
from prometheus_client.parser import text_string_to_metric_families
from pyspark.sql import SparkSession

from mirrorspark.kafka.local.model import LocalClusters

pytestmark = [pytest.mark.integration, pytest.mark.spark]

RECORDS = 2000
TOKEN = "test-token-" + os.urandom(4).hex()
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class Live:
    url: str
    topic: str
    remote: str
    group: str
    produced_from_ms: int
    seen_by_ms: int
    committed: int
    log: Path

    def get(self, path: str, **params: Any) -> Any:
        r = httpx.get(self.url + path.lstrip("/"), params=params, headers=AUTH, timeout=10)
        assert r.status_code == 200, (path, r.status_code, r.text)
        return r.json() if "json" in r.headers.get("content-type", "") else r.text


@pytest.fixture(scope="module")
def live(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp("service")
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic, group = unique_name("svc"), unique_name("svc-group")
    create_topic(p, topic, partitions=2)
    with served_flow(local_clusters, spark, tmp, topic=topic, group=group, token=TOKEN) as url:
        produced_from = int(time.time() * 1000)
        produce(p, topic, [{"value": f"v{i}".encode() * 10, "partition": i % 2} for i in range(RECORDS)])
        remote = f"primary.{topic}"

        def copied() -> int:
            n = sum(hi - lo for lo, hi in end_offsets(b, remote).values())
            assert n >= RECORDS, f"{n} of {RECORDS} copied"
            return int(time.time() * 1000)

        seen_by = assert_eventually(copied, timeout_s=90, interval_s=0.1, message="the flow did not copy the records")
        committed = RECORDS // 2 // 2  # half of partition 0's records, consumed and committed by the group
        commit_group(p, topic, group, {0: committed})
        yield Live(url, topic, remote, group, produced_from, seen_by, committed, tmp / "service.log")


def test_the_apis_figures_match_what_was_produced(live: Live) -> None:
    def topic_figures() -> dict[str, Any]:
        t = live.get(f"api/v1/replications/primary/backup/topics/{live.topic}")
        f = t["figures"]
        assert t["remote_topic"] == live.remote and t["partitions"] == 2
        assert f["records_copied"] == RECORDS  # mirrorspark's lifetime totals
        assert f["lag_records"] == 0 and f["lag_ms"] == 0
        rows = t["partition_rows"]
        assert [(r["position"], r["end_offset"], r["lag_records"]) for r in rows] == [
            (RECORDS // 2, RECORDS // 2, 0)
        ] * 2
        return t

    assert_eventually(topic_figures, timeout_s=60, interval_s=1, message="topic figures")

    def aggregated() -> list[dict[str, Any]]:  # through the Spark job: the 1 h window holds every record
        s = live.get(
            "api/v1/replications/primary/backup/metrics/record-count", window="1h", aggregate="sum", topic=live.topic
        )
        assert s["unit"] == "records" and max((p["value"] for p in s["points"]), default=0) == RECORDS
        return list(s["points"])

    assert_eventually(aggregated, timeout_s=90, interval_s=1, message="the Spark job's 1 h sum of records copied")
    # every copy was on the target when the test saw it; its acknowledgement reached the task soon after (slack)
    bound_ms = live.seen_by_ms - live.produced_from_ms + 5000

    def latency_figures() -> dict[str, float]:
        # the Spark job's aggregates of one batch reach the service's feed one record at a time: the latency
        # series may still be partly read when the record count is complete
        lat = {
            agg: live.get(
                "api/v1/replications/primary/backup/metrics/replication-latency-ms",
                window="1h",
                aggregate=agg,
                topic=live.topic,
            )["points"]
            for agg in ("min", "max", "p50", "p99", "count")
        }
        values = {agg: [p["value"] for p in pts if p["value"] is not None] for agg, pts in lat.items()}
        assert all(values.values()), lat
        top = {agg: max(v) for agg, v in values.items()}
        assert 0 <= top["min"] <= top["p50"] <= top["p99"] <= top["max"] <= bound_ms, (top, bound_ms, lat)
        assert top["count"] >= RECORDS // 32  # about every 16th acknowledged record is sampled
        return top

    assert_eventually(latency_figures, timeout_s=60, interval_s=1, message="the 1 h latency figures")

    reps = {r["name"]: r for r in live.get("api/v1/replications")}
    flow = reps["primary->backup"]
    assert flow["local"] and flow["engine"] == "mirrorspark" and flow["state"] == "running"
    assert flow["tasks"] >= 1 and flow["heartbeat_age_s"] is not None and flow["heartbeat_age_s"] < 30
    # Other tests share the session clusters and may leave heartbeats of their own flows: only these two are ours.
    clusters = {c["alias"]: c["served"] for c in live.get("api/v1/clusters")}
    assert {"primary": False, "backup": True}.items() <= clusters.items(), clusters

    def group() -> bool:
        groups = {g["group"]: g for g in live.get("api/v1/replications/primary/backup/groups")}
        g = groups[live.group]
        (part,) = g["partitions"]
        assert (part["topic"], part["remote_topic"], part["partition"]) == (live.topic, live.remote, 0)
        assert part["upstream_offset"] == live.committed
        assert part["checkpoint_upstream_offset"] == live.committed and part["checkpoint_lag_records"] == 0
        assert part["checkpoint_downstream_offset"] == live.committed  # exact translation: no re-reads
        assert part["failover_rereads"] == 0 and g["checkpoint_latency_ms"] is not None
        return True

    assert_eventually(group, timeout_s=60, interval_s=1, message="the group's checkpoint")
    health = live.get("api/v1/health")
    assert health["status"] == "ok" and health["aggregation"] == "active"


def test_metrics_are_exposed_under_mm2s_prometheus_names(live: Live) -> None:
    def scrape() -> bool:
        families = {f.name: f for f in text_string_to_metric_families(live.get("metrics"))}
        mine = [
            s
            for s in families["kafka_connect_mirror_mirrorsourceconnector_record_count"].samples
            if s.labels["topic"] == live.remote
        ]
        assert sorted(s.labels["partition"] for s in mine) == ["0", "1"]
        assert {s.labels["source"] for s in mine} == {"primary"} and {s.labels["target"] for s in mine} == {"backup"}
        assert sum(s.value for s in mine) == RECORDS
        lag = [
            s.value for s in families["mirrorspark_replication_lag_records"].samples if s.labels["topic"] == live.remote
        ]
        assert lag == [0.0, 0.0]
        assert any(
            s.labels["group"] == live.group
            for s in families["kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms"].samples
        )
        for name in (
            "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_max",
            "kafka_connect_mirror_mirrorsourceconnector_byte_rate",
            "mirrorspark_heartbeat_age_seconds",
            "mirrorspark_task_restarts",
        ):
            assert name in families, name
        return True

    assert_eventually(scrape, timeout_s=60, interval_s=1, message="/metrics")
    assert httpx.get(live.url + "metrics", timeout=10).status_code == 401  # the token is required


def test_the_live_openapi_document_is_valid(live: Live) -> None:
    doc = httpx.get(live.url + "openapi.json", timeout=10).json()
    validate(doc)
    paths = set(doc["paths"])
    assert {
        "/api/v1/replications",
        "/api/v1/replications/{source}/{target}/topics/{topic}",
        "/api/v1/replications/{source}/{target}/metrics/{metric}",
        "/metrics",
    } <= paths
    assert httpx.get(live.url + "docs", timeout=10).status_code == 200  # Swagger UI
    assert TOKEN not in httpx.get(live.url + "openapi.json", timeout=10).text


def test_the_api_holds_to_its_openapi_document(live: Live) -> None:
    """schemathesis generates valid and invalid requests from the live document (bounded per operation)."""
    doc = httpx.get(live.url + "openapi.json", timeout=10).json()
    schema = schemathesis.openapi.from_url(live.url + "openapi.json")
    # every read; the one write (PUT …/throttle) would throttle flows of other tests: its own tests cover it
    operations = [op for op in (o.ok() for o in schema.get_all_operations()) if op.method.lower() == "get"]
    assert len(operations) >= 12
    calls = []
    for operation in operations:
        modes = [schemathesis.GenerationMode.POSITIVE]
        if doc["paths"][operation.path]["get"].get("parameters"):
            modes.append(schemathesis.GenerationMode.NEGATIVE)
        for mode in modes:

            @given(case=operation.as_strategy(mode))
            @settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
            def check(case: Any) -> None:
                calls.append(case.call_and_validate(headers=AUTH, timeout=10).status_code)

            check()
    assert len(calls) >= 2 * len(operations) and 200 in calls and 422 in calls, calls
