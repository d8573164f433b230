"""Fixtures shared by every test tier: the one SparkSession of the test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mirrorspark.spark import DataPath


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local SparkSession (2 cores) for the whole session, without the UI."""
    from mirrorspark.spark import build_spark_session

    session = build_spark_session(master="local[2]", app_name="mirrorspark-tests", ui=False)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def data_path(spark: object) -> DataPath:
    """The Spark data path in its default read mode."""
    return DataPath(spark)  # type: ignore[arg-type]
