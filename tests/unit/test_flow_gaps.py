"""A flow finds every gap and never acts on an impossible stored offset, against in-memory clusters."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from fakes import FakeClients, FakeCluster, two_clusters
from mirrorspark.client.context import FlowContext
from mirrorspark.config.model import MirrorConfig
from mirrorspark.core.gaps import GapEvent, KnownTopicId, decode_ledger_record
from mirrorspark.core.progress_records import PartitionReport, decode_report, encode_report
from mirrorspark.mm2.connect_offsets import (
    default_partition,
    source_offset_key,
    source_offset_value,
    topic_id_marker_key,
    topic_id_marker_value,
)
from mirrorspark.mm2.translation import CopiedSegment
from mirrorspark.replication.connector.flow import Flow
from mirrorspark.replication.driver import Replicator

pytestmark = pytest.mark.unit

OFFSETS_TOPIC = "mm2-offsets.A.internal"


def started_flow(cfg: MirrorConfig, clients: FakeClients) -> Flow:
    flow = Flow(FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients), cfg.data_path)
    flow.start()
    return flow


def store_offset(b: FakeCluster, topic: str, partition: int, offset: int) -> None:
    """Write a MirrorSourceConnector offset (last copied upstream record) as MM2 would."""
    b.create_topic(OFFSETS_TOPIC, 25, {"cleanup.policy": "compact"})
    key = source_offset_key("A", topic, partition)
    b.append(OFFSETS_TOPIC, key, source_offset_value(offset), partition=default_partition(key, 25))


def ledger(b: FakeCluster) -> list[GapEvent | KnownTopicId | None]:
    return [decode_ledger_record(r.key, r.value) for r in b.records("mm2-gaps.A.internal")]


def ledger_gaps(b: FakeCluster) -> list[GapEvent]:
    return [r for r in ledger(b) if isinstance(r, GapEvent)]


def test_records_deleted_before_they_were_copied_are_a_gap_in_the_ledger() -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 1000)
    store_offset(b, "orders", 0, 99)  # next offset to copy: 100
    a.delete_records("orders", 0, 600)  # kafka-delete-records before 100..599 were copied
    flow = started_flow(cfg, clients)
    assert flow.partitions[("orders", 0)].position == 600  # resumes at the log start (continue)
    [gap] = flow.gaps
    assert (gap.flow, gap.topic, gap.partition, gap.reason, gap.first_lost, gap.last_lost) == (
        "A->B",
        "orders",
        0,
        "deleted",
        100,
        599,
    )
    assert ledger_gaps(b) == [gap]  # kept on the target: survives restarts
    assert KnownTopicId("A->B", "orders", a.topics["orders"].topic_id) in ledger(b)


def test_latest_applies_only_to_partitions_without_a_stored_offset() -> None:
    cfg, a, b, clients = two_clusters("A.consumer.auto.offset.reset = latest\n")
    a.create_topic("orders", 2)
    a.fill("orders", 0, 100)
    a.fill("orders", 1, 100)
    store_offset(b, "orders", 0, 9)
    a.delete_records("orders", 0, 50)
    flow = started_flow(cfg, clients)
    # partition 0 has a stored offset below the log start: a gap, resumed at the log start, not at the end
    assert flow.partitions[("orders", 0)].position == 50
    assert [(g.partition, g.first_lost, g.last_lost) for g in flow.gaps] == [(0, 10, 49)]
    assert flow.partitions[("orders", 1)].position == 100  # no stored offset at all: latest


def test_a_stored_offset_past_the_end_is_skipped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    a.create_topic("fresh", 1)
    a.fill("orders", 0, 100)
    a.fill("fresh", 0, 100)
    store_offset(b, "orders", 0, 19)
    store_offset(b, "orders", 0, 5_000_000)  # foreign or corrupt: newest, but past the end
    store_offset(b, "fresh", 0, 999)  # a new topic's only stored offset points past its end
    flow = started_flow(cfg, clients)
    assert flow.partitions[("orders", 0)].position == 20  # the last valid one
    assert flow.partitions[("fresh", 0)].position == 0  # none valid: the log start, all 100 get copied
    assert flow.invalid_offsets == 2
    assert flow.gaps == []
    assert "past the partition's end offset 100" in caplog.text


def test_a_topic_recreated_while_stopped_is_a_gap_and_starts_from_its_beginning() -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 3)
    started_flow(cfg, clients).close()  # remembers the topic's id
    old_id = a.topics["orders"].topic_id
    for p in range(3):
        store_offset(b, "orders", p, 9)
    a.recreate_topic("orders", 1)  # fewer partitions
    a.fill("orders", 0, 50)
    flow = started_flow(cfg, clients)
    assert flow.order == [("orders", 0)]  # partitions 1 and 2 no longer exist: unplanned
    assert flow.partitions[("orders", 0)].position == 0
    assert {(g.partition, g.reason, g.old_topic_id, g.new_topic_id) for g in flow.gaps} == {
        (p, "recreated", old_id, a.topics["orders"].topic_id) for p in range(3)
    }
    assert [t.partitions[0].start for t in flow.task_specs(1, ("127.0.0.1", 1, "token"))] == [0]


def test_a_topic_recreated_while_running_is_found_at_the_next_refresh() -> None:
    cfg, a, _, clients = two_clusters()
    a.create_topic("orders", 2)
    a.fill("orders", 0, 100)
    flow = started_flow(cfg, clients)
    flow.list_end_offsets()
    flow.partitions[("orders", 0)].position = 40  # 40..99 not copied yet
    a.recreate_topic("orders", 1)
    a.fill("orders", 0, 200)  # grew past the old position: only the topic id tells
    flow.refresh()
    assert flow.order == [("orders", 0)]
    assert flow.partitions[("orders", 0)].position == 0
    assert [(g.partition, g.reason, g.first_lost, g.last_lost) for g in flow.gaps] == [
        (0, "recreated", 40, 99),
        (1, "recreated", 0, None),  # open-ended: the old topic's records from its position on
    ]


def test_a_truncated_source_log_is_a_gap() -> None:
    cfg, a, _, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 100)
    flow = started_flow(cfg, clients)
    flow.partitions[("orders", 0)].position = 100
    del a.topics["orders"].partitions[0][80:]  # unclean leader election: the new leader ends at 80
    flow.list_end_offsets()
    assert flow.partitions[("orders", 0)].position == 80
    assert [(g.reason, g.first_lost, g.last_lost) for g in flow.gaps] == [("truncated", 80, 99)]


def report_copied(b: FakeCluster, progress_topic: str, topic: str, partition: int, next_offset: int) -> None:
    """Write the flow's own progress report for a partition copied up to ``next_offset``, as a copy task does."""
    segment = CopiedSegment(upstream_start=0, downstream_start=0, count=next_offset)
    report = PartitionReport("A->B", topic, partition, 0, 0, next_offset, next_offset, 0, 0, 0, 0, 0, (segment,), 1)
    b.append(progress_topic, *encode_report(report))


