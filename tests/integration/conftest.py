"""Fixtures of the integration tier: two real local Kafka clusters for the session.

As MM2's own integration tests do, the session runs two independent single-broker
clusters, ``primary`` and ``backup``, started once (about 5 s) and stopped at the end.
Tests keep out of each other's way with unique topic and group names
(:func:`helpers.unique_name`); a test that needs to break a cluster starts its own. Under
pytest-xdist (``make test``) every worker is a session of its own, with its own pair of clusters,
its own SparkSession and its own temporary directories; a test kills only processes of its own tree.
A test that needs a real Spark cluster gets a fresh standalone one (``spark_standalone``), one that needs
Schema Registries (Java 21+) gets them from :mod:`registry_support`: ``schema_registries`` (a pair for the session),
``start_registry`` (fresh ones for a test), ``registry_factory``.
"""

from __future__ import annotations

import atexit
from collections.abc import Iterator
from pathlib import Path

import pytest
from standalone import StandaloneCluster

from mirrorspark.kafka.local.clusters import start_clusters, stop_clusters
from mirrorspark.kafka.local.model import LocalClusters
from registry_support import registry_factory, schema_registries, start_registry

__all__ = ["registry_factory", "schema_registries", "start_registry"]  # fixtures of registry_support


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


@pytest.fixture(scope="session")
def secure_clusters(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[LocalClusters]:
    """Two running local clusters, ``primary`` and ``backup`` (1 broker each), speaking ``request.param``.

    Parametrise indirectly with ``"ssl"`` (TLS) or ``"sasl_ssl"`` (SCRAM-SHA-512 over TLS): each pair
    starts once per session, only when a test asks for it, and pytest groups the tests of one
    pair together so that at most one secure pair runs at a time.
    """
    security = request.param
    base_dir = tmp_path_factory.mktemp(f"local-clusters-{security}")

    def stop() -> None:
        stop_clusters(base_dir)

    atexit.register(stop)
    try:
        yield start_clusters(
            ["primary", "backup"],
            base_dir=base_dir,
            brokers=1,
            security=security,
            sasl_users={"alice": "alice-secret"} if security == "sasl_ssl" else None,
        )
    finally:
        stop()
        atexit.unregister(stop)


@pytest.fixture
def spark_standalone(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[StandaloneCluster]:
    """A fresh Spark standalone cluster for one test: a master and 2 workers of 1 core each (about 8 s).

    Per test, not per session: a test may kill a worker (:meth:`StandaloneCluster.kill_worker`).
    Logs and the workers' work directories are under ``<tmp_path>/spark``. Parametrise indirectly
    with a dict of :class:`StandaloneCluster` keyword arguments for another shape, e.g.
    ``@pytest.mark.parametrize("spark_standalone", [{"cores": 2}], indirect=True)``.
    """
    shape = {"workers": 2, **getattr(request, "param", {})}
    cluster = StandaloneCluster(tmp_path / "spark", **shape)
    # Safety net if the session dies before the teardown runs (stop is idempotent).
    atexit.register(cluster.stop)
    try:
        with cluster:
            yield cluster
    finally:
        atexit.unregister(cluster.stop)
