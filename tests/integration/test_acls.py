"""Topic ACL sync and the replicator's own permissions, on SASL/PLAIN clusters with ACLs.

Two clusters of this module's own, ``A`` and ``B`` (SASL/PLAIN, ``StandardAuthorizer``,
super user ``admin``), replicate ``A->B`` as ``User:replicator``, which holds exactly
the permissions docs/security.md's "ACLs: what the replicator needs" documents
(:func:`replicator_acls`). The scenario covers what those permissions are for:
copying records, remote topic creation, partition growth, topic config sync, offset
syncs, progress (and resuming from it), heartbeats both ways, checkpoints, group offset
sync and ACL sync itself (every second), and checks that nothing of the replicator
failed or warned. On the continuous engine, removing one documented permission fails only
the flow that needs it: WRITE on B's remote topics while ``A->B`` and ``B->A`` run (``B->A``
copies on), and READ on the lease group before the run (the run ends with the error). In
exactly-once mode (``B.exactly.once.source.support = enabled``), WRITE on TransactionalId ``A-mm2-``
(prefixed) is all the copy tasks' transactional producers need (a ``read_committed`` consumer sees
every record once); without it, with or without DESCRIBE, the flow fails at once with
``TRANSACTIONAL_ID_AUTHORIZATION_FAILED``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    ResourcePatternType,
    ResourceType,
)
from helpers import Bootstrap, admin, assert_eventually, consume_all, create_topic, produce, unique_name
from pyspark.sql import SparkSession
from test_exactly_once import assert_exactly_once, committed_values

from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.errors import ClusterError, DataPathError
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.kafka.local.clusters import start_clusters, stop_clusters
from mirrorspark.kafka.local.model import LocalCluster, LocalClusters
from mirrorspark.replication.connector.acl_sync import TopicAclSync
from mirrorspark.replication.driver import Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PASSWORDS = {"replicator": "replicator-secret", "alice": "alice-secret", "admin": "admin-secret"}
REPLICATOR = "User:replicator"
ALICE = "User:alice"

Op = AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.BROKER  # BROKER = the cluster resource
TXN_ID = ResourceType.TRANSACTIONAL_ID

Grant = tuple[ResourceType, str, ResourcePatternType, AclOperation]
"""(resource type, name, pattern type, operation), allowed to the replicator from any host."""


def replicator_acls(
    source: str, target: str, *, topics: Sequence[str], groups: Sequence[str], exactly_once: bool = False
) -> tuple[list[Grant], list[Grant]]:
    """The permissions docs/security.md documents for the principal running flow ``source->target``.

    Parameters
    ----------
    topics:
        The source topics the flow replicates (granted as literal names).
    groups:
        The source groups the flow checkpoints and syncs (literal names).
    exactly_once:
        With ``<target>.exactly.once.source.support = enabled``: also WRITE on the copy tasks'
        transactional ids (prefix ``<source>-mm2-``).

    Returns
    -------
    tuple[list[Grant], list[Grant]]
        The grants on the source cluster and on the target cluster.
    """
    own_group = f"mirrorspark-{source}->{target}"  # the group.id of the replicator's assign-only consumers
    on_source: list[Grant] = [
        *((TOPIC, t, LITERAL, op) for t in topics for op in (Op.READ, Op.DESCRIBE_CONFIGS)),
        # heartbeats: replicated (as every heartbeats topic), and written by the reverse heartbeat flow
        *((TOPIC, "heartbeats", LITERAL, op) for op in (Op.READ, Op.DESCRIBE_CONFIGS, Op.CREATE, Op.WRITE)),
        *((TOPIC, f"mm2-offset-syncs.{target}.internal", LITERAL, op) for op in (Op.CREATE, Op.WRITE, Op.READ)),
        *((GROUP, g, LITERAL, Op.DESCRIBE) for g in groups),
        (GROUP, own_group, LITERAL, Op.DESCRIBE),
        (CLUSTER, "kafka-cluster", LITERAL, Op.DESCRIBE),
    ]
    on_target: list[Grant] = [
        # remote topics and <source>.checkpoints.internal (ALTER_CONFIGS implies DESCRIBE_CONFIGS)
        *((TOPIC, f"{source}.", PREFIXED, op) for op in (Op.CREATE, Op.WRITE, Op.READ, Op.ALTER_CONFIGS, Op.ALTER)),
        *(
            (TOPIC, f"{internal}.{source}.internal", LITERAL, op)
            for internal in ("mm2-offsets", "mm2-progress", "mm2-gaps", "mm2-task-progress", "mm2-lease")
            for op in (Op.CREATE, Op.WRITE, Op.READ)
        ),
        (GROUP, f"mirrorspark-lease-{source}->{target}", LITERAL, Op.READ),
        *((TOPIC, "heartbeats", LITERAL, op) for op in (Op.CREATE, Op.WRITE)),
        *((GROUP, g, LITERAL, Op.READ) for g in groups),
        (GROUP, own_group, LITERAL, Op.DESCRIBE),
        (CLUSTER, "kafka-cluster", LITERAL, Op.ALTER),
    ]
    if exactly_once:
        on_target.append(transactional_ids(source, Op.WRITE))
    return on_source, on_target


def transactional_ids(source: str, op: AclOperation) -> Grant:
    """``op`` on the copy tasks' transactional ids of flow ``source->…``: ``<source>-mm2-`` (prefixed)."""
    return (TXN_ID, f"{source}-mm2-", PREFIXED, op)


