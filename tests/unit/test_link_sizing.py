"""Fetches sized for a long link (``replication.link.rtt.ms``): core/link_sizing.py's invariants 1-4."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakes import two_clusters
from mirrorspark.client.context import FlowContext
from mirrorspark.core.link_sizing import (
    MAX_FETCH_BYTES,
    MAX_PARTITION_FETCH_BYTES,
    MIN_PARTITION_FETCH_BYTES,
    long_link_fetch_settings,
)
from mirrorspark.replication.connector.flow import Flow
from mirrorspark.replication.connector.task_configs import COPY_CONSUMER_DEFAULTS

pytestmark = pytest.mark.unit

GRANT_ADDRESS = ("127.0.0.1", 1, "token")
MIB = 1024 * 1024


def test_invariant_1_a_local_link_changes_nothing() -> None:
    assert long_link_fetch_settings(0, 125_000_000) == {}


def test_invariant_2_a_gigabit_link_at_100_ms_fetches_16_mib_per_partition() -> None:
    s = long_link_fetch_settings(100, 125_000_000)  # 12.5 MB in flight
    assert s["max.partition.fetch.bytes"] == 16 * MIB
    assert s["fetch.max.bytes"] == 64 * MIB


@given(st.integers(1, 10_000), st.integers(1, 10**10))
def test_invariants_2_to_4_the_settings_stay_in_their_bounds(rtt_ms: int, rate: int) -> None:
    s = long_link_fetch_settings(rtt_ms, rate)
    partition, fetch = s["max.partition.fetch.bytes"], s["fetch.max.bytes"]
    assert MIN_PARTITION_FETCH_BYTES <= partition <= MAX_PARTITION_FETCH_BYTES
    assert partition & (partition - 1) == 0
    assert partition <= fetch <= max(partition, MAX_FETCH_BYTES)
    assert s["receive.message.max.bytes"] >= fetch + 512
    assert s["queued.max.messages.kbytes"] * 1024 >= 2 * fetch


def _consumer_conf(extra: str = "") -> dict[str, object]:
    cfg, a, _b, clients = two_clusters(extra)
    a.create_topic("orders", 1)
    flow = Flow(FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients), cfg.data_path)
    flow.start()
    [task] = flow.task_specs(1, GRANT_ADDRESS)
    return dict(task.consumer_conf)


def test_a_flow_on_a_long_link_gets_link_sized_fetches() -> None:
    conf = _consumer_conf("A->B.replication.link.rtt.ms = 100\n")
    assert conf["max.partition.fetch.bytes"] == 16 * MIB
    assert conf["fetch.max.bytes"] == 64 * MIB


def test_a_flow_without_the_key_fetches_as_today() -> None:
    conf = _consumer_conf()
    assert conf["max.partition.fetch.bytes"] == COPY_CONSUMER_DEFAULTS["max.partition.fetch.bytes"]
    assert "fetch.max.bytes" not in conf


def test_fetch_settings_the_user_gave_win_and_the_response_bound_follows() -> None:
    conf = _consumer_conf(
        "A->B.replication.link.rtt.ms = 100\n"
        "A.consumer.max.partition.fetch.bytes = 1048576\n"
        "A.consumer.fetch.max.bytes = 200000000\n"
    )
    assert str(conf["max.partition.fetch.bytes"]) == "1048576"
    assert int(str(conf["receive.message.max.bytes"])) >= 200000000 + 512
