"""Schema replication's figures, from a copy task's counts and the driver's sync to ``status``, REST and /metrics (#39).

Synthetic values on fake clusters (no broker, no registry): the per-partition counts ride the progress reports
into the lifetime totals, as ``dropped`` does; the sync's figures are the driver's ``schemas`` record.
"""

from __future__ import annotations

import dataclasses
import json
import logging

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from fakes import FakeClients, FakeCluster, FakeRegistry, two_clusters
from mirrorspark.cli.app import _print_flow_status
from mirrorspark.client.context import FlowContext, ReplicationContext
from mirrorspark.client.status import FlowStatus, SchemaStatus, flow_status, hit_ratio
from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.core.lifetime_totals import TopicTotals, decode_totals, encode_totals
from mirrorspark.core.progress_records import (
    FlowSchemas,
    PartitionReport,
    decode_flow_schemas,
    decode_report,
    encode_flow_schemas,
    encode_report,
    record_kind,
)
from mirrorspark.core.schemas.figures import SchemaSyncFigures
from mirrorspark.errors import CorruptRecordError
from mirrorspark.mm2.metrics import MIRRORSPARK_METRICS, prometheus_name
from mirrorspark.mm2.records import Heartbeat
from mirrorspark.replication.connector.flow import Flow
from mirrorspark.replication.connector.schema_figures_publisher import SchemaFiguresPublisher
from mirrorspark.replication.connector.totals_publisher import TotalsPublisher
from mirrorspark.replication.task.commit_records import partition_report
from mirrorspark.replication.task.partition import PartitionCopy
from mirrorspark.replication.task.spec import CopyTaskSpec, PartitionAssignment
from mirrorspark.service.api import create_app
from mirrorspark.service.feed import Store
from mirrorspark.service.schemas import SchemaReplication

pytestmark = pytest.mark.unit

REGISTRIES = "A.schema.registry.url = http://a:8081\nB.schema.registry.url = http://b:8081\n"
CHANNEL = "mm2-task-progress.A.internal"  # A->B's progress channel, on B
TOTALS = "mm2-progress.A.internal"
NOW = 1_800_000_000_000
FIGURES = SchemaSyncFigures(subjects=12, versions=30, registered=4, synced_at_ms=NOW - 2000)


def report(*, schema_hits: int = 0, schema_misses: int = 0, schema_unknown: int = 0) -> PartitionReport:
    return PartitionReport(
        "A->B",
        "orders",
        0,
        0,
        1,
        10,
        10,
        100,
        0,
        0,
        0,
        0,
        (),
        NOW,
        schema_hits=schema_hits,
        schema_misses=schema_misses,
        schema_unknown=schema_unknown,
    )


# ------------------------------------------------------------------ the copy task's counts


def test_a_report_carries_the_schema_counts_only_when_not_zero() -> None:
    plain = report()
    key, value = encode_report(plain)
    assert not {"schema_hits", "schema_misses", "schema_unknown"} & set(json.loads(value))  # the old layout
    assert decode_report(key, value) == plain
    counted = report(schema_hits=7, schema_misses=2, schema_unknown=1)
    key, value = encode_report(counted)
    assert json.loads(value) | {"schema_hits": 7, "schema_misses": 2, "schema_unknown": 1} == json.loads(value)
    assert decode_report(key, value) == counted
    only_hits = json.loads(encode_report(report(schema_hits=3))[1])
    assert only_hits["schema_hits"] == 3 and "schema_misses" not in only_hits


@pytest.mark.parametrize("bad", [-1, "3", 1.5, True])
def test_a_report_with_a_bad_schema_count_is_corrupt(bad: object) -> None:
    key, value = encode_report(report())
    doc = json.loads(value) | {"schema_misses": bad}
    with pytest.raises(CorruptRecordError):
        decode_report(key, json.dumps(doc).encode())


def _spec() -> CopyTaskSpec:
    return CopyTaskSpec(
        flow="A->B",
        source="A",
        target="B",
        task_index=0,
        generation=1,
        consumer_conf={},
        producer_conf={},
        commit_conf={},
        syncs_conf=None,
        offsets_topic="mm2-offsets.A.internal",
        offsets_partitions=25,
        syncs_topic="mm2-offset-syncs.B.internal",
        progress_topic=CHANNEL,
        partitions=(PartitionAssignment("t", 0, "A.t", 0),),
        offset_lag_max=100,
        flush_interval_s=1.0,
        grant_address=("127.0.0.1", 1, "token"),
    )


