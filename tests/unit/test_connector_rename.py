"""A flow whose connector name has no stored offsets while another name has its source's refuses to start (N3).

And ``mirrorspark offsets source move`` moves them, against in-memory clusters.
"""

from __future__ import annotations

import pytest

from fakes import FakeClients, FakeCluster, FakeGroup, two_clusters
from mirrorspark.client.context import FlowContext, ReplicationContext
from mirrorspark.config.model import MirrorConfig
from mirrorspark.errors import ConfigError, FlowRunningError, SourceConnectorNameError, SourceOffsetsRequestError
from mirrorspark.migration.source_offset_move import move_source_offsets
from mirrorspark.migration.source_offset_tools import FlowSourceOffsets
from mirrorspark.mm2.connect_offsets import (
    default_partition,
    source_offset_connector,
    source_offset_key,
    source_offset_value,
    topic_id_marker_key,
)
from mirrorspark.replication.connector.flow import Flow

pytestmark = pytest.mark.unit

OFFSETS_TOPIC = "mm2-offsets.A.internal"


def started_flow(cfg: MirrorConfig, clients: FakeClients) -> Flow:
    flow = Flow(FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients), cfg.data_path)
    flow.start()
    return flow


def store(b: FakeCluster, topic: str, partition: int, offset: int | None, *, name: str, cluster: str = "A") -> None:
    """Write a source offset (last copied upstream record; ``None``: a tombstone) under connector ``name``."""
    b.create_topic(OFFSETS_TOPIC, 25, {"cleanup.policy": "compact"})
    key = source_offset_key(cluster, topic, partition, connector_name=name)
    value = None if offset is None else source_offset_value(offset)
    b.append(OFFSETS_TOPIC, key, value, partition=default_partition(key, 25))


def renamed(extra: str = "") -> tuple[MirrorConfig, FakeCluster, FakeCluster, FakeClients]:
    cfg, a, b, clients = two_clusters(
        "A.consumer.auto.offset.reset = latest\nA->B.mirrorspark.source.connector.name = mm2-msc\n" + extra
    )
    a.create_topic("orders", 2)
    a.fill("orders", 0, 100)
    a.fill("orders", 1, 100)
    return cfg, a, b, clients


def test_offsets_under_another_name_refuse_the_start_instead_of_skipping_to_the_end() -> None:
    cfg, _, b, clients = renamed()
    store(b, "orders", 0, 39, name="MirrorSourceConnector")
    store(b, "orders", 1, 59, name="MirrorSourceConnector")
    with pytest.raises(SourceConnectorNameError) as e:
        started_flow(cfg, clients)  # before: positions 100 and 100, records 40..99 and 60..99 skipped without a word
    message = str(e.value)
    assert isinstance(e.value, ConfigError) and e.value.code == "CONFIG_SOURCE_CONNECTOR_NAME"
    assert "'mm2-msc'" in message and "'MirrorSourceConnector' (2 partition(s)" in message
    assert "'mm2-offsets.A.internal' on cluster 'B'" in message
    assert "skip every record stored after those offsets (auto.offset.reset=latest)" in message
    assert (
        "mirrorspark offsets source move CONFIG --source A --target B --from-connector MirrorSourceConnector "
        "--to-connector mm2-msc" in message
    )
    assert "A->B.mirrorspark.source.connector.name = MirrorSourceConnector" in message


def test_every_other_name_is_listed_and_earliest_says_it_would_copy_again() -> None:
    cfg, _, b, clients = two_clusters("A->B.mirrorspark.source.connector.name = mm2-msc\n")
    store(b, "orders", 0, 9, name="MirrorSourceConnector")
    store(b, "orders", 1, 9, name="east-to-west")
    with pytest.raises(SourceConnectorNameError) as e:
        started_flow(cfg, clients)
    message = str(e.value)
    assert (
        "'MirrorSourceConnector' (1 partition(s), e.g. orders-0); 'east-to-west' (1 partition(s), e.g. orders-1)"
        in (message)
    )
    assert "copy them all again (auto.offset.reset=earliest)" in message


