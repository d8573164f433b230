"""Consumer-migration tooling as operators run it: ``offsets export|translate``, ``failover``, ``checkpoints read``.

One scenario for the module: a topic on ``primary`` (2 partitions) and a topic on
``backup`` (replicated back to ``primary`` for failback), consumer groups that
committed part of them on ``primary`` with a real consumer, and one run of both
flows until caught up (which waits for their checkpoints). Each command then runs
as a subprocess; its output is checked against the checkpoints, against MM2's own
``CheckpointFormatter`` and ``RemoteClusterUtils``, and against Kafka's
``kafka-consumer-groups`` reading the exported reset plan.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions
from helpers import admin, assert_eventually, consume_all, create_topic, kafka_tool, produce, unique_name
from helpers import commit_offsets as commit
from mm2_client import mm2_client_info, mm2_translate_offsets
from pyspark.sql import SparkSession

from mirrorspark.client import mirror_client as client
from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.errors import UnknownAliasError
from mirrorspark.kafka.jars import classpath, java_executable
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.records import OffsetSync
from mirrorspark.replication.driver import Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

CLI = [sys.executable, "-m", "mirrorspark"]
LAG_MAX = 10
RECORDS = 100  # per partition

Offsets = dict[tuple[str, int], int]


def run_cli(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout_s)


def committed(bootstrap: str, group: str) -> Offsets:
    """A group's committed offsets on a cluster."""
    a = admin(bootstrap)  # keep a reference until the future completes
    res = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(30)
    return {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions if tp.offset >= 0}


