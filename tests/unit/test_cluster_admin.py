"""ClusterAdmin: one error rule for every call, the configured timeout on every call, each call's own outcomes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

import mirrorspark.kafka.admin_cluster
from fakes import FakeAdmin, FakeCluster, FakeConsumer, SpyAdmin, two_clusters
from mirrorspark.client.context import FlowContext, ReplicationContext
from mirrorspark.errors import ClusterError, ClusterUnreachableError
from mirrorspark.kafka.admin import ClusterAdmin, GroupDescription, TopicSpec, is_transient
from mirrorspark.kafka.admin_groups import commit_metadata
from mirrorspark.kafka.admin_topics import CREATE_PARTITIONS_CHUNK, create_chunks

pytestmark = pytest.mark.unit

ANY_TOPIC_ACL = AclBindingFilter(
    ResourceType.TOPIC,
    None,  # type: ignore[arg-type]
    ResourcePatternType.ANY,
    None,  # type: ignore[arg-type]
    None,  # type: ignore[arg-type]
    AclOperation.ANY,
    AclPermissionType.ANY,
)

CALLS: dict[str, Callable[[ClusterAdmin], Any]] = {
    "check_reachable": lambda a: a.check_reachable(),
    "list_topics": lambda a: a.list_topics(),
    "describe_topics": lambda a: a.describe_topics(["t"]),
    "describe_topic_configs": lambda a: a.describe_topic_configs(["t"]),
    "topic_configs": lambda a: a.topic_configs(["t"], include_defaults=True),
    "alter_topic_configs": lambda a: a.alter_topic_configs({"t": {"retention.ms": "1000"}}),
    "create_topics": lambda a: a.create_topics([TopicSpec("new", 1, 1)]),
    "ensure_topic": lambda a: a.ensure_topic("new", partitions=1, replication_factor=1),
    "create_partitions": lambda a: a.create_partitions({"t": 3}),
    "end_offsets": lambda a: a.end_offsets([("t", 0)]),
    "start_offsets": lambda a: a.start_offsets([("t", 0)]),
    "offsets_for_timestamp": lambda a: a.offsets_for_timestamp([("t", 0)], 0),
    "list_groups": lambda a: a.list_groups(),
    "describe_group": lambda a: a.describe_group("g"),
    "group_offsets": lambda a: a.group_offsets("g"),
    "alter_group_offsets": lambda a: a.alter_group_offsets("g", {("t", 0): (1, "")}),
    "describe_cluster": lambda a: a.describe_cluster(),
    "broker_racks": lambda a: a.broker_racks(),
    "broker_config": lambda a: a.broker_config(1),
    "describe_acls": lambda a: a.describe_acls(ANY_TOPIC_ACL),
    "dynamic_configs": lambda a: a.dynamic_configs([("topic", "t")], ["retention.ms"]),
    "delete_dynamic_configs": lambda a: a.delete_dynamic_configs({("topic", "t"): ["retention.ms"]}),
    "describe_partitions": lambda a: a.describe_partitions(["t"]),
    "partition_metadata": lambda a: a.partition_metadata(["t"]),
    "elect_leaders": lambda a: a.elect_leaders("preferred", [("t", 0)]),
}
"""Every call that raises on failure (``partition_offsets``, ``create_acls`` and ``describe_groups`` report
each item's failure instead: tested on their own)."""


def cluster() -> FakeCluster:
    c = FakeCluster("A")
    c.create_topic("t", 2, {"retention.ms": "5000"})
    c.fill("t", 0, 3)
    c.commit("g", {("t", 0): 2})
    return c


def admin_of(c: FakeCluster, *, timeout_s: float = 5.0, **spy: Any) -> tuple[ClusterAdmin, SpyAdmin]:
    inner = SpyAdmin(FakeAdmin(c, authorizer=""), **spy)  # no authorizer: every call is allowed
    return ClusterAdmin(inner, "A", timeout_s=timeout_s, bootstrap_servers="a:9092"), inner


# --------------------------------------------------------------------------- the one rule


@pytest.mark.parametrize("code", [KafkaError.CLUSTER_AUTHORIZATION_FAILED, KafkaError.LEADER_NOT_AVAILABLE])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_kafka_error_of_any_call_is_a_cluster_error_with_its_code(call: str, code: int) -> None:
    admin, _ = admin_of(cluster(), timeout_s=0.2, fail=code)  # retriable errors are retried for timeout_s
    with pytest.raises(ClusterError) as e:
        CALLS[call](admin)
    err = KafkaError(code)
    assert type(e.value) is ClusterError
    assert e.value.kafka_code == err.name()
    assert e.value.retriable is is_transient(err)
    assert "cluster 'A'" in e.value.message and err.name() in e.value.message


@pytest.mark.parametrize("call", sorted(CALLS))
def test_no_answer_from_any_call_is_cluster_unreachable_naming_alias_servers_and_fix(
    call: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mirrorspark.kafka.admin_cluster, "ELECTION_GRACE_S", 0.0)
    admin, _ = admin_of(cluster(), timeout_s=0.05, hang=True)
    with pytest.raises(ClusterUnreachableError) as e:
        CALLS[call](admin)
    message = e.value.message
    assert e.value.retriable
    assert message.startswith("cluster 'A' is unreachable at a:9092: ")
    assert "check that the cluster is up and 'A.bootstrap.servers' is right, or raise 'admin.timeout.ms'" in message


def test_a_timeout_names_the_setting_that_set_it() -> None:
    admin, _ = admin_of(cluster(), timeout_s=0.05, hang=True)
    with pytest.raises(ClusterUnreachableError, match=r"describing topic 't' timed out after 0\.05 s.*'--timeout'"):
        admin.with_timeout(0.05, setting="--timeout").describe_topics(["t"])


def test_librdkafka_transport_and_timed_out_errors_mean_no_answer() -> None:
    for code in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT):
        admin, _ = admin_of(cluster(), timeout_s=0.1, fail=code)
        with pytest.raises(ClusterUnreachableError) as e:
            admin.describe_topics(["t"])
        assert e.value.kafka_code == KafkaError(code).name() and e.value.retriable


