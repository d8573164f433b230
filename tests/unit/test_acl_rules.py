"""Topic ACL sync: MM2's mapping rule (mm2.md §9.5) and the sync job against a fake admin client."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)
from hypothesis import given
from hypothesis import strategies as st

from fakes import FakeAclAdmin
from mirrorspark.errors import ClusterError
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.mm2.filters import DefaultTopicFilter, should_replicate_topic
from mirrorspark.mm2.policy import DefaultReplicationPolicy, IdentityReplicationPolicy, ReplicationPolicy
from mirrorspark.replication.connector.acl_sync import TopicAclSync, target_acl_bindings

pytestmark = pytest.mark.unit

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
TOPIC = ResourceType.TOPIC
Op = AclOperation


def acl(
    name: str,
    operation: AclOperation,
    permission: AclPermissionType = ALLOW,
    *,
    principal: str = "User:alice",
    host: str = "*",
    restype: ResourceType = TOPIC,
    pattern: ResourcePatternType = LITERAL,
) -> AclBinding:
    return AclBinding(restype, name, pattern, principal, host, operation, permission)


def flow_rule(
    policy: ReplicationPolicy | None = None, *, source: str = "A", target: str = "B", topics: tuple[str, ...] = (".*",)
) -> tuple[Callable[[str], bool], Callable[[str], str]]:
    """``should_replicate`` and ``remote_topic`` of a flow source->target with MM2's default filter."""
    policy = policy or DefaultReplicationPolicy()
    flt = DefaultTopicFilter(topics=topics)

    def should(topic: str) -> bool:
        return should_replicate_topic(
            topic, topic_filter=flt, policy=policy, target_alias=target, heartbeats_replication_enabled=True
        )

    return should, lambda topic: policy.format_remote_topic(source, topic)


def mapped(bindings: Iterable[AclBinding], policy: ReplicationPolicy | None = None, **kw: Any) -> list[AclBinding]:
    should, remote = flow_rule(policy, **kw)
    return target_acl_bindings(bindings, should_replicate=should, remote_topic=remote)


# --------------------------------------------------------------------------- the rule, case by case


@pytest.mark.parametrize(
    ("source", "target"),
    [
        # allowed reads and other operations: renamed, otherwise unchanged
        (acl("topic1", Op.READ), acl("A.topic1", Op.READ)),
        (acl("topic1", Op.DESCRIBE), acl("A.topic1", Op.DESCRIBE)),
        (acl("topic1", Op.DESCRIBE_CONFIGS), acl("A.topic1", Op.DESCRIBE_CONFIGS)),
        (acl("topic1", Op.ALTER_CONFIGS), acl("A.topic1", Op.ALTER_CONFIGS)),
        (acl("topic1", Op.CREATE), acl("A.topic1", Op.CREATE)),
        (acl("topic1", Op.DELETE), acl("A.topic1", Op.DELETE)),
        # ALLOW ALL is downgraded to ALLOW READ
        (acl("topic1", Op.ALL), acl("A.topic1", Op.READ)),
        # DENY entries are copied unchanged, DENY ALL and DENY WRITE included
        (acl("topic1", Op.ALL, DENY), acl("A.topic1", Op.ALL, DENY)),
        (acl("topic1", Op.WRITE, DENY), acl("A.topic1", Op.WRITE, DENY)),
        (acl("topic1", Op.READ, DENY), acl("A.topic1", Op.READ, DENY)),
        # principal and host unchanged
        (
            acl("topic1", Op.READ, principal="User:bob", host="10.0.0.7"),
            acl("A.topic1", Op.READ, principal="User:bob", host="10.0.0.7"),
        ),
        # heartbeats are always replicated, so their ACLs are too
        (acl("heartbeats", Op.READ), acl("A.heartbeats", Op.READ)),
        # MM2's quirk: a literal '*' topic ACL passes the default filter and becomes a literal 'A.*'
        (acl("*", Op.READ), acl("A.*", Op.READ)),
    ],
)
def test_mapped_bindings(source: AclBinding, target: AclBinding) -> None:
    assert mapped([source]) == [target]


@pytest.mark.parametrize(
    "source",
    [
        acl("topic1", Op.WRITE),  # ALLOW WRITE: remote topics are never writable through synced ACLs
        acl("topic1", Op.READ, pattern=PREFIXED),  # only LITERAL patterns
        acl("top", Op.READ, pattern=PREFIXED),
        acl("topic1", Op.READ, restype=ResourceType.GROUP),  # only TOPIC resources
        acl("kafka-cluster", Op.ALTER, restype=ResourceType.BROKER),
        acl("topic1", Op.READ, restype=ResourceType.TRANSACTIONAL_ID),
        acl("mm2-offset-syncs.B.internal", Op.READ),  # internal topics are not replicated
        acl("__consumer_offsets", Op.DESCRIBE),
        acl("B.topic1", Op.READ),  # came from the target: a cycle
        acl("x.replica", Op.READ),  # topics.exclude default
    ],
)
def test_dropped_bindings(source: AclBinding) -> None:
    assert mapped([source]) == []


