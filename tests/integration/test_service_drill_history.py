"""The drill and verify histories served by the metrics service, from a real broker to the page (#27, #42).

Drill records (:func:`~mirrorspark.core.drills.encode_drill`, as ``mirrorspark drill`` writes them) are
produced to the compacted ``mm2-drills.<source>.internal`` of this module's own flow ``<source>->backup``
(a source alias of its own, so no other test's records share the topics), with one corrupt record among
them; verify runs are written by :func:`~mirrorspark.client.verify_history.record_verify_run` (as
``mirrorspark verify`` and ``run``'s sampling write them) to ``mm2-verify.<source>.internal``, with a corrupt
record and a tombstone among them. The service's feed reads backup and the real application is served by
uvicorn in this process (no Spark: histories need no aggregation); both tests share it and one Chromium
(Debian's, headless). Each checks its history's two endpoints, its Prometheus lines and its dashboard panel.
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
from playwright.sync_api import Browser, Page, sync_playwright
from prometheus_client.parser import text_string_to_metric_families

from mirrorspark.client.context import FlowContext
from mirrorspark.client.verify_history import record_verify_run
from mirrorspark.config.model import MirrorConfig
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
from mirrorspark.core.verify.history import VERIFY_PREFIX, VerifyRun, encode_verify_run
from mirrorspark.core.verify.report import Finding, PartitionCounts, PartitionReport, VerifyReport
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


def verify_run(source: str, i: int, *, trigger: str = "command", divergent: bool = False) -> VerifyRun:
    """Verify run ``i`` of ``source->backup`` over ``orders``; ``divergent``: three findings on partition 1."""
    flow = f"{source}->backup"
    findings = (
        (
            Finding("missing", 805, 805),
            Finding("different", 806, 806, field="value"),
            Finding("duplicated", 807, 808, related_offset=807),
        )
        if divergent
        else ()
    )
    parts = (
        PartitionReport(flow, "orders", 0, f"{source}.orders", PartitionCounts(500, digests=1)),
        PartitionReport(
            flow, "orders", 1, f"{source}.orders", PartitionCounts(797, unverified_offsets=12, digests=2), findings
        ),
    )
    at = T0 + i * 300_000
    return VerifyRun(
        flow=flow,
        source=source,
        target="backup",
        at=at,
        trigger=trigger,  # type: ignore[arg-type]
        duration_ms=2000 + i,
        report=VerifyReport(at, parts),
        last=1000 if trigger == "sampling" else None,
    )


@dataclass
class Served:
    url: str
    source: str
    drills: list[DrillResult]
    runs: list[VerifyRun]

    def get(self, path: str, **params: Any) -> Any:
        r = httpx.get(self.url + path.lstrip("/"), params=params, headers=AUTH, timeout=10)
        assert r.status_code == 200, (path, r.status_code, r.text)
        return r.json() if "json" in r.headers.get("content-type", "") else r.text


def write_verify_runs(config: MirrorConfig, source: str, backup: str) -> tuple[str, list[VerifyRun]]:
    """Write three runs (the second then deleted by a tombstone) and a corrupt record; return the topic, the runs."""
    ctx = FlowContext.build(config, config.flow(source, "backup"))
    runs = [verify_run(source, 0), verify_run(source, 1, trigger="sampling"), verify_run(source, 2, divergent=True)]
    topic = record_verify_run(ctx, runs[0])  # creates the topic (compacted, 1 partition)
    assert topic == mirrorspark_topic(VERIFY_PREFIX, None, source)
    record_verify_run(ctx, runs[1])
    deleted, _ = encode_verify_run(runs[1])
    produce(backup, topic, [{"key": b'{"flow":"x","at":1}', "value": b"{not a run"}, {"key": deleted, "value": None}])
    record_verify_run(ctx, runs[2])
    return topic, runs


@pytest.fixture(scope="module")
def served(local_clusters: LocalClusters) -> Iterator[Served]:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    source = unique_name("drills")
    config = parse_config(
        {
            "clusters": f"{source}, backup",
            f"{source}.bootstrap.servers": str(p),
            "backup.bootstrap.servers": str(b),
            f"{source}->backup.enabled": "true",
            "checkpoints.topic.replication.factor": "1",
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
    verify_topic, runs = write_verify_runs(config, source, b)
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
        yield Served(f"http://127.0.0.1:{sock.getsockname()[1]}/", source, drills, runs)
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
        feed.stop()
        cleaner = admin(b)  # kept referenced until the deletion is acknowledged
        for done in cleaner.delete_topics([topic, verify_topic]).values():
            done.result(30)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: `make install` installs it (apt-get install chromium)")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            yield b
        finally:
            b.close()


def open_page(browser: Browser, url: str) -> tuple[Page, list[str]]:
    """Open the dashboard and enter the token, as a person would; return the page and its console errors."""
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url + "?refresh=2")
    field = page.get_by_placeholder("bearer token")
    field.wait_for(state="visible", timeout=120_000)
    field.fill(TOKEN)
    page.get_by_role("button", name="Connect").click()
    return page, errors


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

    page, errors = open_page(browser, served.url)
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
    page.close()


def test_the_service_serves_the_verify_history(served: Served, browser: Browser, tmp_path: Path) -> None:
    flow = f"{served.source}->backup"
    oldest, _deleted, newest = served.runs

    def listed() -> list[dict[str, Any]]:
        mine = [r for r in served.get("api/v1/verifications", limit=1000) if r["flow"] == flow]
        assert [r["at_ms"] for r in mine] == [newest.at, oldest.at], mine  # the tombstone read too
        return mine

    every = assert_eventually(listed, timeout_s=60, interval_s=0.3, message="the runs in GET /api/v1/verifications")
    one = served.get(f"api/v1/replications/{served.source}/backup/verifications")
    assert one == every
    assert [r["trigger"] for r in one] == ["command", "command"]
    doc = one[0]
    assert (doc["verified"], doc["divergent"], doc["clean"], doc["unverified_offsets"]) == (1297, 3, False, 12)
    assert doc["findings_by_kind"] == {
        "missing": 1,
        "unexpected": 0,
        "different": 1,
        "duplicated": 1,
        "out_of_order": 0,
    }
    p0, p1 = doc["partitions"]
    assert (p0["divergent"], p1["target_topic"], p1["digests"]) == (0, f"{served.source}.orders", 2)
    assert [
        (f["kind"], f["source_offset"], f["target_offset"], f["field"], f["related_offset"]) for f in p1["findings"]
    ] == [
        ("missing", 805, 805, None, None),
        ("different", 806, 806, "value", None),
        ("duplicated", 807, 808, None, 807),
    ]
    assert one[1]["clean"] and one[1]["divergent"] == 0 and one[1]["verified"] == 1297
    lean = served.get(f"api/v1/replications/{served.source}/backup/verifications", limit=1, partitions="false")
    assert lean == [{**doc, "partitions": None}]
    r = httpx.get(served.url + "api/v1/replications/nowhere/backup/verifications", headers=AUTH, timeout=10)
    assert r.status_code == 404 and r.headers["content-type"].startswith("application/problem+json")

    families = {f.name: f for f in text_string_to_metric_families(served.get("metrics"))}

    def value(name: str, **labels: str) -> float:
        want = {"source": served.source, "target": "backup", **labels}
        (s,) = [s for s in families[name].samples if s.labels == want]
        return float(s.value)

    assert value("mirrorspark_verify_verified_records") == 1297.0
    assert value("mirrorspark_verify_divergent_records") == 3.0
    assert value("mirrorspark_verify_timestamp_seconds") == newest.at / 1000
    assert value("mirrorspark_verify_finding_records", kind="different") == 1.0
    assert value("mirrorspark_verify_finding_records", kind="out_of_order") == 0.0
    assert value("mirrorspark_verify_unverified_offsets") == 12.0

    page, errors = open_page(browser, served.url)
    panel = f"#verifications .verify-flow[data-flow='{flow}']"

    def shown() -> bool:
        assert page.locator(panel).count() == 1 and page.locator(panel).is_visible(), "no Verification panel"
        divergent = page.locator(f"{panel} [data-col='divergent'] .value")
        assert divergent.inner_text().strip() == "3" and "bad" in (divergent.get_attribute("class") or "")
        assert page.locator(f"{panel} table.verify-findings tbody tr").count() == 3
        return True

    assert_eventually(shown, timeout_s=90, interval_s=0.5, message="the newest verify run on the page")
    assert page.locator(f"{panel} [data-col='verified'] .value").inner_text().strip() == "1,297"
    assert page.locator(f"{panel} [data-col='trigger'] .value").inner_text().strip() == "command"
    rows = page.locator(f"{panel} table.verify-findings tbody tr")
    first = [rows.nth(0).locator(f"[data-col='{c}']").inner_text() for c in ("kind", "source-offset", "target-offset")]
    assert first == ["missing", "805", "805"]
    assert rows.nth(1).locator("[data-col='detail']").inner_text() == "field value"
    assert rows.nth(2).locator("[data-col='detail']").inner_text() == "related offset 807"
    history = page.locator(f"{panel} table.verify-history tbody tr")
    assert [history.nth(i).locator("[data-col='divergent']").inner_text() for i in range(history.count())] == ["3", "0"]
    page.screenshot(path=str(tmp_path / "verifications.png"), full_page=True)
    assert errors == [], errors
    page.close()
