"""The flows to one target follow their throttles through one job: one request per poll, not one per flow (#44)."""

from __future__ import annotations

import pytest

from fakes import FakeClients, FakeCluster
from mirrorspark.client.context import FlowContext
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.core.control_state import ThrottleChange
from mirrorspark.errors import ClusterError
from mirrorspark.replication.connector.live_throttle import THROTTLE_POLL_S, LiveThrottle, ThrottleFollowers

pytestmark = pytest.mark.unit

SOURCES = ("A", "B", "C", "D")
CONFIG = (
    "clusters = A, B, C, D, T\n"
    + "".join(f"{s}.bootstrap.servers = {s.lower()}:9092\n{s}->T.enabled = true\n" for s in SOURCES)
    + "T.bootstrap.servers = t:9092\nA->T.replication.throttled.rate = 500\n"
)


def followed() -> tuple[list[ThrottleFollowers], list[LiveThrottle], FakeCluster, FakeClients]:
    """Four flows to ``T``: their throttles, grouped, on fakes."""
    cfg = parse_config(parse_properties(CONFIG))
    t = FakeCluster("T")
    clients = FakeClients({**{f"{s.lower()}:9092": FakeCluster(s) for s in SOURCES}, "t:9092": t})
    throttles = [LiveThrottle(FlowContext.build(cfg, cfg.flow(s, "T"), clients=clients)) for s in SOURCES]
    return ThrottleFollowers.of(throttles), throttles, t, clients


def set_throttle(t: FakeCluster, source: str, rate: int | None) -> None:
    topic = f"mm2-control.{source}.internal"
    t.create_topic(topic, 1)
    c = ThrottleChange(f"{source}->T", rate, 1)
    t.append(topic, c.encode_key(), c.encode_value())


def test_the_flows_to_one_target_share_one_job_and_one_admin_and_read_no_topic_while_none_changed() -> None:
    groups, throttles, _, clients = followed()
    assert len(groups) == 1 and groups[0].throttles == throttles
    assert [(j.name, j.interval_s) for j in groups[0].jobs()] == [("follow throttle 4 flows ->T", THROTTLE_POLL_S)]
    for _ in range(3):
        assert groups[0].poll() == 0
    assert len(clients.admins) == 1
    assert clients.admins[0].calls == ["describe_topics"] * 3  # one a poll, not one a flow; never a listing
    assert clients.consumers == []
    assert [x.limit for x in throttles] == [500, 0, 0, 0]


def test_a_change_is_read_by_its_flow_alone_and_once() -> None:
    groups, throttles, t, clients = followed()
    set_throttle(t, "B", 1000)
    assert groups[0].poll() == 1
    assert [x.limit for x in throttles] == [500, 1000, 0, 0]
    assert groups[0].poll() == 0  # nothing new: no flow reads again
    set_throttle(t, "A", 0)
    set_throttle(t, "B", None)
    assert groups[0].poll() == 2
    assert [x.limit for x in throttles] == [0, 0, 0, 0]
    assert len(clients.consumers) == 2  # A's and B's own readers, the others none


def test_a_failed_read_keeps_every_throttle(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    groups, throttles, t, _ = followed()
    set_throttle(t, "C", 7)

    def down() -> dict[str, int]:
        raise ClusterError("down")

    monkeypatch.setattr(groups[0], "_ends", down)
    assert groups[0].poll() == 0 and "throttles unchanged" in caplog.text
    assert [x.limit for x in throttles] == [500, 0, 0, 0]
    monkeypatch.undo()
    assert groups[0].poll() == 1 and throttles[2].limit == 7  # the next poll lists the topics again


def test_a_control_topic_the_principal_may_not_describe_is_missing_and_the_others_are_still_followed() -> None:
    groups, throttles, t, _ = followed()
    set_throttle(t, "A", 9)
    t.undescribable.add("mm2-control.A.internal")  # as a Metadata listing would hide it
    set_throttle(t, "B", 1000)
    assert groups[0].poll() == 1
    assert [x.limit for x in throttles] == [500, 1000, 0, 0]  # A keeps its configured rate


def test_flows_to_different_targets_are_followed_apart() -> None:
    cfg = parse_config(
        parse_properties(
            "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n"
            "A->B.enabled = true\nB->A.enabled = true\n"
        )
    )
    clients = FakeClients({"a:9092": FakeCluster("A"), "b:9092": FakeCluster("B")})
    throttles = [LiveThrottle(FlowContext.build(cfg, f, clients=clients)) for f in cfg.flows]
    assert [[x.name for x in g.throttles] for g in ThrottleFollowers.of(throttles)] == [["A->B"], ["B->A"]]
    assert [j.name for g in ThrottleFollowers.of(throttles) for j in g.jobs()] == [
        "follow throttle A->B",
        "follow throttle B->A",
    ]
