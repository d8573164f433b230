"""The verify job's Spark side (replication/worker/verify_job.py VJ1-VJ3) on a stand-in SparkContext."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

import pytest

from mirrorspark.core.verify import PartitionCounts
from mirrorspark.errors import DataPathError, SparkDriverLostError
from mirrorspark.mm2.offset_syncs import CopiedSegment
from mirrorspark.replication.task.verify_spec import VerifyTaskResult, VerifyTaskSpec
from mirrorspark.replication.worker import verify_job
from mirrorspark.replication.worker.verify_job import GROUP_PREFIX, run_verify_job

pytestmark = pytest.mark.unit


class Rdd:
    """``parallelize(...).map(f).collect()`` run inline, reversed per slice to show order is kept by Spark's."""

    def __init__(self, sc: Context, items: list[Any], slices: int) -> None:
        self.sc, self.items, self.slices = sc, items, slices
        self.f: Callable[[Any], Any] | None = None

    def map(self, f: Callable[[Any], Any]) -> Rdd:
        self.f = f
        return self

    def collect(self) -> list[Any]:
        if self.sc.fail is not None:
            raise self.sc.fail
        assert self.f is not None
        return [self.f(x) for x in self.items]


class Context:
    """A SparkContext stand-in: records job groups, local properties and the slices asked for."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.fail = fail
        self.groups: list[tuple[str, str, bool]] = []
        self.props: dict[str, Any] = {}
        self.slices: list[int] = []

    def setJobGroup(self, group: str, description: str, interruptOnCancel: bool = False) -> None:
        self.groups.append((group, description, interruptOnCancel))
        self.props["spark.jobGroup.id"] = group

    def setLocalProperty(self, key: str, value: str | None) -> None:
        self.props[key] = value

    def parallelize(self, items: list[Any], slices: int) -> Rdd:
        self.slices.append(slices)
        return Rdd(self, items, slices)


class Session:
    def __init__(self, sc: Context) -> None:
        self.sparkContext = sc


def _spec(unit: int) -> VerifyTaskSpec:
    return VerifyTaskSpec(
        "a->b",
        "a",
        "b",
        "t",
        0,
        "b.t",
        0,
        10,
        (CopiedSegment(0, 0, 10),),
        (),
        {"sasl.password": "p4ss"},
        {},
        unit=unit,
    )


def _ran(spec: VerifyTaskSpec) -> VerifyTaskResult:
    return VerifyTaskResult(
        spec.flow, spec.source_topic, spec.partition, spec.target_topic, spec.unit, PartitionCounts(verified=spec.unit)
    )


def test_one_task_per_unit_in_a_group_of_its_own_results_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """VJ1, VJ2."""
    monkeypatch.setattr(verify_job, "run_verify_task", _ran)
    sc = Context()
    specs = [_spec(u) for u in range(5)]
    got = run_verify_job(cast(Any, Session(sc)), specs, description="verify a->b (5 units)")
    assert [r.unit for r in got] == [0, 1, 2, 3, 4]
    assert sc.slices == [5]
    [(group, description, interrupt)] = sc.groups
    assert group.startswith(GROUP_PREFIX) and description == "verify a->b (5 units)" and interrupt
    assert sc.props["spark.jobGroup.id"] is None  # the thread's later jobs are not in it
    assert run_verify_job(cast(Any, Session(sc)), [], description="nothing") == []


def test_a_failed_job_raises_and_a_lost_jvm_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """VJ3."""
    monkeypatch.setattr(verify_job, "run_verify_task", _ran)
    with pytest.raises(DataPathError, match="verify job 'v' failed: Job 3 cancelled"):
        run_verify_job(cast(Any, Session(Context(RuntimeError("Job 3 cancelled\nstack")))), [_spec(0)], description="v")
    with pytest.raises(SparkDriverLostError, match="cannot be reached"):
        run_verify_job(cast(Any, Session(Context(ConnectionRefusedError("gone")))), [_spec(0)], description="v")


def test_a_units_error_is_data_not_a_failed_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """VJ2: run_verify_task's error result passes through untouched."""

    def boom(spec: VerifyTaskSpec) -> VerifyTaskResult:
        from mirrorspark.replication.task.verify_task import failed

        return failed(spec, DataPathError("no READ on t"))

    monkeypatch.setattr(verify_job, "run_verify_task", boom)
    [r] = run_verify_job(cast(Any, Session(Context())), [replace(_spec(0), unit=3)], description="v")
    assert r.error is not None and r.error.message == "no READ on t" and r.unit == 3
    assert "p4ss" not in repr(_spec(0))
