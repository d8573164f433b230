"""Never noisy, never leaking: librdkafka's log stays in Python logging, and no secret leaves the config file.

* One unreachable cluster: ``mirrorspark run`` ends with its one-line error and exit 3, without
  librdkafka's raw ``%3|...|FAIL|...`` lines on stderr.
* A SASL/PLAIN flow (one local SASL cluster of this module's own, seen under two aliases):
  its password appears in no ``repr`` of the configuration, flow contexts or copy tasks, no
  log record (DEBUG), no ``status``/``status --json`` output, no exception message or
  traceback, no Spark configuration, no Spark event log (what the UI shows), and no command
  line (this process's, the CLI's, the Spark JVM's).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import consume_all, create_topic, produce, unique_name
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from mirrorspark.cli.app import app
from mirrorspark.config.parse import load_config
from mirrorspark.errors import MirrorsparkError
from mirrorspark.kafka.local.clusters import start_clusters, stop_clusters
from mirrorspark.kafka.local.model import LocalCluster
from mirrorspark.replication.driver import Replicator

pytestmark = pytest.mark.integration

CLI = [sys.executable, "-m", "mirrorspark"]
PASSWORD = f"pw-{uuid.uuid4().hex}"


def run_cli(*args: str, timeout_s: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout_s)


def test_an_unreachable_cluster_gives_one_clear_error_and_no_librdkafka_lines(tmp_path: Path) -> None:
    props = tmp_path / "mm2.properties"
    props.write_text(
        "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:2\nA->B.enabled = true\n"
    )
    r = run_cli("run", str(props), "--until-caught-up")
    assert r.returncode == 3, r.stderr
    assert "%3|" not in r.stderr and "%4|" not in r.stderr and "|FAIL|" not in r.stderr
    assert "Traceback" not in r.stderr
    [line] = [x for x in r.stderr.splitlines() if x.strip()]
    assert line.startswith("error [CLUSTER_UNREACHABLE]: cluster 'A' is unreachable at 127.0.0.1:1")


# --------------------------------------------------------------------------------------------- secrets


@pytest.fixture(scope="module")
def sasl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """One SASL/PLAIN cluster whose super user ``admin`` has this module's :data:`PASSWORD`."""
    base_dir = tmp_path_factory.mktemp("sasl-secrets")
    try:
        yield start_clusters(["S"], base_dir=base_dir, security="sasl_plain", sasl_users={"admin": PASSWORD}).cluster(
            "S"
        )
    finally:
        stop_clusters(base_dir)


def sasl_properties(cluster: LocalCluster, topic: str, *, b_servers: str | None = None) -> str:
    """A->B with A and B both the SASL cluster (B's remote topic is A.<topic>), credentials in JAAS."""
    java = cluster.java_client_properties()
    lines = ["clusters = A, B", "A->B.enabled = true", f"A->B.topics = {topic}", "groups = .*"]
    for alias in ("A", "B"):
        servers = b_servers if alias == "B" and b_servers else cluster.bootstrap_servers
        lines += [f"{alias}.bootstrap.servers = {servers}"]
        lines += [f"{alias}.{k} = {v}" for k, v in java.items() if k != "bootstrap.servers"]
    lines += [f"{k}.replication.factor = 1" for k in ("offset-syncs.topic", "heartbeats.topic", "checkpoints.topic")]
    lines += [f"{k}.storage.replication.factor = 1" for k in ("offset", "config", "status")]
    lines += [
        "replication.factor = 1",
        "emit.heartbeats.interval.seconds = 1",
        "emit.checkpoints.interval.seconds = 1",
        "sync.group.offsets.enabled = true",
        "tasks.max = 2",
    ]
    return "\n".join(lines) + "\n"


