"""How a run's end reaches ``status``: a flow-state record written after the run's last heartbeat (finding 9)."""

from __future__ import annotations

import pytest

from mirrorspark.client.status import FlowStatus, TopicStatus, flow_state
from mirrorspark.core.lifetime_totals import FLOW_STATES, FlowState, decode_flow_state, encode_flow_state

pytestmark = pytest.mark.unit

FRESH_MS = 10_000


def state(published: FlowState | None, *, last: int | None, now: int = 100_000, started: bool = True) -> str:
    return flow_state(published, started=started, last_heartbeat_ms=last, now_ms=now, fresh_ms=FRESH_MS)


@pytest.mark.parametrize("ended", ["caught up", "stopped"])
def test_a_clean_end_written_after_the_last_heartbeat_is_the_state_at_once(ended: str) -> None:
    # the run's heartbeats are still fresh: without the record this read `running`
    assert state(FlowState(ended, None, 99_000), last=98_500) == ended
    assert state(FlowState(ended, None, 99_000), last=99_000) == ended


def test_a_newer_heartbeat_than_the_clean_end_says_running_again() -> None:
    # a later run, or MM2, runs the flow again
    assert state(FlowState("caught up", None, 90_000), last=99_000) == "running"
    assert state(FlowState("caught up", None, 80_000), last=85_000) == "stopped"  # and stopped later


def test_without_an_end_record_the_heartbeats_decide_as_before() -> None:
    assert state(FlowState("running", None, 1), last=95_000) == "running"
    assert state(None, last=80_000) == "stopped"
    assert state(None, last=None, started=False) == "never started"
    assert state(FlowState("failed", "boom", 1), last=99_000) == "failed"


@pytest.mark.parametrize("name", FLOW_STATES)
def test_every_flow_state_survives_its_record(name: str) -> None:
    key, value = encode_flow_state("A->B", FlowState(name, None, 7))
    assert decode_flow_state(key, value) == ("A->B", FlowState(name, None, 7))


def test_a_flows_lag_leaves_its_heartbeats_topics_out() -> None:
    topics = (
        TopicStatus("orders", "A.orders", 3, 30, 0),
        TopicStatus("heartbeats", "A.heartbeats", 1, 4, 8, heartbeats=True),
    )
    f = FlowStatus("A->B", "caught up", 1, topics)
    assert f.lag == 0
    assert FlowStatus("A->B", "stopped", 1, (*topics, TopicStatus("x", "A.x", 1, 0, 5))).lag == 5
