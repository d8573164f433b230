"""The failover policy: when a flow's source counts as failed, the event record, its keys and where it shows."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from mirrorspark.config.parse import parse_config
from mirrorspark.core.failover_policy import (
    FailoverWatch,
    PartitionHealth,
    breach_reason,
    effective_min_isr,
    event_summary,
    failed_partitions,
)
from mirrorspark.core.progress_records import (
    FailoverEvent,
    GroupFailover,
    decode_failover_event,
    encode_failover_event,
    record_kind,
)
from mirrorspark.errors import ConfigError, CorruptRecordError
from mirrorspark.service.api import create_app
from mirrorspark.service.feed import Store

pytestmark = pytest.mark.unit

NOW = 1_800_000_000_000


def part(p: int, *, leader: int | None = 0, isr: int = 3, replicas: int = 3, min_isr: int = 2) -> PartitionHealth:
    return PartitionHealth("t", p, leader, isr, replicas, min_isr)


def test_effective_min_isr_is_capped_by_the_replication_factor() -> None:
    assert effective_min_isr(2, 3) == 2
    assert effective_min_isr(2, 1) == 1  # what the broker enforces for acks=all on an RF-1 topic
    assert effective_min_isr(0, 3) == 1


def test_policies_choose_the_failed_partitions() -> None:
    healthy, short, offline = part(0), part(1, isr=1), part(2, leader=None, isr=1)
    rf1 = part(3, isr=1, replicas=1, min_isr=2)  # min ISR 2 on an RF-1 topic: effectively 1, not under
    ps = [healthy, short, offline, rf1]
    assert failed_partitions("offline", ps) == [offline]
    assert failed_partitions("under-min-isr", ps) == [short, offline]
    assert failed_partitions("manual", ps) == [short, offline]
    with pytest.raises(ValueError, match="unknown failover policy 'sometimes'"):
        failed_partitions("sometimes", ps)
    assert breach_reason("offline", [healthy, short], source="A") is None
    assert breach_reason("offline", ps, source="A") == "1 of 4 source partitions offline: t-2 (no leader)"
    assert breach_reason("under-min-isr", ps, source="A") == (
        "2 of 4 source partitions offline or under min ISR: t-1 (ISR 1 < min ISR 2), t-2 (no leader)"
    )
    assert breach_reason("offline", ps, source="A", reachable=False) == "source cluster 'A' unreachable"
    many = [part(i, leader=None) for i in range(12)]
    assert (reason := breach_reason("offline", many, source="A")) is not None and reason.endswith("and 2 more")


def test_the_watch_fires_after_the_grace_period_and_once_on_recovery() -> None:
    w = FailoverWatch(grace_ms=30_000)
    assert w.observe(0, None) is None and w.state == "healthy"
    assert w.observe(1_000, "down") is None and w.state == "pending"
    assert w.observe(20_000, None) is None and w.state == "healthy"  # a short outage fires nothing
    assert w.observe(21_000, "down") is None
    assert w.observe(50_000, "down") is None  # 29 s
    t = w.observe(51_000, "down again")
    assert t is not None and (t.event, t.since_ms, t.at_ms, t.reason) == ("failover", 21_000, 51_000, "down again")
    assert w.observe(60_000, "still down") is None and w.state == "failed-over"  # fired once
    r = w.observe(70_000, None)
    assert r is not None and (r.event, r.since_ms, r.at_ms, r.reason) == ("recovered", 21_000, 70_000, "down again")
    assert w.observe(71_000, None) is None and w.state == "healthy"
    assert FailoverWatch(grace_ms=0).observe(5, "down") is not None  # 0 = at the first failed observation


EVENT = FailoverEvent(
    flow="A->B",
    at=NOW,
    event="failover",
    policy="offline",
    dry_run=False,
    since=NOW - 30_000,
    reason="1 of 1 source partitions offline: t-0 (no leader)",
    events=1,
    groups=(
        GroupFailover("g1", "moved", 3),
        GroupFailover("g2", "refused", 1, "consumer group 'g2' has 1 active member on cluster 'B' (state Stable)"),
    ),
)


def test_the_event_record_round_trips_and_reads_as_one_line() -> None:
    key, value = encode_failover_event(EVENT)
    assert record_kind(key) == "failover"
    assert decode_failover_event(key, value) == EVENT and EVENT.active
    with pytest.raises(CorruptRecordError, match="dry_run"):
        decode_failover_event(key, value.replace(b'"dry_run":false', b'"dry_run":"no"'))
    assert event_summary(EVENT) == (
        "flow A->B: failover (policy offline; failed since 2027-01-15T07:59:30+00:00: 1 of 1 source partitions "
        "offline: t-0 (no leader)); groups: g1 moved (3 offsets); g2 refused (1 offset): consumer group 'g2' has 1 "
        "active member on cluster 'B' (state Stable)"
    )
    back = FailoverEvent("A->B", NOW + 5000, "recovered", "offline", True, EVENT.since, EVENT.reason, 1)
    assert not back.active
    assert event_summary(back).startswith(
        "flow A->B: source recovered at 2027-01-15T08:00:05+00:00 (policy offline, dry run;"
    )
    assert event_summary(back).endswith("failback is the operator's decision")


def cfg(**props: str) -> object:
    return parse_config({"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092", **props})


def test_keys_are_per_flow_with_top_level_defaults() -> None:
    flow = cfg(**{"A->B.enabled": "true"}).flow("A", "B")  # type: ignore[attr-defined]
    assert (flow.failover_policy, flow.failover_groups, flow.failover_grace_ms) == ("manual", (".*",), 30_000)
    assert (flow.failover_check_interval_ms, flow.failover_dry_run) == (5000, False)
    c = cfg(
        **{
            "mirrorspark.failover.policy": "under-min-isr",
            "A->B.mirrorspark.failover.policy": "offline",
            "A->B.mirrorspark.failover.groups": "orders-.*, billing",
            "mirrorspark.failover.grace.ms": "1000",
            "B->A.mirrorspark.failover.dry.run": "true",
        }
    )
    ab, ba = c.flow("A", "B"), c.flow("B", "A")  # type: ignore[attr-defined]
    assert (ab.failover_policy, ab.failover_groups, ab.failover_grace_ms) == ("offline", ("orders-.*", "billing"), 1000)
    assert (ba.failover_policy, ba.failover_dry_run, ab.failover_dry_run) == ("under-min-isr", True, False)
    with pytest.raises(ConfigError, match=r"mirrorspark\.failover\.policy"):
        cfg(**{"mirrorspark.failover.policy": "auto"})
    with pytest.raises(ConfigError, match=r"mirrorspark\.failover\.groups"):
        cfg(**{"A->B.mirrorspark.failover.groups": "orders-("})


def test_the_service_lists_failovers_and_exports_gauges() -> None:
    store = Store("B", clock_ms=lambda: NOW)
    assert store.apply("channel", *encode_failover_event(EVENT))
    older = FailoverEvent("A->B", NOW - 60_000, "recovered", "offline", False, NOW - 90_000, "x", 0)
    assert store.apply("channel", *encode_failover_event(older))  # older than the one shown: ignored
    config = cfg(**{"A->B.enabled": "true"})
    with TestClient(create_app(store, config)) as c:  # type: ignore[arg-type]
        doc = c.get("/api/v1/failovers").json()
        assert [(f["replication"], f["event"], f["active"], f["events"]) for f in doc] == [
            ("A->B", "failover", True, 1)
        ]
        assert [(g["group"], g["outcome"], g["offsets"]) for g in doc[0]["groups"]] == [
            ("g1", "moved", 3),
            ("g2", "refused", 1),
        ]
        assert doc[0]["since_ms"] == NOW - 30_000 and "active member" in doc[0]["groups"][1]["detail"]
        families = {f.name: f for f in text_string_to_metric_families(c.get("/metrics").text)}
    active = families["mirrorspark_failover_active"].samples[0]
    assert active.labels == {"source": "A", "target": "B"} and active.value == 1.0
    assert families["mirrorspark_failover_events"].samples[0].value == 1.0
