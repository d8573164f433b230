"""What the SparkSession is built with, checked without starting Spark: its log4j2 file and the package zip."""

from __future__ import annotations

import zipfile

import pytest

from mirrorspark import spark_session

pytestmark = pytest.mark.unit


def test_the_spark_jvms_log_configuration_exists_and_writes_to_stderr() -> None:
    # a missing file leaves log4j2 on its defaults, whose status lines reach stdout and break `run --json`
    text = spark_session.LOG4J_CONFIG.read_text()
    assert "appender.console.target = SYSTEM_ERR" in text


def test_the_package_zip_holds_the_package_at_its_root() -> None:
    with zipfile.ZipFile(spark_session._package_zip()) as z:
        names = set(z.namelist())
    assert {"mirrorspark/__init__.py", "mirrorspark/replication/task/job.py"} <= names
    assert "mirrorspark/resources/log4j2-spark.properties" in names
    assert not any(n.startswith("mirrorspark/mirrorspark/") for n in names)
