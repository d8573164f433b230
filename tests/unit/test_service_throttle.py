"""The service's throttle routes and series: validation, unknown flows, an unreachable cluster, Prometheus names."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from test_service_api import NOW, TOKEN, config

from mirrorspark.core.progress_records import FlowMetrics, decode_flow_metrics, encode_flow_metrics
from mirrorspark.service import api
from mirrorspark.service.api import create_app
from mirrorspark.service.feed import Store

pytestmark = pytest.mark.unit

PATH = "/api/v1/replications/A/B/throttle"


def store(metrics: FlowMetrics) -> Store:
    s = Store("B", clock_ms=lambda: NOW)
    assert s.apply("channel", *encode_flow_metrics(metrics))
    return s


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setattr(api, "THROTTLE_TIMEOUT_S", 1.0)
    m = FlowMetrics("A->B", NOW - 100, "running", "continuous", 2, 0, 1, None, 1000, 1_000_000, 990_000, 2500)
    with TestClient(create_app(store(m), config(), token=TOKEN)) as c:  # type: ignore[arg-type]
        c.headers["Authorization"] = f"Bearer {TOKEN}"
        yield c


def test_flow_records_carry_the_throttle_and_older_ones_read_as_none() -> None:
    m = FlowMetrics("A->B", 5, "running", "continuous", 2, 1, 3, None, 1000, 500, None, 1200)
    assert decode_flow_metrics(*encode_flow_metrics(m)) == m
    old = b'{"v":1,"at":5,"state":"running","engine":"continuous","tasks":2,"task_restarts":1,"generation":3,'
    old += b'"error":null,"interval_ms":1000}'
    back = decode_flow_metrics(b'{"kind":"flow","flow":"A->B"}', old)
    assert (back.throttle_limit, back.throttle_rate, back.throttled_ms) == (0, None, 0)


def test_prometheus_shows_the_limit_the_rate_and_the_time_throttled(client: TestClient) -> None:
    families = {f.name: f for f in text_string_to_metric_families(client.get("/metrics").text)}
    assert families["mirrorspark_throttle_limit_bytes_per_second"].samples[0].value == 1_000_000
    assert families["mirrorspark_throttle_rate_bytes_per_second"].samples[0].value == 990_000
    seconds = families["mirrorspark_throttle_seconds"]  # the parser strips _total from a counter's family
    assert seconds.type == "counter" and seconds.samples[0].value == 2.5
    assert seconds.samples[0].labels == {"source": "A", "target": "B"}


@pytest.mark.parametrize("body", [{"rate": -1}, {"rate": "fast"}, {}, {"rate": 5, "burst": 1}, [1]])
def test_a_bad_body_is_a_problem_and_writes_nothing(client: TestClient, body: object) -> None:
    r = client.put(PATH, json=body)
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json"), r.text


def test_an_unknown_flow_is_not_found_and_the_unreachable_cluster_unavailable(client: TestClient) -> None:
    for path in ("/api/v1/replications/A/C/throttle", "/api/v1/replications/Z/B/throttle"):
        r = client.put(path, json={"rate": 5})
        assert r.status_code == 404 and r.json()["status"] == 404, r.text
    r = client.get(PATH)  # b:9092 does not resolve: nothing to read from
    assert r.status_code == 503 and r.json()["title"] == "Service unavailable", r.text
    assert TestClient(client.app).put(PATH, json={"rate": 5}).status_code == 401


def test_the_routes_are_documented() -> None:
    doc = create_app(Store("B"), config(), token="").openapi()  # type: ignore[arg-type]
    ops = doc["paths"]["/api/v1/replications/{source}/{target}/throttle"]
    assert set(ops) == {"get", "put"}
    assert ops["put"]["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/ThrottleChange")
    assert "503" in ops["get"]["responses"]
