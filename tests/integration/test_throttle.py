"""``replication.throttled.rate`` on a running flow: the limit holds, and follows ``control throttle`` and the REST API.

A flow ``primary->backup`` (two copy tasks) runs in-process over a backlog of 1 KiB records; a sampler
reads the remote topic's end offsets every 0.2 s, so the bytes copied over any window are known. Only
upper bounds are asserted (the limit plus the buckets' burst), never a lower one but "it moved": a slow
machine copies less, never more. The throttle record is the flow's own on the shared control topic, so
the test sets it back to the config's at its end (the flows of other tests read the same topic).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers import assert_eventually, create_topic, end_offsets, produce, unique_name
from pyspark.sql import SparkSession
from test_replication import running

from mirrorspark.client.control_store import ControlStore
from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.core.throttle import BURST_S
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.service.api import create_app
from mirrorspark.service.feed import Store

pytestmark = [pytest.mark.integration, pytest.mark.spark]

LIMIT = 1_000_000
"""The flow's replication.throttled.rate (bytes/s)."""
LOWER = 300_000
"""The limit set live by ``control throttle`` (bytes/s)."""
RECORD_BYTES = 8 + 1024
"""Key and value of every record (no headers): the bytes the throttle counts per record."""
RECORDS = 20_000
"""20 MB: still a backlog through the lowered limit's windows (the source is written before the flow starts)."""
WINDOW_S = 5.0
SLACK = 1.05


class Sampler:
    """Samples ``(monotonic s, records on the remote topic)`` every 0.2 s on a thread of its own."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(bootstrap, topic), daemon=True)
        self._thread.start()

    def _run(self, bootstrap: str, topic: str) -> None:
        while not self._stop.wait(0.2):
            try:
                n = sum(end for _, end in end_offsets(bootstrap, topic).values())
            except Exception:  # the remote topic is not created yet
                continue
            self.samples.append((time.monotonic(), n))

    def copied(self) -> int:
        return self.samples[-1][1] if self.samples else 0

    def worst_rate(self, since: float, until: float = float("inf")) -> float:
        """The highest rate (bytes/s) over any window of at least :data:`WINDOW_S` inside ``[since, until]``."""
        inside = [(t, n) for t, n in self.samples if since <= t <= until]
        worst = 0.0
        for i, (t0, n0) in enumerate(inside):
            j = next((j for j in range(i, len(inside)) if inside[j][0] - t0 >= WINDOW_S), None)
            if j is not None:
                t1, n1 = inside[j]
                worst = max(worst, (n1 - n0) * RECORD_BYTES / (t1 - t0))
        return worst

    def slowed_after(self, at: float, rate: float) -> float | None:
        """Seconds from ``at`` to the first 1 s window after it at ``rate`` bytes/s or less (``None``: none)."""
        inside = [(t, n) for t, n in self.samples if t >= at]
        for i, (t0, n0) in enumerate(inside):
            j = next((j for j in range(i, len(inside)) if inside[j][0] - t0 >= 1.0), None)
            if j is not None and (inside[j][1] - n0) * RECORD_BYTES / (inside[j][0] - t0) <= rate:
                return t0 - at
        return None

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


@pytest.fixture
def flow_config(local_clusters: LocalClusters, tmp_path: Path) -> Iterator[tuple[MirrorConfig, Path, str]]:
    topic = unique_name("throttle")
    text = local_clusters.mm2_properties(
        [("primary", "backup")],
        extra={"topics": topic, "tasks.max": "2", "replication.throttled.rate": str(LIMIT)},
    )
    path = tmp_path / "mm2.properties"
    path.write_text(text)
    cfg = parse_config(parse_properties(text))
    try:
        yield cfg, path, topic
    finally:
        with ControlStore(cfg, "primary", "backup") as store:
            store.set_throttle(None)  # the config's again: other tests' flows primary->backup are not throttled


def test_the_throttle_holds_and_follows_live_changes(
    local_clusters: LocalClusters, spark: SparkSession, flow_config: tuple[MirrorConfig, Path, str]
) -> None:
    cfg, props, topic = flow_config
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    create_topic(p, topic, partitions=2)
    produce(p, topic, [{"key": b"k%07d" % i, "value": b"v" * 1024, "partition": i % 2} for i in range(RECORDS)])
    sampler = Sampler(b, f"primary.{topic}")
    burst = LIMIT * BURST_S
    try:
        with running(cfg, spark) as r:
            assert_eventually(lambda: sampler.copied() > 0, timeout_s=60, message="nothing copied")
            began = time.monotonic()
            time.sleep(WINDOW_S + 2)
            under_config = sampler.worst_rate(began)
            assert 0 < under_config <= SLACK * LIMIT + burst / WINDOW_S, under_config

            # a lower limit, live, by the command operators run
            asked = time.monotonic()  # the command's start-up included: an upper bound of the change's delay
            command = ["control", "throttle", str(props), "--source", "primary", "--target", "backup"]
            out = subprocess.run(
                [sys.executable, "-m", "mirrorspark", *command, "--rate", str(LOWER)],
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            ).stdout
            assert f"throttle in effect for flow primary->backup: {LOWER} bytes/s (from control)" in out, out
            changed = time.monotonic()
            flow = r.flows[0]
            assert_eventually(lambda: flow.throttle.limit == LOWER, timeout_s=5, message="the change was not read")
            time.sleep(3 + WINDOW_S + 1)
            lowered = sampler.worst_rate(changed + 3)
            slowed = sampler.slowed_after(asked, SLACK * LOWER)
            assert 0 < lowered <= SLACK * LOWER + LOWER * BURST_S / WINDOW_S, lowered
            assert r.worker is not None
            sent, held = r.worker.grants.throttle_totals(flow.name)
            assert sent > 0 and held > 0, (sent, held)

            # no limit, through the REST API: the backlog finishes
            with TestClient(create_app(Store("backup"), cfg)) as api:
                answer = api.put("/api/v1/replications/primary/backup/throttle", json={"rate": 0})
                assert answer.status_code == 200, answer.text
                assert answer.json()["limit_bytes_per_s"] == 0 and answer.json()["origin"] == "control"
                assert api.get("/api/v1/replications/primary/backup/throttle").json()["limit_bytes_per_s"] == 0
            assert_eventually(lambda: sampler.copied() == RECORDS, timeout_s=60, message="the backlog did not finish")
    finally:
        sampler.stop()
    print(
        f"\nthrottle accuracy: {under_config / LIMIT:.3f} (1 MB/s), {lowered / LOWER:.3f} (300 kB/s); the copy at "
        f"the new limit {slowed if slowed is None else round(slowed, 1)} s after the command started"
    )
