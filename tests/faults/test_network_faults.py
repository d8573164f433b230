"""Network faults (issue #12): the network to the target cut mid-transaction.

A 1-broker source and a 1-broker target reached through a TCP proxy in the test process
(:mod:`proxy`): the target's client listener is advertised at the proxy, so every connection of
mirrorspark to the target goes through it. While records flow, and while the exactly-once flow's
copy tasks hold an open transaction with records in it, the proxy drops every connection and
refuses new ones for the outage, then lets them through again. Both modes run at once
(:mod:`faultkit`); nothing may be lost, ``read_committed`` sees no duplicate of the exactly-once
flow, and the at-least-once flow's duplicates stay within one flush interval's worth per restart.
"""

from __future__ import annotations

import atexit
import time
from collections.abc import Iterator

import pytest
from faultkit import (
    SOURCE_ALIAS,
    TARGET_ALIAS,
    copy_more,
    drained,
    finish,
    remote_topic,
    restarts_by_mode,
    resume_seconds,
    scenario,
    size,
    stable_ends,
)
from helpers import assert_eventually
from proxy import TcpProxy, behind_proxy
from pyspark.sql import SparkSession

from mirrorspark.kafka.local.clusters import start_clusters, stop_clusters
from mirrorspark.kafka.local.model import LocalCluster, LocalClusters

# A scenario at full size runs for minutes, and a loaded machine starts brokers and Spark slowly.
pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.timeout(1800)]

EOS_FLOW = f"{SOURCE_ALIAS['exactly-once']}->{TARGET_ALIAS['exactly-once']}"
TRANSACTION_MS = 3000
"""The exactly-once flow's transactions here: one per 3 s (``transaction.boundary=interval``), so
that a cut lands inside one holding records."""


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalClusters]:
    """A source and a target cluster, one broker each."""
    base_dir = tmp_path_factory.mktemp("faults-net")

    def stop() -> None:
        stop_clusters(base_dir)

    atexit.register(stop)
    try:
        yield start_clusters(["src", "tgt"], base_dir=base_dir, brokers=1, timeout_s=300)
    finally:
        stop()
        atexit.unregister(stop)


@pytest.fixture(scope="module")
def proxied(clusters: LocalClusters) -> Iterator[tuple[LocalCluster, TcpProxy]]:
    """The target as mirrorspark sees it (through the proxy), and the proxy."""
    with behind_proxy(clusters, "tgt") as (target, proxy):
        yield target, proxy


def open_transaction(bootstrap: str, topic: str) -> bool:
    """Whether the exactly-once remote topic holds records of a transaction not yet committed."""
    remote = remote_topic("exactly-once", topic)
    return stable_ends(bootstrap, remote, committed=False) > stable_ends(bootstrap, remote, committed=True)


def test_the_network_to_the_target_is_cut_mid_transaction(
    clusters: LocalClusters, proxied: tuple[LocalCluster, TcpProxy], spark: SparkSession
) -> None:
    (target, proxy), direct = proxied, clusters.bootstrap("tgt")
    sz = size()
    extra = {
        f"{EOS_FLOW}.transaction.boundary": "interval",
        f"{EOS_FLOW}.transaction.boundary.interval.ms": str(TRANSACTION_MS),
    }
    with scenario(clusters.cluster("src"), target, spark, prefix="faults-cut", max_s=600, **extra) as (
        topic,
        work,
        r,
    ):
        assert proxy.accepted > 0
        assert_eventually(
            lambda: open_transaction(direct, topic), timeout_s=60, interval_s=0.05, message="no open transaction"
        )
        dropped = proxy.cut(sz.outage_s)
        restored_at = time.monotonic()
        resumed = resume_seconds(direct, topic, restored_at)
        copy_more(direct, topic, int(sz.rate * sz.settle_s))
        expected = work.stop()
        outcomes = drained(direct, topic, expected)
        restarts = restarts_by_mode(r)
    finish(
        f"network to the target cut for {sz.outage_s:.0f} s mid-transaction (TCP proxy drops and refuses)",
        expected=expected,
        outcomes=outcomes,
        resumed=resumed,
        restarts=restarts,
        unreachable_s=sz.outage_s,
        notes=f"{dropped} connections dropped; exactly-once transactions of {TRANSACTION_MS} ms; resume from reopening",
    )
