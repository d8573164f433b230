"""Progress reports name the driver run that started their task (``engine-audit-2.md`` N6).

Generation numbers start at 1 in every driver process: a late report of another instance, or of this
instance's previous process, carried the running generation's number and moved positions and added
to the totals. Reports now carry a run id; only the running run's generation moves anything.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from test_copy_task_runner import Task, step, stop_after

from fakes import two_clusters
from mirrorspark.client.context import FlowContext
from mirrorspark.core.progress_records import PartitionReport, decode_report, encode_report
from mirrorspark.errors import CorruptRecordError
from mirrorspark.replication.flow import Flow
from mirrorspark.replication.task.runner import CopyTaskRunner
from mirrorspark.replication.task.spec import TaskOutcome

pytestmark = pytest.mark.unit

CHANNEL = ("127.0.0.1", 1, "token")


def report(next_offset: int, records: int, *, generation: int = 1, epoch: int = 0) -> PartitionReport:
    return PartitionReport("A->B", "orders", 0, 0, generation, next_offset, records, 0, 0, 0, 0, 0, (), 1, epoch=epoch)


def two_processes() -> tuple[Flow, Flow]:
    """The same flow started by two driver processes (or one process, then its restart) on the same clusters."""
    cfg, a, _, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 1000)
    flows = []
    for _ in range(2):
        flow = Flow(FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients), cfg.data_path)
        flow.start()
        flows.append(flow)
    return flows[0], flows[1]


@pytest.mark.parametrize("epochs", [(0, 0), (3, 7)], ids=["without a lease", "an older epoch"])
def test_a_report_of_another_process_with_the_running_generation_moves_nothing(epochs: tuple[int, int]) -> None:
    """Both processes run generation 1: the other's late report (600 records up to 600) is not this run's."""
    old, new = two_processes()
    [old_spec] = old.task_specs(1, CHANNEL, epoch=epochs[0])
    [new_spec] = new.task_specs(1, CHANNEL, epoch=epochs[1])
    assert old_spec.run and new_spec.run and old_spec.run != new_spec.run
    ours = replace(report(100, 100, epoch=new_spec.epoch), run=new_spec.run)
    assert new.apply_report(ours, generation=1)
    late = replace(report(600, 600, epoch=old_spec.epoch), run=old_spec.run)
    new.apply_report(late, generation=1)
    p = new.partitions[("orders", 0)]
    assert (p.position, p.records) == (100, 100)
    assert new.positions.last_commit_at == ours.at / 1000.0


def test_a_report_naming_no_run_is_read_as_before() -> None:
    """Records written before reports named their run still move positions on their generation."""
    _, flow = two_processes()
    flow.task_specs(1, CHANNEL)
    flow.apply_report(report(40, 40), generation=1)
    flow.apply_report(report(90, 50, generation=2), generation=1)  # another generation: not counted
    p = flow.partitions[("orders", 0)]
    assert (p.position, p.records) == (40, 40)


def test_the_run_survives_the_channel_and_is_optional() -> None:
    r = replace(report(5, 5), run="0f1e2d3c4b5a6978")
    assert decode_report(*encode_report(r)) == r
    key, value = encode_report(report(5, 5))
    v = json.loads(value)
    del v["run"]
    assert decode_report(key, json.dumps(v).encode()).run is None
    v["run"] = 7
    with pytest.raises(CorruptRecordError, match="run must be a string"):
        decode_report(key, json.dumps(v).encode())


def test_a_copy_tasks_reports_name_the_run_of_its_spec() -> None:
    t = Task(records=3)
    t.spec = replace(t.spec, run="0f1e2d3c4b5a6978")
    t.runner = CopyTaskRunner(
        t.spec,
        consumer=t.consumer,
        data=t.data,
        commit_producer=t.commits,
        syncs_producer=t.syncs,
        channel=t.channel,
        clock=lambda: t.now,
    )
    assert step(t, stop_after(2)) == TaskOutcome.STOPPED
    assert t.reports() and {r.run for r in t.reports()} == {"0f1e2d3c4b5a6978"}