def test_a_transient_error_of_list_offsets_is_retried_until_it_clears() -> None:
    c = cluster()
    admin, spy = admin_of(c, fail=KafkaError.NOT_LEADER_FOR_PARTITION)
    real = spy._answer
    answers = iter(range(10))

    def flaky(fut: Any) -> Any:
        spy.fail = KafkaError.NOT_LEADER_FOR_PARTITION if next(answers) < 2 else None
        return real(fut)

    spy._answer = flaky  # type: ignore[method-assign]
    assert admin.end_offsets([("t", 0)]) == {("t", 0): 3}
    assert [name for name, _ in spy.requests] == ["list_offsets"] * 3


# --------------------------------------------------------------------------- the timeout reaches every call


def test_the_configured_timeout_reaches_every_request_and_every_wait() -> None:
    admin, spy = admin_of(cluster(), timeout_s=7.5)
    for call in CALLS.values():
        call(admin)
    assert {name for name, _ in spy.requests} >= {"list_topics", "describe_topics", "list_offsets", "create_topics"}
    for name, kwargs in spy.requests:
        if name == "list_topics":
            assert 0 < kwargs["timeout"] <= 7.5, (name, kwargs)
        elif name == "elect_leaders":  # confluent-kafka 2.16.1 cannot take request_timeout there
            assert kwargs == {}
        else:
            assert kwargs["request_timeout"] == 7.5, (name, kwargs)
    grace = mirrorspark.kafka.admin_cluster.ELECTION_GRACE_S
    assert spy.waits and all(w is not None and 7.0 < w <= 7.5 + grace for w in spy.waits)
    assert sum(1 for w in spy.waits if w is not None and w > 7.5) == 1  # the election only


def test_with_timeout_shares_the_client_and_changes_only_the_bound() -> None:
    admin, spy = admin_of(cluster(), timeout_s=60.0)
    short = admin.with_timeout(2.0)
    assert short.admin is spy and short.alias == "A" and short.bootstrap_servers == "a:9092"
    short.describe_topics(["t"])
    assert spy.requests[-1][1]["request_timeout"] == 2.0 and admin.timeout_s == 60.0


def test_check_reachable_waits_ten_seconds_at_most() -> None:
    admin, spy = admin_of(cluster(), timeout_s=60.0)
    admin.check_reachable()
    admin.with_timeout(3.0).check_reachable()
    assert [kw["timeout"] for _, kw in spy.requests] == [10.0, 3.0]


# --------------------------------------------------------------------------- each call's own outcomes


def test_unknown_topics_are_left_out_not_errors() -> None:
    admin, _ = admin_of(cluster())
    assert set(admin.describe_topics(["t", "gone"])) == {"t"}
    assert set(admin.describe_topic_configs(["t", "gone"])) == {"t"}
    assert {p.topic for p in admin.describe_partitions(["t", "gone"])} == {"t"}
    assert [(p.topic, p.partition, p.leader, p.isr) for p in admin.partition_metadata(["t", "gone"])] == [
        ("t", 0, 0, (0,)),
        ("t", 1, 0, (0,)),
    ]
    assert set(admin.dynamic_configs([("topic", "t"), ("topic", "gone")], ["retention.ms"])) == {("topic", "t")}
    assert admin.end_offsets([("t", 0), ("gone", 0)]) == {("t", 0): 3}