def test_a_source_log_truncated_while_the_flow_was_stopped_is_a_gap_at_start() -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 100)
    first = started_flow(cfg, clients)
    first.close()
    store_offset(b, "orders", 0, 99)  # the flow copied all 100 ...
    report_copied(b, first.progress_topic, "orders", 0, 100)  # ... and said so on its progress channel
    del a.topics["orders"].partitions[0][50:]  # unclean leader election while stopped: the new leader ends at 50
    flow = started_flow(cfg, clients)
    assert flow.partitions[("orders", 0)].position == 50  # resumes at the new end: no new record skipped
    assert [(g.reason, g.first_lost, g.last_lost) for g in flow.gaps] == [("truncated", 50, 99)]
    assert ledger_gaps(b) == flow.gaps
    assert flow.invalid_offsets == 0


def test_a_stored_offset_past_what_the_flow_reached_is_still_foreign() -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 100)
    first = started_flow(cfg, clients)
    first.close()
    store_offset(b, "orders", 0, 59)
    report_copied(b, first.progress_topic, "orders", 0, 60)
    store_offset(b, "orders", 0, 5_000_000)  # foreign or corrupt: past the end and past what the flow reached
    flow = started_flow(cfg, clients)
    assert flow.partitions[("orders", 0)].position == 60
    assert (flow.gaps, flow.invalid_offsets) == ([], 1)