def binding(grant: Grant, principal: str = REPLICATOR, permission: AclPermissionType = ALLOW) -> AclBinding:
    restype, name, pattern, op = grant
    return AclBinding(restype, name, pattern, principal, "*", op, permission)


def create_acls(cluster: LocalCluster, bindings: Sequence[AclBinding]) -> None:
    client = admin(cluster.client_config())
    for fut in client.create_acls(list(bindings), request_timeout=30).values():
        fut.result(timeout=30)


def topic_acls(cluster: LocalCluster, principal: str | None = None) -> set[AclBinding]:
    flt = AclBindingFilter(TOPIC, None, ResourcePatternType.ANY, principal, None, Op.ANY, AclPermissionType.ANY)  # type: ignore[arg-type]
    client = admin(cluster.client_config())  # referenced until the future completes
    return set(client.describe_acls(flt, request_timeout=30).result(timeout=30))


def jaas(user: str) -> str:
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required"
        f' username="{user}" password="{PASSWORDS[user]}";'
    )


def grant_flow(
    clusters: LocalClusters,
    source: str,
    target: str,
    *,
    topics: Sequence[str],
    groups: Sequence[str],
    exactly_once: bool = False,
) -> None:
    """Give the replicator what docs/security.md documents for flow ``source->target`` (:func:`replicator_acls`)."""
    on_source, on_target = replicator_acls(source, target, topics=topics, groups=groups, exactly_once=exactly_once)
    create_acls(clusters.cluster(source), [binding(g) for g in on_source])
    create_acls(clusters.cluster(target), [binding(g) for g in on_target])


def delete_acl(cluster: LocalCluster, grant: Grant) -> None:
    """Delete the replicator's ALLOW binding ``grant`` (exactly that one) on ``cluster``."""
    restype, name, pattern, op = grant
    flt = AclBindingFilter(restype, name, pattern, REPLICATOR, "*", op, ALLOW)
    client = admin(cluster.client_config())
    deleted = client.delete_acls([flt], request_timeout=30)[flt].result(timeout=30)
    assert [binding(grant)] == deleted, f"{grant} was not granted"


def make_properties(clusters: LocalClusters, flows: Sequence[tuple[str, str]] = (("A", "B"),), **extra: str) -> str:
    """mm2.properties (with the replicator's credentials) for ``flows``, every periodic job at 1 s."""
    return clusters.mm2_properties(
        list(flows),
        extra={
            "A.sasl.jaas.config": jaas("replicator"),
            "B.sasl.jaas.config": jaas("replicator"),
            "groups": "alice-app",
            "sync.topic.acls.interval.seconds": "1",
            "sync.topic.configs.interval.seconds": "1",
            "refresh.topics.interval.seconds": "1",
            "refresh.groups.interval.seconds": "1",
            "emit.heartbeats.interval.seconds": "1",
            "emit.checkpoints.interval.seconds": "1",
            "sync.group.offsets.enabled": "true",
            "sync.group.offsets.interval.seconds": "1",
            "tasks.max": "2",
            "offset.lag.max": "10",
            **extra,
        },
    )