def test_a_topic_hidden_from_the_principal_raises_unless_asked_to_read_as_missing() -> None:
    c = cluster()
    c.create_topic("hidden", 1)
    c.undescribable.add("hidden")
    admin, _ = admin_of(c)
    with pytest.raises(ClusterError) as e:
        admin.describe_topics(["t", "hidden"])
    assert e.value.kafka_code == "TOPIC_AUTHORIZATION_FAILED"
    assert set(admin.describe_topics(["t", "hidden", "gone"], hidden_as_missing=True)) == {"t"}


def test_an_existing_topic_is_not_created_again_and_a_grown_one_not_grown() -> None:
    c = cluster()
    admin, _ = admin_of(c)
    assert admin.create_topics([TopicSpec("t", 2, 1), TopicSpec("u", 1, 1)]) == ["u"]
    assert admin.ensure_topic("t", partitions=2, replication_factor=1) is False
    admin.create_partitions({"t": 2})  # INVALID_PARTITIONS: already that many
    assert len(c.topics["t"].partitions) == 2


def test_a_replication_factor_too_large_says_what_to_set() -> None:
    admin, _ = admin_of(cluster(), fail=KafkaError.INVALID_REPLICATION_FACTOR)
    with pytest.raises(ClusterError, match=r"creating topic 'x' on cluster 'A' failed.*replication\.factor key to -1"):
        admin.create_topics([TopicSpec("x", 1, 3)])


def test_an_unknown_group_is_dead_also_when_the_broker_says_group_id_not_found() -> None:
    c = cluster()
    c.describe_errors["kip848"] = KafkaError.GROUP_ID_NOT_FOUND
    admin, _ = admin_of(c)
    assert admin.describe_group("nobody") == GroupDescription("nobody", "Dead", 0)
    assert admin.describe_group("kip848") == GroupDescription("kip848", "Dead", 0)
    assert admin.describe_group("g") == GroupDescription("g", "Empty", 0)


def test_one_groups_failure_does_not_hide_the_others() -> None:
    c = cluster()
    c.describe_errors["loading"] = KafkaError.COORDINATOR_LOAD_IN_PROGRESS
    admin, _ = admin_of(c)
    got = admin.describe_groups(["g", "loading"])
    assert got["g"] == GroupDescription("g", "Empty", 0)
    err = got["loading"]
    assert isinstance(err, ClusterError) and err.retriable and err.kafka_code == "COORDINATOR_LOAD_IN_PROGRESS"
    assert "describing consumer group 'loading' on cluster 'A'" in err.message


def test_partition_offsets_report_minus_one_where_no_leader_answers() -> None:
    admin, _ = admin_of(cluster())
    assert admin.partition_offsets([("t", 0), ("t", 1), ("gone", 0)], earliest=False) == {
        ("t", 0): 3,
        ("t", 1): 0,
        ("gone", 0): -1,
    }
    hung, _ = admin_of(cluster(), timeout_s=0.05, hang=True)
    assert hung.partition_offsets([("t", 0)], earliest=True) == {("t", 0): -1}