def test_a_topic_recreated_after_a_foreign_offset_names_its_gap_from_what_the_flow_reached() -> None:
    """faults-random seed 3: a foreign offset 5,000,000 was written, then the topic was re-created while no run
    could look. The re-creation's gap began at 5,000,001, the foreign offset: records 60..99 of the old topic,
    never copied, were in no gap. It begins where the flow's own reports reached."""
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 100)
    first = started_flow(cfg, clients)
    first.close()
    store_offset(b, "orders", 0, 59)
    report_copied(b, first.progress_topic, "orders", 0, 60)
    store_offset(b, "orders", 0, 5_000_000)  # foreign or corrupt
    a.recreate_topic("orders", 1)
    flow = started_flow(cfg, clients)
    assert [(g.reason, g.first_lost, g.last_lost) for g in flow.gaps] == [("recreated", 60, None)]
    assert flow.partitions[("orders", 0)].position == 0


def test_a_task_out_of_range_is_checked_by_the_driver() -> None:
    cfg, a, _, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 100)
    flow = started_flow(cfg, clients)
    a.delete_records("orders", 0, 70)
    assert [(g.reason, g.first_lost, g.last_lost) for g in flow.check_positions([("orders", 0)])] == [
        ("deleted", 0, 69)
    ]
    assert flow.partitions[("orders", 0)].position == 70


def test_on_gap_stop_halts_the_flow_with_a_clear_message() -> None:
    cfg, a, b, clients = two_clusters("mirrorspark.on.gap = stop\n")
    a.create_topic("orders", 1)
    a.fill("orders", 0, 100)
    store_offset(b, "orders", 0, 9)
    a.delete_records("orders", 0, 30)
    flow = started_flow(cfg, clients)
    assert flow.halted is not None
    for part in ("A->B", "orders-0", "offsets 10..29", "mirrorspark.on.gap"):
        assert part in flow.halted
    assert flow.partitions[("orders", 0)].position == 10  # nothing moved on
    assert flow.task_specs(1, ("127.0.0.1", 1, "token")) == []
    assert len(ledger_gaps(b)) == 1


def test_a_recreated_topic_under_stop_is_found_again_after_a_restart() -> None:
    cfg, a, b, clients = two_clusters("mirrorspark.on.gap = stop\n")
    a.create_topic("orders", 1)
    started_flow(cfg, clients).close()
    a.recreate_topic("orders", 1)
    store_offset(b, "orders", 0, 9)
    assert started_flow(cfg, clients).halted is not None
    assert started_flow(cfg, clients).halted is not None  # the new id was not recorded


def test_flow_stats_count_gaps_and_invalid_offsets() -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 2)
    a.fill("orders", 0, 100)
    store_offset(b, "orders", 0, 9)
    store_offset(b, "orders", 1, 77)  # partition 1 is empty
    a.delete_records("orders", 0, 30)
    r = Replicator(cfg, clients=clients)
    r.flows[0].start()
    [stats] = r.stats()
    assert (stats.gaps, stats.invalid_offsets) == (1, 1)
    r.flows[0].close()


# ------------------------------------------------------------------ a lease take-over re-reads mm2-offsets (F1)