def test_a_partitions_counts_go_into_its_report_and_start_again_each_interval() -> None:
    spec = _spec()
    pc = PartitionCopy(spec.partitions[0])
    pc.schema_hits, pc.schema_misses, pc.schema_unknown = 40, 3, 2
    r = partition_report(spec, pc, next_offset=45, records=45, segments=(), now_ms=NOW)
    assert (r.schema_hits, r.schema_misses, r.schema_unknown) == (40, 3, 2)
    pc.reset_interval()
    assert (pc.schema_hits, pc.schema_misses, pc.schema_unknown) == (0, 0, 0)
    pc.schema_hits = 5
    pc.forget_unacknowledged()  # an aborted transaction: its records were never copied
    assert pc.schema_hits == 0


# ------------------------------------------------------------------ lifetime totals


def test_totals_carry_the_schema_counts_only_when_not_zero() -> None:
    _, value = encode_totals("A->B", "t", TopicTotals(3, 30, 6, 1))
    assert value == b'{"records":3,"value_bytes":30,"key_bytes":6,"timestamp":1}'
    t = TopicTotals(3, 30, 6, 1, schema_hits=9, schema_misses=1, schema_unknown=2)
    key, value = encode_totals("A->B", "t", t)
    assert json.loads(value) == {
        "records": 3,
        "value_bytes": 30,
        "key_bytes": 6,
        "timestamp": 1,
        "schema_hits": 9,
        "schema_misses": 1,
        "schema_unknown": 2,
    }
    assert decode_totals(key, value) == ("A->B", "t", t)
    assert decode_totals(key, value.replace(b'"schema_unknown":2', b'"schema_unknown":-2')) is None


def started_flow(cfg: MirrorConfig, clients: FakeClients) -> Flow:
    registries = {"http://a:8081": FakeRegistry("a"), "http://b:8081": FakeRegistry("b", first_id=100)}
    ctx = FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients, registries=lambda s: registries[s.urls[0]])
    flow = Flow(ctx, cfg.data_path)
    flow.start()
    return flow


def test_the_driver_folds_reports_into_the_lifetime_totals_over_earlier_runs() -> None:
    cfg, a, b, clients = two_clusters(REGISTRIES)
    a.create_topic("orders", 1)
    a.fill("orders", 0, 20)
    b.create_topic(TOTALS, 1)
    b.append(TOTALS, *encode_totals("A->B", "orders", TopicTotals(5, 50, 0, 1, schema_hits=100, schema_unknown=1)))
    flow = started_flow(cfg, clients)
    pub = TotalsPublisher(flow)
    pub.start()
    for seq, (hits, misses, unknown) in enumerate([(8, 2, 0), (10, 0, 3)], start=1):
        r = dataclasses.replace(
            report(schema_hits=hits, schema_misses=misses, schema_unknown=unknown),
            next_offset=10 * seq,
            run=flow.positions.run,
            attempt="a1",
            seq=seq,
        )
        assert flow.apply_report(r)
        flow.apply_report(r)  # the same report written twice (a write retried) counts once
    t = pub.totals()["orders"]
    assert (t.schema_hits, t.schema_misses, t.schema_unknown) == (118, 2, 4)
    assert pub.publish() == 1
    last = b.records(TOTALS)[-1]
    decoded = decode_totals(last.key, last.value)
    assert decoded is not None and dataclasses.replace(decoded[2], timestamp_ms=0) == dataclasses.replace(
        t, timestamp_ms=0
    )


# ------------------------------------------------------------------ the driver's schemas record


def test_the_schemas_record_round_trips_in_the_documented_layout() -> None:
    m = FlowSchemas("A->B", NOW, dataclasses.replace(FIGURES, error="subject 'orders-value': incompatible"))
    key, value = encode_flow_schemas(m)
    assert json.loads(key) == {"kind": "schemas", "flow": "A->B"} and record_kind(key) == "schemas"
    assert json.loads(value) == {
        "v": 1,
        "at": NOW,
        "subjects": 12,
        "versions": 30,
        "registered": 4,
        "synced_at": NOW - 2000,
        "error": "subject 'orders-value': incompatible",
    }
    assert decode_flow_schemas(key, value) == m
    with pytest.raises(CorruptRecordError):
        decode_flow_schemas(key, value.replace(b'"versions":30', b'"versions":-1'))
    with pytest.raises(CorruptRecordError):
        decode_flow_schemas(key, b'{"v":1,"at":1}')


