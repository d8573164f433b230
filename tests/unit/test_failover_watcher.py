"""The failover watcher's clients: a stop ends a running check at its next step; close releases them after."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from fakes import two_clusters
from mirrorspark.client.context import FlowContext
from mirrorspark.replication.connector.failover_watch import FailoverWatcher
from mirrorspark.replication.connector.flow import Flow
from mirrorspark.replication.connector.scheduler import Scheduler

pytestmark = pytest.mark.unit


def _watched_flow() -> tuple[Any, Flow, FailoverWatcher, Any]:
    """A started flow A->B of topic ``orders`` (policy ``offline``) and its started watcher: ``(cluster A, flow,
    watcher, the watcher's source admin client)``."""
    cfg, a, _, clients = two_clusters("A->B.mirrorspark.failover.policy = offline\n")
    a.create_topic("orders", 1)
    flow = Flow(FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients), cfg.data_path)
    flow.start()
    watcher = FailoverWatcher(flow)
    watcher.start()
    source_admin = clients.admins[-1]
    return a, flow, watcher, source_admin


def test_a_check_inside_a_source_call_ends_before_the_clients_are_released() -> None:
    _, flow, watcher, source_admin = _watched_flow()
    inside, release = threading.Event(), threading.Event()
    list_topics = source_admin.list_topics

    def slow_list_topics(*args: Any, **kwargs: Any) -> Any:  # a dead source's call, in flight
        inside.set()
        release.wait(10)
        return list_topics(*args, **kwargs)

    source_admin.list_topics = slow_list_topics
    sched = Scheduler()
    sched.add("failover watch A->B", 0, watcher.check)
    sched.start(name="test-failover-watch", tick_s=0.01)
    try:
        assert inside.wait(5)
        watcher.request_stop()
        assert not sched.stop(timeout_s=0.05)  # still inside the call: the driver must not release yet
    finally:
        release.set()
    assert sched.stop(timeout_s=5)
    assert "describe_configs" not in source_admin.calls  # the check ended at its next step
    assert watcher.last is None
    watcher.close()
    assert (watcher._src_admin, watcher._tgt_admin, watcher._producer) == (None, None, None)
    assert watcher.check() is None  # a closed watcher observes nothing
    flow.close()


def test_min_insync_replicas_is_read_for_new_topics_at_each_check_and_for_all_every_refresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reading every topic's config at every check was most of an idle driver's CPU at 1,000 topics (#26)."""
    from mirrorspark.replication.connector import failover_watch

    a, flow, watcher, source_admin = _watched_flow()
    described: list[list[str]] = []
    describe_configs = source_admin.describe_configs

    def recording(resources: list[Any], **kwargs: Any) -> Any:
        described.append(sorted(r.name for r in resources))
        return describe_configs(resources, **kwargs)

    source_admin.describe_configs = recording
    try:
        watcher.check()
        watcher.check()
        assert described == [["orders"]]  # read once, then kept
        a.create_topic("payments", 1)
        flow.topic_partitions["payments"] = 1
        watcher.check()
        assert described[1:] == [["payments"]]  # only the new topic
        monkeypatch.setattr(failover_watch, "MIN_ISR_REFRESH_S", 0.0)
        watcher.check()
        assert described[2:] == [["orders", "payments"]]  # every topic again after the refresh interval
    finally:
        watcher.request_stop()
        watcher.close()
        flow.close()


def test_the_watchers_of_one_source_cluster_share_its_metadata_within_a_second() -> None:
    """Fifty source aliases of one cluster made fifty full ``Metadata`` requests every check (issue #44)."""
    from fakes import FakeClients, FakeCluster
    from mirrorspark.config.parse import parse_config
    from mirrorspark.config.properties import parse_properties
    from mirrorspark.replication.connector.failover_watch import METADATA_SHARE_S, SourceMetadata

    cfg = parse_config(
        parse_properties(
            "clusters = A, B, T\nA.bootstrap.servers = s:9092\nB.bootstrap.servers = s:9092\n"
            "T.bootstrap.servers = t:9092\nA->T.enabled = true\nB->T.enabled = true\n"
            "mirrorspark.failover.policy = offline\n"
        )
    )
    s = FakeCluster("S")
    s.create_topic("orders", 1)
    clients = FakeClients({"s:9092": s, "t:9092": FakeCluster("T")})
    now = [0.0]
    shared = SourceMetadata(clock=lambda: now[0])
    flows, watchers, admins = [], [], []
    for alias in ("A", "B"):
        flow = Flow(FlowContext.build(cfg, cfg.flow(alias, "T"), clients=clients), cfg.data_path)
        flow.start()
        watcher = FailoverWatcher(flow, metadata=shared)
        watcher.start()
        flows.append(flow)
        watchers.append(watcher)
        admins.append(clients.admins[-1])
    try:

        def listed() -> int:
            return sum(a.calls.count("list_topics") for a in admins)

        for w in watchers:
            w.check()
        assert listed() == 1 and all(w.watch.state == "healthy" for w in watchers)
        now[0] += METADATA_SHARE_S
        for w in watchers:
            w.check()
        assert listed() == 2  # an answer serves one round of checks, not the next
    finally:
        for w, f in zip(watchers, flows, strict=True):
            w.request_stop()
            w.close()
            f.close()