def test_a_take_over_does_not_bring_back_a_foreign_offset_skipped_at_start() -> None:
    """engine-audit F1, scenario A: a valid stored offset 19, then a foreign 5,000,000 on a 100-record partition.

    Start resumes at 20 (the foreign one skipped); the take-over's re-read of mm2-offsets must not move
    the position to 5,000,001, whose out-of-range error would skip 20..99 as a 'truncated' gap."""
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 100)
    store_offset(b, "orders", 0, 19)
    store_offset(b, "orders", 0, 5_000_000)
    flow = started_flow(cfg, clients)
    assert flow.partitions[("orders", 0)].position == 20 and flow.invalid_offsets == 1
    flow.reload_positions()  # the first take-over of the lease
    assert flow.partitions[("orders", 0)].position == 20


def test_a_take_over_does_not_bring_back_the_old_offset_of_a_recreated_topic() -> None:
    """engine-audit F1, scenario B: a topic re-created while stopped starts at its log start, and stays there."""
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    started_flow(cfg, clients).close()  # remembers the topic's id
    store_offset(b, "orders", 0, 9)
    a.recreate_topic("orders", 1)
    a.fill("orders", 0, 50)
    flow = started_flow(cfg, clients)
    assert flow.partitions[("orders", 0)].position == 0 and [g.reason for g in flow.gaps] == ["recreated"]
    flow.reload_positions()
    assert flow.partitions[("orders", 0)].position == 0


def test_a_take_over_follows_what_another_instance_committed_since_start() -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 100)
    store_offset(b, "orders", 0, 19)
    flow = started_flow(cfg, clients)
    assert flow.partitions[("orders", 0)].position == 20
    store_offset(b, "orders", 0, 59)  # the holder's copy tasks committed on
    flow.reload_positions()
    assert flow.partitions[("orders", 0)].position == 60
    store_offset(b, "orders", 0, 7_000_000)  # a foreign record written since: never acted on
    flow.reload_positions()
    assert flow.partitions[("orders", 0)].position == 60 and flow.invalid_offsets == 1


def test_a_recreated_topics_reset_position_is_not_moved_by_the_running_generations_reports() -> None:
    """engine-audit F2: reports of the generation that copied the old topic never move the new one's position.

    Before, a pending report (next offset 150, of the old topic) moved the re-created topic's position
    from 0 back to 150, and the next generation never copied its records 0..149.
    """
    cfg, a, _, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 100)
    flow = started_flow(cfg, clients)
    flow.task_specs(1, ("127.0.0.1", 1, "token"))  # generation 1 copies the old topic
    a.recreate_topic("orders", 1)
    a.fill("orders", 0, 200)
    flow.refresh()
    assert flow.partitions[("orders", 0)].position == 0
    late = PartitionReport("A->B", "orders", 0, 0, 1, 150, 150, 0, 0, 0, 0, 0, (), 1)
    flow.apply_report(late, generation=1)  # still running: its last reports arrive when it stops
    assert flow.partitions[("orders", 0)].position == 0
    fresh = PartitionReport("A->B", "orders", 0, 0, 2, 30, 30, 0, 0, 0, 0, 0, (), 1)
    flow.apply_report(fresh, generation=2)  # the generation started on the re-created topic
    assert flow.partitions[("orders", 0)].position == 30


