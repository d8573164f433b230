"""Fixtures shared by every test tier: the one SparkSession of the test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from mirrorspark.replication.datapath import DataPath

# Property tests judge correctness, not speed: on a loaded 2-core machine generating inputs can
# be slow, which is no failure of the code under test (no per-example deadline either).
settings.register_profile("mirrorspark", suppress_health_check=[HealthCheck.too_slow], deadline=None)
settings.load_profile("mirrorspark")


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