def test_offsets_under_the_configured_name_start_as_before() -> None:
    cfg, _, b, clients = renamed()
    store(b, "orders", 0, 39, name="MirrorSourceConnector")  # an old name's leftovers do not matter
    store(b, "orders", 0, 49, name="mm2-msc")
    flow = started_flow(cfg, clients)
    assert flow.partitions[("orders", 0)].position == 50
    assert flow.partitions[("orders", 1)].position == 100  # none stored under mm2-msc: latest, as configured


@pytest.mark.parametrize(
    "case",
    ["other-source", "not-replicated", "tombstoned", "topic-id-marker", "nothing-stored"],
)
def test_nothing_else_refuses_a_start(case: str) -> None:
    cfg, _, b, clients = renamed("A->B.topics = orders\n")
    if case == "other-source":
        store(b, "orders", 0, 39, name="MirrorSourceConnector", cluster="C")
    elif case == "not-replicated":
        store(b, "payments", 0, 39, name="MirrorSourceConnector")
    elif case == "tombstoned":
        store(b, "orders", 0, 39, name="MirrorSourceConnector")
        store(b, "orders", 0, None, name="MirrorSourceConnector")
    elif case == "topic-id-marker":
        key = topic_id_marker_key("A", "orders", 0)
        b.create_topic(OFFSETS_TOPIC, 25)
        b.append(OFFSETS_TOPIC, key, b'{"topic_id":"x"}', partition=default_partition(key, 25))
    flow = started_flow(cfg, clients)
    assert flow.partitions[("orders", 0)].position == 100


def test_only_keys_of_the_source_layout_name_a_connector() -> None:
    assert source_offset_connector(source_offset_key("A", "t", 0, connector_name="x")) == "x"
    assert source_offset_connector(b'["MirrorCheckpointConnector",{"partition":0,"topic":"t","group":"g"}]') is None
    assert source_offset_connector(b"not json") is None
    assert source_offset_connector(b'["x",{"cluster":"A","partition":"0","topic":"t"}]') is None


# --------------------------------------------------------------------------- offsets source move


def tools(cfg: MirrorConfig, clients: FakeClients) -> FlowSourceOffsets:
    return FlowSourceOffsets(cfg, source="A", target="B", context=ReplicationContext(cfg, clients=clients))


def offsets_records(b: FakeCluster) -> list[tuple[bytes | None, bytes | None]]:
    return [(r.key, r.value) for p in range(25) for r in b.records(OFFSETS_TOPIC, p)]


def test_move_previews_then_writes_the_same_values_under_the_new_name_and_the_flow_resumes() -> None:
    cfg, _, b, clients = renamed()
    store(b, "orders", 0, 39, name="MirrorSourceConnector")
    store(b, "orders", 1, 59, name="MirrorSourceConnector")
    before = offsets_records(b)
    with tools(cfg, clients) as so:
        plan = move_source_offsets(so, from_connector="MirrorSourceConnector")
    assert offsets_records(b) == before  # a preview writes nothing
    assert not plan.applied and plan.to_connector == "mm2-msc"
    assert [(m.topic, m.partition, m.position, m.value, m.existing) for m in plan.moves] == [
        ("orders", 0, 40, b'{"offset":39}', None),
        ("orders", 1, 60, b'{"offset":59}', None),
    ]
    with tools(cfg, clients) as so:
        assert move_source_offsets(so, from_connector="MirrorSourceConnector", dry_run=False).applied
        again = move_source_offsets(so, from_connector="MirrorSourceConnector", dry_run=False)  # a repeat: no conflict
    assert [m.existing for m in again.moves] == [39, 59]
    written = set(offsets_records(b)) - set(before)
    assert written == {
        (source_offset_key("A", "orders", p, "mm2-msc"), source_offset_value(o)) for p, o in ((0, 39), (1, 59))
    }
    assert set(before) <= set(offsets_records(b))  # the old name's records stay
    flow = started_flow(cfg, clients)
    assert (flow.partitions[("orders", 0)].position, flow.partitions[("orders", 1)].position) == (40, 60)


