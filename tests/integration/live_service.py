"""``mirrorspark service`` in its own process, as a person runs it (shared by the service's and dashboard's tests)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from helpers import commit_offsets, unique_name
from pyspark.sql import SparkSession

from mirrorspark.config.parse import load_config
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.replication.driver import Replicator
from polling import assert_eventually


def start_service(props: Path, tmp: Path, cluster: str = "backup") -> tuple[subprocess.Popen[bytes], Path]:
    """Start ``mirrorspark service props --cluster cluster`` on a free port; return the process and its log."""
    log = tmp / "service.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mirrorspark",
                "service",
                str(props),
                "--cluster",
                cluster,
                "--port",
                "0",
                "--checkpoint",
                str(tmp / "checkpoint"),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return proc, log


def service_url(proc: subprocess.Popen[bytes], log: Path) -> str:
    """The URL the service printed once it serves (fails when it exits first)."""

    def printed() -> str:
        text = log.read_text(errors="replace")
        assert proc.poll() is None, f"the service exited ({proc.returncode}):\n{text[-3000:]}"
        m = re.search(r"at (http://127\.0\.0\.1:\d+/)", text)
        assert m, "no URL printed yet"
        return m.group(1)

    return assert_eventually(printed, timeout_s=420, interval_s=0.5, message="the service did not print its URL")


def stop_service(proc: subprocess.Popen[bytes], log: Path) -> None:
    """SIGTERM the service and assert it stopped cleanly (exit 0); SIGKILL its process group if it hangs."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)  # the command stops cleanly on SIGTERM
    try:
        code = proc.wait(60)
        assert code == 0, log.read_text(errors="replace")[-3000:]
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def commit_group(bootstrap: str, topic: str, group: str, offsets: dict[int, int]) -> None:
    """Commit a consumer group's offsets on ``topic`` as a consumer that read that far would."""
    commit_offsets(bootstrap, group, {(topic, p): o for p, o in offsets.items()})


@contextlib.contextmanager
def served_flow(
    local_clusters: LocalClusters, spark: SparkSession, tmp: Path, *, topic: str, group: str, token: str
) -> Iterator[str]:
    """A continuous flow primary->backup of ``topic`` (checkpointing ``group``, raw metrics every second)
    in this process, and ``mirrorspark service`` for backup with bearer ``token`` in its own; yields its URL."""
    props = tmp / "mm2.properties"
    props.write_text(
        local_clusters.mm2_properties(
            [("primary", "backup")],
            extra={
                "topics": topic,
                "groups": group,
                "mirrorspark.metrics.interval.ms": "1000",
                "emit.checkpoints.interval.seconds": "1",
                "refresh.groups.interval.seconds": "1",
                "mirrorspark.service.trigger.interval.ms": "2000",
                "mirrorspark.service.metrics.topic": unique_name("svc-metrics") + ".internal",
                "mirrorspark.service.auth.token": token,
            },
        )
    )
    replicator = Replicator(load_config(props), spark)
    runner = threading.Thread(target=replicator.run, name=f"test-flow-{topic}", daemon=True)
    proc: subprocess.Popen[bytes] | None = None
    try:
        replicator.start()
        runner.start()
        proc, log = start_service(props, tmp)
        yield service_url(proc, log)
    finally:
        if proc is not None:
            stop_service(proc, log)
        replicator.request_stop()
        runner.join(90)