def test_a_late_report_of_a_recreated_topics_old_incarnation_changes_nothing() -> None:
    """engine-audit F2: reports carry the source topic's id (KIP-516); the old incarnation's are dropped entirely.

    Before, such a report (even of a generation that moves positions, or read at start) still raised
    the position reached and added its copied segments to translation: checkpoints of the new topic
    translated through the old topic's copies, and a foreign stored offset could pass as the flow's own.
    """
    cfg, a, _, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 100)
    flow = started_flow(cfg, clients)
    [spec] = flow.task_specs(1, ("127.0.0.1", 1, "token"))
    old_id = spec.partitions[0].topic_id
    assert old_id == a.topics["orders"].topic_id  # the task knows which incarnation it copies
    seen = PartitionReport("A->B", "orders", 0, 0, 1, 50, 50, 0, 0, 0, 0, 0, (CopiedSegment(0, 0, 50),), 1)
    flow.apply_report(replace(seen, topic_id=old_id), generation=1)
    a.recreate_topic("orders", 1)
    a.fill("orders", 0, 200)
    flow.refresh()
    assert flow.partitions[("orders", 0)].position == 0 and flow.copied.segments("orders", 0) == ()
    late = PartitionReport("A->B", "orders", 0, 0, 2, 150, 100, 0, 0, 0, 0, 0, (CopiedSegment(50, 50, 100),), 1)
    for generation, segments_only in ((None, False), (2, False), (None, True)):
        assert not flow.apply_report(replace(late, topic_id=old_id), generation=generation, segments_only=segments_only)
    p = flow.partitions[("orders", 0)]
    assert (p.position, p.records) == (0, 0) and flow.copied.segments("orders", 0) == ()
    assert flow.positions._reached.get(("orders", 0), -1) < 150
    [new_spec] = flow.task_specs(2, ("127.0.0.1", 1, "token"))
    new_id = new_spec.partitions[0].topic_id
    assert new_id == a.topics["orders"].topic_id != old_id
    fresh = PartitionReport("A->B", "orders", 0, 0, 2, 30, 30, 0, 0, 0, 0, 0, (CopiedSegment(0, 100, 30),), 1)
    assert flow.apply_report(replace(fresh, topic_id=new_id), generation=2)
    assert flow.partitions[("orders", 0)].position == 30 and flow.copied.segments("orders", 0) != ()


def test_reports_without_a_topic_id_still_move_positions() -> None:
    """Progress records written before reports carried a topic id are read as before."""
    cfg, a, _, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 100)
    flow = started_flow(cfg, clients)
    flow.task_specs(1, ("127.0.0.1", 1, "token"))
    old = PartitionReport("A->B", "orders", 0, 0, 1, 40, 40, 0, 0, 0, 0, 0, (), 1)
    key, value = encode_report(old)
    doc = json.loads(value)
    del doc["topic_id"]
    back = decode_report(key, json.dumps(doc).encode())
    assert back.topic_id is None and flow.apply_report(back, generation=1)
    assert flow.partitions[("orders", 0)].position == 40


# ------------------------------------------------------------------ a topic deleted from the source


def test_a_topic_deleted_from_the_source_is_a_gap_for_what_it_had_not_copied() -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 100)
    flow = started_flow(cfg, clients)
    flow.list_end_offsets()
    flow.partitions[("orders", 0)].position = 40  # 40..99 not copied yet
    a.delete_topic("orders")  # seen by a refresh before it is created again (if ever)
    flow.refresh()
    assert flow.order == []
    [gap] = flow.gaps
    assert (gap.topic, gap.partition, gap.reason, gap.first_lost, gap.last_lost) == ("orders", 0, "deleted", 40, 99)
    assert ledger_gaps(b) == [gap]
    a.create_topic("orders", 1)  # created again: a new topic, copied from its start
    a.fill("orders", 0, 10)
    flow.refresh()
    assert flow.partitions[("orders", 0)].position == 0


def test_a_topic_missing_from_one_listing_is_not_taken_for_deleted() -> None:
    cfg, a, _, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 100)
    flow = started_flow(cfg, clients)
    flow.list_end_offsets()
    flow.partitions[("orders", 0)].position = 40
    a.metadata_errors.add("orders")  # e.g. LEADER_NOT_AVAILABLE in the Metadata answer: still there
    flow.refresh()
    assert flow.order == [("orders", 0)]
    assert flow.partitions[("orders", 0)].position == 40
    assert flow.gaps == []


