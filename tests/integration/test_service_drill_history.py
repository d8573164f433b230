"""The drill history served by the metrics service, from a real broker to the page (issue #27).

Drill records (:func:`~mirrorspark.core.drills.encode_drill`, as ``mirrorspark drill`` writes them) are
produced to the compacted ``mm2-drills.<source>.internal`` of this test's own flow ``<source>->backup``
(a source alias of its own, so no other test's drills share the topic), with one corrupt record among
them. The service's feed reads backup and the real application is served by uvicorn in this process
(no Spark: drills need no aggregation). The test checks ``/api/v1/drills``, the flow's ``…/drills``,
the Prometheus lines of the newest drill and the dashboard's Drills panel in Debian's headless Chromium.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from helpers import admin, assert_eventually, create_topic, produce, unique_name
from playwright.sync_api import Browser, sync_playwright
from prometheus_client.parser import text_string_to_metric_families

from mirrorspark.config.parse import parse_config
from mirrorspark.core.drills import (
    DRILLS_PREFIX,
    DrillResult,
    GroupDrill,
    GroupPartitionDrill,
    PartitionRecoveryPoint,
    RecoveryPoint,
    encode_drill,
)
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.internal_topics import mirrorspark_topic
from mirrorspark.service.api import create_app
from mirrorspark.service.feed import Feed, Store

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
TOKEN = "drills-token-" + os.urandom(4).hex()
AUTH = {"Authorization": f"Bearer {TOKEN}"}
T0 = 1_790_000_000_000  # the first drill (epoch ms); one every 10 minutes


def result(source: str, i: int, records: int, seconds: float, *, executed: bool = False) -> DrillResult:
    """Drill ``i`` of ``source->backup``: ``records`` not yet copied, on partition 1 of ``orders``."""
    parts = (
        PartitionRecoveryPoint("orders", 0, 500, 500, 0, 0.0),
        PartitionRecoveryPoint("orders", 1, 800 + records, 800, records, seconds),
    )
    gps = tuple(
        GroupPartitionDrill(
            topic=f"{source}.orders",
            partition=p,
            source_topic="orders",
            committed=400,
            checkpoint_upstream=400,
            target_offset=390 + p,
            rereads=3 + p,
            skips=0,
            basis="exact",
            measured_rereads=(3 + p) if executed else None,
            measured_skips=0 if executed else None,
        )
        for p in (0, 1)
    )
    group = GroupDrill(
        "billing",
        gps,
        target_members=0,
        source_members=1,
        recovery_ms=180 if executed else None,
        records_read=110 if executed else None,
    )
    return DrillResult(
        flow=f"{source}->backup",
        source=source,
        target="backup",
        at=T0 + i * 600_000,
        executed=executed,
        recovery_point=RecoveryPoint(parts, gap_events=0, gap_records=0),
        groups=(group,),
        policy=None,
        duration_ms=900 + i,
    )


@dataclass
class Served:
    url: str
    source: str
    drills: list[DrillResult]

    def get(self, path: str, **params: Any) -> Any:
        r = httpx.get(self.url + path.lstrip("/"), params=params, headers=AUTH, timeout=10)
        assert r.status_code == 200, (path, r.status_code, r.text)
        return r.json() if "json" in r.headers.get("content-type", "") else r.text


@pytest.fixture
def served(local_clusters: LocalClusters) -> Iterator[Served]:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    source = unique_name("drills")
    config = parse_config(
        {
            "clusters": f"{source}, backup",
            f"{source}.bootstrap.servers": str(p),
            "backup.bootstrap.servers": str(b),
            f"{source}->backup.enabled": "true",
            "mirrorspark.service.auth.token": TOKEN,
        }
    )
    topic = mirrorspark_topic(DRILLS_PREFIX, None, source)
    create_topic(b, topic, partitions=1, config={"cleanup.policy": "compact"})
    drills = [
        result(source, 0, 1200, 42.0),
        result(source, 1, 300, 7.5),
        result(source, 2, 40, 1.5, executed=True),
    ]
    records = [dict(zip(("key", "value"), encode_drill(d), strict=True)) for d in drills[:2]]
    records.append({"key": b'{"flow":"x","at":1}', "value": b"{not a drill"})  # skipped with a warning
    records.append(dict(zip(("key", "value"), encode_drill(drills[2]), strict=True)))
    produce(b, topic, records)
    store = Store("backup")
    feed = Feed(config, "backup", store, metrics_topic=unique_name("no-metrics") + ".internal")
    app = create_app(store, config, token=TOKEN)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="test-drills-http", daemon=True)
    feed.start()
    thread.start()
    try:
        assert_eventually(lambda: server.started, timeout_s=90, message="uvicorn did not start")
        yield Served(f"http://127.0.0.1:{sock.getsockname()[1]}/", source, drills)
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
        feed.stop()
        cleaner = admin(b)  # kept referenced until the deletion is acknowledged
        cleaner.delete_topics([topic])[topic].result(30)


@pytest.fixture
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: `make install` installs it (apt-get install chromium)")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            yield b
        finally:
            b.close()


def test_the_service_serves_the_drill_history(served: Served, browser: Browser, tmp_path: Path) -> None:
    flow = f"{served.source}->backup"

    def listed() -> list[dict[str, Any]]:
        mine = [d for d in served.get("api/v1/drills", limit=1000) if d["flow"] == flow]
        assert len(mine) == 3, mine
        return mine

    every = assert_eventually(listed, timeout_s=60, interval_s=0.3, message="the drills in GET /api/v1/drills")
    assert [d["at_ms"] for d in every] == [T0 + 1_200_000, T0 + 600_000, T0]  # newest first, corrupt one skipped
    one = served.get(f"api/v1/replications/{served.source}/backup/drills")
    assert one == every
    newest = one[0]
    assert newest["executed"] and newest["duration_ms"] == 902
    assert newest["recovery_point"]["records"] == 40 and newest["recovery_point"]["seconds"] == 1.5
    (g,) = newest["groups"]
    assert (g["group"], g["rereads"], g["measured_rereads"], g["skips"], g["recovery_ms"]) == ("billing", 7, 7, 0, 180)
    assert [d["recovery_point"]["records"] for d in one] == [40, 300, 1200]  # the recovery point over time
    r = httpx.get(served.url + "api/v1/replications/nowhere/backup/drills", headers=AUTH, timeout=10)
    assert r.status_code == 404 and r.headers["content-type"].startswith("application/problem+json")

    families = {f.name: f for f in text_string_to_metric_families(served.get("metrics"))}

    def value(name: str, **labels: str) -> float:
        want = {"source": served.source, "target": "backup", **labels}
        (s,) = [s for s in families[name].samples if s.labels == want]
        return float(s.value)

    assert value("mirrorspark_recovery_point_records") == 40.0
    assert value("mirrorspark_recovery_point_seconds") == 1.5
    assert value("mirrorspark_drill_timestamp_seconds") == (T0 + 1_200_000) / 1000
    assert value("mirrorspark_drill_rereads", group="billing") == 7.0
    assert value("mirrorspark_drill_measured_rereads", group="billing") == 7.0
    assert value("mirrorspark_drill_skips", group="billing") == 0.0

    page = browser.new_page(viewport={"width": 1360, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(served.url + "?refresh=2")
    field = page.get_by_placeholder("bearer token")
    field.wait_for(state="visible", timeout=120_000)
    field.fill(TOKEN)
    page.get_by_role("button", name="Connect").click()
    panel = f"#drills .drill-flow[data-flow='{flow}']"

    def shown() -> bool:
        assert page.locator(panel).count() == 1 and page.locator(panel).is_visible(), "no Drills panel of the flow"
        records = page.locator(f"{panel} .drill-figures [data-col='rp-records'] .value").inner_text().strip()
        assert records == "40", records
        seconds = page.locator(f"{panel} .drill-figures [data-col='rp-seconds'] .value").inner_text().strip()
        assert seconds == "1.5 s", seconds
        return True

    assert_eventually(shown, timeout_s=90, interval_s=0.5, message="the recovery point on the page")
    spark = page.locator(f"{panel} svg.spark[data-series='rp-records'] polyline")
    assert len((spark.get_attribute("points") or "").split()) == 3  # one point per drill
    history = page.locator(f"{panel} table.drill-history tbody tr")
    assert history.count() == 3
    assert [history.nth(i).locator("[data-col='rp-records']").inner_text() for i in range(3)] == ["40", "300", "1,200"]
    group = f"{panel} tr[data-drill-group='billing']"
    assert page.locator(f"{group} [data-col='rereads']").inner_text() == "7"
    assert page.locator(f"{group} [data-col='measured-rereads']").inner_text() == "7"
    assert page.locator(f"{group} [data-col='recovery-ms']").inner_text() == "180 ms"
    page.screenshot(path=str(tmp_path / "drills.png"), full_page=True)
    assert errors == [], errors