def test_only_topics_the_flow_replicates() -> None:
    bindings = [acl("orders", Op.READ), acl("payments", Op.READ), acl("orders", Op.ALL, DENY, principal="User:eve")]
    assert mapped(bindings, topics=("orders",)) == sorted(
        [acl("A.orders", Op.READ), acl("A.orders", Op.ALL, DENY, principal="User:eve")]
    )


def test_remote_names_follow_the_policy() -> None:
    assert mapped([acl("topic1", Op.ALL)], IdentityReplicationPolicy(source_cluster_alias="A")) == [
        acl("topic1", Op.READ)
    ]
    # multi-hop: a topic from C on A is C's on B, named A.C.topic1
    assert mapped([acl("C.topic1", Op.READ)]) == [acl("A.C.topic1", Op.READ)]


def test_duplicates_collapse_and_output_is_sorted() -> None:
    bindings = [
        acl("t2", Op.READ),
        acl("t1", Op.ALL),  # -> ALLOW READ on A.t1 ...
        acl("t1", Op.READ),  # ... which is also this one
        acl("t1", Op.WRITE),  # dropped
        acl("t1", Op.ALL, DENY, principal="User:eve"),
    ]
    out = mapped(bindings)
    assert out == sorted(out)
    assert out == sorted([acl("A.t1", Op.READ), acl("A.t2", Op.READ), acl("A.t1", Op.ALL, DENY, principal="User:eve")])


def test_no_bindings() -> None:
    assert mapped([]) == []


_ops = st.sampled_from([o for o in AclOperation if o not in (Op.ANY, Op.UNKNOWN)])
_perms = st.sampled_from([ALLOW, DENY])
_bindings = st.builds(
    acl,
    st.sampled_from(["t1", "t2", "B.t3", "x.internal", "heartbeats", "*"]),
    _ops,
    _perms,
    principal=st.sampled_from(["User:alice", "User:bob"]),
    host=st.sampled_from(["*", "10.0.0.1"]),
    restype=st.sampled_from([TOPIC, TOPIC, ResourceType.GROUP]),
    pattern=st.sampled_from([LITERAL, LITERAL, PREFIXED]),
)


@given(st.lists(_bindings, max_size=20))
def test_rule_invariants(bindings: list[AclBinding]) -> None:
    should, remote = flow_rule()
    out = target_acl_bindings(bindings, should_replicate=should, remote_topic=remote)
    remotes = {remote(b.name) for b in bindings if should(b.name)}
    for b in out:
        assert (b.restype, b.resource_pattern_type) == (TOPIC, LITERAL)
        assert b.name in remotes
        assert not (b.permission_type == ALLOW and b.operation in (Op.WRITE, Op.ALL))
    # every DENY and every allowed non-WRITE/ALL entry on a replicated literal topic is copied as is
    for b in bindings:
        if b.restype == TOPIC and b.resource_pattern_type == LITERAL and should(b.name):
            same = AclBinding(TOPIC, remote(b.name), LITERAL, b.principal, b.host, b.operation, b.permission_type)
            if b.permission_type == DENY or b.operation not in (Op.WRITE, Op.ALL):
                assert same in out
    assert len(out) == len(set(out))


# --------------------------------------------------------------------------- the job, with a fake admin


def job(source: FakeAclAdmin, target: FakeAclAdmin) -> TopicAclSync:
    should, remote = flow_rule()
    return TopicAclSync(
        name="A->B",
        source="A",
        target="B",
        admins=lambda: (ClusterAdmin(source, "A", timeout_s=30), ClusterAdmin(target, "B", timeout_s=30)),
        should_replicate=should,
        remote_topic=remote,
    )


SOURCE_ACLS = [
    acl("topic1", Op.READ),
    acl("topic1", Op.WRITE),
    acl("topic2", Op.ALL, principal="User:bob"),
    acl("topic2", Op.ALL, DENY, principal="User:eve"),
    acl("topic", Op.READ, pattern=PREFIXED),
    acl("group1", Op.READ, restype=ResourceType.GROUP),
]


