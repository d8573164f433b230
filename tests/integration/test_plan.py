"""``mirrorspark plan`` on real brokers: before a first run it lists exactly what the run creates; after, nothing.

The flow's cluster aliases are this module's own (``pl…``/``bk…`` over the session's ``primary`` and
``backup``), so its internal topics are new to the clusters whatever ran before. A first run (group offset
sync off) creates the remote topic and the internal topics the plan listed, with the planned partitions and
configs; the plan with group offset sync on then lists the group's offsets (from none to the checkpoints),
which the second run commits; after it ``mirrorspark plan`` says there is nothing to do and exits 0.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers import admin, create_topic, produce, target_offsets, unique_name
from helpers import commit_offsets as commit
from pyspark.sql import SparkSession

from mirrorspark.client.context import ReplicationContext
from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.replication.connector.plan import plan_run
from mirrorspark.replication.driver import Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

CHANGES = 10


def properties(clusters: LocalClusters, source: str, target: str, topic: str, *, group_sync: bool) -> str:
    """The session clusters' ``mm2.properties``, flow ``primary->backup`` under the aliases ``source``, ``target``."""
    text = clusters.mm2_properties(
        [("primary", "backup")],
        extra={
            "primary->backup.topics": topic,
            "emit.checkpoints.interval.seconds": "1",
            "refresh.groups.interval.seconds": "1",
            "sync.group.offsets.enabled": str(group_sync).lower(),
            "sync.group.offsets.interval.seconds": "1",
            "tasks.max": "1",
        },
    )
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    return "\n".join(re.sub(r"\bbackup\b", target, re.sub(r"\bprimary\b", source, ln)) for ln in lines) + "\n"


def mirror_config(text: str) -> MirrorConfig:
    return parse_config(parse_properties(text))


def cli_plan(tmp_path: Path, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / f"mm2-{uuid.uuid4().hex[:6]}.properties"
    config.write_text(text)
    cmd = [sys.executable, "-m", "mirrorspark", "plan", str(config), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def ours(topics: dict[str, int], *needles: str) -> dict[str, int]:
    """The topics named after this test's aliases or topic (other tests create topics on the same clusters)."""
    return {t: n for t, n in topics.items() if any(x in t for x in needles) or t == "heartbeats"}


def test_plan_lists_what_the_run_creates_then_nothing(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path: Path
) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    src, tgt = f"pl{uuid.uuid4().hex[:8]}", f"bk{uuid.uuid4().hex[:8]}"
    topic, group = unique_name("planned"), unique_name("plangroup")
    create_topic(p, topic, partitions=2, config={"retention.ms": "3600000"})
    produce(p, topic, [{"value": f"v{i}".encode(), "partition": i % 2} for i in range(20)])
    commit(p, group, {(topic, 0): 6, (topic, 1): 8})
    first = properties(local_clusters, src, tgt, topic, group_sync=False)
    primary, backup = ClusterAdmin(admin(p), src, timeout_s=30), ClusterAdmin(admin(b), tgt, timeout_s=30)
    needles = (src, tgt, topic)
    before = {src: ours(primary.list_topics(), *needles), tgt: ours(backup.list_topics(), *needles)}

    # the plan before the first run, as one JSON document: exit 10, nothing written
    r = cli_plan(tmp_path, first, "--json")
    assert r.returncode == CHANGES, r.stderr
    doc = json.loads(r.stdout)
    assert doc["changes"] is True and doc["lacks"] == []
    (flow,) = doc["flows"]
    assert flow["flow"] == f"{src}->{tgt}" and flow["acls_to_add"] == [] and flow["group_offsets"] == []
    planned: dict[tuple[str, str], dict[str, Any]] = {(tgt, t["topic"]): t for t in flow["topics_to_create"]}
    planned.update({(t["cluster"], t["topic"]): t for t in doc["internal_topics"]})
    assert planned[(tgt, f"{src}.{topic}")]["partitions"] == 2
    assert planned[(tgt, f"{src}.{topic}")]["config"] == {"retention.ms": "3600000"}
    assert {(tgt, f"mm2-offsets.{src}.internal"), (tgt, f"{src}.checkpoints.internal")} <= set(planned)
    assert before == {src: ours(primary.list_topics(), *needles), tgt: ours(backup.list_topics(), *needles)}

    Replicator(mirror_config(first), spark).run(until_caught_up=True)
    after = {src: ours(primary.list_topics(), *needles), tgt: ours(backup.list_topics(), *needles)}
    created = {(alias, t): n for alias in after for t, n in after[alias].items() if t not in before[alias]}
    assert set(created) == set(planned)
    assert all(created[k] == planned[k]["partitions"] for k in created)
    for alias, cluster in ((src, primary), (tgt, backup)):
        names = [t for a, t in planned if a == alias]
        configs = cluster.topic_config_values(names)
        for name in names:
            want = planned[(alias, name)]["config"]
            assert {k: configs[name].get(k) for k in want} == want, name

    # group offset sync on: the plan lists the group's offsets, the run then commits exactly those
    second = properties(local_clusters, src, tgt, topic, group_sync=True)
    (flow2,) = plan_run(ReplicationContext(mirror_config(second))).flows
    remote = f"{src}.{topic}"
    assert {(w.group, w.topic, w.partition, w.before, w.after) for w in flow2.group_offsets} == {
        (group, remote, 0, None, 6),
        (group, remote, 1, None, 8),
    }
    assert not flow2.topics_to_create and not flow2.topics_to_change
    Replicator(mirror_config(second), spark).run(until_caught_up=True)
    assert target_offsets(b, group, remote, 2) == {w.partition: w.after for w in flow2.group_offsets}

    r = cli_plan(tmp_path, second)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == "nothing to do"
