"""A copy task's consumer asks librdkafka for statistics only where a follower may serve its fetches (#26)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mirrorspark.core.replica_rows import FetchSource
from mirrorspark.replication.task.job import FETCH_STATS_INTERVAL_MS, with_fetch_stats

pytestmark = pytest.mark.unit


def test_without_a_rack_no_statistics_are_asked_for() -> None:
    conf: dict[str, Any] = {"bootstrap.servers": "a:9092"}
    assert with_fetch_stats(conf, {}) == {"bootstrap.servers": "a:9092"}


def test_with_a_rack_statistics_name_each_partitions_fetch_broker() -> None:
    sources: dict[tuple[str, int], FetchSource] = {}
    conf = with_fetch_stats({"client.rack": "b"}, sources)
    assert conf["statistics.interval.ms"] == FETCH_STATS_INTERVAL_MS
    doc = {"topics": {"orders": {"partitions": {"0": {"partition": 0, "broker": 2, "leader": 1}}}}}
    conf["stats_cb"](json.dumps(doc))
    assert sources == {("orders", 0): FetchSource(2, 1)}


@pytest.mark.parametrize("interval", [0, 1000])
def test_an_interval_the_settings_choose_is_kept_without_a_rack(interval: int) -> None:
    conf = with_fetch_stats({"statistics.interval.ms": interval}, {})
    assert conf["statistics.interval.ms"] == interval
    assert "stats_cb" in conf