def test_create_acls_reports_each_bindings_outcome() -> None:
    binding = AclBinding(
        ResourceType.TOPIC,
        "t",
        ResourcePatternType.LITERAL,
        "User:a",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    fake = FakeAdmin(cluster())
    fake.create_errors["t"] = (KafkaError.INVALID_REQUEST, "no")
    outcome = ClusterAdmin(fake, "A").create_acls([binding])
    err = outcome[binding]
    assert err is not None and err.code() == KafkaError.INVALID_REQUEST
    assert ClusterAdmin(FakeAdmin(cluster(), authorizer=""), "A").describe_acls(ANY_TOPIC_ACL) == []


def test_elect_leaders_reports_each_partitions_outcome() -> None:
    admin, _ = admin_of(cluster())
    assert admin.elect_leaders("preferred", [("t", 0), ("gone", 0)]) == {
        ("t", 0): "ELECTION_NOT_NEEDED",
        ("gone", 0): "UNKNOWN_TOPIC_OR_PART",
    }


def test_committed_group_offsets_come_from_a_consumer_of_the_group() -> None:
    c = cluster()
    admin = ClusterAdmin(None, "A", timeout_s=1.0)
    assert admin.committed_group_offsets(FakeConsumer(c, "g"), "g") == {("t", 0): (2, "")}
    assert admin.committed_group_offsets(FakeConsumer(c, "g"), "g", topics=["other"]) == {}


def test_synced_metadata_with_a_nul_is_committed_not_refused_by_the_binding() -> None:
    """A confluent-kafka client's commit metadata ends in NUL (its binding sends ``strlen + 1`` bytes): syncing it
    must not raise ``ValueError: embedded null character`` (#40's flip test), and it lands as the source's."""
    assert commit_metadata("") is None
    assert commit_metadata("src:1\0") == "src:1"  # sent as "src:1" and its NUL: "src:1\0" again
    assert commit_metadata("a\0b") == "a"
    assert commit_metadata("plain") == "plain"
    c = cluster()
    admin, _ = admin_of(c)
    admin.alter_group_offsets("idle", {("t", 0): (1, "src:1\0"), ("t", 1): (2, "")})
    assert c.groups["idle"].offsets == {("t", 0): (1, "src:1"), ("t", 1): (2, "")}


def test_offsets_for_timestamp_find_the_first_record_at_or_after_it() -> None:
    c = cluster()
    c.append("t", None, b"x", partition=1, ts=100)
    c.append("t", None, b"y", partition=1, ts=200)
    admin, _ = admin_of(c)
    assert admin.offsets_for_timestamp([("t", 1)], 150) == {("t", 1): 1}
    assert admin.offsets_for_timestamp([("t", 1)], 500) == {("t", 1): -1}


# --------------------------------------------------------------------------- where wrappers come from


def test_flow_context_cluster_admin_uses_the_flows_admin_timeout() -> None:
    cfg, _, b, clients = two_clusters("A->B.admin.timeout.ms = 4321\n")
    ctx = FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients)
    admin = ctx.cluster_admin("target", "test-target-admin")
    assert (admin.alias, admin.timeout_s, admin.bootstrap_servers) == ("B", 4.321, "b:9092")
    assert clients.client_ids[-1] == "A->B|mirrorspark|test-target-admin"
    assert clients.admins[-1].cluster is b
    spy = SpyAdmin(admin.admin)
    admin.admin = spy
    admin.end_offsets([("nothing", 0)])
    assert spy.requests == [
        ("list_offsets", {"isolation_level": spy.requests[0][1]["isolation_level"], "request_timeout": 4.321})
    ]
    reverse = FlowContext.build(cfg, cfg.flow("B", "A"), clients=clients)
    assert reverse.cluster_admin("source", "x").timeout_s == 60.0  # admin.timeout.ms's default


def test_cluster_tools_use_the_top_level_admin_timeout() -> None:
    cfg, _, _, clients = two_clusters("admin.timeout.ms = 2500\n")
    admin = ReplicationContext(cfg, clients).cluster_admin("A", "replica-status-admin")
    assert (admin.alias, admin.timeout_s, admin.bootstrap_servers) == ("A", 2.5, "a:9092")
    assert clients.client_ids[-1] == "A|mirrorspark|replica-status-admin"
    # the top-level value itself, whatever the flows override (no longer guessed from them)
    one_flow_overrides, *_ = two_clusters("admin.timeout.ms = 2500\nA->B.admin.timeout.ms = 9000\n")
    assert one_flow_overrides.admin_timeout_ms == 2500
    assert ReplicationContext(one_flow_overrides, clients).cluster_admin("B", "x").timeout_s == 2.5
    both, *_ = two_clusters("A->B.admin.timeout.ms = 9000\nB->A.admin.timeout.ms = 9000\n")
    assert ReplicationContext(both, clients).cluster_admin("A", "x").timeout_s == 60.0  # admin.timeout.ms's default


def test_topics_are_created_in_requests_a_kraft_controller_accepts() -> None:
    # one request of 100 topics x 100 partitions was refused (POLICY_VIOLATION: more than 10,000 records)
    many = [TopicSpec(f"t{i}", 100, 1) for i in range(120)]
    chunks = create_chunks(many)
    assert [t for c in chunks for t in c] == many
    assert all(sum(t.partitions for t in c) <= CREATE_PARTITIONS_CHUNK for c in chunks)
    assert [len(c) for c in create_chunks([TopicSpec(f"s{i}", 1, 1) for i in range(1001)])] == [500, 500, 1]
    huge = [TopicSpec("a", 1, 1), TopicSpec("b", 9000, 1), TopicSpec("c", 1, 1)]
    assert [[t.name for t in c] for c in create_chunks(huge)] == [["a"], ["b"], ["c"]]
    admin, spy = admin_of(cluster())
    assert len(admin.create_topics(many, wait_for_leaders=False)) == 120
    assert [name for name, _ in spy.requests].count("create_topics") == len(chunks) > 1