def make_config(
    clusters: LocalClusters, flows: Sequence[tuple[str, str]] = (("A", "B"),), **extra: str
) -> MirrorConfig:
    """mm2.properties for ``flows`` (default A->B) run as User:replicator, with every periodic job at 1 s."""
    return parse_config(parse_properties(make_properties(clusters, flows, **extra)))


class _Problems(logging.Handler):
    """Collects WARNING and above of mirrorspark's loggers (but the scheduler's timing notes: a
    loaded machine may slow a job past its 1 s interval, and tests never assert timings; nor a
    connection librdkafka lost and made again)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.name == "mirrorspark.replication.connector.scheduler" and "longer than its" in message:
            return
        if record.name == "mirrorspark.librdkafka" and "Broker transport failure" in message:
            return  # a connection dropped on a loaded machine and made again: no authorization problem
        self.messages.append(f"{record.name}: {message}")


@contextlib.contextmanager
def problems() -> Iterator[list[str]]:
    handler = _Problems()
    logger = logging.getLogger("mirrorspark")
    logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)


@contextlib.contextmanager
def running(cfg: MirrorConfig, spark: SparkSession) -> Iterator[Replicator]:
    """Run the flows on a background thread while the block runs; stop cleanly at its end."""
    r = Replicator(cfg, spark)
    r.start()
    errors: list[BaseException] = []

    def target() -> None:
        try:
            r.run()
        except BaseException as e:  # surfaced in the test thread
            errors.append(e)

    t = threading.Thread(target=target, name="replicator", daemon=True)
    t.start()
    try:
        yield r
        assert not errors, f"the replicator failed: {errors[0]!r}"
    finally:
        r.request_stop()
        t.join(120)
    assert not t.is_alive(), "the replicator did not stop"
    if errors:
        raise errors[0]


def consume_as(cluster: LocalCluster, user: str, group: str, topic: str, timeout_s: float = 30.0) -> int:
    """Read every record of ``topic`` from the start as ``user`` (assign, group ``group``); return the count."""
    ends = {p: e for p, (_, e) in _end_offsets(cluster, topic).items()}
    c = Consumer(
        {
            **cluster.client_config(user),
            "group.id": group,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "log_level": 0,
        }
    )
    n = 0
    try:
        c.assign([TopicPartition(topic, p, 0) for p, e in ends.items() if e > 0])
        pending = {p for p, e in ends.items() if e > 0}
        deadline = time.monotonic() + timeout_s
        while pending:
            assert time.monotonic() < deadline, f"{user} could not read {topic} to its end"
            m = c.poll(0.5)
            if m is None:
                continue
            err = m.error()
            if err is not None:
                assert err.code() == KafkaError._PARTITION_EOF, f"{user} reading {topic}: {err}"
                pending.discard(m.partition())
                continue
            n += 1
    finally:
        c.close()
    return n


def commit_as(cluster: LocalCluster, user: str, group: str, offsets: list[TopicPartition]) -> None:
    """Commit offsets for ``group`` as ``user``, retrying while a new cluster's group coordinator is loading."""
    c = Consumer({**cluster.client_config(user), "group.id": group, "enable.auto.commit": False, "log_level": 0})

    def commit() -> bool:
        try:
            c.commit(offsets=offsets, asynchronous=False)
        except KafkaException as e:
            err = e.args[0]
            if not (err.retriable() or err.code() in _COORDINATOR_NOT_READY):
                raise
            raise AssertionError(str(err)) from e  # retried by assert_eventually
        return True

    try:
        assert_eventually(commit, timeout_s=30, message=f"committing offsets of {group} failed")
    finally:
        c.close()


_COORDINATOR_NOT_READY = (
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
)


def produce_as(cluster: LocalCluster, user: str, topic: str) -> KafkaError | None:
    """Produce one record as ``user``; return the delivery error (``None`` if it was written)."""
    p = Producer({**cluster.client_config(user), "log_level": 0, "message.timeout.ms": 10000})
    result: list[KafkaError | None] = []
    p.produce(topic, b"from alice", on_delivery=lambda err, _msg: result.append(err))
    p.flush(15)
    assert result, f"no delivery report for {topic}"
    return result[0]