def test_a_recreated_topics_new_id_is_recorded_only_once_its_new_starts_are_committed() -> None:
    """Until a task committed the new topic's start, mm2-offsets holds the old topic's offset: a restart must
    find the topic re-created again (a gap, from the log start), never resume the new topic at the old offset."""
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 100)
    store_offset(b, "orders", 0, 79)
    flow = started_flow(cfg, clients)
    old_id = a.topics["orders"].topic_id
    a.recreate_topic("orders", 1)
    a.fill("orders", 0, 150)  # refilled past the old stored offset
    flow.refresh()
    assert flow.partitions[("orders", 0)].position == 0
    assert [r.topic_id for r in ledger(b) if isinstance(r, KnownTopicId)] == [old_id]  # not yet the new one
    restarted = started_flow(cfg, clients)  # killed before any task committed the new start
    assert restarted.partitions[("orders", 0)].position == 0
    assert [g.reason for g in restarted.gaps] == ["recreated"]
    new_id = a.topics["orders"].topic_id
    report = PartitionReport("A->B", "orders", 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, (), 1, topic_id=new_id)
    restarted.apply_report(report, generation=None)  # its new start committed (a task's first commit)
    restarted.refresh()
    assert [r.topic_id for r in ledger(b) if isinstance(r, KnownTopicId)] == [old_id, new_id]


def test_partitions_added_and_gone_while_the_flow_could_not_look_are_in_the_recreated_gap() -> None:
    """Partitions added to a topic while the flow was blind, then the topic re-created with as many: the old
    topic's records of those partitions went unseen (faults-random seed 7): a gap from offset 0 names them."""
    cfg, a, _, clients = two_clusters()
    a.create_topic("orders", 2)
    flow = started_flow(cfg, clients)
    a.recreate_topic("orders", 4)  # the old topic grew to 4 partitions unseen, then was re-created
    flow.refresh()
    gaps = sorted((g.partition, g.reason, g.first_lost, g.last_lost) for g in flow.gaps)
    assert gaps == [(0, "recreated", 0, None), (1, "recreated", 0, None), (2, "recreated", 0, None),
                    (3, "recreated", 0, None)]  # fmt: skip
    assert sorted(k[1] for k in flow.order) == [0, 1, 2, 3]


def test_a_recreated_topic_whose_first_records_are_gone_is_a_gap_of_the_new_topic() -> None:
    """Found re-created at start while its new records below the log start were already deleted (faults-random
    seed 11 in CI: no run copied between the re-creation and a deleteRecords): those are a gap too."""
    cfg, a, _, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 100)
    started_flow(cfg, clients).close()
    a.recreate_topic("orders", 1)
    a.fill("orders", 0, 150)
    a.delete_records("orders", 0, 120)
    flow = started_flow(cfg, clients)
    assert flow.partitions[("orders", 0)].position == 120
    assert [(g.reason, g.first_lost, g.last_lost) for g in flow.gaps if g.reason == "deleted"] == [("deleted", 0, 119)]


def test_a_take_over_never_moves_a_restarted_partition_to_the_old_topics_offsets() -> None:
    """A lease taken back before a re-created topic's new start was committed: mm2-offsets still holds the old
    topic's offsets (a foreign record written since makes them look new); the reload must take none of them
    (faults-random seed 4: position 994 from the old topic's 993, the new topic's 0..993 lost without a gap)."""
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 2000)
    flow = started_flow(cfg, clients)
    for offset in (992, 993, 1500):
        store_offset(b, "orders", 0, offset)  # the old topic's commits
    flow.reload_positions()
    a.recreate_topic("orders", 1)
    a.fill("orders", 0, 1000)
    flow.refresh()
    assert flow.partitions[("orders", 0)].position == 0 and flow.partitions[("orders", 0)].restarted
    store_offset(b, "orders", 0, 5_000_000)  # a foreign record
    flow.reload_positions()  # the lease was lost to a cut and taken back
    assert flow.partitions[("orders", 0)].position == 0


