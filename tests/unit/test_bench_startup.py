"""The benchmark's start-up marks: where a launch's seconds went, read from each replicator's own log."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: the bench package

from bench import recovery, startup  # noqa: E402

LAUNCH = datetime(2026, 11, 27, 10, 0, 0).timestamp()

SUPERVISOR = "mirrorspark.replication.worker.supervisor: a->b: this instance holds the flow's lease"
MIRRORSPARK_LOG = "\n".join(
    [
        "2026-11-27 09:59:50,000 INFO mirrorspark.start-up: 1 flow(s) started in 0.7 s; their leases joined",
        "2026-11-27 10:00:02,000 INFO mirrorspark.start-up: 1 flow(s) started in 0.8 s; their leases joined",
        "%6|1795773734.021|BGQUEUE|rdkafka#producer-1| [thrd:background]: Purging 1 unserved events",
        "2026-11-27 10:00:05,500 INFO mirrorspark.start-up: Spark session started in 4.5 s",
        "2026-11-27 10:00:07,900 INFO mirrorspark.replication.worker.lease: "
        "flow a->b: holds the lease (epoch 2, group 'g')",
        "2026-11-27 10:00:06,900 INFO mirrorspark.start-up: the Python workers' daemon started with 1 worker in 1.4 s",
        f"2026-11-27 10:00:08,000 INFO {SUPERVISOR} (epoch 2): copying",
        "2026-11-27 10:00:08,700 INFO mirrorspark.start-up: 2 Python worker(s) started in 2.9 s",
        "2026-11-27 10:00:09,000 INFO mirrorspark.replication.worker.lease: "
        "flow a->b: holds the lease (epoch 3, group 'g')",
    ]
)

TASK = "task-thread-MirrorSourceConnector-{0} replicating 6 topic-partitions s->t: [x-{0}]."
MM2_LOG = "\n".join(
    [
        "[2026-11-27 10:00:00,900] INFO Kafka MirrorMaker initializing (org.apache.kafka.connect.mirror.MirrorMaker)",
        "[2026-11-27 10:00:03,100] INFO Kafka MirrorMaker started (org.apache.kafka.connect.mirror.MirrorMaker)",
        f"[2026-11-27 10:00:04,400] INFO {TASK.format(0)} (org.apache.kafka.connect.mirror.MirrorSourceTask)",
        f"[2026-11-27 10:00:04,600] INFO {TASK.format(1)} (org.apache.kafka.connect.mirror.MirrorSourceTask)",
    ]
)


def test_mirrorsparks_marks_are_its_start_up_steps_in_seconds_after_the_launch_in_the_order_they_happened(
    tmp_path: Path,
) -> None:
    log = tmp_path / "run.log"
    log.write_text(MIRRORSPARK_LOG)
    marks = startup.read_marks("mirrorspark", log, LAUNCH)
    assert marks == pytest.approx(
        {
            "Spark began": 1.0,  # when Spark's start began: the session's line less its seconds
            "config loaded": 1.2,  # when the flows' start began; an earlier launch's line is not this launch's
            "flows started": 2.0,
            "Spark session": 5.5,
            "Python daemon": 6.9,
            "lease held": 7.9,  # the first holding, not a later epoch
            "tasks launched": 8.0,
            "Python workers": 8.7,
        }
    )
    assert list(marks) == ["Spark began", "config loaded", "flows started", "Spark session", "Python daemon",
                           "lease held", "tasks launched", "Python workers"]  # fmt: skip


def test_mm2s_marks_are_its_jvm_herders_and_first_task(tmp_path: Path) -> None:
    log = tmp_path / "mirror-maker-1.log"
    log.write_text(MM2_LOG)
    assert startup.read_marks("mm2", log, LAUNCH) == pytest.approx(
        {"JVM up": 0.9, "herders started": 3.1, "task started": 4.4}
    )


def test_a_missing_log_has_no_marks(tmp_path: Path) -> None:
    assert startup.read_marks("mm2", tmp_path / "absent.log", LAUNCH) == {}
    assert startup.read_marks("mirrorspark", None, LAUNCH) == {}


def test_the_bench_prints_a_line_per_launch_with_its_medians() -> None:
    def run(n: int, lease: float, first: float, again: float) -> recovery.RecoveryResult:
        return recovery.RecoveryResult(
            contender="mirrorspark",
            killed="run",
            run=n,
            rate=5000,
            partitions=12,
            record_size=1024,
            tasks_max=2,
            flush_ms=250,
            produced=10,
            received=10,
            unique=10,
            resume_s=again,
            start_marks={"config loaded": 1.0, "lease held": lease, "first record": first},
            restart_marks={"lease held": 6.5, "first record": again},
        )

    lines = recovery.startup_lines([run(1, 2.0, 8.0, 7.0), run(2, 3.0, 9.0, 8.0), run(3, 4.0, 10.0, 9.0)])
    assert lines == [
        "start-up mirrorspark (launch): first record 9.0 s; config loaded 1.0 s, lease held 3.0 s",
        "start-up mirrorspark (relaunch after kill -9): first record 8.0 s; lease held 6.5 s",
    ]
