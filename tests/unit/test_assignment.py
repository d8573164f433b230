"""Round-robin task assignment (MM2 ``MirrorSourceConnector.taskConfigs``, mm2.md §9.6)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.replication.connector.task_configs import assign_round_robin

pytestmark = pytest.mark.unit

SRC = Path(__file__).resolve().parents[2] / "src"


def _partitions(counts: dict[str, int]) -> list[str]:
    return [f"{topic}-{p}" for topic, n in counts.items() for p in range(n)]


def test_mm2_example() -> None:
    partitions = _partitions({"t0": 8, "t1": 2, "t2": 2})
    assert assign_round_robin(partitions, 3) == [
        ["t0-0", "t0-3", "t0-6", "t1-1"],
        ["t0-1", "t0-4", "t0-7", "t2-0"],
        ["t0-2", "t0-5", "t1-0", "t2-1"],
    ]


def test_works_on_any_partition_objects() -> None:
    partitions = [("t0", 0), ("t0", 1), ("t1", 0)]
    assert assign_round_robin(partitions, 2) == [[("t0", 0), ("t1", 0)], [("t0", 1)]]
    assert assign_round_robin(tuple(partitions), 5) == [[p] for p in partitions]


@pytest.mark.parametrize(
    ("n_partitions", "tasks_max", "n_tasks"),
    [(12, 3, 3), (12, 12, 12), (12, 100, 12), (1, 10, 1), (5, 1, 1)],
)
def test_number_of_tasks_is_min_of_tasks_max_and_partitions(n_partitions: int, tasks_max: int, n_tasks: int) -> None:
    groups = assign_round_robin([f"t-{p}" for p in range(n_partitions)], tasks_max)
    assert len(groups) == n_tasks
    assert all(groups)  # no empty task


@pytest.mark.parametrize("tasks_max", [1, 3, 100])
def test_no_partitions_no_tasks(tasks_max: int) -> None:
    assert assign_round_robin([], tasks_max) == []


@given(
    n_partitions=st.integers(min_value=0, max_value=200),
    tasks_max=st.integers(min_value=1, max_value=64),
)
def test_property_round_robin(n_partitions: int, tasks_max: int) -> None:
    partitions = [f"p{k}" for k in range(n_partitions)]
    groups = assign_round_robin(partitions, tasks_max)
    n = min(tasks_max, n_partitions)
    assert len(groups) == n
    for k, p in enumerate(partitions):
        assert p in groups[k % n]  # partition k -> task k mod n
    for group in groups:  # discovery order kept within a task
        assert group == sorted(group, key=partitions.index)
    assert sorted(p for g in groups for p in g) == sorted(partitions)  # each exactly once
    if groups:
        sizes = [len(g) for g in groups]
        assert max(sizes) - min(sizes) <= 1


def test_importing_the_spark_module_does_not_start_spark() -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, sys.argv[1])
        import mirrorspark.spark_session
        context = sys.modules.get("pyspark.context")
        if context is not None:
            sc = context.SparkContext
            if sc._active_spark_context is not None or sc._gateway is not None or sc._jvm is not None:
                raise SystemExit("a SparkContext or JVM gateway was started")
        session = sys.modules.get("pyspark.sql.session")
        if session is not None and session.SparkSession._instantiatedSession is not None:
            raise SystemExit("a SparkSession was created")
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(SRC)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
