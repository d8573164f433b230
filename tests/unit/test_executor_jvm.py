"""A copy task tells a dead executor JVM from a live one, zombies included (Linux /proc; no Spark)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from mirrorspark.replication.task.job import _running, executor_jvm_alive

pytestmark = pytest.mark.unit


def test_a_killed_process_not_yet_reaped_is_dead() -> None:
    """The Spark driver JVM killed under ``mirrorspark run`` stays a zombie until the driver reaps it: a
    ``kill(pid, 0)`` still succeeds then, and the Python workers committed on (issue #23's JVM test)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert _running(child.pid)
        os.kill(child.pid, 9)
        deadline = time.monotonic() + 10
        while _running(child.pid) and time.monotonic() < deadline:
            time.sleep(0.05)  # not reaped: a zombie
        assert not _running(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not _running(child.pid)  # reaped: gone


def test_outside_a_spark_worker_the_check_always_says_alive() -> None:
    assert executor_jvm_alive()() is True
