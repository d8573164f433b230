"""Fixtures of the integration tier: two real local Kafka clusters for the session.

As MM2's own integration tests do, the session runs two independent single-broker
clusters, ``primary`` and ``backup``, started once (about 5 s) and stopped at the end.
Tests keep out of each other's way with unique topic and group names
(:func:`helpers.unique_name`); a test that needs to break a cluster starts its own.
"""

from __future__ import annotations

import atexit
from collections.abc import Iterator

import pytest

from mirrorspark.kafka.local.clusters import start_clusters, stop_clusters
from mirrorspark.kafka.local.model import LocalClusters


@pytest.fixture(scope="session")
def local_clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalClusters]:
    """Two running local clusters, ``primary`` and ``backup`` (1 broker each)."""
    base_dir = tmp_path_factory.mktemp("local-clusters")

    def stop() -> None:
        stop_clusters(base_dir)

    # Safety net if the session dies before the teardown runs (stop_clusters is idempotent).
    atexit.register(stop)
    try:
        yield start_clusters(
            ["primary", "backup"],
            base_dir=base_dir,
            brokers=1,
            # compaction within seconds, for tests of translation across compaction gaps
            extra_broker_props={"log.cleaner.backoff.ms": "200"},
        )
    finally:
        stop()
        atexit.unregister(stop)
