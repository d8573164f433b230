"""``mirrorspark plan``: what a run would do, from the run's own computations, with nothing written (fake clusters)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType
from typer.testing import CliRunner

from fakes import FakeClients, FakeCluster, FakeGroup, two_clusters
from mirrorspark.cli.app import app
from mirrorspark.cli.plan import CHANGES_EXIT_CODE
from mirrorspark.client.context import FlowContext, ReplicationContext
from mirrorspark.config.model import MirrorConfig
from mirrorspark.errors import MirrorsparkError
from mirrorspark.mm2.records import Checkpoint
from mirrorspark.replication.connector.checkpoint_emitter import CheckpointEmitter
from mirrorspark.replication.connector.flow import Flow
from mirrorspark.replication.connector.heartbeats import HeartbeatEmitter
from mirrorspark.replication.connector.internal_topic_specs import internal_topic
from mirrorspark.replication.connector.plan import (
    AclAddition,
    GroupOffsetWrite,
    Lack,
    RunPlan,
    SkippedGroup,
    TopicChange,
    TopicCreation,
    plan_run,
)
from mirrorspark.replication.connector.totals_publisher import TotalsPublisher

pytestmark = pytest.mark.unit

Op = AclOperation
CHECKPOINTS = "A.checkpoints.internal"


def snapshot(*clusters: FakeCluster) -> list[Any]:
    """Everything a plan must leave alone: topics (partitions, configs, records), groups, ACL bindings."""
    return [
        (
            {n: ([len(p) for p in t.partitions], dict(t.config)) for n, t in c.topics.items()},
            {g: dict(x.offsets) for g, x in c.groups.items()},
        )
        for c in clusters
    ]


def start_run(cfg: MirrorConfig, clients: FakeClients) -> None:
    """Start what a run starts before Spark (heartbeats, flow, totals, checkpoints; the lease: its spec only)."""
    context = ReplicationContext(cfg, clients)
    HeartbeatEmitter([context.of(f).for_connector("heartbeat") for f in cfg.heartbeat_flows()]).start()
    ctx = context.flow("A", "B")
    flow = Flow(ctx, cfg.data_path)
    flow.start()
    TotalsPublisher(flow).start()
    emitter = CheckpointEmitter(ctx.for_connector("checkpoint"), reverse=context.reverse(ctx))
    emitter.start()
    internal_topic(ctx, "lease").ensure(ctx.cluster_admin("target", "lease-admin"))  # FlowLease.start's creation
    emitter.close()
    flow.close()


def test_a_plan_before_the_first_run_lists_what_the_run_then_creates_and_writes_nothing() -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 3, {"retention.ms": "1000"})
    a.create_topic("payments", 1)
    before = snapshot(a, b)
    plan = plan_run(ReplicationContext(cfg, clients))
    assert snapshot(a, b) == before
    assert not any("create_topics" in adm.calls or "create_partitions" in adm.calls for adm in clients.admins)
    assert plan.changes
    (flow,) = plan.flows
    assert flow.topics_to_create == (
        # A's heartbeats: created by the run's heartbeats (B->A's connector) before A->B discovers its topics
        TopicCreation("A.heartbeats", 1, 2, {"cleanup.policy": "compact"}, "heartbeats"),
        TopicCreation("A.orders", 3, 2, {"retention.ms": "1000"}, "orders"),
        TopicCreation("A.payments", 1, 2, {}, "payments"),
    )
    planned_internal = {
        (t.cluster, t.topic, t.partitions, tuple(sorted(t.config.items()))) for t in plan.internal_topics
    }

    start_run(cfg, clients)
    created = {("A", n) for n in a.topics} - {("A", "orders"), ("A", "payments")}
    created |= {("B", n) for n in b.topics}
    remote = {("B", t.topic) for t in flow.topics_to_create}
    assert remote == {("B", "A.orders"), ("B", "A.payments"), ("B", "A.heartbeats")}  # A's, created by the run
    assert {(c, n) for c, n, _, _ in planned_internal} | remote == created
    for cluster, name, partitions, config in planned_internal:
        topic = (a if cluster == "A" else b).topics[name]
        assert (len(topic.partitions), tuple(sorted(topic.config.items()))) == (partitions, config), name
    assert {(t.cluster, t.role) for t in plan.internal_topics} >= {
        ("B", "offsets"),
        ("A", "offset_syncs"),
        ("B", "checkpoints"),
        ("B", "heartbeats"),
        ("B", "lease"),
        ("A", "heartbeats"),  # B->A's heartbeat connector (MM2's clusterPairs) writes A's
    }

    after = plan_run(ReplicationContext(cfg, clients))
    assert not after.changes
    assert after == RunPlan((type(flow)("A->B", "A", "B"),), (), (), ())


def test_remote_topics_to_grow_and_configs_to_sync_show_from_and_to() -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 3, {"retention.ms": "1000"})
    b.create_topic("A.orders", 2, {"retention.ms": "5000", "max.message.bytes": "2000"})
    (flow,) = plan_run(ReplicationContext(cfg, clients)).flows
    assert [t.topic for t in flow.topics_to_create] == ["A.heartbeats"]
    assert flow.topics_to_change == (
        TopicChange(
            "A.orders",
            "orders",
            (2, 3),
            # set on the source: set; the target's own override: deleted (use.defaults.from=target)
            {"retention.ms": ("5000", "1000"), "max.message.bytes": ("2000", None)},
        ),
    )
    assert len(b.topics["A.orders"].partitions) == 2
    assert b.topics["A.orders"].config["retention.ms"] == "5000"


def test_config_sync_off_plans_no_config_change() -> None:
    cfg, a, b, clients = two_clusters("sync.topic.configs.enabled = false\n")
    a.create_topic("orders", 1, {"retention.ms": "1000"})
    b.create_topic("A.orders", 1)
    (flow,) = plan_run(ReplicationContext(cfg, clients)).flows
    assert flow.topics_to_change == ()


def acl(name: str, principal: str, op: AclOperation) -> AclBinding:
    return AclBinding(
        ResourceType.TOPIC, name, ResourcePatternType.LITERAL, principal, "*", op, AclPermissionType.ALLOW
    )


def test_acls_to_add_and_the_permissions_the_principals_lack() -> None:
    cfg, a, b, _ = two_clusters()
    clients = FakeClients(
        {"a:9092": a, "b:9092": b},
        acls={"a:9092": {"bindings": [acl("orders", "User:alice", Op.READ)]}, "b:9092": {"cluster_ops": [Op.DESCRIBE]}},
    )
    a.create_topic("orders", 1)
    b.can_create = False
    plan = plan_run(ReplicationContext(cfg, clients))
    (flow,) = plan.flows
    assert flow.acls_to_add == (AclAddition("A.orders", "User:alice", "*", "READ", "ALLOW"),)
    assert Lack("B", "ALTER", "cluster", "A->B: ACL sync") in plan.lacks
    assert Lack("B", "CREATE", "topic A.orders", "topic creation") in plan.lacks
    assert Lack("B", "CREATE", "topic mm2-offsets.A.internal", "topic creation") in plan.lacks
    assert not any(x.cluster == "A" for x in plan.lacks)  # A's principal holds what it needs
    assert a.topics.keys() == {"orders"} and not b.topics


def test_a_source_principal_without_describe_on_the_cluster_lacks_it_for_acl_sync() -> None:
    cfg, a, b, _ = two_clusters()
    clients = FakeClients({"a:9092": a, "b:9092": b}, acls={"a:9092": {"cluster_ops": [Op.ALTER]}})
    plan = plan_run(ReplicationContext(cfg, clients))
    assert Lack("A", "DESCRIBE", "cluster", "A->B: ACL sync") in plan.lacks
    assert plan.changes


def write_checkpoints(b: FakeCluster, *cps: Checkpoint) -> None:
    b.create_topic(CHECKPOINTS, 1, {"cleanup.policy": "compact"})
    for cp in cps:
        b.append(CHECKPOINTS, cp.key(), cp.value())


def test_group_offsets_from_to_and_active_groups_are_what_group_sync_then_writes() -> None:
    cfg, a, b, clients = two_clusters("sync.group.offsets.enabled = true\n")
    a.create_topic("orders", 2)
    start_run(cfg, clients)
    b.fill("A.orders", 0, 50)
    b.fill("A.orders", 1, 50)
    write_checkpoints(
        b,
        Checkpoint("app", "A.orders", 0, 40, 40),
        Checkpoint("app", "A.orders", 1, 30, 30),
        Checkpoint("busy", "A.orders", 0, 20, 20),
        Checkpoint("done", "A.orders", 0, 10, 10),
    )
    b.groups["app"] = FakeGroup(offsets={("A.orders", 0): (12, "")})
    b.groups["busy"] = FakeGroup(members=1)
    b.groups["done"] = FakeGroup(offsets={("A.orders", 0): (10, "")})
    before = snapshot(a, b)
    (flow,) = plan_run(ReplicationContext(cfg, clients)).flows
    assert snapshot(a, b) == before
    assert flow.group_offsets == (
        GroupOffsetWrite("app", "A.orders", 0, 12, 40),
        GroupOffsetWrite("app", "A.orders", 1, None, 30),
    )
    assert flow.skipped_groups == (SkippedGroup("busy", "Stable", "active"),)
    assert flow.changes

    emitter = CheckpointEmitter(FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients), reverse=None)
    emitter.load_checkpoints()
    assert emitter.group_sync.sync() == {"app": 2}
    assert {k: v[0] for k, v in b.groups["app"].offsets.items()} == {
        (w.topic, w.partition): w.after for w in flow.group_offsets
    }
    (flow,) = plan_run(ReplicationContext(cfg, clients)).flows
    assert flow.group_offsets == ()
    assert not flow.changes


def test_a_checkpoint_past_the_partitions_end_is_a_problem_not_a_write() -> None:
    cfg, a, b, clients = two_clusters("sync.group.offsets.enabled = true\n")
    a.create_topic("orders", 1)
    start_run(cfg, clients)
    write_checkpoints(b, Checkpoint("app", "A.orders", 0, 40, 40))
    (flow,) = plan_run(ReplicationContext(cfg, clients)).flows
    assert flow.group_offsets == ()
    assert any("ends at 0" in p for p in flow.problems)


def test_group_sync_off_plans_no_group_offsets() -> None:
    cfg, a, b, clients = two_clusters()  # sync.group.offsets.enabled defaults to false
    a.create_topic("orders", 1)
    write_checkpoints(b, Checkpoint("app", "A.orders", 0, 40, 40))
    (flow,) = plan_run(ReplicationContext(cfg, clients)).flows
    assert flow.group_offsets == ()


def test_clusters_keeps_the_flows_into_those_targets() -> None:
    cfg, _, _, clients = two_clusters("B->A.enabled = true\n")
    assert [f.flow for f in plan_run(ReplicationContext(cfg, clients)).flows] == ["A->B", "B->A"]
    assert [f.flow for f in plan_run(ReplicationContext(cfg, clients), ["A"]).flows] == ["B->A"]


# --------------------------------------------------------------------------- the command


def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, clients: FakeClients, *args: str) -> Any:
    """Run ``mirrorspark plan`` over the fake clusters of ``clients``."""
    import mirrorspark.cli.plan as plan_cli
    import mirrorspark.replication.connector.plan as planning

    config = tmp_path / "mm2.properties"
    config.write_text(
        "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n"
    )
    monkeypatch.setattr(plan_cli, "check_reachable", lambda *a, **k: None)
    real = planning.plan_run
    monkeypatch.setattr(
        planning, "plan_run", lambda ctx, targets: real(ReplicationContext(ctx.config, clients), targets)
    )
    return CliRunner().invoke(app, ["plan", str(config), *args])


def test_the_command_exits_10_on_changes_and_0_with_nothing_to_do(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cfg, a, _, clients = two_clusters()
    a.create_topic("orders", 2)
    result = cli(monkeypatch, tmp_path, clients)
    assert result.exit_code == CHANGES_EXIT_CODE, result.output
    assert "A.orders" in result.output and "mm2-offsets.A.internal" in result.output
    assert "nothing to do" not in result.output.splitlines()[-1]
    start_run(cfg, clients)
    result = cli(monkeypatch, tmp_path, clients)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == "nothing to do"


def test_json_is_one_document(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _, a, _, clients = two_clusters()
    a.create_topic("orders", 2)
    result = cli(monkeypatch, tmp_path, clients, "--json")
    assert result.exit_code == CHANGES_EXIT_CODE
    doc = json.loads(result.stdout)
    assert doc["changes"] is True
    assert doc["flows"][0]["topics_to_create"][1] == {
        "topic": "A.orders",
        "partitions": 2,
        "replication_factor": 2,
        "config": {},
        "source_topic": "orders",
    }
    assert {t["role"] for t in doc["internal_topics"]} >= {"offsets", "checkpoints", "lease", "heartbeats"}


def test_the_changes_exit_code_is_no_errors_nor_typers() -> None:
    codes = {c.exit_code for c in _subclasses(MirrorsparkError)}
    assert CHANGES_EXIT_CODE not in codes | {0, 2, 130}


def _subclasses(cls: type) -> set[type]:
    out = set(cls.__subclasses__())
    for sub in list(out):
        out |= _subclasses(sub)
    return out | {cls}


def test_two_source_topics_on_one_remote_topic_are_a_problem_of_the_plan_and_neither_is_created() -> None:
    cfg, a, _b, clients = two_clusters(
        "A->B.transforms = r\nA->B.transforms.r.type = RegexRouter\n"
        "A->B.transforms.r.regex = A\\\\.(orders|payments)\nA->B.transforms.r.replacement = merged\n"
    )
    a.create_topic("orders", 1)
    a.create_topic("payments", 1)
    (flow,) = plan_run(ReplicationContext(cfg, clients)).flows
    assert [p for p in flow.problems if "'orders' and 'payments'" in p and "'merged'" in p]
    assert "merged" not in {t.topic for t in flow.topics_to_create}