def test_no_secret_in_reprs_logs_status_errors_spark_or_command_lines(
    sasl_cluster: LocalCluster, spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    admin_conf = sasl_cluster.client_config()
    assert admin_conf["sasl.password"] == PASSWORD
    topic = unique_name("secrets")
    create_topic(admin_conf, topic, partitions=2)
    produce(admin_conf, topic, [{"value": f"v{i}".encode(), "partition": i % 2} for i in range(40)])
    props = tmp_path / "mm2.properties"
    props.write_text(sasl_properties(sasl_cluster, topic))
    seen: list[str] = []  # every text that must not hold the password

    # 1. a run in this process: reprs of the config, contexts and copy tasks; every log record at DEBUG
    cfg = load_config(props)
    with caplog.at_level(logging.DEBUG):
        replicator = Replicator(cfg, spark)
        replicator.start()
        flow = replicator.flows[0]
        tasks = flow.task_specs(1, ("127.0.0.1", 1, "grant-token"))  # the copy tasks a run would start
        assert tasks
        seen += [repr(cfg), str(cfg), repr(flow.context), repr(replicator.context), *map(repr, tasks)]
        seen += [repr(cfg.flow("A", "B")), repr(cfg.cluster("A")), repr(flow.config.source_consumer)]
        stats = replicator.run(until_caught_up=True)
    [own] = [t for t in stats[0].topics if t.topic == topic]  # the source's heartbeats are copied too
    assert own.records == 40
    assert len(consume_all(admin_conf, f"A.{topic}")) == 40
    seen += [r.getMessage() for r in caplog.records] + [caplog.text]
    assert any("librdkafka" in r.name or "mirrorspark" in r.name for r in caplog.records)

    # 2. status and status --json
    for args in (["status", str(props)], ["status", str(props), "--json"]):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 0, r.output
        assert f"A.{topic}" in r.output
        seen.append(r.output)

    # 3. exceptions: an unreachable alias (its admin calls give up after 2 s, not 60) and a rejected secret property
    bad = tmp_path / "bad.properties"
    for text in (
        sasl_properties(sasl_cluster, topic, b_servers="127.0.0.1:1") + "admin.timeout.ms = 2000\n",
        sasl_properties(sasl_cluster, topic) + f"A.admin.bogus.password = {PASSWORD}\n",
    ):
        bad.write_text(text)
        with pytest.raises(MirrorsparkError) as e:
            Replicator(load_config(bad, lenient=True), spark).start()  # lenient: the bogus key reaches librdkafka
        seen += [str(e.value), repr(e.value), "".join(traceback.format_exception(e.value))]
        r = CliRunner().invoke(app, ["status", str(bad)])
        assert r.exit_code != 0
        seen.append(r.output)

    # 4. Spark: its configuration and the command line of its JVM
    sc = spark.sparkContext
    seen += [f"{k}={v}" for k, v in sc.getConf().getAll()]
    gateway_proc = getattr(sc._gateway, "proc", None)
    if gateway_proc is not None:
        seen.append(" ".join(map(str, gateway_proc.args)))
        seen.append(Path(f"/proc/{gateway_proc.pid}/cmdline").read_bytes().decode(errors="replace"))
    seen.append(Path("/proc/self/cmdline").read_bytes().decode(errors="replace"))

    # 5. the CLI as a user runs it, with Spark's event log on (what the Spark UI shows is read from it)
    produce(admin_conf, topic, [{"value": f"w{i}".encode(), "partition": i % 2} for i in range(10)])
    events = tmp_path / "spark-events"
    events.mkdir()
    argv = [
        *CLI,
        "-v",
        "run",
        str(props),
        "--until-caught-up",
        "--quiet",
        "--conf",
        "spark.eventLog.enabled=true",
        "--conf",
        f"spark.eventLog.dir=file://{events}",
        "--conf",
        "spark.eventLog.compress=false",
    ]
    spark_log = tmp_path / "spark.log"  # Spark's own output (its INFO log) goes there, not to the terminal
    env = {**os.environ, "MIRRORSPARK_SPARK_LOG_LEVEL": "INFO", "MIRRORSPARK_SPARK_LOG": str(spark_log)}
    r = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(consume_all(admin_conf, f"A.{topic}")) == 50
    assert "INFO SparkContext" in spark_log.read_text(errors="replace")
    seen += [" ".join(argv), r.stdout, r.stderr, spark_log.read_text(errors="replace")]
    logs = [p for p in events.rglob("*") if p.is_file()]
    assert logs, "Spark wrote no event log"
    event_text = "".join(p.read_text(errors="replace") for p in logs)
    assert "copy task 0 of A->B" in event_text  # the job descriptions are in it
    seen.append(event_text)

    leaks = [s[max(0, s.find(PASSWORD) - 200) : s.find(PASSWORD) + 50] for s in seen if PASSWORD in s]
    assert not leaks, leaks
