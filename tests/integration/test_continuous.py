"""The continuous engine: long-running copy tasks that commit their own offsets, supervised by the driver.

Real brokers (the session's ``primary`` and ``backup``) and the session's SparkSession (local, 12 slots).
"""

from __future__ import annotations

import pytest
from helpers import consume_all, create_topic, produce, unique_name
from test_replication import make_config, record_parity_scenario, strip

from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.replication.datapath import DataPath
from mirrorspark.replication.driver import Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

CONTINUOUS = {"mirrorspark.engine": "continuous"}


def test_records_are_copied_exactly(local_clusters: LocalClusters, data_path: DataPath) -> None:
    record_parity_scenario(local_clusters, data_path, engine="continuous")


def test_restart_resumes_from_the_offsets_the_tasks_committed(
    local_clusters: LocalClusters, data_path: DataPath
) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("cont-restart")
    create_topic(p, topic, partitions=3)
    produce(p, topic, [{"value": f"a{i}".encode(), "partition": i % 3} for i in range(90)])
    cfg = make_config(local_clusters, [("primary", "backup")], topics=topic, **CONTINUOUS)
    r = Replicator(cfg, data_path)
    r.run(until_caught_up=True)
    assert r.engine == "continuous"
    produce(p, topic, [{"value": f"b{i}".encode(), "partition": i % 3} for i in range(30)])
    Replicator(cfg, data_path).run(until_caught_up=True)
    assert strip(consume_all(b, f"primary.{topic}")) == strip(consume_all(p, topic))
