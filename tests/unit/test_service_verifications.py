"""The metrics service serves the verify history (issue #42): feed and store, REST API, /metrics (no broker).

Verify history records are made here with :func:`~mirrorspark.core.verify.history.encode_verify_run`, as
``mirrorspark verify`` and ``run``'s sampling write them to ``mm2-verify.<source>.internal`` on the flow's target.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from fakes import FakeCluster, FakeConsumer
from mirrorspark.config.parse import parse_config
from mirrorspark.core.drills import DRILLS_PREFIX
from mirrorspark.core.verify.history import (
    FINDINGS_KEPT,
    VERIFY_PREFIX,
    VerifyRun,
    decode_verify_run,
    encode_verify_run,
)
from mirrorspark.core.verify.report import Finding, PartitionCounts, PartitionReport, VerifyReport
from mirrorspark.mm2.internal_topics import mirrorspark_topic
from mirrorspark.mm2.metrics import MIRRORSPARK_METRICS, prometheus_name
from mirrorspark.service import feed as feed_module
from mirrorspark.service.api import create_app
from mirrorspark.service.feed import VERIFY_KEPT, Feed, Store, add_by_time, classify
from mirrorspark.service.views import verification

pytestmark = pytest.mark.unit

NOW = 1_800_000_000_000
TOKEN = "verify-token"


def config() -> Any:
    return parse_config(
        {
            "clusters": "A, B, C",
            "A.bootstrap.servers": "a:9092",
            "B.bootstrap.servers": "b:9092",
            "C.bootstrap.servers": "c:9092",
            "A->B.enabled": "true",
            "C->B.enabled": "true",
            "mirrorspark.service.auth.token": TOKEN,
        }
    )


def partition(flow: str, p: int, verified: int, findings: tuple[Finding, ...] = (), **counts: int) -> PartitionReport:
    source = flow.split("->")[0]
    return PartitionReport(flow, "orders", p, f"{source}.orders", PartitionCounts(verified, **counts), findings)


def run(at: int, *, flow: str = "A->B", trigger: str = "command", parts: tuple[PartitionReport, ...] = ()) -> VerifyRun:
    source, target = flow.split("->")
    if not parts:
        parts = (partition(flow, 0, 100, digests=2), partition(flow, 1, 50, gap_offsets=5, digests=1))
    return VerifyRun(
        flow=flow,
        source=source,
        target=target,
        at=at,
        trigger=trigger,  # type: ignore[arg-type]
        duration_ms=800,
        report=VerifyReport(at, parts),
        last=1000 if trigger == "sampling" else None,
    )


DIVERGENT = (
    Finding("missing", 40, 38),
    Finding("different", 41, 39, field="value"),
    Finding("duplicated", 42, 41, related_offset=40),
)


def divergent_run(at: int) -> VerifyRun:
    """A->B's run with 3 findings on partition 0 and 150 on partition 1 (100 listed, 50 counted)."""
    many = tuple(Finding("unexpected", None, 1000 + i) for i in range(150))
    parts = (
        partition("A->B", 0, 90, DIVERGENT, skipped=3, unverified_offsets=7, digests=4),
        partition("A->B", 1, 10, many, digests=2),
    )
    return run(at, parts=parts)


def apply(store: Store, r: VerifyRun) -> bool:
    return store.apply("verifications", *encode_verify_run(r))


def verified_store() -> Store:
    store = Store("B", clock_ms=lambda: NOW)
    for r in (run(NOW - 20_000, trigger="sampling"), divergent_run(NOW - 5_000), run(NOW - 60_000)):
        assert apply(store, r)  # out of order: kept in time order
    assert apply(store, run(NOW - 30_000, flow="C->B"))
    return store


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app(verified_store(), config(), token=TOKEN)) as c:
        c.headers["Authorization"] = f"Bearer {TOKEN}"
        yield c


# --------------------------------------------------------------------------- feed and store


