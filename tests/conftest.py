"""Fixtures shared by every test tier: the one SparkSession of the test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mirrorspark.replication.datapath import DataPath
from mirrorspark.replication.tasks import READ_MODES


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local SparkSession (2 cores) for the whole session, without the UI.

    It carries the Spark Kafka connector jars, so that both read modes run on it.
    """
    from mirrorspark.replication.datapath import build_spark_session

    session = build_spark_session(master="local[2]", app_name="mirrorspark-tests", ui=False, read_mode="spark-kafka")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def data_path(spark: object) -> DataPath:
    """The Spark data path in its default read mode."""
    return DataPath(spark)  # type: ignore[arg-type]


@pytest.fixture(scope="session", params=READ_MODES)
def any_data_path(spark: object, request: pytest.FixtureRequest) -> DataPath:
    """The Spark data path in each read mode (``consumer``, ``spark-kafka``) in turn."""
    return DataPath(spark, read_mode=request.param)  # type: ignore[arg-type]
