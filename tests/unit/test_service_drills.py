"""The metrics service serves the drill history (issue #27): feed and store, REST API, /metrics (no broker).

Drill records are made here with :func:`~mirrorspark.core.drills.encode_drill`, as ``mirrorspark drill``
writes them to ``mm2-drills.<source>.internal`` on the flow's target.
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
from mirrorspark.core.drills import (
    DRILLS_PREFIX,
    DrillResult,
    GroupDrill,
    GroupPartitionDrill,
    PartitionRecoveryPoint,
    PolicyVerdict,
    RecoveryPoint,
    encode_drill,
)
from mirrorspark.core.gaps import GAPS_PREFIX
from mirrorspark.mm2.internal_topics import mirrorspark_topic
from mirrorspark.service import feed as feed_module
from mirrorspark.service.api import create_app
from mirrorspark.service.feed import DRILLS_KEPT, Feed, Store, add_drill, classify

pytestmark = pytest.mark.unit

NOW = 1_800_000_000_000
TOKEN = "drill-token"


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


def gp(partition: int, rereads: int | None, skips: int | None = 0, **kw: Any) -> GroupPartitionDrill:
    return GroupPartitionDrill(
        topic="A.t",
        partition=partition,
        source_topic="t",
        committed=100,
        checkpoint_upstream=100,
        target_offset=90,
        rereads=rereads,
        skips=skips,
        basis="exact",
        **kw,
    )


def drill(
    at: int,
    *,
    flow: str = "A->B",
    records: tuple[int, int] = (5, 2),
    seconds: tuple[float, float] = (3.5, 1.0),
    executed: bool = False,
    groups: tuple[GroupDrill, ...] | None = None,
    policy: PolicyVerdict | None = None,
) -> DrillResult:
    source, target = flow.split("->")
    parts = tuple(
        PartitionRecoveryPoint("t", p, 100 + n, 100 if n else -1, n, s)
        for p, (n, s) in enumerate(zip(records, seconds, strict=True))
    )
    if groups is None:
        groups = (GroupDrill("g1", (gp(0, 4), gp(1, 3)), target_members=0, source_members=1),)
    return DrillResult(
        flow=flow,
        source=source,
        target=target,
        at=at,
        executed=executed,
        recovery_point=RecoveryPoint(parts, gap_events=1, gap_records=7),
        groups=groups,
        policy=policy,
        duration_ms=1234,
    )


def executed_drill(at: int) -> DrillResult:
    measured = GroupDrill(
        "g1",
        (gp(0, 4, measured_rereads=4, measured_skips=0), gp(1, 3, measured_rereads=2, measured_skips=0)),
        target_members=0,
        source_members=None,
        recovery_ms=250,
        records_read=40,
        without_checkpoint=("t-2",),
    )
    unknown = GroupDrill("g2", (gp(0, None, None),), target_members=2, source_members=0, refused="2 active members")
    verdict = PolicyVerdict("offline", False, "nothing", "the source answers", ("g1", "g2"), 30_000)
    return drill(at, records=(0, 9), seconds=(0.0, -1.0), executed=True, groups=(measured, unknown), policy=verdict)


def apply(store: Store, d: DrillResult) -> bool:
    return store.apply("drills", *encode_drill(d))


def drilled_store() -> Store:
    store = Store("B", clock_ms=lambda: NOW)
    for d in (drill(NOW - 20_000, records=(1, 0)), executed_drill(NOW - 5_000), drill(NOW - 60_000, records=(8, 8))):
        assert apply(store, d)  # out of order: kept in time order
    assert apply(store, drill(NOW - 30_000, flow="C->B", records=(0, 0), seconds=(0.0, 0.0)))
    return store


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app(drilled_store(), config(), token=TOKEN)) as c:
        c.headers["Authorization"] = f"Bearer {TOKEN}"
        yield c


# --------------------------------------------------------------------------- feed and store


def test_drill_history_topics_are_classified_like_gap_ledgers() -> None:
    def kind(topic: str) -> str | None:
        return classify(topic, heartbeats=lambda t: t.endswith("heartbeats"), local_heartbeats="hb", metrics_topic="m")

    assert kind(mirrorspark_topic(DRILLS_PREFIX, None, "A")) == kind("mm2-drills.A.internal") == "drills"
    assert kind("mm2-drills__A__internal") == "drills"  # a policy with another internal separator
    assert kind(mirrorspark_topic(GAPS_PREFIX, None, "A")) == "gaps"


def test_the_store_keeps_each_flows_drills_in_time_order() -> None:
    store = drilled_store()
    assert [d.at for d in store.flow("A", "B").drills] == [NOW - 60_000, NOW - 20_000, NOW - 5_000]
    assert [d.flow for d in store.flow("C", "B").drills] == ["C->B"]
    again = drill(NOW - 20_000, records=(3, 3))  # the same key written again: the newer record wins
    assert apply(store, again)
    view = store.flow("A", "B")
    assert len(view.drills) == 3 and view.drills[1].recovery_point.records == 6
    assert not apply(store, drill(NOW, flow="A->C"))  # a flow into another cluster: not served here
    assert "A->C" not in store.flows


def test_a_tombstone_deletes_its_drill() -> None:
    store = drilled_store()
    key, _ = encode_drill(drill(NOW - 20_000))
    assert store.apply("drills", key, None)
    assert [d.at for d in store.flow("A", "B").drills] == [NOW - 60_000, NOW - 5_000]
    assert not store.apply("drills", b"not a key", None)
    unknown, _ = encode_drill(drill(NOW, flow="Z->B"))
    assert not store.apply("drills", unknown, None) and "Z->B" not in store.flows


def test_the_number_of_drills_kept_per_flow_is_capped() -> None:
    store = Store("B", clock_ms=lambda: NOW)
    for i in range(DRILLS_KEPT + 5):
        assert apply(store, drill(NOW + i))
    ats = [d.at for d in store.flow("A", "B").drills]
    assert len(ats) == DRILLS_KEPT and ats[0] == NOW + 5 and ats[-1] == NOW + DRILLS_KEPT + 4  # oldest dropped
    kept: list[DrillResult] = []
    for at in (5, 1, 3, 4, 2):
        add_drill(kept, drill(at), keep=3)
    assert [d.at for d in kept] == [3, 4, 5]


@pytest.mark.parametrize(
    "key,value",
    [
        (b'{"flow":"A->B","at":1}', b"not json"),
        (b'{"flow":"A->B","at":1}', b'{"v":2}'),  # a newer layout
        (b'{"flow":"A->B","at":1}', b'{"v":1,"flow":"A->B","recovery_point":{}}'),
        (b"[]", b"{}"),
    ],
)
def test_a_corrupt_drill_record_is_skipped_with_a_warning(
    key: bytes, value: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    store = drilled_store()
    with caplog.at_level(logging.WARNING, logger="mirrorspark.service.feed"):
        assert not store.apply("drills", key, value)
    assert any("corrupt drill record" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    assert len(store.flow("A", "B").drills) == 3


class _Admin:
    """The feed's cluster admin: lists the served cluster's topics."""

    timeout_s = 5.0

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster

    def with_timeout(self, _s: float) -> _Admin:
        return self

    def list_topics(self) -> dict[str, int]:
        return {name: len(t.partitions) for name, t in self.cluster.topics.items()}


def test_the_feed_finds_and_reads_drill_topics_and_counts_corrupt_records(monkeypatch: pytest.MonkeyPatch) -> None:
    b = FakeCluster("B")
    topic = mirrorspark_topic(DRILLS_PREFIX, None, "A")
    b.create_topic(topic, 1, {"cleanup.policy": "compact"})
    b.create_topic("orders", 1)
    b.append(topic, *encode_drill(drill(NOW - 1000)))
    b.append(topic, b'{"flow":"A->B","at":5}', b"{broken")
    b.append("orders", None, b"not the service's")
    later = mirrorspark_topic(DRILLS_PREFIX, None, "C")  # created after the feed started: found by the periodic listing
    monkeypatch.setattr(feed_module, "REFRESH_TOPICS_S", 0.05)
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
        b.create_topic(later, 1, {"cleanup.policy": "compact"})
        b.append(later, *encode_drill(drill(NOW - 500, flow="C->B")))

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with store.lock:
                if store.flows.get("C->B") is not None and store.flows["C->B"].drills:
                    break
            time.sleep(0.02)
    finally:
        feed.stop()
    with store.lock:
        assert [d.at for d in store.flow("A", "B").drills] == [NOW - 1000]
        assert [d.at for d in store.flow("C", "B").drills] == [NOW - 500]
        assert {topic, later} <= store.topics_read and "orders" not in store.topics_read
        assert store.records_read == 3 and store.records_skipped == 1  # the corrupt one, as corrupt gap records
        assert store.error is None


# --------------------------------------------------------------------------- REST API


def test_every_flows_drills_newest_first(client: TestClient) -> None:
    rows = client.get("/api/v1/drills").json()
    assert [(r["flow"], r["at_ms"]) for r in rows] == [
        ("A->B", NOW - 5_000),
        ("A->B", NOW - 20_000),
        ("C->B", NOW - 30_000),
        ("A->B", NOW - 60_000),
    ]
    assert [r["at_ms"] for r in client.get("/api/v1/drills", params={"limit": 2}).json()] == [NOW - 5_000, NOW - 20_000]
    newest = rows[0]
    assert (newest["source"], newest["target"], newest["executed"], newest["duration_ms"]) == ("A", "B", True, 1234)
    rp = newest["recovery_point"]
    assert (rp["records"], rp["max_records"], rp["gap_events"], rp["gap_records"]) == (9, 9, 1, 7)
    assert rp["seconds"] is None  # a waiting partition's age is unknown (-1 in the record)
    assert rp["partitions"] == [
        {"topic": "t", "partition": 0, "end_offset": 100, "position": None, "records": 0, "seconds": 0.0},
        {"topic": "t", "partition": 1, "end_offset": 109, "position": 100, "records": 9, "seconds": None},
    ]
    assert newest["rereads"] is None and newest["skips"] is None  # g2's are unknown
    g1, g2 = newest["groups"]
    assert g1 == {
        "group": "g1",
        "partitions": 2,
        "rereads": 7,
        "skips": 0,
        "measured_rereads": 6,
        "measured_skips": 0,
        "source_lag": None,
        "recovery_ms": 250,
        "records_read": 40,
        "target_members": 0,
        "source_members": None,
        "refused": None,
        "without_checkpoint": ["t-2"],
    }
    assert g2["refused"] == "2 active members" and g2["target_members"] == 2 and g2["measured_rereads"] is None
    assert newest["policy"] == {
        "policy": "offline",
        "breached": False,
        "action": "nothing",
        "reason": "the source answers",
        "groups": ["g1", "g2"],
        "grace_ms": 30_000,
    }
    lean = client.get("/api/v1/drills", params={"partitions": "false", "limit": 1}).json()
    assert lean[0]["recovery_point"] == {**rp, "partitions": None}  # the dashboard's: no per-partition list
    older = rows[1]
    assert older["policy"] is None and older["rereads"] == 7 and older["recovery_point"]["seconds"] == 3.5


def test_one_flows_drills_and_problems(client: TestClient) -> None:
    rows = client.get("/api/v1/replications/A/B/drills").json()
    assert [r["at_ms"] for r in rows] == [NOW - 5_000, NOW - 20_000, NOW - 60_000]
    assert [r["recovery_point"]["records"] for r in rows] == [9, 1, 16]
    assert [r["flow"] for r in client.get("/api/v1/replications/C/B/drills").json()] == ["C->B"]
    for path in ("/api/v1/replications/A/C/drills", "/api/v1/replications/X/B/drills"):
        r = client.get(path)
        assert r.status_code == 404 and r.headers["content-type"].startswith("application/problem+json"), path
        assert r.json()["title"] == "Not found" and r.json()["instance"] == path
    for params in ({"limit": 0}, {"limit": "many"}):
        r = client.get("/api/v1/drills", params=params)
        assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert TestClient(client.app).get("/api/v1/drills").status_code == 401  # behind the token like the rest


def test_the_drill_endpoints_are_in_the_openapi_document(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    for path in ("/api/v1/drills", "/api/v1/replications/{source}/{target}/drills"):
        op = spec["paths"][path]["get"]
        assert "recovery point over time" in op["description"]
        ok = op["responses"]["200"]["content"]["application/json"]["schema"]
        assert ok["type"] == "array" and ok["items"] == {"$ref": "#/components/schemas/Drill"}
        problem = op["responses"]["422"]["content"]["application/problem+json"]["schema"]
        assert problem == {"$ref": "#/components/schemas/Problem"}
    assert "404" in spec["paths"]["/api/v1/replications/{source}/{target}/drills"]["get"]["responses"]
    schemas = spec["components"]["schemas"]
    assert {"Drill", "DrillGroup", "DrillPartition", "DrillPolicy", "DrillRecoveryPoint"} <= set(schemas)
    assert set(schemas["DrillGroup"]["properties"]) >= {"measured_rereads", "measured_skips", "recovery_ms", "refused"}


# --------------------------------------------------------------------------- /metrics


def test_prometheus_shows_each_flows_newest_drill(client: TestClient) -> None:
    text = client.get("/metrics").text
    families = {f.name: f for f in text_string_to_metric_families(text)}

    def values(name: str) -> dict[tuple[str, ...], float]:
        return {tuple(sorted(s.labels.items())): s.value for s in families[name].samples}

    ab, cb = (("source", "A"), ("target", "B")), (("source", "C"), ("target", "B"))
    assert values("mirrorspark_recovery_point_records") == {ab: 9.0, cb: 0.0}
    assert values("mirrorspark_recovery_point_seconds") == {cb: 0.0}  # A->B's newest age is unknown: left out
    assert values("mirrorspark_drill_timestamp_seconds") == {ab: (NOW - 5_000) / 1000, cb: (NOW - 30_000) / 1000}
    g1 = (("group", "g1"), ("source", "A"), ("target", "B"))
    cg1 = (("group", "g1"), ("source", "C"), ("target", "B"))
    assert values("mirrorspark_drill_rereads") == {g1: 7.0, cg1: 7.0}  # g2's prediction is unknown: left out
    assert values("mirrorspark_drill_skips") == {g1: 0.0, cg1: 0.0}
    assert values("mirrorspark_drill_measured_rereads") == {g1: 6.0}  # C->B's drill was not executed
    assert "(records;" in families["mirrorspark_recovery_point_records"].documentation
    assert "seconds" in families["mirrorspark_recovery_point_seconds"].documentation
    assert "-1" not in "".join(line for line in text.splitlines() if "drill" in line or "recovery_point" in line)


def test_no_drill_no_drill_series() -> None:
    store = Store("B", clock_ms=lambda: NOW)
    store.flow("A", "B").heartbeat_ms = NOW
    with TestClient(create_app(store, config())) as c:
        text = c.get("/metrics").text
        assert c.get("/api/v1/drills").json() == [] and c.get("/api/v1/replications/A/B/drills").json() == []
    assert "drill" not in text and "recovery_point" not in text
