"""Which progress reports move a driver's positions and totals (``engine-audit-2.md`` N6 and §4).

Generation numbers start at 1 in every driver process: a late report of another instance, or of this
instance's previous process, carried the running generation's number and moved positions and added
to the totals. Reports now carry a run id; only the running run's generation moves anything. And a
report written twice (at least once, a write that timed out but landed) is counted once.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from confluent_kafka import KafkaError
from test_copy_task_runner import Task, step, stop_after

from fakes import two_clusters
from mirrorspark.client.context import FlowContext
from mirrorspark.core.progress_records import PartitionReport, ReportSequences, decode_report, encode_report
from mirrorspark.errors import CorruptRecordError
from mirrorspark.replication.connector.flow import Flow
from mirrorspark.replication.task.grant_client import GrantState
from mirrorspark.replication.task.runner import CopyTaskRunner
from mirrorspark.replication.task.spec import TaskOutcome

pytestmark = pytest.mark.unit

GRANT_ADDRESS = ("127.0.0.1", 1, "token")


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
    [old_spec] = old.task_specs(1, GRANT_ADDRESS, epoch=epochs[0])
    [new_spec] = new.task_specs(1, GRANT_ADDRESS, epoch=epochs[1])
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
    flow.task_specs(1, GRANT_ADDRESS)
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
    with pytest.raises(CorruptRecordError, match="run and attempt must be strings"):
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
        grants=t.grants,
        clock=lambda: t.now,
    )
    assert step(t, stop_after(2)) == TaskOutcome.STOPPED
    assert t.reports() and {r.run for r in t.reports()} == {"0f1e2d3c4b5a6978"}


# ------------------------------------------------------------------ a report written twice counts once


def test_c9_a_timed_out_report_that_landed_is_counted_once() -> None:
    """C9. engine-audit-2 §4: at least once, the first commit's report timed out on the client but landed; the next
    commit wrote its figures again. Before, the driver's totals counted its 5 records twice (10)."""
    t = Task(records=5)
    t.commits.fail_at = {1: KafkaError._MSG_TIMED_OUT}  # the first commit: its offset (0), its report (1)
    t.commits.landed = {1}

    def hook(task: Task, turn: int) -> None:
        task.now = 5.0 * turn
        if turn >= 3:
            task.grants.state = GrantState.STOP

    assert step(t, hook) == TaskOutcome.STOPPED
    reports = t.reports()
    assert sum(r.records for r in reports) == 10  # the channel holds the first report's 5 records twice
    cfg, a, _, clients = two_clusters()
    a.create_topic("t", 1)
    a.fill("t", 0, 5)
    flow = Flow(FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients), cfg.data_path)
    flow.start()
    flow.task_specs(1, GRANT_ADDRESS)
    for r in reports:
        flow.apply_report(r, generation=1)
    p = flow.partitions[("t", 0)]
    assert (p.position, p.records) == (5, 5)


def test_report_sequences_count_each_report_once_in_any_order() -> None:
    seqs = ReportSequences()
    r = replace(report(1, 1), attempt="a1")
    order = [3, 1, 3, 2, 1, 5, 4, 4]
    assert [seqs.first_time(replace(r, seq=s)) for s in order] == [True, True, False, True, False, True, True, False]
    assert seqs.first_time(replace(r, seq=1, attempt="a2"))  # another attempt of the task
    assert seqs.first_time(replace(r, seq=1, partition=1))  # another partition
    assert all(seqs.first_time(report(1, 1)) for _ in range(2))  # unnumbered (older records): always counted
