"""Parallel catch-up of one partition across a long link (#43 item 3), on real brokers behind the latency proxy.

One partition with a backlog, a link whose window bounds one connection, ``replication.catch.up.readers = 4``: the
copy is byte-exact, once, in order (exactly once too, as a ``read_committed`` consumer sees it), the offset syncs
translate exactly, and the link carried more per second than one connection can: the readers' own connections did
the fetching.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest
from helpers import clusters_behind_a_link, consume_all, create_topic, produce, unique_name
from pyspark.sql import SparkSession

from copy_check import assert_copy
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.kafka.local.latency_proxy import CHUNK_BYTES, LatencyProxy, LinkShape
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.records import OffsetSync
from mirrorspark.replication.driver import Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

LINK = LinkShape(delay_ms=100.0, window_bytes=256 * 1024)
"""200 ms RTT; one connection carries at most about ``window + CHUNK_BYTES`` (what the proxy reads at once) per RTT."""

RECORDS = 60_000
VALUE_BYTES = 200
RATE_WINDOW_S = 2.0


def one_connection_bytes_per_s(shape: LinkShape, seconds: float) -> float:
    """The most one connection can carry per second over ``seconds`` (the proxy's window, invariant 3)."""
    rtt = 2 * shape.delay_ms / 1000
    return (shape.window_bytes + CHUNK_BYTES) * (seconds / rtt + 1) / seconds


@pytest.fixture(scope="module")
def far(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalClusters, LatencyProxy]]:
    """``primary`` behind the link, and ``backup``, for this module."""
    with clusters_behind_a_link(tmp_path_factory.mktemp("catch-up-clusters"), LINK) as far:
        yield far


class RateProbe:
    """Samples the bytes the link carried toward the clients; the highest rate over :data:`RATE_WINDOW_S`."""

    def __init__(self, link: LatencyProxy) -> None:
        self.link = link
        self.samples: list[tuple[float, int]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.1):
            self.samples.append((time.monotonic(), self.link.bytes_carried[1]))

    def __enter__(self) -> RateProbe:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()

    def highest(self) -> float:
        best = 0.0
        for i, (t0, b0) in enumerate(self.samples):
            for t1, b1 in self.samples[i:]:
                if t1 - t0 >= RATE_WINDOW_S:
                    best = max(best, (b1 - b0) / (t1 - t0))
                    break
        return best


@pytest.mark.parametrize("eos", [False, True], ids=["at-least-once", "exactly-once"])
def test_one_partition_is_caught_up_in_parallel_exactly_and_in_order(
    far: tuple[LocalClusters, LatencyProxy], spark: SparkSession, eos: bool
) -> None:
    clusters, link = far
    primary = clusters.cluster("primary")
    backup = clusters.bootstrap("backup")
    topic = unique_name("catch-up")
    create_topic(primary.bootstrap_servers, topic, partitions=1)
    pad = b"x" * (VALUE_BYTES - 8)
    produce(primary.bootstrap_servers, topic, [{"value": b"%08d" % i + pad, "partition": 0} for i in range(RECORDS)])
    extra = {
        "topics": topic,
        "primary.bootstrap.servers": primary.wan_bootstrap_servers,
        "replication.catch.up.readers": "4",
        "replication.catch.up.backlog.records": "10000",
        "offset.lag.max": "100",
        **({"backup.exactly.once.source.support": "enabled"} if eos else {}),
    }
    cfg = parse_config(parse_properties(clusters.mm2_properties([("primary", "backup")], extra=extra)))
    with RateProbe(link) as probe:
        Replicator(cfg, spark).run(until_caught_up=True)
    source = consume_all(primary.bootstrap_servers, topic)
    target = consume_all(backup, f"primary.{topic}", read_committed=True)
    assert_copy(source, target)  # byte-exact, each record once, in order
    assert not [v for v, n in Counter(r["value"] for r in target).items() if n > 1]
    # offset syncs translate exactly: each points at the copy of its record
    syncs = [
        OffsetSync.decode(r["key"], r["value"])
        for r in consume_all(primary.bootstrap_servers, "mm2-offset-syncs.backup.internal")
    ]
    mine = [s for s in syncs if s.topic == topic]
    assert mine and max(s.upstream_offset for s in mine) == RECORDS - 1
    src = {r["offset"]: r["value"] for r in source}
    dst = {r["offset"]: r["value"] for r in target}
    assert all(src[s.upstream_offset] == dst[s.downstream_offset] for s in mine)
    # more than one connection fetched: the link carried more per second than one connection can
    cap = one_connection_bytes_per_s(LINK, RATE_WINDOW_S)
    assert probe.highest() > 1.3 * cap, (
        f"{probe.highest() / 1e6:.2f} MB/s over the link, one connection: {cap / 1e6:.2f}"
    )