def _end_offsets(cluster: LocalCluster, topic: str) -> dict[int, tuple[int, int]]:
    from helpers import end_offsets

    return end_offsets(cluster.client_config(), topic)


def group_offsets(client: AdminClient, group: str) -> dict[tuple[str, int], int]:
    res = client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=30)
    got = res[group].result(timeout=30)
    return {(tp.topic, tp.partition): tp.offset for tp in got.topic_partitions or [] if tp.offset >= 0}


def flow_states(properties: str, tmp_path: Path) -> dict[str, tuple[str, str | None]]:
    """``mirrorspark status --json`` with ``properties`` (the replicator's credentials): flow -> (state, error)."""
    props = tmp_path / "mm2.properties"
    props.write_text(properties)
    done = subprocess.run(
        [sys.executable, "-m", "mirrorspark", "status", str(props), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return {f["flow"]: (f["state"], f["error"]) for f in json.loads(done.stdout)["flows"]}


def run_until_failed(cfg: MirrorConfig, spark: SparkSession) -> BaseException:
    """Run ``cfg``'s one flow until it is marked failed and the run ends by itself (no hang); return the run's error.

    The error the run raises is the failed flow's own (the one ``stats`` and ``status`` show).
    """
    r = Replicator(cfg, spark)
    errors: list[BaseException] = []

    def target() -> None:
        try:
            r.run()
        except BaseException as e:  # surfaced in the test thread
            errors.append(e)

    t = threading.Thread(target=target, name="replicator", daemon=True)
    t.start()
    try:
        assert_eventually(lambda: len(r.supervisors) == 1, timeout_s=60, message="the engine did not start")
        [sup] = r.supervisors
        assert_eventually(lambda: sup.state == "failed", timeout_s=90, message="the flow was not marked failed")
        assert [(f.flow, f.state) for f in r.stats()] == [(sup.name, "failed")]
        # its only flow failed: the run ends by itself, raising the flow's error
        assert_eventually(lambda: not t.is_alive(), timeout_s=60, message="the run did not end")
    finally:
        r.request_stop()
        t.join(120)
    assert not t.is_alive(), "the replicator did not stop"
    [error] = errors
    assert error is sup.error, (error, sup.error)
    return error


@pytest.fixture(scope="module")
def secure_clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalClusters]:
    """Two SASL/PLAIN clusters with ACLs (users admin, replicator, alice), for this module only."""
    base_dir: Path = tmp_path_factory.mktemp("acl-clusters")
    try:
        yield start_clusters(["A", "B"], base_dir=base_dir, security="sasl_plain", sasl_users=PASSWORDS)
    finally:
        stop_clusters(base_dir)


def test_topic_acls_are_synced_and_the_documented_permissions_suffice(
    secure_clusters: LocalClusters, spark: SparkSession
) -> None:
    a, b = secure_clusters.cluster("A"), secure_clusters.cluster("B")
    a_admin, b_admin = admin(a.client_config()), admin(b.client_config())
    create_topic(a.client_config(), "topic1", partitions=2)
    create_topic(a.client_config(), "topic2")
    produce(a.client_config(), "topic1", [{"value": f"v{i}".encode(), "partition": i % 2} for i in range(100)])
    produce(a.client_config(), "topic2", [{"value": f"w{i}".encode()} for i in range(10)])

    # Topic ACLs on A (and one group ACL, which ACL sync never copies).
    create_acls(
        a,
        [
            binding((TOPIC, "topic1", LITERAL, Op.READ), ALICE),
            binding((TOPIC, "topic1", LITERAL, Op.WRITE), ALICE),  # ALLOW WRITE: never copied
            binding((TOPIC, "topic2", LITERAL, Op.ALL), ALICE),  # ALLOW ALL: becomes ALLOW READ
            binding((TOPIC, "topic1", LITERAL, Op.ALL), "User:mallory", DENY),  # DENY: copied as is
            binding((TOPIC, "topic", PREFIXED, Op.DESCRIBE), ALICE),  # PREFIXED: not copied
            binding((GROUP, "alice-app", LITERAL, Op.READ), ALICE),
        ],
    )
    # The replicator gets exactly what docs/security.md documents; on B, alice may use her group (an operator's
    # job: ACL sync copies topic ACLs only).
    on_a, on_b = replicator_acls("A", "B", topics=["topic1", "topic2"], groups=["alice-app"])
    create_acls(a, [binding(g) for g in on_a])
    create_acls(b, [binding(g) for g in on_b] + [binding((GROUP, "alice-app", LITERAL, Op.READ), ALICE)])

    # alice's application commits offsets on A (for checkpoints and group offset sync)
    commit_as(a, "alice", "alice-app", [TopicPartition("topic1", 0, 30), TopicPartition("topic1", 1, 20)])

    cfg = make_config(secure_clusters)
    t0 = time.monotonic()
    with problems() as warned:
        # 1. one-shot run until caught up (records, offset syncs and checkpoints of alice-app)
        first = Replicator(cfg, spark)
        first.run(until_caught_up=True)
        copied = {t.topic: t.records for t in first.stats()[0].topics}
        assert (copied["topic1"], copied["topic2"]) == (100, 10)
        assert "sync topic ACLs A->B" in [j.name for j in first.control.jobs]
        assert all(j.failures == 0 for j in first.control.jobs), [
            (j.name, j.last_error) for j in first.control.jobs if j.failures
        ]
        t1 = time.monotonic()

        # 2. a restarted replicator (resumes from its progress in mm2-offsets.A.internal on B) while A changes
        with running(cfg, spark) as r:
            a_admin.create_partitions([NewPartitions("topic1", 3)])["topic1"].result(30)
            res = ConfigResource(
                ConfigResource.Type.TOPIC,
                "topic1",
                incremental_configs=[
                    ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)
                ],
            )
            a_admin.incremental_alter_configs([res])[res].result(30)
            produce(a.client_config(), "topic1", [{"value": f"x{i}".encode(), "partition": 2} for i in range(5)])
            create_acls(a, [binding((TOPIC, "topic2", LITERAL, Op.DESCRIBE), "User:bob")])  # added while running

            def remote_complete() -> bool:
                assert len(consume_all(b.client_config(), "A.topic1")) == 105
                return True

            assert_eventually(remote_complete, timeout_s=60, message="A.topic1 is not complete on B")

            def configs_synced() -> bool:
                res_b = ConfigResource(ConfigResource.Type.TOPIC, "A.topic1")
                entries = b_admin.describe_configs([res_b])[res_b].result(30)
                assert entries["retention.ms"].value == "3600000"
                return True

            assert_eventually(configs_synced, timeout_s=30, message="topic config not synced")

            expected = {
                binding((TOPIC, "A.topic1", LITERAL, Op.READ), ALICE),
                binding((TOPIC, "A.topic1", LITERAL, Op.ALL), "User:mallory", DENY),
                binding((TOPIC, "A.topic2", LITERAL, Op.READ), ALICE),
                binding((TOPIC, "A.topic2", LITERAL, Op.DESCRIBE), "User:bob"),
            }

            def acls_synced() -> bool:
                have = {x for x in topic_acls(b) if x.principal != REPLICATOR}
                assert have == expected
                return True

            assert_eventually(acls_synced, timeout_s=30, message="topic ACLs not synced to B")

            def group_synced() -> bool:
                assert group_offsets(b_admin, "alice-app") == {("A.topic1", 0): 30, ("A.topic1", 1): 20}
                return True

            assert_eventually(group_synced, timeout_s=30, message="alice-app's offsets not synced to B")

            def heartbeats_both_ways() -> bool:
                topics = b_admin.list_topics(timeout=10).topics
                assert "heartbeats" in topics and "A.heartbeats" in topics
                assert consume_all(b.client_config(), "heartbeats")  # A->B heartbeats, on B
                assert consume_all(b.client_config(), "A.heartbeats")  # B->A heartbeats on A, replicated
                return True

            assert_eventually(heartbeats_both_ways, timeout_s=30, message="heartbeats missing")
            # ACL sync never deletes: an ACL removed on A stays on B
            flt = AclBindingFilter(TOPIC, "topic2", LITERAL, "User:bob", None, Op.ANY, AclPermissionType.ANY)  # type: ignore[arg-type]
            acl_job = next(j for j in r.control.jobs if j.name == "sync topic ACLs A->B")
            runs_before = acl_job.runs
            a_admin.delete_acls([flt])[flt].result(30)
            assert_eventually(  # two more rounds of the 1 s ACL job after the delete
                lambda: acl_job.runs >= runs_before + 2, timeout_s=30, message="the ACL job did not run again"
            )
            assert binding((TOPIC, "A.topic2", LITERAL, Op.DESCRIBE), "User:bob") in topic_acls(b)
            failed = [(j.name, j.last_error) for j in r.control.jobs + r.background.jobs if j.failures]
            assert not failed
            assert acl_job.runs >= 3
        t2 = time.monotonic()
    assert not warned, warned
    assert consume_all(b.client_config(), "mm2-progress.A.internal"), "no lifetime totals published"
    print(f"first run {t1 - t0:.1f} s, second run {t2 - t1:.1f} s")

    # alice on B: reads the remote topics (synced READ; ALLOW ALL became READ), cannot write them
    assert consume_as(b, "alice", "alice-app", "A.topic1") == 105
    assert consume_as(b, "alice", "alice-app", "A.topic2") == 10
    for topic in ("A.topic1", "A.topic2"):
        err = produce_as(b, "alice", topic)
        assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, (topic, err)
    # on A, alice's ALLOW WRITE still works (the rule dropped it only for B)
    assert produce_as(a, "alice", "topic1") is None


