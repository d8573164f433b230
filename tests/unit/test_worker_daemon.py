"""The PySpark daemon module that loads the copy task before it forks (``replication.task.daemon``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mirrorspark.replication.task import daemon

pytestmark = pytest.mark.unit


def test_the_daemon_is_named_as_spark_runs_it() -> None:
    assert daemon.__name__ == daemon.DAEMON_MODULE


def test_preloading_imports_the_copy_task_and_its_kafka_client_in_a_fresh_python() -> None:
    """What every forked worker starts with: the copy task and confluent-kafka, no registry client, no thread."""
    code = (
        "import sys, threading; from mirrorspark.replication.task import daemon; "
        "assert daemon.preload() == []; "
        "assert {'mirrorspark.replication.task.job', 'confluent_kafka'} <= set(sys.modules); "
        # the registry client (httpx, authlib: a third of the imports) only once a task translates schema ids
        "assert 'confluent_kafka.schema_registry' not in sys.modules; "
        "assert threading.active_count() == 1, threading.enumerate()"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_module_that_cannot_be_preloaded_is_said_and_skipped(capsys: pytest.CaptureFixture[str]) -> None:
    assert daemon.preload(("mirrorspark.no_such_module", "json")) == ["mirrorspark.no_such_module"]
    assert "could not preload mirrorspark.no_such_module" in capsys.readouterr().err


def test_a_worker_of_either_daemon_is_recognised_by_its_command_line() -> None:
    """Tests and the bench kill the copy tasks' workers by their daemon's command line: PySpark's or this one."""
    python = "/venv/bin/python"
    assert daemon.is_daemon_command([python, "-m", "pyspark.daemon", "pyspark.worker"])
    assert daemon.is_daemon_command([python, "-m", daemon.DAEMON_MODULE, "pyspark.worker"])
    assert not daemon.is_daemon_command([python, "-m", "mirrorspark", "run", "mm2.properties"])
