"""``mirrorspark run`` as users see it: no line of Spark's on the terminal, and ``status`` right after it ends.

Spark's own lines (the JVM's incubator warning, Spark's log-level banner, a clean stop's executor
errors and Python worker tracebacks) go to a log file with ``-v``, never to the terminal (issue #24
item 3). A bounded run that ended says so at once: ``status`` reads ``caught up``, lag 0, not
``running`` with the heartbeats written during the run as lag (finding 9, issue #24 item 4). Its Python
workers fork from the daemon that loaded the copy task before (``replication.task.daemon``, issue #44).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import admin, assert_eventually, consume_all, create_topic, produce, unique_name

from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.replication.task.daemon import DAEMON_MODULE

pytestmark = pytest.mark.integration

CLI = [sys.executable, "-m", "mirrorspark"]

SPARK_LINES = (
    "Using incubator modules",
    'Setting default log level to "WARN"',
    "To adjust logging level use sc.setLogLevel",
    "ERROR Executor",
    "Python worker exited unexpectedly",
    "EOFError",
    "Traceback",
)
"""What Spark printed on every run's terminal (and a clean stop's), none of which is mirrorspark's."""


def spark_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if any(s in line for s in SPARK_LINES)]


def env(**extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k != "MIRRORSPARK_SPARK_LOG"}
    return {**out, "PYTHONUNBUFFERED": "1", **extra}


def flow_properties(local_clusters: LocalClusters, tmp_path: Path, prefix: str, records: int) -> tuple[Path, str]:
    p = local_clusters.bootstrap("primary")
    topic = unique_name(prefix)
    create_topic(p, topic, partitions=2)
    produce(p, topic, [{"value": f"r{i}".encode(), "partition": i % 2} for i in range(records)])
    props = tmp_path / "mm2.properties"
    props.write_text(local_clusters.mm2_properties([("primary", "backup")], extra={"topics": topic}))
    return props, topic


def workers_of_the_preloading_daemon(pid: int) -> int:
    """Count the Python workers forked by a ``mirrorspark.replication.task.daemon`` process under ``pid``."""
    import psutil

    count = 0
    for p in psutil.Process(pid).children(recursive=True):
        try:
            if DAEMON_MODULE in p.cmdline() and p.parent().cmdline() != p.cmdline():
                count += len(p.children())
        except psutil.Error:  # a worker that ended meanwhile
            continue
    return count


def status_of(props: Path) -> dict[str, Any]:
    r = subprocess.run([*CLI, "status", str(props), "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc: dict[str, Any] = json.loads(r.stdout)
    return doc


def test_a_bounded_run_prints_no_spark_line_and_status_says_caught_up_at_once(
    local_clusters: LocalClusters, tmp_path: Path
) -> None:
    props, topic = flow_properties(local_clusters, tmp_path, "quiet-bounded", 40)
    r = subprocess.run(
        [*CLI, "run", str(props), "--until-caught-up"], capture_output=True, text=True, timeout=240, env=env()
    )
    assert r.returncode == 0, r.stderr
    assert spark_lines(r.stdout + r.stderr) == [], r.stderr
    # the final table says how the run ended
    assert "(caught up)" in r.stdout and "(stopped)" not in r.stdout and "batches" not in r.stdout, r.stdout
    doc = status_of(props)
    [flow] = doc["flows"]
    assert flow["state"] == "caught up", flow
    assert flow["lag"] == 0, flow
    topics = {t["topic"]: t for t in flow["topics"]}
    assert topics[topic]["records"] == 40 and topics[topic]["lag"] == 0


def test_a_stopped_continuous_run_prints_no_spark_line_and_logs_them_with_v(
    local_clusters: LocalClusters, tmp_path: Path
) -> None:
    props, topic = flow_properties(local_clusters, tmp_path, "quiet-sigterm", 200)
    log_file = tmp_path / "spark.log"
    proc = subprocess.Popen(
        [*CLI, "-v", "run", str(props), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env(MIRRORSPARK_SPARK_LOG=str(log_file)),
    )
    try:
        b, remote = local_clusters.bootstrap("backup"), f"primary.{topic}"
        assert_eventually(
            lambda: remote in admin(b).list_topics(timeout=10).topics and len(consume_all(b, remote)) == 200,
            timeout_s=180,
        )
        # the copy tasks' Python workers forked from the daemon that loaded the copy task (replication.task.daemon)
        assert_eventually(lambda: workers_of_the_preloading_daemon(proc.pid) >= 1, timeout_s=30)
        os.killpg(proc.pid, signal.SIGTERM)  # the whole group, as a service manager or `kill -- -PGID` does
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, err
    assert spark_lines(out + err) == [], err
    assert "stopping: committing what was copied" in err
    # the start-up steps a launch logs (bench/startup.py reads them): the daemon right after the session
    steps = [s for s in ("Spark session started", "the Python workers' daemon started") if s in err]
    assert steps == ["Spark session started", "the Python workers' daemon started"], err
    assert err.index("Spark session started") < err.index("the Python workers' daemon started"), err
    logged = log_file.read_text()
    assert "Using incubator modules" in logged and 'Setting default log level to "WARN"' in logged
    assert status_of(props)["flows"][0]["state"] == "stopped"