def test_a_new_start_reported_by_an_earlier_generation_still_ends_the_restart() -> None:
    """The first commit of a re-created topic's partition may be reported after the next generation started
    (an assignment change): that generation's tasks must adopt the new topic's stored offsets, not start over."""
    cfg, a, _, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 100)
    flow = started_flow(cfg, clients)
    a.recreate_topic("orders", 1)
    a.fill("orders", 0, 150)
    flow.refresh()
    [spec] = flow.task_specs(1, ("127.0.0.1", 1, "token"))
    assert spec.partitions[0].restarted
    [spec] = flow.task_specs(1, ("127.0.0.1", 1, "token"))  # generation 2 starts before generation 1 reported
    new_id = spec.partitions[0].topic_id
    late = PartitionReport("A->B", "orders", 0, 0, 1, 40, 40, 0, 0, 0, 0, 0, (), 1, topic_id=new_id)
    flow.apply_report(late, generation=2)
    assert not flow.partitions[("orders", 0)].restarted
    [spec] = flow.task_specs(1, ("127.0.0.1", 1, "token"))
    assert not spec.partitions[0].restarted  # an exactly-once task reads its stored offset 39 and resumes at 40


def test_a_run_ended_after_the_new_starts_were_committed_resumes_the_new_topic() -> None:
    """Killed after a re-created topic's new starts were committed and reported but before its new id was
    recorded: the next run resumes from the new topic's stored offsets, and a range deleted meanwhile is a gap
    of the new topic (faults-random seed 11: it was started over, those records lost without a gap)."""
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 2)
    a.fill("orders", 0, 100)
    a.fill("orders", 1, 100)
    first = started_flow(cfg, clients)
    old_id = a.topics["orders"].topic_id
    a.recreate_topic("orders", 2)
    a.fill("orders", 0, 150)
    a.fill("orders", 1, 150)
    first.refresh()
    new_id = a.topics["orders"].topic_id
    for partition, copied in ((0, 40), (1, 60)):
        store_offset(b, "orders", partition, copied - 1)  # the new topic's tasks committed ...
        report = PartitionReport("A->B", "orders", partition, 0, 1, copied, copied, 0, 0, 0, 0, 0, (), 1)
        b.append(first.progress_topic, *encode_report(replace(report, topic_id=new_id)))  # ... and reported
    first.close()  # killed before a refresh recorded the new id
    assert [r.topic_id for r in ledger(b) if isinstance(r, KnownTopicId)] == [old_id]
    a.delete_records("orders", 0, 120)  # kafka-delete-records while stopped
    flow = started_flow(cfg, clients)
    assert flow.partitions[("orders", 0)].position == 120 and flow.partitions[("orders", 1)].position == 60
    assert [(g.reason, g.partition, g.first_lost, g.last_lost) for g in flow.gaps] == [("deleted", 0, 40, 119)]
    assert [r.topic_id for r in ledger(b) if isinstance(r, KnownTopicId)] == [old_id, new_id]
    assert not any(p.restarted for p in flow.partitions.values())


