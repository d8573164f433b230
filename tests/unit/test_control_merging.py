"""Live control: config lists + control changes -> the filters in effect (ControlStore, LiveFilters), in memory."""

from __future__ import annotations

import pytest

from fakes import FakeClients, two_clusters
from mirrorspark.client.context import FlowContext
from mirrorspark.client.control_store import ControlStore
from mirrorspark.config.model import MirrorConfig
from mirrorspark.core.control_state import ControlChange, ControlKey
from mirrorspark.errors import BadRegexError
from mirrorspark.replication.connector.live_filters import LiveFilters

pytestmark = pytest.mark.unit

CONTROL = "mm2-control.A.internal"  # on B


def store(cfg: MirrorConfig, clients: FakeClients) -> ControlStore:
    ctx = FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients)
    return ControlStore(cfg, "A", "B", timeout_s=1, clock_ms=lambda: 1_000, context=ctx)


def test_changes_merge_with_the_config_lists() -> None:
    cfg, a, b, clients = two_clusters("A->B.topics = orders.*, audit\nA->B.topics.exclude = orders-tmp\n")
    with store(cfg, clients) as s:
        assert s.effective("topics") == (("orders.*", "audit"), ("orders-tmp",))
        s.apply("topics", add=["payments"], remove=["audit"], add_deny=["orders\\.secret"], remove_deny=["orders-tmp"])
        assert s.effective("topics") == (("orders.*", "payments"), ("orders\\.secret",))
        assert CONTROL in b.topics  # created by the first change, on the target
        for name in ("orders.eu", "orders.secret", "orders-tmp", "audit", "payments", "other"):
            a.create_topic(name, 1)
        assert s.matching_topics() == ["orders-tmp", "orders.eu", "payments"]


def test_removing_a_change_restores_the_config_list() -> None:
    cfg, _, _, clients = two_clusters("A->B.groups = app.*\n")
    with store(cfg, clients) as s:
        s.apply("groups", remove=["app.*"], add=["batch"])
        assert s.effective("groups")[0] == ("batch",)
        s.apply("groups", add=["app.*"], remove=["batch"])
        assert s.effective("groups")[0] == ("app.*",)


def test_the_last_change_of_an_entry_wins_and_tombstones_forget_it() -> None:
    cfg, _, b, clients = two_clusters("A->B.topics = orders\n")
    with store(cfg, clients) as s:
        s.apply("topics", add=["x"])
        s.apply("topics", remove=["x"])
        assert s.effective("topics")[0] == ("orders",)
        key = ControlKey("A->B", "topics", "allow", "orders")
        b.append(CONTROL, key.encode(), ControlChange(key, "remove", 2_000).encode_value())
        assert s.effective("topics")[0] == ()
        b.append(CONTROL, key.encode(), None)  # a tombstone: as if never changed
        assert s.effective("topics")[0] == ("orders",)


def test_a_bad_regex_writes_nothing() -> None:
    cfg, _, b, clients = two_clusters()
    with store(cfg, clients) as s, pytest.raises(BadRegexError):
        s.apply("topics", add=["ok", "(unclosed"])
    assert CONTROL not in b.topics


def test_running_flow_filters_follow_the_control_topic() -> None:
    cfg, _, _, clients = two_clusters("A->B.topics = orders.*\nA->B.groups = app.*\n")
    ctx = FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients)
    live = LiveFilters(ctx)
    live.poll()  # no control topic yet: the config file's lists
    topics = live.topic_filter(ctx.topic_filter)
    groups = live.group_filter(ctx.group_filter)
    assert topics.should_replicate_topic("orders.eu") and not topics.should_replicate_topic("payments")
    assert groups.should_replicate_group("app-1") and not groups.should_replicate_group("batch")
    with store(cfg, clients) as s:
        s.apply("topics", add=["payments"], add_deny=["orders\\.eu"])
        s.apply("groups", add=["batch"])
    assert live.topic_filter(topics) is topics  # nothing read since: unchanged
    live.poll()
    topics = live.topic_filter(topics)
    groups = live.group_filter(groups)
    assert topics.should_replicate_topic("payments") and topics.should_replicate_topic("orders.us")
    assert not topics.should_replicate_topic("orders.eu")
    assert groups.should_replicate_group("batch") and groups.should_replicate_group("app-1")
    live.close()


def test_lists_that_do_not_compile_keep_the_previous_filter(caplog: pytest.LogCaptureFixture) -> None:
    cfg, _, b, clients = two_clusters("A->B.topics = orders\n")
    ctx = FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients)
    live = LiveFilters(ctx)
    b.create_topic(CONTROL, 1)
    key = ControlKey("A->B", "topics", "allow", "(unclosed")  # written by hand: ControlStore validates
    b.append(CONTROL, key.encode(), ControlChange(key, "add", 1).encode_value())
    live.poll()
    assert live.topic_filter(ctx.topic_filter) is ctx.topic_filter
    assert "do not compile" in caplog.text