def consumer_groups_tool(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Kafka's own ``kafka-consumer-groups`` (ConsumerGroupCommand) from the Kafka jars."""
    return kafka_tool(bootstrap, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", *args)


@dataclass(frozen=True)
class Scenario:
    """What the module's one replication run left behind."""

    props: Path
    config: MirrorConfig
    primary: str
    backup: str
    topic: str  # on primary
    remote: str  # primary.<topic> on backup
    back: str  # on backup; backup.<back> on primary is its copy
    groups: dict[str, Offsets]  # committed on primary before the run, by role

    def group(self, role: str) -> str:
        return f"{self.prefix}-{role}"

    @property
    def prefix(self) -> str:
        return self.topic.removesuffix("-orders")

    def cli(self, *args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
        """Run a mirrorspark command with ``--config`` pointing at the scenario's mm2.properties."""
        return run_cli(*args, "--config", str(self.props), timeout_s=timeout_s)


@pytest.fixture(scope="module")
def scenario(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Scenario]:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    prefix = unique_name("mig")
    topic, back = f"{prefix}-orders", f"{prefix}-back"
    create_topic(p, topic, partitions=2)
    produce(p, topic, [{"value": f"o{i}".encode(), "partition": i % 2} for i in range(2 * RECORDS)])
    create_topic(b, back, partitions=1)
    produce(b, back, [{"value": f"b{i}".encode()} for i in range(RECORDS)])
    # The failback copy exists before the run so that a group on primary can commit on it now.
    create_topic(p, f"backup.{back}", partitions=1)
    fb = (f"backup.{back}", 0)
    groups: dict[str, Offsets] = {
        "single": {(topic, 0): 50, (topic, 1): 30},
        "multi-a": {(topic, 0): 100, (topic, 1): 10},
        "multi-b": {(topic, 0): 20},
        "translate": {(topic, 0): 50, (topic, 1): 30, fb: 40},
        "failover": {(topic, 0): 60, (topic, 1): 40, fb: 40},
        "active": {(topic, 0): 70},
    }
    for role, offsets in groups.items():
        commit(p, f"{prefix}-{role}", offsets)
    text = local_clusters.mm2_properties(
        [("primary", "backup"), ("backup", "primary")],
        extra={
            "topics": f"(backup[.])?{prefix}-.*",
            "groups": f"{prefix}-.*",
            "refresh.topics.interval.seconds": "1",
            "refresh.groups.interval.seconds": "1",
            "emit.checkpoints.interval.seconds": "1",
            "emit.heartbeats.interval.seconds": "1",
            "offset.lag.max": str(LAG_MAX),
            "tasks.max": "2",
        },
    )
    props = tmp_path_factory.mktemp("migration") / "mm2.properties"
    props.write_text(text)
    cfg = parse_config(parse_properties(text))
    r = Replicator(cfg, spark)
    r.run(until_caught_up=True)

    yield Scenario(props, cfg, p, b, topic, f"primary.{topic}", back, groups)


def expected_offsets(s: Scenario, role: str) -> Offsets:
    """Where a group resumes on backup: the same offsets (fresh remote topics, no gaps), renamed."""
    out: Offsets = {}
    for (topic, part), offset in s.groups[role].items():
        out[(s.back if topic == f"backup.{s.back}" else f"primary.{topic}", part)] = offset
    return out


# --------------------------------------------------------------------------- checkpoints read


def test_checkpoints_read_prints_what_mm2s_formatter_prints(scenario: Scenario) -> None:
    s = scenario
    r = s.cli("checkpoints", "read", "--target", "backup", "--source", "primary", "--group", s.group("single"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    last = {}
    for line in lines:
        assert line.startswith(f"Checkpoint{{consumerGroupId={s.group('single')}, topicPartition={s.remote}-")
        last[line.split("topicPartition=")[1].split(",")[0]] = line
    assert last == {
        f"{s.remote}-0": f"Checkpoint{{consumerGroupId={s.group('single')}, topicPartition={s.remote}-0, "
        "upstreamOffset=50, downstreamOffset=50, metadata=}",
        f"{s.remote}-1": f"Checkpoint{{consumerGroupId={s.group('single')}, topicPartition={s.remote}-1, "
        "upstreamOffset=30, downstreamOffset=30, metadata=}",
    }

    every = s.cli("checkpoints", "read", "--cluster", "backup", "--source", "primary")  # --target's old name
    assert every.returncode == 0, every.stderr
    ours = every.stdout.splitlines()
    java = subprocess.run(
        [
            java_executable(),
            "-Dlog4j2.level=error",
            "-cp",
            f"{classpath('kafka')}:{classpath('mm2')}",
            "org.apache.kafka.tools.consumer.ConsoleConsumer",
            "--bootstrap-server",
            s.backup,
            "--topic",
            "primary.checkpoints.internal",
            "--from-beginning",
            "--max-messages",
            str(len(ours)),
            "--timeout-ms",
            "30000",
            "--formatter",
            "org.apache.kafka.connect.mirror.formatters.CheckpointFormatter",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert java.returncode == 0, java.stderr
    assert [line for line in java.stdout.splitlines() if line.startswith("Checkpoint{")] == ours

    as_json = s.cli(
        "checkpoints", "read", "--target", "backup", "--source", "primary", "--group", s.group("single"), "--json"
    )
    assert as_json.returncode == 0, as_json.stderr
    rows = json.loads(as_json.stdout)
    assert {(c["topic"], c["partition"]): c["downstream_offset"] for c in rows} == expected_offsets(s, "single")
    assert set(rows[0]) == {
        "consumer_group_id",
        "topic",
        "partition",
        "upstream_offset",
        "downstream_offset",
        "metadata",
    }


# --------------------------------------------------------------------------- offsets export


def test_export_csv_for_one_group_round_trips_through_kafka_consumer_groups(scenario: Scenario, tmp_path: Path) -> None:
    s = scenario
    group = s.group("single")
    r = s.cli("offsets", "export", "--source", "primary", "--target", "backup", "--group", group)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{s.remote},0,50\n{s.remote},1,30\n"
    plan = tmp_path / "plan.csv"
    plan.write_text(r.stdout)

    dry = consumer_groups_tool(s.backup, "--group", group, "--reset-offsets", "--from-file", str(plan), "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "Error" not in dry.stdout, dry.stdout
    new_offsets = {tuple(line.split()[1:4]) for line in dry.stdout.splitlines() if line.startswith(group)}
    assert new_offsets == {(s.remote, "0", "50"), (s.remote, "1", "30")}
    assert committed(s.backup, group) == {}  # a dry run changes nothing

    done = consumer_groups_tool(s.backup, "--group", group, "--reset-offsets", "--from-file", str(plan), "--execute")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Error" not in done.stdout, done.stdout
    assert committed(s.backup, group) == expected_offsets(s, "single")


def test_export_csv_for_several_groups_uses_the_group_column(scenario: Scenario, tmp_path: Path) -> None:
    s = scenario
    a, b = s.group("multi-a"), s.group("multi-b")
    r = s.cli("offsets", "export", "--source", "primary", "--target", "backup", "--group", a, "--group", b)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{a},{s.remote},0,100\n{a},{s.remote},1,10\n{b},{s.remote},0,20\n"
    # the same groups as `--group A B` and `--group A,B` (ux-review finding 3: before, 'unexpected extra argument')
    for groups in ([a, b], [f"{a},{b}"]):
        same = s.cli("offsets", "export", "--source", "primary", "--target", "backup", "--group", *groups)
        assert (same.returncode, same.stdout) == (0, r.stdout), same.stderr
    plan = tmp_path / "plan.csv"
    plan.write_text(r.stdout)
    done = consumer_groups_tool(
        s.backup, "--group", a, "--group", b, "--reset-offsets", "--from-file", str(plan), "--execute"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Error" not in done.stdout, done.stdout
    assert committed(s.backup, a) == expected_offsets(s, "multi-a")
    assert committed(s.backup, b) == expected_offsets(s, "multi-b")


def test_export_without_group_lists_every_group_with_checkpoints(scenario: Scenario) -> None:
    s = scenario
    r = s.cli("offsets", "export", "--source", "primary", "--target", "backup", "--format", "json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    by_group: dict[str, Offsets] = {}
    for row in rows:
        by_group.setdefault(row["group"], {})[(row["topic"], row["partition"])] = row["offset"]
        assert set(row) == {"group", "topic", "partition", "offset", "upstream_offset", "metadata"}
    for role in s.groups:
        assert by_group[s.group(role)] == expected_offsets(s, role), role
    # --json is --format json, as every other command spells it
    as_json = s.cli("offsets", "export", "--source", "primary", "--target", "backup", "--json")
    assert (as_json.returncode, json.loads(as_json.stdout)) == (0, rows), as_json.stderr

    csv = s.cli("offsets", "export", "--source", "primary", "--target", "backup")
    assert csv.returncode == 0, csv.stderr
    lines = csv.stdout.splitlines()
    assert len(lines) == len(rows) and all(line.count(",") == 3 for line in lines)


# --------------------------------------------------------------------------- offsets translate


def syncs(bootstrap: str, topic: str, upstream_topic: str, partition: int) -> list[OffsetSync]:
    """The offset syncs of one upstream partition in an offset-syncs topic."""
    out = [OffsetSync.decode(r["key"], r["value"]) for r in consume_all(bootstrap, topic)]
    return [x for x in out if (x.topic, x.partition) == (upstream_topic, partition)]


def translate_rows(s: Scenario, group: str) -> dict[tuple[str, int], dict[str, object]]:
    r = s.cli("offsets", "translate", "--source", "primary", "--target", "backup", "--group", group, "--json")
    assert r.returncode == 0, r.stderr
    return {(row["topic"], row["partition"]): row for row in json.loads(r.stdout)}


def test_translate_prefers_an_exact_checkpoint_then_translates_live(scenario: Scenario) -> None:
    s = scenario
    group = s.group("translate")
    fb = f"backup.{s.back}"
    rows = translate_rows(s, group)
    assert set(rows) == {(s.topic, 0), (s.topic, 1), (fb, 0)}
    assert rows[(s.topic, 0)] == {
        "group": group,
        "topic": s.topic,
        "partition": 0,
        "source_offset": 50,
        "target_topic": s.remote,
        "target_offset": 50,
        "target_end_offset": RECORDS,
        "rereads": 0,
        "basis": "checkpoint",
    }
    assert (rows[(s.topic, 1)]["target_offset"], rows[(s.topic, 1)]["rereads"]) == (30, 0)
    # failback: the group on primary reads backup's topic; it resumes on the original topic
    assert rows[(fb, 0)]["target_topic"] == s.back
    assert (rows[(fb, 0)]["target_offset"], rows[(fb, 0)]["rereads"], rows[(fb, 0)]["basis"]) == (40, 0, "checkpoint")

    table = s.cli("offsets", "translate", "--source", "primary", "--target", "backup", "--group", group)
    assert table.returncode == 0, table.stderr
    assert "target offset" in table.stdout and s.remote in table.stdout
    assert table.stdout.rstrip().endswith("total re-reads: 0")

    # The group moves on after the last checkpoint: no checkpoint for it, MM2's rule over the syncs.
    commit(s.primary, group, {(s.topic, 0): 55, (fb, 0): 47})
    rows = translate_rows(s, group)
    # Forward, the live offset is one past a sync's downstream offset; in reverse (failback), one past a
    # sync's upstream offset of the opposite flow (or the offset itself when a sync hits it exactly).
    forward = {x.downstream_offset for x in syncs(s.primary, "mm2-offset-syncs.backup.internal", s.topic, 0)}
    reverse = {x.upstream_offset for x in syncs(s.backup, "mm2-offset-syncs.primary.internal", s.back, 0)}
    for key, now, sync_offsets in (((s.topic, 0), 55, forward), ((fb, 0), 47, reverse)):
        row = rows[key]
        assert row["source_offset"] == now and row["basis"] == "offset-syncs", row
        target_offset, rereads = row["target_offset"], row["rereads"]
        assert isinstance(target_offset, int) and isinstance(rereads, int)
        assert target_offset - 1 in sync_offsets or (target_offset == now and now in sync_offsets), row
        assert rereads >= 0
        assert target_offset + rereads == now  # no gaps: every record before `now` is read again, none skipped
    assert rows[(s.topic, 1)]["basis"] == "checkpoint"


# --------------------------------------------------------------------------- failover


def test_failover_dry_run_then_apply(scenario: Scenario) -> None:
    s = scenario
    group = s.group("failover")
    dry = s.cli("failover", "--source", "primary", "--target", "backup", "--group", group, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert plan["applied"] is False and plan["total_rereads"] == 0 and plan["unknown_rereads"] == 0
    assert {(o["topic"], o["partition"]): o["offset"] for o in plan["offsets"]} == expected_offsets(s, "failover")
    assert all(o["previous_offset"] is None and o["rereads"] == 0 for o in plan["offsets"])
    assert committed(s.backup, group) == {}
    # without --execute failover only previews (ux-review finding 4; before, it committed)
    preview = s.cli("failover", "--source", "primary", "--target", "backup", "--group", group)
    assert preview.returncode == 0, preview.stderr
    assert "preview only: nothing written; add --execute to write" in preview.stderr
    assert committed(s.backup, group) == {}

    done = s.cli("failover", "--source", "primary", "--target", "backup", "--group", group, "--execute")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].split() == ["topic", "partition", "offset", "re-reads"]
    assert f"{s.remote}  0          60      0" in done.stdout
    assert done.stdout.rstrip().endswith("total re-reads: 0")
    assert committed(s.backup, group) == expected_offsets(s, "failover")
    # a consumer resuming there reads exactly what the group had not consumed on primary
    for part in (0, 1):
        src = [r["value"] for r in consume_all(s.primary, s.topic) if r["partition"] == part]
        dst = [r["value"] for r in consume_all(s.backup, s.remote) if r["partition"] == part]
        start = s.groups["failover"][(s.topic, part)]
        assert dst[start:] == src[start:]


def test_failover_refuses_while_the_group_has_members_on_the_target(scenario: Scenario) -> None:
    s = scenario
    group = s.group("active")
    member = Consumer({"bootstrap.servers": s.backup, "group.id": group, "enable.auto.commit": False})
    try:
        member.subscribe([s.remote])
        assert_eventually(lambda: member.poll(0.5) is not None or bool(member.assignment()), timeout_s=60)
        r = s.cli("failover", "--source", "primary", "--target", "backup", "--group", group, "--execute")
        assert r.returncode == 6, r.stdout + r.stderr
        assert "[CONTROL_ERROR]" in r.stderr
        assert f"'{group}'" in r.stderr and "1 active member" in r.stderr and "'backup'" in r.stderr
        assert "Traceback" not in r.stderr
        assert committed(s.backup, group) == {}
    finally:
        member.close()
    # once the consumer left, the group is empty and can be failed over
    r = s.cli("failover", "--source", "primary", "--target", "backup", "--group", group, "--execute")
    assert r.returncode == 0, r.stderr
    assert committed(s.backup, group) == expected_offsets(s, "active")


def test_failover_and_export_work_while_the_source_is_down(scenario: Scenario, tmp_path: Path) -> None:
    """The case failover exists for: only the target answers; the checkpoints there are enough."""
    s = scenario
    props = tmp_path / "mm2.properties"
    props.write_text(
        "clusters = primary, backup\nprimary.bootstrap.servers = 127.0.0.1:1\n"
        f"backup.bootstrap.servers = {s.backup}\nprimary->backup.enabled = true\n"
    )
    group = s.group("single")
    base = ["--source", "primary", "--target", "backup", "--group", group, "--config", str(props)]
    r = run_cli("failover", *base, "--dry-run", "--json")
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert {(o["topic"], o["partition"]): o["offset"] for o in plan["offsets"]} == expected_offsets(s, "single")
    assert plan["source_members"] is None and plan["unknown_rereads"] == 2
    assert all(o["rereads"] is None for o in plan["offsets"])
    assert "'primary' is unreachable" in r.stderr
    assert "Connection refused" not in r.stderr  # librdkafka's retries are not shown (only with -v)

    export = run_cli("offsets", "export", *base)
    assert export.returncode == 0, export.stderr
    assert export.stdout == f"{s.remote},0,50\n{s.remote},1,30\n"


# --------------------------------------------------------------------------- bad input

COMMANDS = {
    "checkpoints read": ["checkpoints", "read", "--target", "{target}", "--source", "{source}"],
    "offsets export": ["offsets", "export", "--source", "{source}", "--target", "{target}"],
    "offsets translate": ["offsets", "translate", "--source", "{source}", "--target", "{target}"],
    "failover": ["failover", "--source", "{source}", "--target", "{target}"],
}


def command(name: str, props: Path, source: str, target: str, group: str) -> list[str]:
    """The arguments of one command for a flow source->target and a group."""
    args = [a.format(source=source, target=target) for a in COMMANDS[name]]
    return [*args, "--group", group, "--config", str(props)]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_unknown_group_is_a_control_error(scenario: Scenario, name: str) -> None:
    s = scenario
    r = run_cli(*command(name, s.props, "primary", "backup", "no-such-group"))
    assert r.returncode == 6, r.stdout + r.stderr
    assert "[CONTROL_ERROR]" in r.stderr
    assert "unknown group 'no-such-group'" in r.stderr
    assert "no checkpoints in 'primary.checkpoints.internal' on 'backup'" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("name", list(COMMANDS))
def test_unknown_alias_exits_2(scenario: Scenario, name: str) -> None:
    r = run_cli(*command(name, scenario.props, "primary", "nowhere", "g"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "[CONFIG_UNKNOWN_ALIAS]" in r.stderr and "'nowhere'" in r.stderr


@pytest.fixture(scope="module")
def dead_props(scenario: Scenario, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scenario's clusters plus ``dead``, whose bootstrap server does not answer."""
    text = (
        "clusters = primary, backup, dead\n"
        f"primary.bootstrap.servers = {scenario.primary}\n"
        f"backup.bootstrap.servers = {scenario.backup}\n"
        "dead.bootstrap.servers = 127.0.0.1:1\n"
        "primary->dead.enabled = true\n"
        "dead->backup.enabled = true\n"
    )
    p = tmp_path_factory.mktemp("dead") / "mm2.properties"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    ("name", "source", "target"),
    [
        ("checkpoints read", "primary", "dead"),
        ("offsets export", "primary", "dead"),
        ("offsets translate", "dead", "backup"),
        ("failover", "primary", "dead"),
    ],
)
def test_unreachable_cluster_exits_3_naming_it(dead_props: Path, name: str, source: str, target: str) -> None:
    r = run_cli(*command(name, dead_props, source, target, "g"))
    assert r.returncode == 3, r.stdout + r.stderr
    assert "[CLUSTER_UNREACHABLE]" in r.stderr and "'dead'" in r.stderr


# --------------------------------------------------------------------------- client API


def test_client_api_agrees_with_mm2s_remote_cluster_utils(scenario: Scenario) -> None:
    s = scenario
    cfg = s.config
    for role in ("single", "failover"):
        ours = client.translate_offsets(cfg, cluster="backup", remote_alias="primary", group=s.group(role))
        assert ours == expected_offsets(s, role)
        assert ours == mm2_translate_offsets(s.backup, "primary", s.group(role))
    assert client.translate_offsets(cfg, cluster="backup", remote_alias="primary", group="no-such-group") == {}

    java = mm2_client_info(s.backup, ["primary", "backup", "nowhere"])
    assert client.heartbeat_topics(cfg, "backup") == set(java["heartbeatTopics"])
    assert client.checkpoint_topics(cfg, "backup") == set(java["checkpointTopics"])
    assert client.upstream_clusters(cfg, "backup") == set(java["upstreamClusters"])
    assert client.remote_topics(cfg, "backup") == set(java["remoteTopics"])
    assert client.replication_hops(cfg, "backup", "primary") == java["replicationHops"]["primary"] == 1
    assert "primary.checkpoints.internal" in client.checkpoint_topics(cfg, "backup")
    assert "primary" in client.upstream_clusters(cfg, "backup")

    with client.MirrorClient(cfg, "primary") as mc:
        assert s.remote not in mc.remote_topics()
        assert f"backup.{s.back}" in mc.remote_topics("backup")
        assert mc.replication_hops("backup") == 1
        assert mc.remote_consumer_offsets(s.group("single"), "backup") == {}

    with pytest.raises(UnknownAliasError):
        client.translate_offsets(cfg, cluster="nowhere", remote_alias="primary", group="g")
