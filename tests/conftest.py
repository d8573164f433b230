"""Fixtures shared by every test tier: the one SparkSession of the test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mirrorspark.replication.datapath import DataPath


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local SparkSession for the whole session, without the UI: 12 slots, one per continuous copy task."""
    from mirrorspark.replication.datapath import build_spark_session

    session = build_spark_session(master="local[12]", app_name="mirrorspark-tests", ui=False)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def data_path(spark: object) -> DataPath:
    """The Spark data path (read mode ``consumer``, the only one)."""
    return DataPath(spark)  # type: ignore[arg-type]