def sync_job(source: Bootstrap, target: Bootstrap, topic: str) -> TopicAclSync:
    """ACL sync A->B of one topic with the given client configurations (no Flow, no Spark)."""
    admins = (ClusterAdmin(admin(source), "A", timeout_s=15), ClusterAdmin(admin(target), "B", timeout_s=15))
    return TopicAclSync(
        name="A->B",
        source="A",
        target="B",
        admins=lambda: admins,
        should_replicate=lambda t: t == topic,
        remote_topic=lambda t: f"A.{t}",
    )


def test_missing_cluster_permissions_are_named(secure_clusters: LocalClusters) -> None:
    """librdkafka lists no ACLs (no error) without DESCRIBE on the cluster; the job still names the fix."""
    a, b = secure_clusters.cluster("A"), secure_clusters.cluster("B")
    topic = unique_name("acl-probe")
    create_acls(a, [binding((TOPIC, topic, LITERAL, Op.READ), ALICE)])
    with pytest.raises(ClusterError, match="needs DESCRIBE on the cluster resource of 'A'"):
        sync_job(a.client_config("alice"), b.client_config(), topic).sync()
    with pytest.raises(ClusterError, match="needs ALTER on the cluster resource of 'B'") as e:
        sync_job(a.client_config(), b.client_config("alice"), topic).sync()
    assert e.value.kafka_code == "CLUSTER_AUTHORIZATION_FAILED"
    assert binding((TOPIC, f"A.{topic}", LITERAL, Op.READ), ALICE) not in topic_acls(b)
    assert sync_job(a.client_config(), b.client_config(), topic).sync() == 1  # a super user may
    assert binding((TOPIC, f"A.{topic}", LITERAL, Op.READ), ALICE) in topic_acls(b)


