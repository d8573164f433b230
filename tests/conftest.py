"""Fixtures shared by every test tier: the one SparkSession of the test session."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Property tests judge correctness, not speed: on a loaded 2-core machine generating inputs can
# be slow, which is no failure of the code under test (no per-example deadline either).
settings.register_profile("mirrorspark", suppress_health_check=[HealthCheck.too_slow], deadline=None)
settings.load_profile("mirrorspark")


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One local SparkSession for the whole session, without the UI: 12 slots, one per copy task."""
    from mirrorspark.spark_session import build_spark_session

    session = build_spark_session(master="local[12]", app_name="mirrorspark-tests", ui=False)
    yield session
    session.stop()