def test_sync_creates_only_missing_bindings_and_never_deletes() -> None:
    source = FakeAclAdmin(SOURCE_ACLS)
    own = acl("A.topic1", Op.READ, principal="User:target-only")
    target = FakeAclAdmin([acl("A.topic1", Op.READ), own])
    sync = job(source, target)
    assert sync.sync() == 2
    assert target.created == [
        sorted([acl("A.topic2", Op.READ, principal="User:bob"), acl("A.topic2", Op.ALL, DENY, principal="User:eve")])
    ]
    assert own in target.bindings  # a target-only binding stays
    assert sync.sync() == 0  # all present now: nothing created, no CreateAcls call
    assert len(target.created) == 1
    # a binding removed on the source stays on the target
    source.bindings = [b for b in source.bindings if b.name != "topic2"]
    assert sync.sync() == 0
    assert acl("A.topic2", Op.READ, principal="User:bob") in target.bindings
    assert sync.created == 2


def test_nothing_to_copy_does_not_touch_the_target() -> None:
    target = FakeAclAdmin()
    assert job(FakeAclAdmin([acl("topic1", Op.WRITE)]), target).sync() == 0
    assert target.calls == []


def test_a_source_without_topic_acls_is_quiet(caplog: pytest.LogCaptureFixture) -> None:
    source, target = FakeAclAdmin(), FakeAclAdmin()
    with caplog.at_level(logging.DEBUG, logger="mirrorspark.replication.connector.acl_sync"):
        assert job(source, target).sync() == 0
    assert caplog.records == []
    assert source.calls == ["describe_acls", "describe_cluster", "describe_configs"]  # why is it empty?
    assert target.calls == []


def test_source_without_authorizer_is_skipped_and_told_once(caplog: pytest.LogCaptureFixture) -> None:
    target = FakeAclAdmin()
    sync = job(FakeAclAdmin(authorizer=""), target)
    with caplog.at_level(logging.DEBUG, logger="mirrorspark.replication.connector.acl_sync"):
        assert sync.sync() == 0
        assert sync.sync() == 0
        assert sync.sync() == 0
    infos = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert len(infos) == 1
    assert infos[0].levelno == logging.INFO
    assert "no authorizer" in infos[0].getMessage()
    assert "sync.topic.acls.enabled=false" in infos[0].getMessage()
    assert sum(r.levelno == logging.DEBUG for r in caplog.records) == 2
    assert target.calls == []


def test_target_without_authorizer_is_skipped_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    sync = job(FakeAclAdmin(SOURCE_ACLS), FakeAclAdmin(authorizer=""))
    with caplog.at_level(logging.INFO, logger="mirrorspark.replication.connector.acl_sync"):
        assert sync.sync() == 0
        assert sync.sync() == 0
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert "target cluster 'B' has no authorizer" in caplog.records[0].getMessage()


def test_missing_describe_permission_on_the_source_names_the_fix() -> None:
    # librdkafka returns an empty list; the authorized cluster operations tell why
    for ops in ((), (Op.IDEMPOTENT_WRITE,)):
        sync = job(FakeAclAdmin(SOURCE_ACLS, cluster_ops=ops), FakeAclAdmin())
        with pytest.raises(ClusterError, match="needs DESCRIBE on the cluster resource of 'A'") as e:
            sync.sync()
        assert e.value.kafka_code == "CLUSTER_AUTHORIZATION_FAILED"


def test_a_describe_error_is_translated() -> None:
    """For a librdkafka that reports DescribeAcls errors (2.16.1 does not)."""
    sync = job(FakeAclAdmin(describe_error=KafkaError.CLUSTER_AUTHORIZATION_FAILED), FakeAclAdmin())
    with pytest.raises(ClusterError, match="needs DESCRIBE on the cluster resource of 'A'") as e:
        sync.sync()
    assert e.value.kafka_code == "CLUSTER_AUTHORIZATION_FAILED"
    sync = job(FakeAclAdmin(describe_error=KafkaError.SECURITY_DISABLED), FakeAclAdmin())
    assert sync.sync() == 0


def test_missing_alter_permission_on_the_target_names_the_fix() -> None:
    sync = job(FakeAclAdmin(SOURCE_ACLS), FakeAclAdmin(cluster_ops=[Op.DESCRIBE]))
    with pytest.raises(ClusterError, match="needs ALTER on the cluster resource of 'B'") as e:
        sync.sync()
    assert e.value.kafka_code == "CLUSTER_AUTHORIZATION_FAILED"
    assert "processor=0" not in str(e.value)  # the broker's page-long text is left out


def test_failed_creates_raise_after_the_others_are_created() -> None:
    target = FakeAclAdmin()
    target.create_errors["A.topic1"] = (KafkaError.INVALID_REQUEST, "no")
    sync = job(FakeAclAdmin(SOURCE_ACLS), target)
    with pytest.raises(ClusterError, match=r"creating 1 of 3 .*'A\.topic1'.*: no \(INVALID_REQUEST\)$"):
        sync.sync()
    assert sync.created == 2
    assert {b.name for b in target.bindings} == {"A.topic2"}