def test_the_publisher_writes_the_figures_when_they_change_and_nothing_without_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cfg, _, b, clients = two_clusters(REGISTRIES)
    flow = started_flow(cfg, clients)
    pub = SchemaFiguresPublisher(flow, clock_ms=lambda: NOW)
    assert [j.name for j in pub.jobs()] == ["publish schema figures A->B"]
    assert pub.publish() is False and b.records(CHANNEL) == []  # the hook not set: nothing to publish
    latest: list[SchemaSyncFigures | None] = [FIGURES]
    pub.figures = lambda: latest[0]
    assert pub.publish() is True
    assert pub.publish() is False  # unchanged: not written again
    (rec,) = [r for r in b.records(CHANNEL) if record_kind(r.key) == "schemas"]
    assert decode_flow_schemas(rec.key, rec.value) == FlowSchemas("A->B", NOW, FIGURES)
    latest[0] = dataclasses.replace(FIGURES, registered=5)
    b.failing_writes[CHANNEL] = 10**9
    with caplog.at_level(logging.WARNING):
        assert pub.publish() is False
    assert "schema sync figures" in caplog.text
    b.failing_writes[CHANNEL] = 0
    assert pub.publish() is True  # not marked published while unacknowledged: written now
    latest[0] = None
    assert pub.publish() is False
    assert len([r for r in b.records(CHANNEL) if record_kind(r.key) == "schemas"]) == 2


def test_a_flow_without_schema_replication_declares_no_job() -> None:
    cfg, _, _, clients = two_clusters()
    assert not cfg.flow("A", "B").sync_schemas_enabled
    assert SchemaFiguresPublisher(started_flow(cfg, clients), figures=lambda: FIGURES).jobs() == []


# ------------------------------------------------------------------ status


def test_hit_ratio_is_none_before_any_translation() -> None:
    assert hit_ratio(0, 0) is None
    assert hit_ratio(3, 1) == 0.75
    s = SchemaStatus.of(None, [])
    assert (s.ids_translated, s.id_cache_hit_ratio, s.subjects) == (0, None, None)


def _status(b: FakeCluster, cfg: MirrorConfig, clients: FakeClients) -> FlowStatus:
    return flow_status(cfg, cfg.flow("A", "B"), now_ms=NOW, context=ReplicationContext(cfg, clients=clients))


def test_status_shows_schemas_for_a_flow_that_replicates_them(capsys: pytest.CaptureFixture[str]) -> None:
    cfg, a, b, clients = two_clusters(REGISTRIES)
    a.create_topic("orders", 1)
    a.create_topic("payments", 1)
    for topic in (CHANNEL, TOTALS):
        b.create_topic(topic, 1)
    before = _status(b, cfg, clients).schemas  # enabled, nothing published yet
    assert before == SchemaStatus()
    older = FlowSchemas("A->B", NOW - 9000, dataclasses.replace(FIGURES, subjects=1))
    failed = dataclasses.replace(FIGURES, error="subject 'orders-value': incompatible")
    for m in (FlowSchemas("A->B", NOW, failed), older, FlowSchemas("C->B", NOW, FIGURES)):
        b.append(CHANNEL, *encode_flow_schemas(m))  # the newest of A->B counts, whatever the order
    b.append(CHANNEL, b'{"kind":"schemas","flow":"A->B"}', b"junk")  # skipped
    for topic, hits, misses, unknown in (("orders", 1_497_000, 1000, 0), ("payments", 1500, 500, 3)):
        t = TopicTotals(1, 1, 0, 1, schema_hits=hits, schema_misses=misses, schema_unknown=unknown)
        b.append(TOTALS, *encode_totals("A->B", topic, t))
    f = _status(b, cfg, clients)
    assert f.schemas == SchemaStatus(
        subjects=12,
        versions=30,
        registered=4,
        synced_at_ms=NOW - 2000,
        error="subject 'orders-value': incompatible",
        ids_translated=1_500_000,
        id_cache_hits=1_498_500,
        id_cache_misses=1500,
        id_cache_hit_ratio=0.999,
        unknown_ids=3,
    )
    assert dataclasses.asdict(f)["schemas"]["id_cache_hit_ratio"] == 0.999  # status --json
    _print_flow_status(f)
    lines = [line for line in capsys.readouterr().out.splitlines() if "schemas" in line]
    assert lines == [
        "flow A->B: schemas: 12 subjects, 30 versions synced; 1500000 ids translated (cache hit ratio 99.9%, "
        "1500 misses), 3 unknown ids; last sync failed: subject 'orders-value': incompatible"
    ]


