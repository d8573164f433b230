"""Exactly-once hand-over from MM2 or Connect: transactional ids as Connect derives them, and the ids fenced (N2).

``engine-audit-2.md`` N2: the ids were always ``<source>-mm2-MirrorSourceConnector-<i>`` and the fence count knew
only ``tasks.max`` and mirrorspark's own reports, so the tasks of MM2's connectors run on a Connect cluster
(``<group.id>-<connector>-<i>``) or of an MM2 with a larger ``tasks.max`` were never fenced.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_connect_configs import SRC, _folder, body
from test_flow_gaps import report_copied, started_flow, store_offset

from fakes import FakeCluster, two_clusters
from mirrorspark.client.connect_tasks import previous_tasks_to_fence, transactional_id
from mirrorspark.config.parse import load_config
from mirrorspark.errors import ConfigError
from mirrorspark.mm2.connect_configs import ConnectTaskCounts
from mirrorspark.replication.worker.fencing import fence_flow

pytestmark = pytest.mark.unit

EOS = "B.exactly.once.source.support = enabled\n"

# --------------------------------------------------------------------------- the ids


def test_mm2_dedicated_mode_ids_are_source_mm2_and_mirror_source_connector() -> None:
    cfg, *_ = two_clusters(EOS)
    flow = cfg.flow("A", "B")
    assert (flow.connect_group_id, flow.config_storage_topic) == ("A-mm2", "mm2-configs.A.internal")
    assert transactional_id(flow, 0) == "A-mm2-MirrorSourceConnector-0"


def test_the_target_workers_group_id_and_the_connector_name_make_the_ids() -> None:
    """MM2's dedicated driver takes ``group.id`` from the target's cluster keys too (``<T>.group.id``)."""
    cfg, *_ = two_clusters(EOS + "B.group.id = dc2-mm2\nA->B.mirrorspark.source.connector.name = msc\n")
    assert transactional_id(cfg.flow("A", "B"), 3) == "dc2-mm2-msc-3"


def test_connector_configs_with_their_workers_config_give_connects_own_ids(tmp_path: Path) -> None:
    worker = (
        "bootstrap.servers = b:9092\ngroup.id = connect-cluster\noffset.storage.topic = connect-offsets\n"
        "config.storage.topic = connect-configs\nexactly.once.source.support = enabled\n"
    )
    cfg = load_config(_folder(tmp_path, worker, body("mm2-msc", SRC)), env={}).flow("a", "b")
    assert (cfg.connect_group_id, cfg.config_storage_topic) == ("connect-cluster", "connect-configs")
    assert transactional_id(cfg, 0) == "connect-cluster-mm2-msc-0"


# --------------------------------------------------------------------------- the previous task count


def _config_record(key: str, value: object | None) -> tuple[bytes, bytes | None]:
    return key.encode(), None if value is None else json.dumps(value).encode()


def test_connects_config_topic_gives_the_most_task_indexes_any_record_names() -> None:
    counts = ConnectTaskCounts("msc")
    assert counts.task_count is None
    for key, value in [
        ("connector-msc", {"properties": {"tasks.max": "8"}}),
        ("task-msc-0", {"properties": {}}),
        ("task-msc-1", {"properties": {}}),
        ("commit-msc", {"tasks": 2}),
        ("task-count-record-msc", {"task-count": 2}),
        ("task-msc-2", {"properties": {}}),  # a later generation of 3 tasks, not yet committed
        ("task-msc-x-7", {"properties": {}}),  # connector 'msc-x', not 'msc'
        ("commit-msc-x", {"tasks": 9}),
        ("task-count-record-other", {"task-count": 9}),
        ("session-key", {"key": "..."}),
    ]:
        counts.add(*_config_record(key, value))
    assert (counts.task_configs, counts.committed, counts.fenced, counts.task_count) == (3, 2, 2, 3)


def test_a_larger_previous_generation_counts_and_malformed_records_are_skipped() -> None:
    counts = ConnectTaskCounts("MirrorSourceConnector")
    counts.add(*_config_record("commit-MirrorSourceConnector", {"schema": {}, "payload": {"tasks": 6}}))  # envelope
    counts.add(*_config_record("commit-MirrorSourceConnector", None))  # a tombstone keeps what was read
    counts.add(b"task-count-record-MirrorSourceConnector", b"not json")
    counts.add(b"\xff\xfe", b"{}")
    counts.add(*_config_record("task-count-record-MirrorSourceConnector", {"task-count": True}))
    assert counts.task_count == 6


def test_a_known_previous_count_or_the_configured_maximum_is_fenced() -> None:
    cfg, *_ = two_clusters(EOS)
    flow = cfg.flow("A", "B")
    assert previous_tasks_to_fence(flow, 5, foreign=True) == 5
    assert previous_tasks_to_fence(flow, None, foreign=False) == 0  # only mirrorspark wrote: its reports suffice
    cfg, *_ = two_clusters(EOS + "A->B.mirrorspark.exactly.once.fence.tasks.max = 12\n")
    assert previous_tasks_to_fence(cfg.flow("A", "B"), None, foreign=True) == 12


def test_a_hand_over_from_a_replicator_of_unknown_task_count_is_refused_with_the_fix() -> None:
    cfg, *_ = two_clusters(EOS)
    with pytest.raises(ConfigError, match=r"mm2-configs\.A\.internal has no record.*fence\.tasks\.max") as e:
        previous_tasks_to_fence(cfg.flow("A", "B"), None, foreign=True)
    assert "A-mm2-MirrorSourceConnector-<task>" in e.value.message


# --------------------------------------------------------------------------- a flow's start, on the fakes


def _previous_mm2(b: FakeCluster, tasks: int) -> None:
    """What an MM2 that ran ``tasks`` source tasks left in its config topic on the target."""
    b.create_topic("mm2-configs.A.internal", 1, {"cleanup.policy": "compact"})
    for i in range(tasks):
        b.append("mm2-configs.A.internal", *_config_record(f"task-MirrorSourceConnector-{i}", {"properties": {}}))
    b.append("mm2-configs.A.internal", *_config_record("commit-MirrorSourceConnector", {"tasks": tasks}))


def test_a_flow_fences_every_task_the_previous_mm2_ran_though_its_tasks_max_is_lower() -> None:
    """MM2 ran 4 tasks; mirrorspark runs ``tasks.max = 1``: ids 0..3 are fenced before its first generation."""
    cfg, a, b, clients = two_clusters(EOS)
    a.create_topic("orders", 4)
    store_offset(b, "orders", 3, 9)
    _previous_mm2(b, 4)
    flow = started_flow(cfg, clients)
    assert (flow.previous_tasks, flow.fence_count) == (4, 4)
    fence_flow(flow, flow.fence_count)
    assert sorted(b.inits) == [f"A-mm2-MirrorSourceConnector-{i}" for i in range(4)]


def test_foreign_offsets_without_a_known_task_count_refuse_the_start() -> None:
    cfg, a, b, clients = two_clusters(EOS)
    a.create_topic("orders", 1)
    store_offset(b, "orders", 0, 9)  # written by no mirrorspark task: no report names orders-0
    with pytest.raises(ConfigError, match="exactly-once hand-over refused"):
        started_flow(cfg, clients)


def test_offsets_the_flows_own_reports_account_for_need_no_previous_count() -> None:
    cfg, a, b, clients = two_clusters(EOS)
    a.create_topic("orders", 1)
    a.fill("orders", 0, 10)
    first = started_flow(cfg, clients)
    first.close()
    store_offset(b, "orders", 0, 9)
    report_copied(b, first.progress_topic, "orders", 0, 10)
    flow = started_flow(cfg, clients)
    assert (flow.previous_tasks, flow.fence_count) == (0, 1)


def test_an_at_least_once_flow_reads_no_config_topic_and_refuses_nothing() -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    store_offset(b, "orders", 0, 9)
    assert started_flow(cfg, clients).previous_tasks == 0
