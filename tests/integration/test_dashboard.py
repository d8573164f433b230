"""The replications dashboard as a person sees it: headless Chromium (Debian's) driven by Playwright.

The first test serves a live flow primary->backup: ``mirrorspark service`` runs in its own
process with a bearer token, a workload is produced while the page is open (until the page
shows its throughput: under load the first figure can come after any fixed workload ended), and the page must
show both clusters and the flow's edge, the topic row with non-zero throughput, every record
copied and lag falling to 0, the consumer group's checkpoint, charts, and no console error. With
``MIRRORSPARK_SCREENSHOT=docs/dashboard.png`` it saves the screenshot of docs/monitoring.md there.

The second draws a graph no single live flow makes: an API (the real application, served by
uvicorn) over a store holding A->B (local), B->A (active/active, seen through A's replicated
heartbeats) and C->A (so C->A->B is multi-hop).
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn
from helpers import assert_eventually, create_topic, end_offsets, produce, unique_name
from live_service import commit_group, served_flow
from playwright.sync_api import Browser, Page, sync_playwright
from pyspark.sql import SparkSession

from mirrorspark.config.parse import parse_config
from mirrorspark.core.lifetime_totals import TopicTotals, encode_totals
from mirrorspark.core.progress_records import (
    FlowMetrics,
    FlowSchemas,
    GroupMetrics,
    GroupPartition,
    PartitionLag,
    TopicLag,
    encode_flow_metrics,
    encode_flow_schemas,
    encode_group_metrics,
    encode_topic_lag,
)
from mirrorspark.core.schemas.figures import SchemaSyncFigures
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.records import Heartbeat
from mirrorspark.service.api import create_app
from mirrorspark.service.feed import Store

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
TOKEN = "dash-token-" + os.urandom(4).hex()
BATCH = 100  # the workload: 100 records every 0.5 s until the page shows throughput (at most 360 batches)
BATCHES = 360
VIEWPORT = {"width": 1360, "height": 900}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: `make install` installs it (apt-get install chromium)")
    with sync_playwright() as pw:
        # Debian's browser, never Playwright's own download; as root Chromium needs --no-sandbox
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            yield b
        finally:
            b.close()


@dataclass
class Dashboard:
    page: Page
    errors: list[str]

    def cell(self, row: str, col: str) -> str:
        return self.page.locator(f"{row} [data-col='{col}']").first.inner_text().strip()

    def visible(self, selector: str) -> bool:
        loc = self.page.locator(selector)
        return loc.count() > 0 and loc.first.is_visible()


def open_dashboard(browser: Browser, url: str, token: str) -> Dashboard:
    """Open the page and enter the token in its form, as a person would."""
    page = browser.new_page(viewport=VIEWPORT)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url + "?refresh=2")
    field = page.get_by_placeholder("bearer token")
    field.wait_for(state="visible", timeout=120_000)
    field.fill(token)
    page.get_by_role("button", name="Connect").click()
    return Dashboard(page, errors)


def number(text: str) -> float:
    return float(text.replace(",", "").split()[0])


@dataclass
class LiveFlow:
    url: str
    topic: str
    group: str
    primary: str
    backup: str


@pytest.fixture(scope="module")
def live_flow(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveFlow]:
    tmp = tmp_path_factory.mktemp("dashboard")
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic, group = unique_name("orders"), unique_name("billing")
    create_topic(p, topic, partitions=3)
    with served_flow(local_clusters, spark, tmp, topic=topic, group=group, token=TOKEN) as url:
        yield LiveFlow(url, topic, group, str(p), str(b))


@pytest.mark.spark
def test_the_dashboard_shows_a_live_flow(
    live_flow: LiveFlow, local_clusters: LocalClusters, browser: Browser, tmp_path: Path
) -> None:
    t0 = time.monotonic()
    dash = open_dashboard(browser, live_flow.url, TOKEN)
    page, topic_row = dash.page, f"tr[data-topic='{live_flow.topic}']"
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")

    def graph() -> bool:
        for alias in ("primary", "backup"):
            assert dash.visible(f"#graph g.node[data-cluster='{alias}']"), alias
            assert page.locator(f"#graph g.node[data-cluster='{alias}'] text.alias").text_content() == alias
        edge = page.locator("#graph g.edge[data-flow='primary->backup']")
        assert edge.count() == 1 and edge.is_visible(), "no edge primary->backup"
        assert edge.get_attribute("data-state") == "running"
        assert "running" in (edge.text_content() or "")
        return True

    assert_eventually(graph, timeout_s=90, interval_s=0.5, message="the graph's clusters and flow edge")
    assert page.get_by_text("replications into backup").is_visible()

    stop = threading.Event()
    produced = [0]

    def workload() -> None:
        for i in range(BATCHES):
            if stop.is_set():
                return
            produce(p, live_flow.topic, [{"value": f"order-{i}-{j}".encode() * 8} for j in range(BATCH)])
            produced[0] += BATCH
            stop.wait(0.5)

    producer = threading.Thread(target=workload, name="test-dashboard-workload", daemon=True)
    producer.start()
    try:

        def flowing() -> float:
            assert dash.visible(topic_row), "no topic row"
            rate = dash.cell(topic_row, "records-per-s")
            assert rate not in ("—", "0"), f"throughput {rate}"
            return number(rate)

        rate = assert_eventually(flowing, timeout_s=180, interval_s=0.5, message="non-zero throughput in the topic row")
        assert rate > 0
    finally:
        stop.set()
        producer.join(60)
    total = produced[0]
    remote = f"primary.{live_flow.topic}"
    assert_eventually(
        lambda: sum(hi - lo for lo, hi in end_offsets(b, remote).values()) >= total,
        timeout_s=60,
        message="the workload was not copied",
    )
    commit_group(p, live_flow.topic, live_flow.group, {0: 200, 1: 150})

    def caught_up() -> bool:
        assert number(dash.cell(topic_row, "records-copied")) == total, dash.cell(topic_row, "records-copied")
        assert dash.cell(topic_row, "lag") == "0", f"lag {dash.cell(topic_row, 'lag')}"
        assert dash.cell(topic_row, "remote-topic") == remote
        flow_lag = dash.cell("#flows tr[data-flow='primary->backup']", "lag")
        assert flow_lag == "0", f"flow lag {flow_lag}; topics {page.locator('#flow-details').inner_text()!r}"
        group_row = f"tr[data-group='{live_flow.group}']"
        assert dash.visible(group_row), "no consumer group row"
        group_lag = dash.cell(group_row, "checkpoint-lag")
        assert group_lag == "0", f"checkpoint lag {group_lag}; groups {page.locator('#flow-details').inner_text()!r}"
        assert dash.visible(".chart[data-chart='rate'] canvas"), "no throughput chart"
        assert dash.visible(".chart[data-chart='latency'] canvas"), "no latency chart"
        return True

    assert_eventually(caught_up, timeout_s=90, interval_s=0.5, message="every record copied and lag 0 on the page")
    assert dash.page.locator("#error").is_hidden()
    shot = tmp_path / "dashboard.png"
    page.screenshot(path=str(shot), full_page=True)
    if os.environ.get("MIRRORSPARK_SCREENSHOT"):
        shutil.copyfile(shot, os.environ["MIRRORSPARK_SCREENSHOT"])
    assert dash.errors == [], dash.errors
    print(f"dashboard test: {time.monotonic() - t0:.1f} s after the page opened, {total} records")


def _graph_store() -> Store:
    """A->B into B (mirrorspark's metrics), B->A and C->A seen through A's heartbeats replicated to B."""
    store = Store("B")
    now = store.clock_ms()
    for kind, hb in (
        ("heartbeats", Heartbeat("A", "B", now)),
        ("remote-heartbeats", Heartbeat("B", "A", now)),
        ("remote-heartbeats", Heartbeat("C", "A", now)),
    ):
        assert store.apply(kind, hb.key(), hb.value())
    assert store.apply(
        "channel", *encode_flow_metrics(FlowMetrics("A->B", now, "running", "continuous", 2, 0, 1, None, 60_000))
    )
    lag = TopicLag("A->B", "t", "A.t", now, (PartitionLag(0, 90, 100, 10, 3000, 90, 900),))
    assert store.apply("channel", *encode_topic_lag(lag))
    g = GroupMetrics("A->B", "g1", now, 7, (GroupPartition("t", "A.t", 0, 80, 70, 70, 10, 12),))
    assert store.apply("channel", *encode_group_metrics(g))
    assert store.apply("channel", *encode_flow_schemas(FlowSchemas("A->B", now, SchemaSyncFigures(12, 30, 4, now))))
    t = TopicTotals(90, 900, 0, now, schema_hits=90, schema_misses=10, schema_unknown=2)
    assert store.apply("progress", *encode_totals("A->B", "t", t))
    return store


@pytest.fixture
def graph_api() -> Iterator[str]:
    config = parse_config(
        {
            "clusters": "A, B, C",
            **{f"{c}.bootstrap.servers": "127.0.0.1:9" for c in "ABC"},
            "A->B.enabled": "true",
            "mirrorspark.service.auth.token": TOKEN,
        }
    )
    app = create_app(_graph_store(), config, token=TOKEN)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        assert_eventually(lambda: server.started, timeout_s=90, message="uvicorn did not start")
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def test_the_graph_draws_active_active_and_multi_hop(graph_api: str, browser: Browser, tmp_path: Path) -> None:
    dash = open_dashboard(browser, graph_api, TOKEN)
    page = dash.page

    def drawn() -> dict[str, dict[str, float]]:
        for alias in "ABC":
            assert dash.visible(f"#graph g.node[data-cluster='{alias}']"), alias
        boxes = {}
        for alias in "ABC":
            box = page.locator(f"#graph g.node[data-cluster='{alias}'] rect").bounding_box()
            assert box is not None
            boxes[alias] = box
        for flow in ("A->B", "B->A", "C->A"):
            assert dash.visible(f"#graph g.edge[data-flow='{flow}']"), flow
        return boxes

    boxes = assert_eventually(drawn, timeout_s=90, interval_s=0.3, message="the graph")
    # multi-hop C->A->B is a chain, left to right
    assert boxes["C"]["x"] < boxes["A"]["x"] < boxes["B"]["x"]
    # A->B and B->A are two distinct curves, bending to opposite sides
    ab = page.locator("#graph g.edge[data-flow='A->B'] path").get_attribute("d") or ""
    ba = page.locator("#graph g.edge[data-flow='B->A'] path").get_attribute("d") or ""
    assert "Q" in ab and "Q" in ba and ab != ba
    ab_box = page.locator("#graph g.edge[data-flow='A->B'] path").bounding_box()
    ba_box = page.locator("#graph g.edge[data-flow='B->A'] path").bounding_box()
    assert ab_box is not None and ba_box is not None
    assert ab_box["y"] + ab_box["height"] / 2 != pytest.approx(ba_box["y"] + ba_box["height"] / 2, abs=10)
    # the local flow carries its figures and its state's colour; the upstream ones are drawn dashed
    assert page.locator("#graph g.edge[data-flow='A->B']").get_attribute("data-state") == "running"
    assert "lag 10" in (page.locator("#graph g.edge[data-flow='A->B']").text_content() or "")
    assert "remote" in (page.locator("#graph g.edge[data-flow='C->A']").get_attribute("class") or "")
    assert dash.cell("tr[data-topic='t']", "lag") == "10"
    assert dash.cell("tr[data-group='g1']", "failover-rereads") == "12"
    schemas = "section.flow[data-flow='A->B'] .schemas"  # the flow replicates schemas: its strip is shown
    assert dash.visible(schemas)
    assert number(dash.cell(schemas, "subjects-synced")) == 12
    assert number(dash.cell(schemas, "ids-translated")) == 100
    assert dash.cell(schemas, "id-cache-hit-ratio").startswith("90.0 %")
    assert number(dash.cell(schemas, "unknown-ids")) == 2
    page.screenshot(path=str(tmp_path / "graph.png"), full_page=True)
    assert dash.errors == [], dash.errors
