"""The live throttle's control records, their fold, the grant link's share and the CLI's refusals (no cluster)."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorspark.cli.app import app
from mirrorspark.client.control_store import ControlStore
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.core.control_state import (
    ControlChange,
    ControlKey,
    ControlState,
    ThrottleChange,
    decode_control,
    fold,
)
from mirrorspark.errors import ConfigError, CorruptRecordError
from mirrorspark.replication.task.grant_client import GrantClient
from mirrorspark.replication.worker.grant_server import GrantServer

pytestmark = pytest.mark.unit

FLOW = "A->B"
CONFIG = "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:1\nA->B.enabled = true\n"


def test_a_throttle_record_round_trips_and_a_tombstone_means_the_config() -> None:
    c = ThrottleChange(FLOW, 1_000_000, 17)
    assert c.encode_key() == b'{"flow":"A->B","kind":"throttle"}'
    assert c.encode_value() == b'{"op":"set","rate":1000000,"ts":17}'
    assert decode_control(c.encode_key(), c.encode_value()) == c
    assert decode_control(c.encode_key(), None) == ThrottleChange(FLOW, None)
    assert ThrottleChange(FLOW, None).encode_value() is None


def test_list_records_are_read_as_before() -> None:
    lst = ControlChange(ControlKey(FLOW, "topics", "allow", "orders"), "add", 5)
    assert decode_control(lst.key.encode(), lst.encode_value()) == lst


@pytest.mark.parametrize(
    "value",
    [b"{}", b'{"op":"set","rate":-1,"ts":1}', b'{"op":"set","rate":"1","ts":1}', b'{"op":"add","rate":1,"ts":1}', b"x"],
)
def test_a_corrupt_throttle_record_is_a_corrupt_record_error(value: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decode_control(b'{"flow":"A->B","kind":"throttle"}', value)
    with pytest.raises(CorruptRecordError):
        decode_control(b'{"flow":1,"kind":"throttle"}', b'{"op":"set","rate":1,"ts":1}')


def test_the_last_throttle_record_of_the_flow_wins_and_a_tombstone_restores_the_config() -> None:
    state = ControlState(flow=FLOW)
    assert state.throttle_limit(500) == 500
    state = fold([ThrottleChange(FLOW, 100), ThrottleChange("B->A", 7), ThrottleChange(FLOW, 0)], state)
    assert state.throttle_limit(500) == 0 and state.records == 3  # 0: no limit, over the config's
    state = fold([ThrottleChange(FLOW, 2000)], state)
    assert state.throttle_limit(500) == 2000
    assert fold([ThrottleChange(FLOW, None)], state).throttle_limit(500) == 500
    lists = fold([ControlChange(ControlKey(FLOW, "topics", "allow", "x"), "add", 1)], state)
    assert lists.throttle_limit(500) == 2000 and lists.entries("topics", "allow", "add") == ("x",)


def test_a_negative_rate_is_refused_before_connecting() -> None:
    store = ControlStore(parse_config(parse_properties(CONFIG)), "A", "B", timeout_s=1)
    with pytest.raises(ConfigError, match="bytes/s"):
        store.set_throttle(-5)


def _invoke(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, " ".join((r.stdout + r.stderr).split())


def test_cli_refuses_a_bad_rate_both_options_and_an_unknown_flow(tmp_path: Path) -> None:
    props = tmp_path / "mm2.properties"
    props.write_text(CONFIG)
    base = ["control", "throttle", str(props), "--source", "A", "--target", "B"]
    code, out = _invoke(*base, "--rate", "-1")
    assert code == 2 and "--rate" in out, out
    code, out = _invoke(*base, "--rate", "1MB")
    assert code == 2 and "--rate" in out, out
    code, out = _invoke(*base, "--rate", "5", "--reset")
    assert code == 2 and "not both" in out, out
    code, out = _invoke("control", "throttle", str(props), "--source", "A", "--target", "Z", "--rate", "5")
    assert code == 2 and "'Z'" in out, out


# --------------------------------------------------------------------------- the grant link's share


def _wait(cond: object, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_the_grant_link_sends_each_task_its_share_and_sums_their_throttle_totals() -> None:
    server = GrantServer()
    try:
        server.throttle(FLOW, 1000, 2)
        a = GrantClient(server.address, {"flow": FLOW, "task": 0, "generation": 1})
        b = GrantClient(server.address, {"flow": FLOW, "task": 1, "generation": 1})
        _wait(lambda: (a.check(), b.check()) and a.rate == b.rate == 500)
        server.throttle(FLOW, 3000, 3)  # a changed share goes to the connected tasks
        _wait(lambda: (a.check(), b.check()) and a.rate == b.rate == 1000)
        server.throttle(FLOW, 0, 3)
        _wait(lambda: (a.check(), b.check()) and a.rate == b.rate == 0)
        a.throttled(100, 0.5)
        b.throttled(50, 0.25)
        a._asked = b._asked = 0.0  # ask now
        a.check()
        b.check()
        _wait(lambda: server.throttle_totals(FLOW) == (150, 0.75))
        a.throttled(300, 1.0)  # running totals: only the increase counts
        a._asked = 0.0
        a.check()
        _wait(lambda: server.throttle_totals(FLOW) == (350, 1.25))
        a.close()
        b.close()
    finally:
        server.close()


def test_a_task_ignores_what_it_does_not_know_and_an_old_driver_leaves_it_unlimited() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    client = GrantClient(("127.0.0.1", port, "t"), {"flow": FLOW, "task": 0, "generation": 1})
    conn, _ = listener.accept()
    hello = json.loads(conn.makefile("rb").readline())
    assert hello["flow"] == FLOW
    conn.sendall(b"lease 1e12\nsomething new\n")
    _wait(lambda: client.check() and client.lease_until == 1e12)
    assert client.rate == 0
    client.close()
    conn.close()
    listener.close()


# --------------------------------------------------------------------------- the driver's side


class FakeTail:
    """A control tail whose state the test sets; ``fail`` makes a read raise as an unreachable target would."""

    def __init__(self) -> None:
        self.state = ControlState(flow=FLOW)
        self.topic = "mm2-control.A.internal"
        self.fail = False

    def poll(self, *, timeout_s: float) -> int:
        if self.fail:
            from mirrorspark.errors import ClusterError

            raise ClusterError("down")
        return 0

    def close(self) -> None: ...


def test_the_live_throttle_follows_the_control_topic_over_the_config(caplog: pytest.LogCaptureFixture) -> None:
    from mirrorspark.client.context import FlowContext
    from mirrorspark.replication.connector.live_throttle import THROTTLE_POLL_S, LiveThrottle

    cfg = parse_config(parse_properties(CONFIG + "A->B.replication.throttled.rate = 500\n"))
    live = LiveThrottle(FlowContext.build(cfg, cfg.flow("A", "B")))
    assert live.limit == 500  # the config's before the first read: the first tasks start under it
    assert [(j.name, j.interval_s) for j in live.jobs()] == [("follow throttle A->B", THROTTLE_POLL_S)]
    tail = FakeTail()
    live._tail = tail  # type: ignore[assignment]
    assert live.poll() == 500
    tail.state = fold([ThrottleChange(FLOW, 0)], tail.state)
    assert live.poll() == 0 and live.limit == 0
    tail.fail = True
    assert live.poll() == 0 and "throttle unchanged" in caplog.text
    tail.fail = False
    tail.state = fold([ThrottleChange(FLOW, None)], tail.state)
    assert live.poll() == 500


def test_the_driver_publishes_the_limit_the_rate_over_its_interval_and_the_time_held_back() -> None:
    from types import SimpleNamespace

    from mirrorspark.replication.worker.metrics_publisher import MetricsPublisher

    totals = [(0, 0.0)]
    flow = SimpleNamespace(name=FLOW, throttle=SimpleNamespace(limit=1000))
    sup = SimpleNamespace(grants=SimpleNamespace(throttle_totals=lambda name: totals[0]))
    pub = MetricsPublisher(flow, interval_ms=1000)  # type: ignore[arg-type]
    assert pub.throttle_figures(sup, 10_000) == (1000, None, 0)  # type: ignore[arg-type]  # no interval yet
    totals[0] = (2000, 1.5)
    assert pub.throttle_figures(sup, 12_000) == (1000, 1000, 1500)  # type: ignore[arg-type]
    flow.throttle.limit = 0
    assert pub.throttle_figures(sup, 13_000) == (0, None, 1500)  # type: ignore[arg-type]  # no limit: no rate