def test_clusters_without_authorizer_are_told_once(
    local_clusters: LocalClusters, caplog: pytest.LogCaptureFixture
) -> None:
    """The session's plaintext clusters have no authorizer: one info line, then silence."""
    job = sync_job(local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup"), "topic1")
    with caplog.at_level(logging.INFO, logger="mirrorspark.replication.connector.acl_sync"):
        assert job.sync() == 0
        assert job.sync() == 0
    assert [(r.levelno, "sync.topic.acls.enabled=false" in r.getMessage()) for r in caplog.records] == [
        (logging.INFO, True)
    ]


def values(cluster: LocalCluster, topic: str) -> list[bytes | None]:
    """The values of ``topic`` on ``cluster`` (read as the super user), ``[]`` while it does not exist."""
    if topic not in admin(cluster.client_config()).list_topics(timeout=10).topics:
        return []
    return [r["value"] for r in consume_all(cluster.client_config(), topic)]


def test_a_flow_whose_target_acl_is_removed_fails_while_the_other_flow_keeps_copying(
    secure_clusters: LocalClusters, spark: SparkSession, tmp_path: Path
) -> None:
    """Removing WRITE on B's remote topics of A->B fails that flow only (continuous engine); B->A copies on."""
    a, b = secure_clusters.cluster("A"), secure_clusters.cluster("B")
    on_a, on_b = unique_name("acl-fail-ab"), unique_name("acl-fail-ba")
    create_topic(a.client_config(), on_a)
    create_topic(b.client_config(), on_b)
    grant_flow(secure_clusters, "A", "B", topics=[on_a], groups=[])
    grant_flow(secure_clusters, "B", "A", topics=[on_b], groups=[])
    produce(a.client_config(), on_a, [{"value": f"a{i}".encode()} for i in range(10)])
    produce(b.client_config(), on_b, [{"value": f"b{i}".encode()} for i in range(10)])
    text = make_properties(
        secure_clusters, [("A", "B"), ("B", "A")], topics=f"{on_a}|{on_b}", groups=unique_name("none")
    )
    cfg = parse_config(parse_properties(text))
    write = (TOPIC, "A.", PREFIXED, Op.WRITE)  # docs/security.md: remote topics of A->B on B, CREATE, WRITE, ...
    removed = False
    try:
        with pytest.raises(DataPathError, match="TOPIC_AUTHORIZATION_FAILED"), running(cfg, spark) as r:
            assert_eventually(lambda: len(r.supervisors) == 2, message="the engine did not start")
            failing, other = r.supervisors
            assert (failing.name, other.name) == ("A->B", "B->A")
            expected_a = [f"a{i}".encode() for i in range(10)]
            expected_b = [f"b{i}".encode() for i in range(10)]
            assert_eventually(lambda: values(b, f"A.{on_a}") == expected_a, timeout_s=60, message="A->B copies")
            assert_eventually(lambda: values(a, f"B.{on_b}") == expected_b, timeout_s=60, message="B->A copies")

            delete_acl(b, write)
            removed = True
            produce(a.client_config(), on_a, [{"value": f"c{i}".encode()} for i in range(10)])
            assert_eventually(lambda: failing.state == "failed", timeout_s=60, message="A->B was not marked failed")
            assert failing.error is not None
            error = str(failing.error)
            assert "TOPIC_AUTHORIZATION_FAILED" in error, error
            # the first write refused: a record of on_a, or a heartbeat (B->A emits into A's heartbeats every 1 s)
            assert re.search(rf"WRITE on topic 'A\.({on_a}|heartbeats)' on the target", error), error
            assert other.state == "running"

            produce(b.client_config(), on_b, [{"value": f"d{i}".encode()} for i in range(10)])  # after the failure
            expected_b += [f"d{i}".encode() for i in range(10)]
            assert_eventually(
                lambda: values(a, f"B.{on_b}") == expected_b, timeout_s=60, message="B->A stopped copying"
            )
            assert [(f.flow, f.state) for f in r.stats()] == [("A->B", "failed"), ("B->A", "running")]
            assert other.state == "running"

            states = flow_states(text, tmp_path)
            assert states["A->B"][0] == "failed" and "TOPIC_AUTHORIZATION_FAILED" in states["A->B"][1], states
            assert states["B->A"] == ("running", None)
    finally:
        if removed:
            create_acls(b, [binding(write)])


def test_a_missing_lease_acl_marks_the_flow_failed(secure_clusters: LocalClusters, spark: SparkSession) -> None:
    """Without READ on its lease group the flow is marked failed (naming group and permission), and the run ends."""
    a, b = secure_clusters.cluster("A"), secure_clusters.cluster("B")
    topic = unique_name("acl-lease")
    create_topic(a.client_config(), topic)
    produce(a.client_config(), topic, [{"value": b"x"}])
    grant_flow(secure_clusters, "A", "B", topics=[topic], groups=[])
    lease = (GROUP, "mirrorspark-lease-A->B", LITERAL, Op.READ)  # docs/security.md: joining the lease group
    cfg = make_config(secure_clusters, topics=topic, groups=unique_name("none"))
    delete_acl(b, lease)
    try:
        error = run_until_failed(cfg, spark)
        assert isinstance(error, ClusterError) and error.kafka_code == "GROUP_AUTHORIZATION_FAILED", repr(error)
        assert "grant the replication principal READ on group 'mirrorspark-lease-A->B' on cluster 'B'" in str(error)
        assert values(b, f"A.{topic}") == []  # nothing copied without the lease
    finally:
        create_acls(b, [binding(lease)])


EOS = {"B.exactly.once.source.support": "enabled", "A.consumer.isolation.level": "read_committed"}


def eos_setup(clusters: LocalClusters, prefix: str) -> tuple[str, str, MirrorConfig]:
    """A 2-partition source topic with 100 records, the documented grants of exactly-once ``A->B``.

    Returns the topic, the text of mm2.properties and its config (``tasks.max = 2``: transactional
    ids ``A-mm2-MirrorSourceConnector-0`` and ``-1``).
    """
    a = clusters.cluster("A")
    topic = unique_name(prefix)
    create_topic(a.client_config(), topic, partitions=2)
    produce(a.client_config(), topic, [{"value": f"e{i}".encode(), "partition": i % 2} for i in range(100)])
    grant_flow(clusters, "A", "B", topics=[topic], groups=[], exactly_once=True)
    text = make_properties(clusters, topics=topic, groups=unique_name("none"), **EOS)
    return topic, text, parse_config(parse_properties(text))


def test_exactly_once_needs_write_on_the_transactional_ids_only(
    secure_clusters: LocalClusters, spark: SparkSession
) -> None:
    """With the documented ACLs (WRITE on TransactionalId ``A-mm2-``; no DESCRIBE, WRITE implies it): exactly once."""
    b = secure_clusters.cluster("B")
    topic, _, cfg = eos_setup(secure_clusters, "acl-eos")
    flt = AclBindingFilter(TXN_ID, None, ResourcePatternType.ANY, REPLICATOR, None, Op.ANY, AclPermissionType.ANY)  # type: ignore[arg-type]
    client = admin(b.client_config())
    held = client.describe_acls(flt, request_timeout=30).result(timeout=30)
    assert held == [binding(transactional_ids("A", Op.WRITE))]
    with problems() as warned:
        r = Replicator(cfg, spark)
        r.run(until_caught_up=True)
    assert all(s.state != "failed" for s in r.supervisors)
    assert not warned, warned
    assert_exactly_once(b.client_config(), f"A.{topic}", {f"e{i}".encode() for i in range(100)})


@pytest.mark.parametrize(
    ("describe", "refused"),
    [
        (False, "Failed to find transaction coordinator"),  # FindCoordinator needs DESCRIBE (implied by WRITE)
        (True, "Failed to acquire transactional PID"),  # InitProducerId needs WRITE
    ],
    ids=["no-grant", "describe-only"],
)
def test_exactly_once_without_write_on_the_transactional_ids_fails_the_flow(
    secure_clusters: LocalClusters, spark: SparkSession, tmp_path: Path, describe: bool, refused: str
) -> None:
    """Without WRITE on TransactionalId ``A-mm2-`` (DESCRIBE or not) the flow fails at once, naming ids and grant."""
    b = secure_clusters.cluster("B")
    topic, text, cfg = eos_setup(secure_clusters, "acl-eos-denied")
    write, desc = transactional_ids("A", Op.WRITE), transactional_ids("A", Op.DESCRIBE)
    delete_acl(b, write)
    if describe:
        create_acls(b, [binding(desc)])
    try:
        error = run_until_failed(cfg, spark)
        assert isinstance(error, ClusterError), repr(error)
        message = str(error)
        print(message)
        assert "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" in message and refused in message, message
        assert re.search(r"transactional id 'A-mm2-MirrorSourceConnector-[01]'", message), message
        assert (
            "grant it WRITE on TransactionalId 'A-mm2-MirrorSourceConnector-' (prefixed) on cluster 'B'" in message
        ), message
        # status as an operator (the replicator may not READ B's heartbeats: WRITE is all A->B needs there)
        state, shown = flow_states(text.replace(jaas("replicator"), jaas("admin")), tmp_path)["A->B"]
        assert state == "failed" and shown is not None and "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" in shown, shown
        assert committed_values(b.client_config(), f"A.{topic}") == []  # nothing committed
    finally:
        if describe:
            delete_acl(b, desc)
        create_acls(b, [binding(write)])