def test_move_refuses_to_replace_other_offsets_unless_told_to() -> None:
    cfg, _, b, clients = renamed()
    store(b, "orders", 0, 39, name="MirrorSourceConnector")
    store(b, "orders", 0, 9, name="mm2-msc")
    with tools(cfg, clients) as so:
        assert [m.existing for m in move_source_offsets(so, from_connector="MirrorSourceConnector").overwrites] == [9]
        with pytest.raises(
            SourceOffsetsRequestError, match=r"already has source offsets for 1 .*orders-0 at 9.*--overwrite"
        ):
            move_source_offsets(so, from_connector="MirrorSourceConnector", dry_run=False)
        assert started_flow(cfg, clients).partitions[("orders", 0)].position == 10
        move_source_offsets(so, from_connector="MirrorSourceConnector", dry_run=False, overwrite=True)
    assert started_flow(cfg, clients).partitions[("orders", 0)].position == 40


def test_move_of_a_name_without_offsets_names_the_ones_that_have_some() -> None:
    cfg, _, b, clients = renamed()
    store(b, "orders", 0, 39, name="MirrorSourceConnector")
    store(b, "orders", 0, 39, name="MirrorSourceConnector", cluster="C")
    with tools(cfg, clients) as so, pytest.raises(SourceOffsetsRequestError) as e:
        move_source_offsets(so, from_connector="msc", dry_run=False)
    assert "under connector name 'msc'" in str(e.value) and "'MirrorSourceConnector' (1 partition(s))" in str(e.value)
    with tools(cfg, clients) as so, pytest.raises(SourceOffsetsRequestError, match="both 'mm2-msc'"):
        move_source_offsets(so, from_connector="mm2-msc")


@pytest.mark.parametrize("who", ["mirrorspark", "connect-under-the-old-name"])
def test_move_is_refused_while_the_flow_runs(who: str) -> None:
    cfg, _, b, clients = renamed()
    store(b, "orders", 0, 39, name="MirrorSourceConnector")
    if who == "mirrorspark":
        b.groups["mirrorspark-lease-A->B"] = FakeGroup(members=1)
    else:
        b.create_topic("mm2-status.A.internal", 5)
        b.append(
            "mm2-status.A.internal",
            b"status-connector-MirrorSourceConnector",
            b'{"state":"RUNNING","worker_id":"w:8083"}',
        )
    before = offsets_records(b)
    with tools(cfg, clients) as so:
        assert move_source_offsets(so, from_connector="MirrorSourceConnector").running is not None  # a preview warns
        with pytest.raises(FlowRunningError, match="nothing was written"):
            move_source_offsets(so, from_connector="MirrorSourceConnector", dry_run=False)
    assert offsets_records(b) == before


def test_heartbeats_offsets_of_another_connector_of_the_source_refuse_nothing() -> None:
    """Every connector of a source copies its heartbeats: a second connector's start is no rename."""
    cfg, _, b, clients = renamed()
    store(b, "heartbeats", 0, 5, name="MirrorSourceConnector")
    store(b, "B.heartbeats", 0, 5, name="MirrorSourceConnector")
    flow = started_flow(cfg, clients)
    assert flow.partitions[("orders", 0)].position == 100


def test_move_leaves_the_topics_the_flow_does_not_replicate() -> None:
    """Another connector sharing the offsets topic keeps its offsets: only the flow's topics are moved."""
    cfg, _, b, clients = renamed("A->B.topics = orders\n")
    store(b, "orders", 0, 39, name="MirrorSourceConnector")
    store(b, "payments", 0, 7, name="MirrorSourceConnector")
    with tools(cfg, clients) as so:
        assert [
            (m.topic, m.partition) for m in move_source_offsets(so, from_connector="MirrorSourceConnector").moves
        ] == [("orders", 0)]
        assert [
            m.topic for m in move_source_offsets(so, from_connector="MirrorSourceConnector", topic="payments").moves
        ] == ["payments"]