def test_a_run_ended_after_some_new_starts_were_committed_resumes_those_partitions_only() -> None:
    """Killed after partition 0 of a re-created topic committed its new start and partition 1 had not: the next
    run resumes partition 0 from the new topic's stored offset and starts partition 1 over at its log start
    (CI's seed 11: the whole topic was started over, exactly-once copied partition 0's records twice)."""
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 2)
    a.fill("orders", 0, 100)
    a.fill("orders", 1, 100)
    first = started_flow(cfg, clients)
    store_offset(b, "orders", 1, 79)  # the old topic's last commit of partition 1
    old_id = a.topics["orders"].topic_id
    a.recreate_topic("orders", 2)
    a.fill("orders", 0, 150)
    a.fill("orders", 1, 150)
    first.refresh()
    gaps_before = len(ledger_gaps(b))
    new_id = a.topics["orders"].topic_id
    store_offset(b, "orders", 0, 39)  # partition 0's task committed the new topic's 0..39 ...
    report = PartitionReport("A->B", "orders", 0, 0, 1, 40, 40, 0, 0, 0, 0, 0, (), 1)
    b.append(first.progress_topic, *encode_report(replace(report, topic_id=new_id)))  # ... and reported
    first.close()  # killed before partition 1's task committed its new start
    flow = started_flow(cfg, clients)
    p0, p1 = flow.partitions[("orders", 0)], flow.partitions[("orders", 1)]
    assert (p0.position, p0.restarted) == (40, False)
    assert (p1.position, p1.restarted) == (0, True)
    # partition 0's new records are not a gap again; partition 1's old records after 79 are, as before
    new_gaps = ledger_gaps(b)[gaps_before:]
    assert [(g.partition, g.first_lost) for g in new_gaps] == [(1, 80)]
    specs = {a.partition: a for s in flow.task_specs(2, ("127.0.0.1", 1, "t")) for a in s.partitions}
    assert not specs[0].restarted and specs[1].restarted
    assert [r.topic_id for r in ledger(b) if isinstance(r, KnownTopicId)] == [old_id]  # not until partition 1's
    report1 = PartitionReport("A->B", "orders", 1, 0, flow.positions.started_generation, 10, 10, 0, 0, 0, 0, 0, (), 1)
    flow.apply_report(replace(report1, topic_id=new_id))
    flow.refresh()
    assert [r.topic_id for r in ledger(b) if isinstance(r, KnownTopicId)] == [old_id, new_id]


def test_a_run_killed_between_an_exactly_once_new_start_and_its_report_resumes_the_new_topic() -> None:
    """faults-random seed 4: an exactly-once task committed a re-created topic's new start (records and source
    offset in one transaction) and the run was killed before the progress report that names the new topic.
    The next run took the stored offsets for the old topic's and started the partitions over: a read_committed
    consumer saw 741 records twice. The topic-id marker committed in that transaction names them now."""
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 2)
    a.fill("orders", 0, 100)
    a.fill("orders", 1, 100)
    first = started_flow(cfg, clients)
    store_offset(b, "orders", 1, 79)  # the old topic's last commit of partition 1
    a.recreate_topic("orders", 2)
    a.fill("orders", 0, 150)
    a.fill("orders", 1, 150)
    first.refresh()
    new_id = a.topics["orders"].topic_id
    store_offset(b, "orders", 0, 39)  # partition 0's new start, in one transaction with its marker; no report
    marker = topic_id_marker_key("A", "orders", 0)
    b.append(OFFSETS_TOPIC, marker, topic_id_marker_value(new_id), partition=default_partition(marker, 25))
    first.close()
    flow = started_flow(cfg, clients)
    assert flow.partitions[("orders", 0)].position == 40  # resumed: not copied again from 0
    assert flow.partitions[("orders", 1)].position == 0 and flow.partitions[("orders", 1)].restarted


def test_a_take_over_moves_a_restarted_partition_to_a_new_start_its_marker_names() -> None:
    """Another instance committed the re-created topic's new start (exactly once: offset and topic-id marker in
    one transaction) and died before reporting it: the take-over resumes there instead of starting over."""
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 200)
    flow = started_flow(cfg, clients)
    a.recreate_topic("orders", 1)
    a.fill("orders", 0, 100)
    flow.refresh()
    assert flow.partitions[("orders", 0)].restarted
    new_id = a.topics["orders"].topic_id
    store_offset(b, "orders", 0, 59)
    marker = topic_id_marker_key("A", "orders", 0)
    b.append(OFFSETS_TOPIC, marker, topic_id_marker_value("another-id"), partition=default_partition(marker, 25))
    flow.reload_positions()
    assert flow.partitions[("orders", 0)].position == 0  # a marker of another topic id: not the new start
    store_offset(b, "orders", 0, 60)
    b.append(OFFSETS_TOPIC, marker, topic_id_marker_value(new_id), partition=default_partition(marker, 25))
    flow.reload_positions()
    assert flow.partitions[("orders", 0)].position == 61 and not flow.partitions[("orders", 0)].restarted