def test_status_has_no_schemas_for_a_flow_without_them(capsys: pytest.CaptureFixture[str]) -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    f = _status(b, cfg, clients)
    assert f.schemas is None and dataclasses.asdict(f)["schemas"] is None
    _print_flow_status(f)
    assert "schemas" not in capsys.readouterr().out


# ------------------------------------------------------------------ the service


def _service_config(registries: bool) -> MirrorConfig:
    props = {"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092"}
    if registries:
        props |= {"A.schema.registry.url": "http://a:8081", "B.schema.registry.url": "http://b:8081"}
    return parse_config(props | {"A->B.enabled": "true"})


def _served(store: Store, registries: bool) -> tuple[dict[str, object], dict[str, dict[str, float]]]:
    with TestClient(create_app(store, _service_config(registries))) as c:
        flow = next(r for r in c.get("/api/v1/replications").json() if r["name"] == "A->B")
        text = c.get("/metrics").text
    families = {m.name: {s.name: s.value for s in m.samples} for m in text_string_to_metric_families(text)}
    return flow, families


def _store() -> Store:
    store = Store("B", clock_ms=lambda: NOW)
    hb = Heartbeat("A", "B", NOW - 500)
    assert store.apply("heartbeats", hb.key(), hb.value())
    return store


def test_the_service_serves_a_flows_schema_replication() -> None:
    store = _store()
    assert store.apply("channel", *encode_flow_schemas(FlowSchemas("A->B", NOW - 10, FIGURES)))
    t = TopicTotals(10, 100, 0, NOW, schema_hits=90, schema_misses=10, schema_unknown=2)
    assert store.apply("progress", *encode_totals("A->B", "orders", t))
    flow, families = _served(store, registries=True)
    assert flow["schemas"] == {
        "subjects_synced": 12,
        "versions_synced": 30,
        "versions_registered": 4,
        "last_sync_ms": NOW - 2000,
        "sync_error": None,
        "ids_translated": 100,
        "id_cache_hits": 90,
        "id_cache_misses": 10,
        "id_cache_hit_ratio": 0.9,
        "unknown_ids": 2,
    }
    got = {name: samples[name] for name, samples in families.items() if name.startswith("mirrorspark_schema_")}
    assert got == {
        "mirrorspark_schema_id_translated_count": 100.0,
        "mirrorspark_schema_id_cache_hit_count": 90.0,
        "mirrorspark_schema_id_cache_miss_count": 10.0,
        "mirrorspark_schema_id_unknown_count": 2.0,
        "mirrorspark_schema_subjects_synced": 12.0,
        "mirrorspark_schema_versions_synced": 30.0,
        "mirrorspark_schema_versions_registered_count": 4.0,
        "mirrorspark_schema_sync_failed": 0.0,
        "mirrorspark_schema_sync_timestamp_seconds": (NOW - 2000) / 1000,
    }
    documented = {prometheus_name(m.group, m.name) for m in MIRRORSPARK_METRICS}
    assert set(got) <= documented


def test_the_service_says_nothing_of_schemas_for_a_flow_without_them() -> None:
    store = _store()
    assert store.apply("progress", *encode_totals("A->B", "orders", TopicTotals(10, 100, 0, NOW)))
    flow, families = _served(store, registries=False)
    assert flow["schemas"] is None
    assert not [name for name in families if name.startswith("mirrorspark_schema_")]
    flow, families = _served(store, registries=True)  # enabled, nothing published yet: zero counts, no sync
    assert flow["schemas"] == SchemaReplication().model_dump()
    assert families["mirrorspark_schema_id_translated_count"] == {"mirrorspark_schema_id_translated_count": 0.0}
    assert "mirrorspark_schema_subjects_synced" not in families


def test_the_rest_model_describes_every_schema_field() -> None:
    fields = SchemaReplication.model_fields
    assert all(f.description for f in fields.values()), [n for n, f in fields.items() if not f.description]
