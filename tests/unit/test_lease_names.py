"""The pure parts of a flow's lease: names, the consumer settings, the claim codec, epochs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.core.lease_claims import (
    LEASE_PREFIX,
    LeaseClaim,
    claim_epoch,
    decode_claim,
    encode_claim,
    permission_hint,
)
from mirrorspark.mm2.internal_topics import lease_group, mirrorspark_topic
from mirrorspark.mm2.policy import DefaultReplicationPolicy, load_policy
from mirrorspark.replication.worker.lease import SESSION_TIMEOUT_MS, lease_consumer_overrides

pytestmark = pytest.mark.unit


def test_topic_is_internal_and_never_replicated() -> None:
    policy = DefaultReplicationPolicy()
    assert mirrorspark_topic(LEASE_PREFIX, None, "A") == "mm2-lease.A.internal"
    assert mirrorspark_topic(LEASE_PREFIX, policy, "A") == "mm2-lease.A.internal"
    assert policy.is_internal_topic(mirrorspark_topic(LEASE_PREFIX, None, "A"))


def test_topic_uses_the_policy_internal_separator() -> None:
    policy = load_policy("DefaultReplicationPolicy", separator="__", source_cluster_alias="A")
    assert mirrorspark_topic(LEASE_PREFIX, policy, "A") == "mm2-lease__A__internal"
    assert policy.is_internal_topic(mirrorspark_topic(LEASE_PREFIX, policy, "A"))


def test_group_is_named_by_the_flow() -> None:
    assert lease_group("A->B") == "mirrorspark-lease-A->B"
    # aliases with '-' stay apart: A-B->C and A->B-C
    assert lease_group("A-B->C") != lease_group("A->B-C")


def test_consumer_overrides() -> None:
    conf = lease_consumer_overrides("g")
    assert conf["group.id"] == "g"
    assert conf["session.timeout.ms"] == SESSION_TIMEOUT_MS == 6000
    assert conf["heartbeat.interval.ms"] == 1000
    assert conf["partition.assignment.strategy"] == "cooperative-sticky"
    assert conf["group.protocol"] == "classic"
    assert conf["group.instance.id"] == ""  # dynamic member: leaves the group on close
    assert conf["enable.auto.commit"] is False


@pytest.mark.parametrize(("session", "heartbeat"), [(6000, 6000), (6000, 0), (0, 1000), (3000, 4000)])
def test_consumer_overrides_reject_a_heartbeat_not_below_the_session(session: int, heartbeat: int) -> None:
    with pytest.raises(ValueError, match="heartbeat interval"):
        lease_consumer_overrides("g", session_timeout_ms=session, heartbeat_interval_ms=heartbeat)


def test_claim_layout() -> None:
    key, value = encode_claim(LeaseClaim("A->B", "host:42", "rdkafka-1", 1700000000000))
    assert key == b'{"flow":"A->B"}'
    assert value == b'{"holder":"host:42","member_id":"rdkafka-1","timestamp":1700000000000}'


@given(st.text(), st.text(), st.text(), st.integers(0, 2**62))
def test_claim_round_trip(flow: str, holder: str, member: str, ts: int) -> None:
    claim = LeaseClaim(flow, holder, member, ts)
    assert decode_claim(*encode_claim(claim)) == claim


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (None, b"{}"),
        (b'{"flow":"A->B"}', None),
        (b"not json", b"{}"),
        (b"[]", b"{}"),
        (b'{"flow":1}', b'{"holder":"h","member_id":"m","timestamp":1}'),
        (b'{"flow":"A->B"}', b'{"holder":"h","member_id":"m","timestamp":-1}'),
        (b'{"flow":"A->B"}', b'{"holder":"h","member_id":"m","timestamp":true}'),
        (b'{"flow":"A->B"}', b'{"holder":"h","timestamp":1}'),
    ],
)
def test_foreign_or_broken_records_are_not_claims(key: bytes | None, value: bytes | None) -> None:
    assert decode_claim(key, value) is None


@given(st.integers(0, 2**62), st.integers(1, 2**20))
def test_epochs_grow_with_claim_offsets(offset: int, later: int) -> None:
    assert claim_epoch(offset) >= 1
    assert claim_epoch(offset + later) > claim_epoch(offset)


def test_an_authorization_failure_names_what_to_grant() -> None:
    names = {"group": "mirrorspark-lease-A->B", "topic": "mm2-lease.A.internal", "cluster": "B"}
    group = permission_hint("GROUP_AUTHORIZATION_FAILED", **names)
    assert "READ on group 'mirrorspark-lease-A->B' on cluster 'B'" in group
    topic = permission_hint("TOPIC_AUTHORIZATION_FAILED", **names)
    assert "READ on topic 'mm2-lease.A.internal' on cluster 'B'" in topic
    assert permission_hint("UNKNOWN_MEMBER_ID", **names) == ""
    assert permission_hint(None, **names) == ""
