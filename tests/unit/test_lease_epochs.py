"""A late progress report of an instance that lost the flow's lease never makes translation overshoot (F5)."""

from __future__ import annotations

import pytest

from fakes import two_clusters
from mirrorspark.client.context import FlowContext
from mirrorspark.core.progress_records import PartitionReport, decode_report, encode_report
from mirrorspark.mm2.translation import CopiedRanges, CopiedSegment
from mirrorspark.replication.connector.flow import Flow

pytestmark = pytest.mark.unit


def test_a_superseded_epochs_segments_never_cut_newer_ones() -> None:
    """``engine-audit.md`` F5, the reproduced case: the new holder (epoch 2) copied upstream 100..199 to
    1000..1099; then the old holder's late report (epoch 1) says it copied 100..149 to 1100..1149.
    Taken as the newest copy, it cut the new holder's segment and upstream 150 translated to 1150,
    past 150..199's only copies (1050..1099): a failed-over consumer skipped them."""
    copied = CopiedRanges()
    assert copied.add("t", 0, [CopiedSegment(100, 1000, 100)], epoch=2)
    assert not copied.add("t", 0, [CopiedSegment(100, 1100, 50)], epoch=1)
    assert copied.translate_downstream("t", 0, 150) == 1050
    assert copied.segments("t", 0) == (CopiedSegment(100, 1000, 100),)
    # the new holder goes on after the zombie's copies: appended, nothing skipped
    assert copied.add("t", 0, [CopiedSegment(200, 1150, 10)], epoch=2)
    assert [copied.translate_downstream("t", 0, u) for u in (150, 200, 210)] == [1050, 1150, 1160]


def test_one_writers_rewind_still_maps_to_its_newest_copy() -> None:
    """Within one epoch (one writer: a retried batch) the newest copy wins, as before."""
    copied = CopiedRanges()
    copied.add("t", 0, [CopiedSegment(100, 1000, 100)], epoch=3)
    copied.add("t", 0, [CopiedSegment(100, 1100, 50)], epoch=3)
    assert copied.translate_downstream("t", 0, 120) == 1120
    copied.add("t", 0, [CopiedSegment(0, 5000, 1)], epoch=4)  # a newer epoch is taken too
    assert copied.segments("t", 0) == (CopiedSegment(0, 5000, 1),)


def report(epoch: int, segments: tuple[CopiedSegment, ...], next_offset: int) -> PartitionReport:
    return PartitionReport(
        flow="A->B",
        topic="orders",
        partition=0,
        task=0,
        generation=1,  # every instance numbers its own generations from 1: no order across instances
        next_offset=next_offset,
        records=segments[-1].count,
        value_bytes=0,
        key_bytes=0,
        latency_ms_sum=0,
        latency_ms_max=0,
        latency_samples=0,
        segments=segments,
        at=0,
        epoch=epoch,
    )


def test_the_flow_ignores_a_late_report_of_an_older_lease_epoch() -> None:
    """The same case through the progress channel's records: the epoch travels in the report (format
    version 2, additive) and the flow drops the late one's segments. Each report carries its task's
    newest segments, so the zombie's window would otherwise have replaced the new holder's."""
    cfg, a, _b, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 300)
    flow = Flow(FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients), cfg.data_path)
    flow.start()
    earlier = CopiedSegment(0, 900, 100)  # both instances' windows start with what was copied before
    new = decode_report(*encode_report(report(2, (earlier, CopiedSegment(100, 1000, 100)), 200)))
    late = decode_report(*encode_report(report(1, (earlier, CopiedSegment(100, 1100, 50)), 150)))
    assert (new.epoch, late.epoch) == (2, 1)
    flow.apply_report(new, segments_only=True)
    flow.apply_report(late, segments_only=True)
    assert flow.copied.translate_downstream("orders", 0, 150) == 1050
    assert flow.copied.translate_downstream("orders", 0, 50) == 950