def test_verify_history_topics_are_classified_beside_the_drill_history() -> None:
    def kind(topic: str) -> str | None:
        return classify(topic, heartbeats=lambda t: t.endswith("heartbeats"), local_heartbeats="hb", metrics_topic="m")

    assert kind(mirrorspark_topic(VERIFY_PREFIX, None, "A")) == kind("mm2-verify.A.internal") == "verifications"
    assert kind("mm2-verify__A__internal") == "verifications"  # a policy with another internal separator
    assert kind(mirrorspark_topic(DRILLS_PREFIX, None, "A")) == "drills"


def test_the_store_keeps_each_flows_runs_in_time_order() -> None:
    store = verified_store()
    assert [r.at for r in store.flow("A", "B").verifications] == [NOW - 60_000, NOW - 20_000, NOW - 5_000]
    assert [r.flow for r in store.flow("C", "B").verifications] == ["C->B"]
    again = run(NOW - 20_000, parts=(partition("A->B", 0, 7),))  # the same key written again: the newer wins
    assert apply(store, again)
    view = store.flow("A", "B")
    assert len(view.verifications) == 3 and view.verifications[1].verified == 7
    assert not apply(store, run(NOW, flow="A->C"))  # a flow into another cluster: not served here
    assert "A->C" not in store.flows


def test_a_tombstone_deletes_its_run() -> None:
    store = verified_store()
    key, _ = encode_verify_run(run(NOW - 20_000))
    assert store.apply("verifications", key, None)
    assert [r.at for r in store.flow("A", "B").verifications] == [NOW - 60_000, NOW - 5_000]
    assert not store.apply("verifications", b"not a key", None)
    unknown, _ = encode_verify_run(run(NOW, flow="Z->B"))
    assert not store.apply("verifications", unknown, None) and "Z->B" not in store.flows


def test_the_number_of_runs_kept_per_flow_is_capped() -> None:
    store = Store("B", clock_ms=lambda: NOW)
    for i in range(VERIFY_KEPT + 5):
        assert apply(store, run(NOW + i))
    ats = [r.at for r in store.flow("A", "B").verifications]
    assert len(ats) == VERIFY_KEPT and ats[0] == NOW + 5 and ats[-1] == NOW + VERIFY_KEPT + 4  # oldest dropped
    kept: list[VerifyRun] = []
    for at in (5, 1, 3, 4, 2):
        add_by_time(kept, run(at), keep=3)
    assert [r.at for r in kept] == [3, 4, 5]


