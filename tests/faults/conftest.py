"""Fixtures of the fault suite: scenarios that kill, pause and cut what mirrorspark depends on.

Every test here is marked ``faults`` and ``integration``; each starts the clusters it breaks
(never the session's shared ones). The integration tier's helpers (``helpers``, ``test_replication``'s
config builders, ``standalone``) are importable from here, and so are this folder's ``figures``
(what a scenario survived) and ``scenario`` (feed, tail, exact counts, ``mirrorspark run`` as a process);
Schema Registries come from :mod:`registry_support` (``start_registry``: fresh ones for a test).
"""

from __future__ import annotations

import atexit
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from mirrorspark.kafka.local.clusters import start_clusters, stop_clusters
from mirrorspark.kafka.local.model import LocalClusters
from registry_support import registry_factory, schema_registries, start_registry

__all__ = ["registry_factory", "schema_registries", "start_registry"]  # fixtures of registry_support


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of ``tests/faults/`` as ``faults`` and ``integration``.

    Under ``make test`` (pytest-xdist) the scenarios run one at a time on one worker, beside the
    integration tier on the others (``tests/conftest.py``): each breaks brokers and Spark of its own
    and counts duplicates against a bound in time, which two scenarios sharing the cores would stretch.
    """
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.faults)
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def fault_clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalClusters]:
    """``primary`` and ``backup`` (1 broker each) for the fault suite's modules that kill processes, not brokers.

    Not the integration tier's session pair: a fault scenario stops these brokers for a while (SIGSTOP, then
    SIGCONT). Started once for the fault worker (the suite's critical path), not once per module; tests keep out
    of each other's way with unique topic names; a scenario that breaks or restarts a broker starts clusters of
    its own instead.
    """
    base_dir = tmp_path_factory.mktemp("fault-clusters")

    def stop() -> None:
        stop_clusters(base_dir)

    atexit.register(stop)  # safety net if the session dies before the teardown (stop_clusters is idempotent)
    try:
        # generous start deadline (a bound): brokers start slowly on a loaded machine
        yield start_clusters(["primary", "backup"], base_dir=base_dir, brokers=1, timeout_s=300)
    finally:
        stop()
        atexit.unregister(stop)


@pytest.fixture(autouse=True)
def _info_logs(caplog: pytest.LogCaptureFixture) -> None:
    """Capture mirrorspark's INFO logs (lease taken, lost and taken again; tasks restarted): a failing
    scenario then shows what the flows did, not only their warnings."""
    caplog.set_level(logging.INFO, logger="mirrorspark")
