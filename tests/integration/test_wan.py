"""A flow whose source is across a long link: local brokers' WAN listeners behind the latency proxy (#43 item 1)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import clusters_behind_a_link, consume_all, create_topic, produce, unique_name
from pyspark.sql import SparkSession

from copy_check import assert_copy
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.errors import LocalClusterError
from mirrorspark.kafka.local.clusters import start_clusters
from mirrorspark.kafka.local.latency_proxy import LatencyProxy, LinkShape, wan_link
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.replication.driver import Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

ONE_WAY_MS = 50.0


@pytest.fixture(scope="module")
def far(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalClusters, LatencyProxy]]:
    """``primary`` (with a WAN listener behind a 100 ms RTT link) and ``backup``, for this module."""
    with clusters_behind_a_link(tmp_path_factory.mktemp("wan-clusters"), LinkShape(delay_ms=ONE_WAY_MS)) as far:
        yield far


def test_a_flow_copies_byte_exact_across_the_link(far: tuple[LocalClusters, LatencyProxy], spark: SparkSession) -> None:
    """Every request of the flow to the source crosses the link (its bytes are counted there); the copy is exact."""
    clusters, link = far
    primary = clusters.cluster("primary")
    topic = unique_name("wan")
    create_topic(primary.bootstrap_servers, topic, partitions=2)
    sent = [
        {"key": f"k{i}".encode(), "value": bytes([i % 256]) * 512, "partition": i % 2, "headers": [("h", b"v")]}
        for i in range(2000)
    ]
    produce(primary.bootstrap_servers, topic, sent)  # the producer is local to the source
    extra = {"topics": topic, "tasks.max": "2", "primary.bootstrap.servers": primary.wan_bootstrap_servers}
    props = parse_properties(clusters.mm2_properties([("primary", "backup")], extra=extra))
    before = link.bytes_carried[1]
    Replicator(parse_config(props), spark).run(until_caught_up=True)
    assert link.bytes_carried[1] - before >= 2000 * 512  # every record crossed the link
    source = consume_all(primary.bootstrap_servers, topic)
    assert_copy(source, consume_all(clusters.bootstrap("backup"), f"primary.{topic}"))


def test_a_cluster_without_a_wan_listener_says_so(far: tuple[LocalClusters, LatencyProxy]) -> None:
    backup = far[0].cluster("backup")
    plain = dataclasses.replace(backup, brokers=tuple(dataclasses.replace(b, wan_port=0) for b in backup.brokers))
    with pytest.raises(LocalClusterError, match="no WAN listener: start it with wan=True"):
        wan_link(plain)
    with pytest.raises(LocalClusterError, match="plaintext only"):
        start_clusters(["x"], base_dir=Path("unused"), security="ssl", wan=True)