@pytest.mark.parametrize(
    "key,value",
    [
        (b'{"flow":"A->B","at":1}', b"not json"),
        (b'{"flow":"A->B","at":1}', b'{"v":2}'),  # a newer layout
        (b'{"flow":"A->B","at":1}', b'{"v":1,"flow":"A->B","trigger":"command","report":{"flows":7}}'),
        (b'{"flow":"A->B","at":1}', b'{"v":1,"flow":"A->B","trigger":"cron","report":{}}'),
        (b"[]", b"{}"),
    ],
)
def test_a_corrupt_verify_record_is_skipped_with_a_warning(
    key: bytes, value: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    store = verified_store()
    with caplog.at_level(logging.WARNING, logger="mirrorspark.service.feed"):
        assert not store.apply("verifications", key, value)
    assert any(
        "corrupt verify history record" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
    )
    assert len(store.flow("A", "B").verifications) == 3


class _Admin:
    """The feed's cluster admin: lists the served cluster's topics."""

    timeout_s = 5.0

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster

    def with_timeout(self, _s: float) -> _Admin:
        return self

    def list_topics(self) -> dict[str, int]:
        return {name: len(t.partitions) for name, t in self.cluster.topics.items()}


def test_the_feed_reads_verify_topics_with_tombstones_and_corrupt_records(monkeypatch: pytest.MonkeyPatch) -> None:
    b = FakeCluster("B")
    topic = mirrorspark_topic(VERIFY_PREFIX, None, "A")
    b.create_topic(topic, 1, {"cleanup.policy": "compact"})
    b.append(topic, *encode_verify_run(run(NOW - 2000)))
    b.append(topic, *encode_verify_run(run(NOW - 1000)))
    b.append(topic, b'{"flow":"A->B","at":5}', b"{broken")
    b.append(topic, encode_verify_run(run(NOW - 2000))[0], None)  # deleted from the history
    monkeypatch.setattr(feed_module, "ReplicationContext", lambda _config: SimpleNamespace(cluster_admin=admin))

    def admin(*_a: Any, **_kw: Any) -> _Admin:
        return _Admin(b)

    monkeypatch.setattr(feed_module, "create", lambda *_a, **_kw: FakeConsumer(b))
    monkeypatch.setattr(feed_module, "flow_status", lambda *_a, **_kw: None)  # MM2 flows' status: not this test's
    store = Store("B", clock_ms=lambda: NOW)
    feed = Feed(config(), "B", store, metrics_topic="mirrorspark-metrics.internal")
    feed.start()
    try:
        assert feed.ready.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with store.lock:
                if store.records_read >= 4:
                    break
            time.sleep(0.02)
    finally:
        feed.stop()
    with store.lock:
        assert [r.at for r in store.flow("A", "B").verifications] == [NOW - 1000]
        assert topic in store.topics_read
        assert store.records_read == 4 and store.records_skipped == 1  # the corrupt one
        assert store.error is None


# --------------------------------------------------------------------------- views


def test_a_runs_document_totals_its_partitions_and_lists_its_findings() -> None:
    doc = verification(decode_verify_run(*encode_verify_run(divergent_run(NOW))))  # as read from the history
    assert (doc.flow, doc.source, doc.target, doc.trigger, doc.at_ms, doc.duration_ms) == (
        "A->B",
        "A",
        "B",
        "command",
        NOW,
        800,
    )
    assert (doc.verified, doc.divergent, doc.clean) == (100, 153, False)
    assert (doc.skipped, doc.gap_offsets, doc.unverified_offsets) == (3, 0, 7)
    assert doc.findings_by_kind.model_dump() == {
        "missing": 1,
        "unexpected": 150,
        "different": 1,
        "duplicated": 1,
        "out_of_order": 0,
    }
    assert doc.partitions is not None
    p0, p1 = doc.partitions
    assert (p0.topic, p0.partition, p0.target_topic, p0.digests, p0.divergent) == ("orders", 0, "A.orders", 4, 3)
    assert [f.model_dump() for f in p0.findings] == [
        {"kind": "missing", "source_offset": 40, "target_offset": 38, "field": None, "related_offset": None},
        {"kind": "different", "source_offset": 41, "target_offset": 39, "field": "value", "related_offset": None},
        {"kind": "duplicated", "source_offset": 42, "target_offset": 41, "field": None, "related_offset": 40},
    ]
    assert p1.divergent == 150 and p1.findings_by_kind.unexpected == 150
    assert len(p1.findings) == FINDINGS_KEPT and p1.findings_omitted == 50  # capped in the history record
    assert verification(divergent_run(NOW), partitions=False).partitions is None
    clean = verification(run(NOW, trigger="sampling"))
    assert clean.clean and clean.divergent == 0 and clean.gap_offsets == 5 and clean.window.last == 1000


# --------------------------------------------------------------------------- REST API


def test_every_flows_runs_newest_first(client: TestClient) -> None:
    rows = client.get("/api/v1/verifications").json()
    assert [(r["flow"], r["at_ms"], r["trigger"]) for r in rows] == [
        ("A->B", NOW - 5_000, "command"),
        ("A->B", NOW - 20_000, "sampling"),
        ("C->B", NOW - 30_000, "command"),
        ("A->B", NOW - 60_000, "command"),
    ]
    limited = client.get("/api/v1/verifications", params={"limit": 2}).json()
    assert [r["at_ms"] for r in limited] == [NOW - 5_000, NOW - 20_000]
    newest = rows[0]
    assert (newest["verified"], newest["divergent"], newest["clean"]) == (100, 153, False)
    assert newest["window"] == {"since_ms": None, "last": None, "topics": None}
    assert newest["partitions"][0]["findings"][2] == {
        "kind": "duplicated",
        "source_offset": 42,
        "target_offset": 41,
        "field": None,
        "related_offset": 40,
    }
    lean = client.get("/api/v1/verifications", params={"partitions": "false", "limit": 1}).json()
    assert lean[0] == {**newest, "partitions": None}  # the dashboard's history: no partitions


def test_one_flows_runs_and_problems(client: TestClient) -> None:
    rows = client.get("/api/v1/replications/A/B/verifications").json()
    assert [r["at_ms"] for r in rows] == [NOW - 5_000, NOW - 20_000, NOW - 60_000]
    assert [r["divergent"] for r in rows] == [153, 0, 0]
    assert [r["flow"] for r in client.get("/api/v1/replications/C/B/verifications").json()] == ["C->B"]
    for path in ("/api/v1/replications/A/C/verifications", "/api/v1/replications/X/B/verifications"):
        r = client.get(path)
        assert r.status_code == 404 and r.headers["content-type"].startswith("application/problem+json"), path
        assert r.json()["title"] == "Not found" and r.json()["instance"] == path
    for params in ({"limit": 0}, {"limit": "many"}, {"partitions": "perhaps"}):
        r = client.get("/api/v1/verifications", params=params)
        assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert TestClient(client.app).get("/api/v1/verifications").status_code == 401  # behind the token like the rest


def test_the_verify_endpoints_are_in_the_openapi_document(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    for path in ("/api/v1/verifications", "/api/v1/replications/{source}/{target}/verifications"):
        op = spec["paths"][path]["get"]
        assert "mm2-verify.<source>.internal" in op["description"] and "verifications" in op["tags"]
        ok = op["responses"]["200"]["content"]["application/json"]["schema"]
        assert ok["type"] == "array" and ok["items"] == {"$ref": "#/components/schemas/Verification"}
        problem = op["responses"]["422"]["content"]["application/problem+json"]["schema"]
        assert problem == {"$ref": "#/components/schemas/Problem"}
        assert {p["name"] for p in op["parameters"]} >= {"limit", "partitions"}
    assert "404" in spec["paths"]["/api/v1/replications/{source}/{target}/verifications"]["get"]["responses"]
    schemas = spec["components"]["schemas"]
    assert {"Verification", "VerificationFinding", "VerificationKinds", "VerificationPartition"} <= set(schemas)
    assert set(schemas["VerificationFinding"]["properties"]) == {
        "kind",
        "source_offset",
        "target_offset",
        "field",
        "related_offset",
    }


# --------------------------------------------------------------------------- /metrics


def test_prometheus_shows_each_flows_newest_run(client: TestClient) -> None:
    text = client.get("/metrics").text
    families = {f.name: f for f in text_string_to_metric_families(text)}

    def values(name: str) -> dict[tuple[tuple[str, str], ...], float]:
        return {tuple(sorted(s.labels.items())): s.value for s in families[name].samples}

    ab, cb = (("source", "A"), ("target", "B")), (("source", "C"), ("target", "B"))
    assert values("mirrorspark_verify_verified_records") == {ab: 100.0, cb: 150.0}
    assert values("mirrorspark_verify_divergent_records") == {ab: 153.0, cb: 0.0}
    assert values("mirrorspark_verify_timestamp_seconds") == {ab: (NOW - 5_000) / 1000, cb: (NOW - 30_000) / 1000}
    assert values("mirrorspark_verify_unverified_offsets") == {ab: 7.0, cb: 0.0}
    assert values("mirrorspark_verify_gap_offsets") == {ab: 0.0, cb: 5.0}
    kinds = values("mirrorspark_verify_finding_records")
    assert kinds[(("kind", "unexpected"), *ab)] == 150.0 and kinds[(("kind", "out_of_order"), *cb)] == 0.0
    assert len(kinds) == 10  # every kind of both flows, 0 included
    documented = {prometheus_name(m.group, m.name) for m in MIRRORSPARK_METRICS}
    verify_families = {n for n in families if n.startswith("mirrorspark_verify_")}
    assert len(verify_families) == 6 and verify_families <= documented
    assert "records" in families["mirrorspark_verify_divergent_records"].documentation


def test_no_run_no_verify_series() -> None:
    store = Store("B", clock_ms=lambda: NOW)
    store.flow("A", "B").heartbeat_ms = NOW
    with TestClient(create_app(store, config())) as c:
        text = c.get("/metrics").text
        assert c.get("/api/v1/verifications").json() == []
        assert c.get("/api/v1/replications/A/B/verifications").json() == []
    assert "verify" not in text
