"""What the SparkSession is built with, without starting Spark: its log4j2 file, the package zip, the class archive."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from mirrorspark import spark_session
from mirrorspark.spark_session import class_archive

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


def test_the_class_archive_is_mapped_only_when_it_exists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "driver.jsa"
    monkeypatch.setenv(class_archive.ARCHIVE_ENV, str(archive))
    assert class_archive.archive_path() == archive
    assert class_archive.jvm_options() == ""  # not made yet: the JVM starts without it
    archive.write_bytes(b"x")
    options = class_archive.jvm_options()
    assert f"-XX:SharedArchiveFile={archive}" in options
    assert "-Xshare:auto" in options and "-Xlog:cds=off" in options  # one it cannot use: ignored, silently
    monkeypatch.setenv(class_archive.ARCHIVE_ENV, "off")
    assert class_archive.archive_path() is None and class_archive.jvm_options() == ""


def test_the_class_archive_is_named_by_the_pyspark_version_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyspark

    monkeypatch.delenv(class_archive.ARCHIVE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = class_archive.archive_path()
    if path is None:
        pytest.skip("no java on this machine")
    assert path.parent == tmp_path / "mirrorspark"
    assert path.name.startswith(f"spark-driver-{pyspark.__version__}-") and path.suffix == ".jsa"


def test_a_quick_start_driver_jvm_maps_the_class_archive(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``build_spark_session(quick_start=True)`` (``mirrorspark run``) passes the archive's flags to the driver JVM."""
    archive = tmp_path / "driver.jsa"
    archive.write_bytes(b"x")
    monkeypatch.setenv(class_archive.ARCHIVE_ENV, str(archive))
    seen: dict[str, str] = {}

    class Builder:
        def appName(self, _name: str) -> Builder:
            return self

        def master(self, _m: str) -> Builder:
            return self

        def config(self, key: str, value: str) -> Builder:
            seen[key] = value
            return self

        def getOrCreate(self) -> None:
            raise RuntimeError("stop here")

    from pyspark.sql import SparkSession

    monkeypatch.setattr(SparkSession, "builder", Builder())
    monkeypatch.setattr(spark_session.jvm_output, "launch_gateway_quietly", lambda _options: None)
    with pytest.raises(RuntimeError, match="stop here"):
        spark_session.build_spark_session(quick_start=True)
    assert f"-XX:SharedArchiveFile={archive}" in seen["spark.driver.extraJavaOptions"]


def test_the_preloading_daemon_is_set_for_a_local_master_only() -> None:
    """``mirrorspark run``'s workers fork from a daemon that loaded the copy task; an executor's stays PySpark's."""
    module = "mirrorspark.replication.task.daemon"
    assert spark_session.local_daemon_conf("local[8]", module) == {"spark.python.daemon.module": module}
    assert spark_session.local_daemon_conf("local", module) == {"spark.python.daemon.module": module}
    for cluster in ("local-cluster[2,1,1024]", "spark://host:7077", "yarn", None):
        assert spark_session.local_daemon_conf(cluster, module) == {}
    assert spark_session.local_daemon_conf("local[8]", None) == {}
